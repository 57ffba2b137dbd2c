//! The processes side of `rtlab exec`: `--processes` (every task a
//! separate process, rtlab-exec's `processes`) and the hidden
//! `rtlab exec process-worker PLAN` each of those processes runs.

use crate::cli::PeriodicTaskArgs;
use crate::input::bad_input;
use rtlab_core::settings::flag;
use rtlab_exec::periodic::{Mode, PeriodicConfig};
use rtlab_exec::processes::{worker_main, ProcessesConfig};
use rtlab_probe::Probe;
use std::path::PathBuf;
use std::process::ExitCode;

/// The probe of a checked periodic task set: its threads, or with
/// `--processes` one process per task, released as its `mode` says. The
/// workers are this very binary (`/proc/self/exe`, whatever replaced it
/// on disk since).
pub fn probe(task: &PeriodicTaskArgs, config: PeriodicConfig) -> anyhow::Result<Box<dyn Probe>> {
    if !task.processes {
        return Ok(Box::new(config));
    }
    let release = config.mode;
    let processes = ProcessesConfig::new(config, release, PathBuf::from("/proc/self/exe"));
    if let Err(e) = processes.validate() {
        bad_input!("{}", e.render(flag));
    }
    Ok(Box::new(processes))
}

/// `rtlab exec process-worker PLAN`: one task of a run with --processes.
pub fn run(plan: &str) -> ExitCode {
    ExitCode::from(worker_main(plan).clamp(0, 255) as u8)
}

/// The sub-tables of kurt-table, in the paper's order: its letter, the
/// release and the title; with `--processes`, of processes.
pub fn table_titles(processes: bool) -> [(char, Mode, &'static str); 2] {
    if processes {
        [
            (
                'a',
                Mode::Fifo,
                "SCHED_FIFO processes (self-timed, clock_nanosleep)",
            ),
            (
                'b',
                Mode::Executive,
                "processes under rtlab's executive (rtlab exec serve, rtlab-client)",
            ),
        ]
    } else {
        [
            ('a', Mode::Fifo, "SCHED_FIFO (self-timed, clock_nanosleep)"),
            (
                'b',
                Mode::Executive,
                "rtlab executive (wake early and spin)",
            ),
        ]
    }
}
