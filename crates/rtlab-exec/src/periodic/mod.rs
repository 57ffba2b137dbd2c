//! Periodic tasks (paper 002, KURT §4.3 and §4.4.1): `tasks` threads, each
//! activated every `period_ns` on one CPU, doing `work_ns` of spinning
//! work per activation, released either by rtlab's executive or by their
//! own `clock_nanosleep` (the paper's SCHED_FIFO comparison).
//!
//! * [`Mode::Executive`]: one executive thread (SCHED_FIFO, above the
//!   tasks) keeps every task's next activation, sleeps with an absolute
//!   `clock_nanosleep` until the earliest activation minus `guard_ns`,
//!   spins to the activation minus `release_early_ns` and wakes that
//!   task's futex (§4.1.1: wake early and spin). The task, blocked on its
//!   own futex, spins to its activation instant, stamps its lateness where
//!   the work really starts, spins `work_ns` and stamps its response.
//! * [`Mode::Fifo`]: every task is its own SCHED_FIFO thread sleeping with
//!   an absolute `clock_nanosleep` to its activations, stamping its
//!   lateness at wake-up and doing the same work.
//!
//! Phasing: task `i` is activated at `start + i × period / tasks + k ×
//! period` (staggered, the default), or every task at `start + k × period`
//! ([`Phasing::InPhase`]). The paper measured the time between consecutive
//! iterations of each process, which a constant phase does not change; we
//! measure lateness against the absolute grid, where tasks in phase on one
//! CPU are late by the work of the tasks released before them: staggering
//! measures the scheduler, not the queue.
//!
//! Series, per task: `taskN.lateness` (metric `activation_lateness`: the
//! start of the work minus the activation instant) and `taskN.response`
//! (metric `response_time`: the end of the work minus the activation).
//! Every planned activation is accounted for: `samples + missed` of a
//! lateness series is the number of activations planned for that task
//! (in a run stopped early, the activations never reached are neither). An
//! activation is *missed* when it comes while the task is still working on
//! an earlier one (executive), or when the task wakes a whole period or
//! more late (fifo: every activation that passed meanwhile). The `missed`
//! count of a response series is the number of deadline misses: a response
//! later than the next activation (deadline = period).
//!
//! A task set ([`PeriodicConfig::from_task_set`], `exec periodic
//! --taskset`) gives each task its own period, offset, work (fixed, or
//! uniform and drawn per activation), deadline, budget, priority and CPU,
//! with one executive per CPU in use. Its series are `<name>.lateness` and
//! `<name>.response` (a deadline miss is a response later than the task's
//! deadline), and `<name>.execution` for a task with a budget (metric
//! `execution_time`, the end of the work minus its start; `missed`: budget
//! overruns).
//!
//! `config` holds the settings, `timing` each task as the threads see it,
//! `handoff` what the threads share, `release` the hot loops, `threads`
//! the run; they import each other, never this file, which joins them as a
//! [`Probe`] (no import circle).

pub(crate) mod config;
pub(crate) mod handoff;
pub(crate) mod release;
pub(crate) mod threads;
pub(crate) mod timing;

use rtlab_probe::{Probe, ProbeRun, Start};
use threads::PeriodicRun;

pub use config::{
    activations_in, default_cpu, Mode, PeriodicConfig, Phasing, SetPlan, DEFAULT_PERIOD_NS,
    DEFAULT_WORK_NS, EXECUTIVE_PRIORITY, GUARD_NS, MAX_RUN_NS, MAX_TASKS, MIN_PERIOD_NS,
    RELEASE_EARLY_NS, TASK_PRIORITY,
};
pub use threads::start;

impl Probe for PeriodicConfig {
    fn kind(&self) -> &'static str {
        "periodic"
    }
    fn planned_ns(&self) -> u64 {
        PeriodicConfig::planned_ns(self)
    }
    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let run: PeriodicRun = start(self, with.stop, with.samples_csv)?;
        Ok(Box::new(run))
    }
}
