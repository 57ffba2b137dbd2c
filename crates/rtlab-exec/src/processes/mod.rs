//! Periodic tasks as separate processes (paper 002's Table 4.1 with
//! processes, issue 18): each task is a process of the rtlab binary
//! (`rtlab exec process-worker PLAN`, [`worker_main`]), released either
//!
//! * by rtlab's executive as a service: `rtlab exec serve` is started as a
//!   child on a private socket, each process attaches to it through
//!   rtlab-client ([`rtlab_client::Periodic`]) at its phase on the
//!   executive's grid and returns from `wait_next` at each activation
//!   ([`Mode::Executive`](crate::periodic::Mode)); or
//! * by itself: SCHED_FIFO, pinned, an absolute `clock_nanosleep` to each
//!   activation (paper 002's Program 4.7, [`Mode::Fifo`](crate::periodic::Mode)).
//!
//! The task set is `exec periodic`'s ([`PeriodicConfig`](crate::periodic::PeriodicConfig)),
//! and so are the series (`taskN.lateness`, `taskN.response`) and their
//! accounting (samples + missed = planned per task; a response series'
//! missed are deadline misses): `kurt-table`'s table, `show`, `compare`
//! and budgets work on a processes run unchanged.
//!
//! The workers report on their stdout pipes in fixed-size binary records
//! ([`record`]), batched off the activation instant; the run's supervisor
//! thread reads them into the recorder's rings and watches every child:
//! each in its own process group, killed and reaped whatever happens (a
//! stop, a worker that dies or hangs, the executive dying: the run fails
//! with the reason, never hangs).
//!
//! `config` holds the settings, `record` the pipe format, `children` the
//! processes, `serve` the executive, `worker` a task's loops,
//! `supervisor` and `run` the run; they import each other, never this
//! file, which joins them as a [`Probe`].

mod children;
mod config;
pub mod record;
mod run;
mod serve;
mod supervisor;
mod worker;

use rtlab_probe::{Probe, ProbeRun, Start};

pub use config::{ProcessesConfig, WorkerPlan, MAX_PROCESSES, WORKER_SUBCOMMAND};
pub use run::{start, ProcessesRun, START_MARGIN_NS};
pub use worker::{worker_main, EXIT_BAD_PLAN, EXIT_FAILED};

impl Probe for ProcessesConfig {
    fn kind(&self) -> &'static str {
        "periodic-processes"
    }
    fn planned_ns(&self) -> u64 {
        self.periodic.planned_ns()
    }
    /// The task set's settings as `exec periodic` records them, with the
    /// release of the processes as `mode` and `"processes": true`.
    fn config_json(&self) -> serde_json::Value {
        let mut json = rtlab_probe::config_json(&self.periodic);
        json["mode"] = serde_json::json!(self.release.as_str());
        json["processes"] = serde_json::json!(true);
        json["focus"] = serde_json::json!(self.focus.as_ref().map(|cpus| cpus.to_string()));
        json
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let run: ProcessesRun = start(self, with.stop, with.samples_csv)?;
        Ok(Box::new(run))
    }
}
