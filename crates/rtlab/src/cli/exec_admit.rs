//! `rtlab exec admit`.

use super::shared::StoreArgs;
use crate::input;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `--policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdmitPolicy {
    /// Fixed priorities, preemptive (SCHED_FIFO: the executive's): exact response-time analysis.
    Fp,
    /// Earliest deadline first, preemptive (SCHED_DEADLINE): processor demand (QPA).
    Edf,
}

/// `--overheads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverheadsFrom {
    /// Run the executive's release path on each CPU in use (~0.3 s each) and add its jitter (p99) and cost.
    Measure,
    /// The textbook model: releases on time and free.
    None,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec admit examples/admit-fits.toml                       # with this machine's measured overheads
  rtlab exec admit examples/admit-rta.toml --overheads none       # Burns & Wellings: admitted by RTA alone
  rtlab exec admit examples/admit-overload.toml --overheads none  # U > 1: refused, and what would fit
  rtlab exec admit examples/admit-edf.toml --policy edf --overheads none --json
  rtlab exec admit examples/taskset.toml --budget-from last       # WCETs from a stored run's pWCET

Reads a task-set file (docs/taskset.md; an rt-app file: `rtlab exec import-rt-app` first)
and says whether every task meets its deadline. Per CPU: the utilization and every test
(utilization, Liu-Layland and hyperbolic bounds for rate-monotonic priorities, exact
response-time analysis for fixed priorities, processor demand (QPA) for EDF), each with its
value, bound and verdict; per task its WCET, deadline and worst-case response. A task's WCET
is its budget, else its longest work, or with --budget-from RUN the pWCET at 1e-9 per
activation of its execution series in that run. Tasks without a CPU are on the CPU `exec
periodic` puts them on. The executive's release jitter and cost, measured here (needs
SCHED_FIFO), enter every test. When refused: the first failing task, the failed test, by
how much, and what would fit (a longer period, a smaller budget, another CPU). Exit code 0
admitted, 1 not admitted, 2 bad input (FILE:LINE). docs/exec-admit.md.")]
pub struct ExecAdmitArgs {
    /// The task-set file (TOML, docs/taskset.md).
    #[arg(value_name = "TASKS.toml")]
    pub file: PathBuf,

    /// The scheduling policy the verdict is for.
    #[arg(long, value_enum, default_value_t = AdmitPolicy::Fp)]
    pub policy: AdmitPolicy,

    /// Where the executive's release jitter and cost come from.
    #[arg(long, value_enum, default_value_t = OverheadsFrom::Measure)]
    pub overheads: OverheadsFrom,

    /// The release jitter to assume instead of the measured one.
    #[arg(long, value_parser = input::duration, value_name = "DURATION")]
    pub jitter: Option<u64>,

    /// The executive's CPU time per release to assume instead of the measured one.
    #[arg(long, value_parser = input::duration, value_name = "DURATION")]
    pub release_cost: Option<u64>,

    /// A stored run (id, prefix or `last`): each task with a NAME.execution (else NAME.response) series there gets its pWCET at 1e-9 per activation as WCET.
    #[arg(long, value_name = "RUN")]
    pub budget_from: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// Print the analysis as JSON on stdout (schema rtlab.admit/1).
    #[arg(long)]
    pub json: bool,
}
