//! The processes side of `rtlab exec`: `--processes` (every task a
//! separate process, rtlab-exec's `processes`) and the hidden
//! `rtlab exec process-worker PLAN` each of those processes runs.

use crate::cli::PeriodicTaskArgs;
use crate::input::bad_input;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::settings::flag;
use rtlab_exec::periodic::{Mode, PeriodicConfig};
use rtlab_exec::processes::{worker_main, ProcessesConfig};
use rtlab_probe::Probe;
use std::path::PathBuf;
use std::process::ExitCode;

/// The probe of a checked periodic task set: its threads, or with
/// `--processes` one process per task, released as its `mode` says (the
/// executive focused on `focus` when given). The workers are this very
/// binary (`/proc/self/exe`, whatever replaced it on disk since).
pub fn probe(
    task: &PeriodicTaskArgs,
    config: PeriodicConfig,
    focus: Option<&CpuSet>,
) -> anyhow::Result<Box<dyn Probe>> {
    if !task.processes {
        return Ok(Box::new(config));
    }
    let release = config.mode;
    let mut processes = ProcessesConfig::new(config, release, PathBuf::from("/proc/self/exe"));
    processes.focus = focus.cloned();
    if let Err(e) = processes.validate() {
        bad_input!("{}", e.render(flag));
    }
    Ok(Box::new(processes))
}

/// `rtlab exec process-worker PLAN`: one task of a run with --processes.
pub fn run(plan: &str) -> ExitCode {
    ExitCode::from(worker_main(plan).clamp(0, 255) as u8)
}

/// One sub-table of kurt-table: its letter, the release, whether the
/// executive was focused, and the title.
pub type TableTitle = (char, Mode, bool, &'static str);

/// The sub-tables of kurt-table, in the paper's order; with
/// `--processes`, of processes, and with `--focus` a third, the executive
/// focused (paper 002's SCHED_KURT_PROCS against SCHED_ALL_PROCS).
pub fn table_titles(processes: bool, focused: bool) -> Vec<TableTitle> {
    match (processes, focused) {
        (false, _) => vec![
            ('a', Mode::Fifo, false, "SCHED_FIFO (self-timed, clock_nanosleep)"),
            (
                'b',
                Mode::Executive,
                false,
                "rtlab executive (wake early and spin)",
            ),
        ],
        (true, false) => vec![
            (
                'a',
                Mode::Fifo,
                false,
                "SCHED_FIFO processes (self-timed, clock_nanosleep)",
            ),
            (
                'b',
                Mode::Executive,
                false,
                "processes under rtlab's executive (rtlab exec serve, rtlab-client)",
            ),
        ],
        (true, true) => vec![
            (
                'a',
                Mode::Fifo,
                false,
                "SCHED_FIFO processes (self-timed, clock_nanosleep)",
            ),
            (
                'b',
                Mode::Executive,
                false,
                "processes under rtlab's executive, every process on every CPU (SCHED_ALL_PROCS)",
            ),
            (
                'c',
                Mode::Executive,
                true,
                "processes under rtlab's executive, focused: its CPUs theirs alone (SCHED_KURT_PROCS)",
            ),
        ],
    }
}
