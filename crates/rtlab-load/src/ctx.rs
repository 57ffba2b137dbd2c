//! What every thread of a load shares: the stop flag, the named work
//! counters and the load's fatal error.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Named = Vec<(String, Arc<AtomicU64>)>;

/// Named work counters, shared by the threads of a load.
#[derive(Clone, Default)]
pub struct Counters {
    prefix: String,
    all: Arc<Mutex<Named>>,
}

impl Counters {
    /// The counter `name` (with this view's prefix), created at 0.
    pub fn get(&self, name: &str) -> Arc<AtomicU64> {
        let full = format!("{}{name}", self.prefix);
        let mut all = self.all.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = all.iter().find(|(n, _)| *n == full) {
            return Arc::clone(c);
        }
        let counter = Arc::new(AtomicU64::new(0));
        all.push((full, Arc::clone(&counter)));
        counter
    }

    /// The same counters with names prefixed (`msg_` for dohell's parts).
    pub fn prefixed(&self, prefix: &str) -> Counters {
        Counters {
            prefix: format!("{}{prefix}", self.prefix),
            all: Arc::clone(&self.all),
        }
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        let all = self.all.lock().unwrap_or_else(|p| p.into_inner());
        all.iter()
            .map(|(n, c)| (n.clone(), c.load(Ordering::Relaxed)))
            .collect()
    }
}

/// What every thread of a load shares.
#[derive(Clone, Default)]
pub struct Ctx {
    pub stop: Arc<AtomicBool>,
    pub counters: Counters,
    /// A fatal error of the load (the worker reports it and ends).
    pub fatal: Arc<Mutex<Option<String>>>,
}

impl Ctx {
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn fail(&self, message: String) {
        let mut fatal = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
        fatal.get_or_insert(message);
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn fatal(&self) -> Option<String> {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn prefixed(&self, prefix: &str) -> Ctx {
        Ctx {
            stop: Arc::clone(&self.stop),
            counters: self.counters.prefixed(prefix),
            fatal: Arc::clone(&self.fatal),
        }
    }

    /// Sleeps up to `d`, returning early when stopping.
    pub(super) fn nap(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stopping() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10).min(d));
        }
    }
}
