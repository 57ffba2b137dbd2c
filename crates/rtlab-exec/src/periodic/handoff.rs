//! What the threads of a periodic run share: each task's slot (its futex
//! and release state), the run's stop flag, the rings a task's samples
//! leave by, and the clock waits of the hot loops.

use rtlab_core::clock;
use rtlab_probe::recorder::Sample;
use rtlab_probe::switch::futex_wake;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Longest sleep between two looks at the stop flag: a far activation
/// (a long period) is slept toward in absolute chunks of at most this.
pub(crate) const STOP_CHECK_NS: u64 = 50_000_000;

/// Sleeps (absolute `clock_nanosleep`) to `target_ns`, looking at `stop`
/// at least every [`STOP_CHECK_NS`]: true once the target is reached,
/// false as soon as the stop flag is seen. The chunks before the last end
/// at least half a chunk before the target, so the last one is the real
/// absolute sleep to the target, whatever the wake-up latency of the others.
#[inline]
pub(crate) fn sleep_until_or_stop(target_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        let now = clock::now_ns();
        if now >= target_ns {
            return true;
        }
        if target_ns - now <= STOP_CHECK_NS {
            clock::sleep_until(target_ns);
            return true;
        }
        clock::sleep_until((now + STOP_CHECK_NS).min(target_ns - STOP_CHECK_NS / 2));
        if stop.load(Ordering::Relaxed) {
            return false;
        }
    }
}

/// Spins until the clock reaches `instant_ns`; returns the time read last.
#[inline(always)]
pub(crate) fn spin_until(instant_ns: u64) -> u64 {
    loop {
        let now = clock::now_ns();
        if now >= instant_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// One task's hand-off with the executive, on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Slot {
    /// The futex word: bumped by the executive at every release (and to
    /// tell the task to leave).
    pub seq: AtomicU32,
    /// Set by the executive at a release, cleared by the task once its
    /// work for that activation is done and its samples pushed.
    pub busy: AtomicBool,
    /// The task is to leave (checked after every wake-up).
    pub quit: AtomicBool,
    /// The activation instant of the current release, ns.
    pub activation_ns: AtomicU64,
    /// Activations the executive could not release because the task was
    /// still working; the task reports them as `missed` with its next sample.
    pub skipped: AtomicU64,
}

impl Slot {
    /// Tells the task to leave.
    pub(crate) fn quit(&self) {
        self.quit.store(true, Ordering::Release);
        self.seq.fetch_add(1, Ordering::Release);
        futex_wake(&self.seq, 1);
    }
}

/// State shared by every thread of one run.
pub(crate) struct Shared {
    pub stop: Arc<AtomicBool>,
    pub slots: Vec<Slot>,
}

impl Shared {
    /// Tells every task to leave (executive mode).
    pub(crate) fn quit_all(&self) {
        self.slots.iter().for_each(Slot::quit);
    }
}

/// A ring a task's samples of one series leave by, and its drop count.
pub(crate) struct Ring {
    pub producer: rtrb::Producer<Sample>,
    pub dropped: Arc<AtomicU64>,
}

impl Ring {
    #[inline]
    fn push(&mut self, sample: Sample) {
        if self.producer.push(sample).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What became of one activation.
#[derive(Clone, Copy)]
pub(crate) struct Activation {
    /// The activation instant, ns after the run's start.
    pub at_ns: u64,
    pub lateness_ns: u64,
    /// Activations missed before this one (not released, or slept through).
    pub missed: u64,
    pub response_ns: u64,
    /// The end of the work minus its start.
    pub execution_ns: u64,
}

/// One task's side of the recorder: its lateness and response rings, and
/// its execution ring when it has a budget.
pub(crate) struct TaskRings {
    pub lateness: Ring,
    pub response: Ring,
    pub execution: Option<Ring>,
    pub deadline_ns: u64,
    pub budget_ns: u64,
}

impl TaskRings {
    /// Hands one activation's samples over: the response's `missed` is a
    /// deadline miss, the execution's a budget overrun. Hot path: no
    /// allocation.
    #[inline]
    pub(crate) fn push(&mut self, a: Activation) {
        self.lateness.push(Sample {
            at_ns: a.at_ns,
            latency_ns: a.lateness_ns,
            missed: a.missed,
        });
        self.response.push(Sample {
            at_ns: a.at_ns,
            latency_ns: a.response_ns,
            missed: u64::from(a.response_ns > self.deadline_ns),
        });
        if let Some(execution) = &mut self.execution {
            execution.push(Sample {
                at_ns: a.at_ns,
                latency_ns: a.execution_ns,
                missed: u64::from(a.execution_ns > self.budget_ns),
            });
        }
    }
}
