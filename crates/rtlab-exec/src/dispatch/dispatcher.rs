//! The dispatching loop (paper 002 §4.1): for each event, sleep to its
//! instant minus the guard (learned online: crate::guard), spin to the
//! nanosecond, fire its module, push its dispatch error.

use super::config::Inject;
use super::extras::scaled;
use crate::guard::sleep::spin_until;
use crate::guard::Learner;
use crate::module::{Module, Slot};
use crate::plan::EventSource;
use rtlab_core::clock;
use rtlab_core::result::ExecutiveThread;
use rtlab_probe::recorder::Sample;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How the dispatcher thread ended.
pub(super) struct End {
    /// When the loop ended (CLOCK_MONOTONIC), for the measured length.
    pub end_ns: u64,
    pub fired: u64,
    pub missed: u64,
    pub planned: u64,
    pub module_counts: Vec<(String, u64, u64)>,
    /// What its guard learner saw and chose.
    pub guards: Option<ExecutiveThread>,
}

/// The dispatching loop's state: everything allocated before the first event.
pub(super) struct Dispatcher<'a> {
    pub events: &'a dyn EventSource,
    /// Events dispatched so far, over all repetitions (for the pager).
    pub position: &'a AtomicU64,
    pub modules: Vec<(String, Box<dyn Module>)>,
    /// One repetition's length, after the speed.
    pub period: u64,
    /// Offsets are divided by this (extras::scaled).
    pub speed: f64,
    /// The guard of each sleep (fixed, or learned: crate::guard).
    pub learner: Box<Learner>,
    pub cpu: Option<usize>,
    /// Events fire this long before their instant (Extras::lead).
    pub lead_ns: u64,
    pub skip_after_ns: u64,
    pub inject: Option<Inject>,
}

impl Dispatcher<'_> {
    /// Hot path: the clock, the sleep, the spin, the module and the ring
    /// push; nothing else until the plan is done or `stop` is set.
    pub(super) fn run(
        &mut self,
        start_ns: u64,
        planned: u64,
        ring: &mut rtrb::Producer<Sample>,
        dropped: &AtomicU64,
        stop: &AtomicBool,
    ) -> End {
        let n = self.events.len();
        let mut done: u64 = 0;
        let mut fired: u64 = 0;
        let mut missed: u64 = 0;
        let mut repetition_start = start_ns;
        let mut pending_missed = 0;
        // The instant before the first (the spin budget's span): none, so
        // the first event's span is the whole time since the clock began.
        let mut previous = 0;
        'plan: loop {
            for index in 0..n {
                if done >= planned {
                    break 'plan;
                }
                self.position.store(done, Ordering::Relaxed);
                let event = self.events.event(index);
                let planned = repetition_start.saturating_add(scaled(event.offset_ns, self.speed));
                let at = planned.saturating_sub(self.lead_ns);
                let Some(woke) = self.learner.wake_before(at, previous, stop) else {
                    break 'plan;
                };
                previous = at;
                let mut now = spin_until(at);
                self.learner.add_spin(now - woke);
                done += 1;
                // Checked at the instant, after the sleep: a wake-up that a
                // host stall made late skips the event as surely as a
                // dispatcher that fell behind.
                if now - at > self.skip_after_ns {
                    missed += 1;
                    pending_missed += 1;
                    continue;
                }
                if let Some(inject) = self.inject {
                    if done.is_multiple_of(inject.every) {
                        let until = now + inject.delay_ns;
                        while now < until {
                            now = clock::now_ns();
                        }
                    }
                }
                let fire = clock::now_ns();
                if let Some((_, module)) = self.modules.get_mut(usize::from(event.module)) {
                    let slot = Slot {
                        index: done - 1,
                        start_ns,
                        planned_ns: planned - start_ns,
                    };
                    module.fire_at(&event, slot, fire);
                }
                fired += 1;
                let sample = Sample {
                    at_ns: planned - start_ns,
                    latency_ns: fire - at,
                    missed: pending_missed,
                };
                pending_missed = 0;
                if ring.push(sample).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            repetition_start = repetition_start.saturating_add(self.period);
        }
        let end_ns = clock::now_ns();
        End {
            end_ns,
            guards: Some(self.learner.report(
                "dispatcher",
                self.cpu,
                0,
                end_ns.saturating_sub(start_ns),
            )),
            fired,
            missed,
            planned,
            module_counts: self
                .modules
                .iter()
                .map(|(name, m)| {
                    let (n, failed) = m.counts();
                    (name.clone(), n, failed)
                })
                .collect(),
        }
    }
}
