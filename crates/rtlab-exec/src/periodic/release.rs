//! The hot loops of a periodic run: a task released by the executive, a
//! self-timed task, and the executive of one CPU.

use super::handoff::{Activation, Shared, TaskRings};
use super::timing::WorkDraw;
use crate::guard::sleep::{sleep_to, spin_until, Slept};
use crate::guard::{Learner, Learning};
use rtlab_core::clock;
use rtlab_core::result::ExecutiveThread;
use rtlab_probe::switch::{futex_wait, futex_wake};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long an executive waits, after its last release, for its tasks to
/// finish their work before telling them to leave.
const DRAIN_TIMEOUT_NS: u64 = 2_000_000_000;

/// How a thread ended.
pub(crate) struct ThreadEnd {
    /// Activations accounted for (released or missed).
    pub accounted: u64,
    pub planned: u64,
    /// An executive's guards and spin.
    pub guards: Option<ExecutiveThread>,
}

/// What one task does.
pub(crate) struct TaskPlan {
    pub index: usize,
    pub period_ns: u64,
    pub offset_ns: u64,
    pub activations: u64,
    pub work: WorkDraw,
}

impl TaskPlan {
    /// Executive mode: blocked on its futex until released, spins to its
    /// activation instant, works, reports. Hot path: no allocation, lock
    /// or syscall other than the clock, the futex wait and the ring pushes.
    pub(crate) fn released(
        &mut self,
        start_ns: u64,
        shared: &Shared,
        rings: &mut TaskRings,
    ) -> ThreadEnd {
        let slot = &shared.slots[self.index];
        // The word starts at 0 and only the executive bumps it, after the
        // start: reading it here instead would lose a release made before
        // this thread got the CPU back from the rendezvous.
        let mut seen: u32 = 0;
        let mut done: u64 = 0;
        loop {
            let current = slot.seq.load(Ordering::Acquire);
            if current == seen {
                futex_wait(&slot.seq, seen);
                continue;
            }
            seen = current;
            let quit = slot.quit.load(Ordering::Acquire);
            // Busy here is a release not handled yet (the task clears it
            // once done): handled even when it comes with the order to
            // leave (the executive gave up waiting before this task got
            // the CPU), so that it is a sample, never lost.
            if slot.busy.load(Ordering::Acquire) {
                let woke = clock::now_ns();
                slot.report_wake(woke);
                let activation = slot.activation_ns.load(Ordering::Acquire);
                let work_ns = self.work.next_ns();
                let started = spin_until(activation);
                slot.spin_ns
                    .fetch_add(started.saturating_sub(woke), Ordering::Relaxed);
                let missed = slot.skipped.swap(0, Ordering::AcqRel);
                spin_until(started + work_ns);
                let end = clock::now_ns();
                rings.push(Activation {
                    at_ns: activation - start_ns,
                    lateness_ns: started - activation,
                    missed,
                    response_ns: end - activation,
                    execution_ns: end - started,
                });
                done += 1 + missed;
                slot.busy.store(false, Ordering::Release);
            }
            if quit {
                break;
            }
        }
        ThreadEnd {
            accounted: done + slot.skipped.load(Ordering::Acquire),
            planned: self.activations,
            guards: None,
        }
    }

    /// FIFO mode: sleeps to each activation with an absolute
    /// clock_nanosleep, stamps the wake-up, works, reports. Hot path: no
    /// allocation, lock or syscall other than the clock, the sleep and
    /// the ring pushes.
    pub(crate) fn self_timed(
        &mut self,
        start_ns: u64,
        shared: &Shared,
        rings: &mut TaskRings,
    ) -> ThreadEnd {
        let first = start_ns + self.offset_ns;
        let planned = self.activations;
        let mut k: u64 = 0;
        while k < planned && !shared.stop.load(Ordering::Relaxed) {
            let activation = first + k * self.period_ns;
            let work_ns = self.work.next_ns();
            if sleep_to(activation, clock::now_ns(), &shared.stop) == Slept::Stopped {
                break;
            }
            let started = clock::now_ns();
            let lateness = started.saturating_sub(activation);
            // Activations that passed while this one was late: counted,
            // never measured as fake catch-up samples.
            let missed = (lateness / self.period_ns).min(planned - k - 1);
            spin_until(started + work_ns);
            let end = clock::now_ns();
            rings.push(Activation {
                at_ns: activation - start_ns,
                lateness_ns: lateness,
                missed,
                response_ns: end - activation,
                execution_ns: end - started,
            });
            k += 1 + missed;
        }
        ThreadEnd {
            accounted: k,
            planned,
            guards: None,
        }
    }
}

/// One task the executive of a CPU releases.
pub(crate) struct Released {
    /// Its slot in [`Shared::slots`].
    pub slot: usize,
    pub period_ns: u64,
    pub offset_ns: u64,
    pub activations: u64,
}

/// What the executive of one CPU does.
pub(crate) struct ExecutivePlan {
    pub cpu: usize,
    pub priority: u32,
    pub tasks: Vec<Released>,
    /// The fixed guard, or the warm start of a learned one.
    pub guard_ns: u64,
    /// The fixed release margin, or the warm start of a learned one.
    pub release_early_ns: u64,
    pub learning: Learning,
}

impl ExecutivePlan {
    /// Activations of all its tasks together (saturating).
    pub(crate) fn planned(&self) -> u64 {
        self.tasks
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.activations))
    }

    /// Tells its tasks to leave.
    pub(crate) fn quit(&self, shared: &Shared) {
        for task in &self.tasks {
            shared.slots[task.slot].quit();
        }
    }

    /// Releases every activation of its tasks in time order, learning its
    /// guard and release margin as it goes (crate::guard). Hot path: no
    /// allocation, lock or syscall other than the clock, the sleep and the
    /// futex wake.
    pub(crate) fn run(&self, start_ns: u64, shared: &Shared) -> ThreadEnd {
        let tasks = &self.tasks;
        let mut next: Vec<u64> = tasks.iter().map(|t| start_ns + t.offset_ns).collect();
        let mut done: Vec<u64> = vec![0; tasks.len()];
        let mut learner = Learner::new(self.learning, self.guard_ns, self.release_early_ns, true);
        let mut accounted: u64 = 0;
        // The instant before the first: a period earlier (the budget's span).
        let longest = tasks.iter().map(|t| t.period_ns).max().unwrap_or(0);
        let mut previous = start_ns.saturating_sub(longest);
        // The slot released last (its task may still be working).
        let mut last: Option<usize> = None;
        while !shared.stop.load(Ordering::Relaxed) {
            // The earliest pending activation (the first task on a tie).
            let mut task = usize::MAX;
            let mut activation = u64::MAX;
            for (i, t) in tasks.iter().enumerate() {
                if done[i] < t.activations && next[i] < activation {
                    activation = next[i];
                    task = i;
                }
            }
            if task == usize::MAX {
                break;
            }
            let slot = &shared.slots[tasks[task].slot];
            if let Some(delay) = slot.take_wake_delay() {
                learner.observe_release(delay);
            }
            let Some(woke) = learner.wake_before(activation, previous, &shared.stop) else {
                break;
            };
            let released_at = spin_until(activation.saturating_sub(learner.release_early_ns()));
            learner.add_spin(released_at - woke);
            if slot.busy.load(Ordering::Acquire) {
                // Still working on an earlier activation: this one is missed.
                slot.skipped.fetch_add(1, Ordering::AcqRel);
            } else {
                // Queued behind the previous release, still working? (Read
                // before this slot is busy: it may be that one.)
                let queued =
                    last.is_some_and(|s: usize| shared.slots[s].busy.load(Ordering::Acquire));
                slot.busy.store(true, Ordering::Release);
                slot.activation_ns.store(activation, Ordering::Release);
                let stamp = if queued { 0 } else { released_at };
                slot.released_at_ns.store(stamp, Ordering::Release);
                last = Some(tasks[task].slot);
                slot.seq.fetch_add(1, Ordering::Release);
                futex_wake(&slot.seq, 1);
            }
            previous = activation;
            next[task] += tasks[task].period_ns;
            done[task] += 1;
            accounted += 1;
        }
        let elapsed_ns = clock::now_ns().saturating_sub(start_ns);
        // Off the hot path: let the last releases finish their work.
        let give_up = clock::now_ns()
            .saturating_add(DRAIN_TIMEOUT_NS)
            .saturating_add(longest);
        while tasks
            .iter()
            .any(|t| shared.slots[t.slot].busy.load(Ordering::Acquire))
            && clock::now_ns() < give_up
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.quit(shared);
        let task_spin_ns = tasks
            .iter()
            .map(|t| shared.slots[t.slot].spin_ns.load(Ordering::Acquire))
            .sum();
        ThreadEnd {
            accounted,
            planned: self.planned(),
            guards: Some(learner.report("executive", Some(self.cpu), task_spin_ns, elapsed_ns)),
        }
    }
}
