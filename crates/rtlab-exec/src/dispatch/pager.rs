//! The pager of a mapped plan: keeps its resident memory to a window
//! around the dispatcher, off the dispatcher's thread.

use crate::plan::LoadedPlan;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Keeps a mapped plan's resident memory to a window around the
/// dispatcher: every PAGER_PERIOD it locks the events ahead and drops
/// those behind (on this thread, never the dispatcher's), and stops the
/// run if the plan's file changes size. That check is a tick behind: a
/// file cut under a running plan can still kill the process with SIGBUS
/// when the dispatcher reaches the cut first.
pub(super) struct Pager {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

const PAGER_PERIOD: Duration = Duration::from_millis(20);
/// Events prefetched ahead of the dispatcher (6 MiB of records).
const PAGER_AHEAD: u64 = 1 << 18;

pub(super) fn spawn_pager(
    plan: Arc<LoadedPlan>,
    position: Arc<AtomicU64>,
    run_stop: Arc<AtomicBool>,
    damaged: Arc<AtomicBool>,
) -> Option<Pager> {
    if !plan.binary {
        return None;
    }
    // The window the dispatcher starts in, before it starts; a plan that
    // fits the window whole stays locked in and is never advised again.
    plan.events.advise(0, PAGER_AHEAD);
    let whole = plan.events.len() <= PAGER_AHEAD;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("rtlab-pager".into())
        .spawn(move || {
            let n = plan.events.len();
            while !flag.load(Ordering::Relaxed) {
                // Another process cut the file: stop before the dispatcher
                // reads a page that is gone (which would be a SIGBUS).
                if !plan.events.intact() {
                    damaged.store(true, Ordering::Relaxed);
                    run_stop.store(true, Ordering::Relaxed);
                    return;
                }
                // Events dispatched so far, over all repetitions: the
                // window follows it and wraps to the plan's start.
                if !whole {
                    let at = position.load(Ordering::Relaxed) % n;
                    plan.events.advise(at, at + PAGER_AHEAD);
                }
                std::thread::sleep(PAGER_PERIOD);
            }
        })
        .ok()?;
    Some(Pager {
        stop,
        thread: Some(thread),
    })
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
