//! The hot loops of a periodic run: a task released by the executive, a
//! self-timed task, and the executive of one CPU.

use super::handoff::{sleep_until_or_stop, spin_until, Activation, Shared, TaskRings};
use super::timing::WorkDraw;
use rtlab_core::clock;
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
                let activation = slot.activation_ns.load(Ordering::Acquire);
                let work_ns = self.work.next_ns();
                let started = spin_until(activation);
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
            if !sleep_until_or_stop(activation, &shared.stop) {
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
    pub guard_ns: u64,
    pub release_early_ns: u64,
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

    /// Releases every activation of its tasks in time order. Hot path: no
    /// allocation, lock or syscall other than the clock, the sleep and the
    /// futex wake.
    pub(crate) fn run(&self, start_ns: u64, shared: &Shared) -> ThreadEnd {
        let tasks = &self.tasks;
        let mut next: Vec<u64> = tasks.iter().map(|t| start_ns + t.offset_ns).collect();
        let mut done: Vec<u64> = vec![0; tasks.len()];
        let mut accounted: u64 = 0;
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
            if !sleep_until_or_stop(activation - self.guard_ns, &shared.stop) {
                break;
            }
            spin_until(activation - self.release_early_ns);
            let slot = &shared.slots[tasks[task].slot];
            if slot.busy.load(Ordering::Acquire) {
                // Still working on an earlier activation: this one is missed.
                slot.skipped.fetch_add(1, Ordering::AcqRel);
            } else {
                slot.busy.store(true, Ordering::Release);
                slot.activation_ns.store(activation, Ordering::Release);
                slot.seq.fetch_add(1, Ordering::Release);
                futex_wake(&slot.seq, 1);
            }
            next[task] += tasks[task].period_ns;
            done[task] += 1;
            accounted += 1;
        }
        // Off the hot path: let the last releases finish their work.
        let longest = tasks.iter().map(|t| t.period_ns).max().unwrap_or(0);
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
        ThreadEnd {
            accounted,
            planned: self.planned(),
        }
    }
}
