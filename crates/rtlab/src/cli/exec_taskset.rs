//! `rtlab exec import-rt-app` and `rtlab exec check-taskset`: task-set
//! files (docs/taskset.md).

use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec import-rt-app examples/rt-app-periodic.json                    # the task set on stdout
  rtlab exec import-rt-app examples/rt-app-periodic.json --output set.toml  # then: rtlab exec periodic --taskset set.toml
  rtlab exec import-rt-app examples/rt-app-periodic.json --json

Imports the periodic subset of an rt-app JSON task set: per task its run/runtime events
(their sum is the work), one timer (the period), instance (name-0, name-1, ...), delay (the
offset), policy and priority, SCHED_DEADLINE's dl-runtime/dl-period/dl-deadline (budget,
period, deadline) and its first CPU of cpus. Comments and trailing commas are read as rt-app
reads them. Locks, barriers, sleeps, memory and I/O events are refused, naming the task and
the key (exit code 2); keys that change nothing rtlab runs are dropped with a warning on
stderr. The list of every key and what becomes of it: docs/taskset.md.")]
pub struct ImportRtAppArgs {
    /// The rt-app JSON file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Write the task set (TOML) to this file, replaced atomically [default: stdout].
    #[arg(long, short, value_name = "FILE.toml")]
    pub output: Option<PathBuf>,

    /// Print the imported tasks and the warnings as JSON on stdout (with --output, the file is written too).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec check-taskset examples/taskset.toml
  rtlab exec check-taskset examples/taskset.toml --json

Reads a task-set file, checks every rule (docs/taskset.md) and prints its tasks with their
utilization per CPU. Exit code 0 when the file is valid, 2 with FILE:LINE: what is wrong.")]
pub struct CheckTasksetArgs {
    /// The task-set file (TOML).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Print the tasks and the utilization as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
