//! What the threads of a periodic run share: each task's slot (its futex
//! and release state), the run's stop flag and the rings a task's samples
//! leave by (the clock waits of the hot loops are the guard module's).

use rtlab_probe::recorder::Sample;
use rtlab_probe::switch::futex_wake;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

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
    /// When the executive released the current activation (the clock it
    /// read at the end of its spin), ns; 0 for a release queued behind
    /// another task still working (its delay is that task's work, not the
    /// release path's: not learned from).
    pub released_at_ns: AtomicU64,
    /// The task's wake-up delay after that release plus 1, ns (0: none
    /// since the executive last took it): the executive's release margin
    /// learns from it.
    pub wake_delay: AtomicU64,
    /// The task's spin from its wake-up to its instants, ns, in all.
    pub spin_ns: AtomicU64,
}

impl Slot {
    /// The task got the CPU at `woke_ns` after a release: its delay, for
    /// the executive to take at its next release of this task.
    #[inline]
    pub(crate) fn report_wake(&self, woke_ns: u64) {
        let released = self.released_at_ns.load(Ordering::Acquire);
        if released == 0 {
            return;
        }
        let delay = woke_ns.saturating_sub(released);
        self.wake_delay.store(delay + 1, Ordering::Release);
    }

    /// The task's wake-up delay reported since the last take, if any.
    #[inline]
    pub(crate) fn take_wake_delay(&self) -> Option<u64> {
        match self.wake_delay.swap(0, Ordering::AcqRel) {
            0 => None,
            delay => Some(delay - 1),
        }
    }

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
