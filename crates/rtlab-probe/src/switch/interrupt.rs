//! The timer thread T: it wakes on absolute periodic deadlines (the
//! "interrupt"), stamps its own lateness, and releases the task; at its
//! next wake-up it collects the task's acknowledgement and pushes the
//! switch sample. T does all the ring pushing.
//!
//! T waits on a periodic absolute timerfd, not clock_nanosleep: the kernel
//! re-arms the next expiry while T reads the current one, before the
//! release, so after the release T blocks without programming a timer.
//! On the same CPU the switch series then holds what paper 001's holds
//! after its ISR released the semaphore: the release, the releaser
//! leaving the CPU, the context switch. With clock_nanosleep it would also
//! hold the arming of the next deadline, which in a VM is a trap to the
//! hypervisor (measured here: 6-10 µs instead of 3-4 µs for futex).
//!
//! Accounting, per mechanism, over its `events` deadlines:
//! - interrupt series: a wake-up late by L counts floor(L / interval)
//!   missed deadlines (bounded by what is left), which the grid skips, so
//!   `samples + missed == events`;
//! - switch series: every deadline the timer missed is missed here too,
//!   and so is every deadline at which the task had not yet run since the
//!   previous release (T does not release again: that would post a
//!   counting mechanism twice); the late run is recorded when it comes.
//!   Missed events ride on the next switch sample; those no sample carries
//!   (the task died, or never acknowledged the last release) are handed
//!   over at the end through [`Rings::switch_missed_tail`], which the run
//!   adds to the series' missed count. So `samples + missed == events` as
//!   well, however the measuring ends.
//!
//! T never releases a task that is gone (its wait failed, or the driver
//! saw its process die): the flags are checked before every release, so
//! T never signals a condition variable whose waiter died.

use super::options::InjectDelay;
use super::release::Releaser;
use super::shared::{Block, Control, TaskSide};
use crate::recorder::Sample;
use rtlab_core::clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What T measures for one mechanism.
pub struct TimerPlan<'a> {
    pub interval_ns: u64,
    /// Deadlines to meet or miss.
    pub events: u64,
    pub inject: Option<InjectDelay>,
    pub stop: &'a AtomicBool,
    /// The run's origin (the first mechanism's start): samples' `at_ns`
    /// count from it.
    pub origin_ns: u64,
}

/// The producing side of the mechanism's two series.
pub struct Rings {
    pub interrupt: rtrb::Producer<Sample>,
    pub switch: rtrb::Producer<Sample>,
    pub interrupt_dropped: std::sync::Arc<AtomicU64>,
    pub switch_dropped: std::sync::Arc<AtomicU64>,
    /// Missed switch events no pushed sample carries, stored once when
    /// T's measuring ends (off the hot path).
    pub switch_missed_tail: std::sync::Arc<AtomicU64>,
    /// The same for the interrupt series (rt-tests pacing only: the grid
    /// accounts for every deadline with a sample).
    pub interrupt_missed_tail: std::sync::Arc<AtomicU64>,
}

impl Rings {
    /// Writes every slot once without publishing anything, so the ring's
    /// pages are resident and (after a fork) no longer copy-on-write before
    /// the first deadline.
    pub fn prefault(&mut self) {
        for ring in [&mut self.interrupt, &mut self.switch] {
            let slots = ring.slots();
            if let Ok(mut chunk) = ring.write_chunk_uninit(slots) {
                let (first, second) = chunk.as_mut_slices();
                for slot in first.iter_mut().chain(second.iter_mut()) {
                    slot.write(Sample::default());
                }
                std::hint::black_box(&mut chunk);
                // Dropped without commit: the consumer sees nothing.
            }
        }
    }

    #[inline]
    pub(super) fn push_interrupt(&mut self, sample: Sample) {
        if self.interrupt.push(sample).is_err() {
            self.interrupt_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn push_switch(&mut self, sample: Sample) {
        if self.switch.push(sample).is_err() {
            self.switch_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How T's measuring ended.
#[derive(Debug, Default)]
pub struct TimerEnd {
    /// Deadlines met or missed.
    pub deadlines: u64,
    pub planned: u64,
    /// `stop` was set.
    pub stopped: bool,
    /// The task left (failed wait) or its process died before the end.
    pub task_gone: bool,
    /// The last release was not acknowledged within the bound (the task
    /// is still there): its event and the missed ones before it are
    /// counted as missed.
    pub unacked: u64,
    /// errno of the first failed release call.
    pub release_errno: i32,
    /// T waited on a timerfd (false: clock_nanosleep, after a failure).
    pub timerfd: bool,
}

/// How long T waits for the last acknowledgement (outside the measuring
/// span), in 1 ms steps.
const LAST_ACK_WAIT_NS: u64 = 1_000_000_000;

/// A release waiting for the task's acknowledgement.
#[derive(Clone, Copy)]
pub(super) struct Pending {
    pub release_ns: u64,
    pub at_ns: u64,
}

/// Pushes the switch sample of the release `p` (carrying `missed`) if the
/// task has acknowledged all `releases`; false if it has not run yet.
#[inline]
pub(super) fn collect(
    task: &TaskSide,
    releases: u64,
    p: Pending,
    missed: u64,
    rings: &mut Rings,
) -> bool {
    if task.ack.load(Ordering::Acquire) != releases {
        return false;
    }
    let run = task.run_ns.load(Ordering::Relaxed);
    rings.push_switch(Sample {
        at_ns: p.at_ns,
        latency_ns: run.saturating_sub(p.release_ns),
        missed,
    });
    true
}

/// The task left its loop (a failed wait) or the driver saw its process
/// die.
#[inline]
pub(super) fn task_is_gone(task: &TaskSide, control: &Control) -> bool {
    task.gone.load(Ordering::Acquire) != 0 || control.abort.load(Ordering::Acquire) != 0
}

/// The delay to inject on the release numbered `releases` (from 0), if any.
#[inline]
pub(super) fn injected(inject: Option<InjectDelay>, releases: u64) -> Option<InjectDelay> {
    inject.filter(|inject| releases.is_multiple_of(inject.every.max(1)))
}

/// Stamps the release, spins the injected delay (if any) and makes the
/// task runnable; returns the release stamp.
#[inline]
pub(super) fn stamp_and_release(releaser: &mut Releaser<'_>, inject: Option<InjectDelay>) -> u64 {
    let release = clock::now_ns();
    if let Some(inject) = inject {
        let until = release + inject.delay_ns;
        while clock::now_ns() < until {
            std::hint::spin_loop();
        }
    }
    releaser.fire();
    release
}

/// Blocks until the deadline `next`: a read of the periodic timerfd (whose
/// next expiry the kernel has already armed), or without one a sleep.
/// Returns the timerfd's expiration count.
#[inline]
fn wait(timerfd: Option<&clock::PeriodicTimer>, next: u64) -> Option<u64> {
    match timerfd {
        Some(timer) => Some(timer.wait()),
        None => {
            clock::sleep_until(next);
            None
        }
    }
}

/// The measuring loop. Hot path: no allocation, lock (other than the
/// mechanism under test), formatting or syscall besides the clock, the
/// deadline sleep, the release and the ring push. Between the release
/// stamp and T's blocking wait there is only the release call: the
/// samples are pushed and the books kept after T wakes again.
pub fn measure(
    plan: &TimerPlan<'_>,
    start_ns: u64,
    releaser: &mut Releaser<'_>,
    block: &Block,
    rings: &mut Rings,
) -> TimerEnd {
    let interval = plan.interval_ns;
    let planned = plan.events;
    let task = &block.task;
    let control = &block.control;
    let mut end = TimerEnd {
        planned,
        ..TimerEnd::default()
    };
    let mut next = start_ns + interval;
    // Without a timerfd (it cannot fail on any kernel rtlab runs on, but
    // the run must not die for it) T sleeps to each deadline instead.
    let timerfd = clock::PeriodicTimer::new(next, interval).ok();
    end.timerfd = timerfd.is_some();
    let mut done: u64 = 0;
    let mut releases: u64 = 0;
    let mut pending: Option<Pending> = None;
    // Missed switch events not yet carried by a pushed sample.
    let mut switch_missed: u64 = 0;
    let mut expirations = if planned > 0 {
        wait(timerfd.as_ref(), next)
    } else {
        None
    };
    while done < planned {
        if plan.stop.load(Ordering::Relaxed) {
            end.stopped = true;
            break;
        }
        let wake = clock::now_ns();
        let latency = wake.saturating_sub(next);
        // The kernel counts the expirations that passed; without a timerfd
        // the lateness says how many deadlines went by.
        let missed = expirations
            .map_or(latency / interval, |n| n.saturating_sub(1))
            .min(planned - done - 1);
        let at_ns = next.saturating_sub(plan.origin_ns);

        // The previous release: has the task run since?
        let task_ready = match pending {
            None => true,
            Some(p) => {
                let acked = collect(task, releases, p, switch_missed, rings);
                if acked {
                    switch_missed = 0;
                    pending = None;
                }
                acked
            }
        };
        rings.push_interrupt(Sample {
            at_ns,
            latency_ns: latency,
            missed,
        });
        done += 1 + missed;
        switch_missed += missed;
        next += (1 + missed) * interval;
        let more = done < planned;

        if task_ready && task_is_gone(task, control) {
            // The task acknowledged its last release, then left or died:
            // releasing it now could signal a dead waiter. This event is
            // missed and the measuring ends.
            switch_missed += 1;
            end.task_gone = true;
            break;
        }
        if !task_ready {
            // Still blocked or running late: releasing again would post a
            // counting mechanism twice. This event is missed.
            switch_missed += 1;
            if task_is_gone(task, control) {
                end.task_gone = true;
                break;
            }
            if more {
                expirations = wait(timerfd.as_ref(), next);
            }
            continue;
        }
        let inject = injected(plan.inject, releases);
        releases += 1;
        releaser.prepare();
        let release = stamp_and_release(releaser, inject);
        if more {
            expirations = wait(timerfd.as_ref(), next);
        }
        pending = Some(Pending {
            release_ns: release,
            at_ns,
        });
    }
    end.deadlines = done;

    // Off the measuring span: the last release's acknowledgement.
    if let Some(p) = pending {
        let give_up = clock::now_ns() + LAST_ACK_WAIT_NS;
        loop {
            if collect(task, releases, p, switch_missed, rings) {
                switch_missed = 0;
                pending = None;
                break;
            }
            if task_is_gone(task, control) {
                end.task_gone = true;
                break;
            }
            if clock::now_ns() >= give_up {
                end.unacked = switch_missed + 1;
                break;
            }
            clock::sleep_for(1_000_000);
        }
    }
    // Every event not carried by a sample lands in the series as missed.
    let tail = switch_missed + u64::from(pending.is_some());
    rings.switch_missed_tail.store(tail, Ordering::Release);

    // Let the task leave its loop; a task that is gone is not released
    // again (its waiter may be dead).
    control.quit.store(1, Ordering::Release);
    releaser.finish(!task_is_gone(task, control));
    end.release_errno = releaser.failed_errno;
    end
}
