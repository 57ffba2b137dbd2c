//! `rtlab plan compile|check|show|gen|run`.

use super::shared::RunArgs;
use crate::input;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `rtlab plan ...`: plan files (docs/plan.md).
#[derive(Subcommand)]
pub enum PlanCommand {
    /// Convert a plan to the binary form (or to text with --text), checked first.
    Compile(crate::commands::plan::CompileArgs),
    /// Check a plan: offsets in order, modules known, spacing, repeat period.
    Check(crate::commands::plan::CheckArgs),
    /// Show a plan's header, modules, timing figures and first events.
    Show(crate::commands::plan::ShowArgs),
    /// Generate a periodic, jittered or Poisson plan, streamed to a file.
    Gen(crate::commands::plan::GenArgs),
    /// Fire a plan's events at their exact times and record each one's dispatch error.
    Run(Box<PlanRunArgs>),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan run ticks.plan                     # once, guard from a warm-up, FIFO 90
  rtlab plan run ticks.plan --cpu 1 --repeat 100 --guard 50us
  rtlab plan run traffic.txt --forever --load io --json run.json

A FIFO thread sleeps on an absolute clock_nanosleep programmed only for the next
event, until the event's time minus the guard, then spins on the clock to the exact
nanosecond and fires the event's module (mark, udp, wake, signal). Each event's
dispatch error (fire time - planned time) is a sample of the series `dispatch`; an
event reached more than --skip-after late is skipped and counted missed.
--budget 'dispatch:p99.9<20us,missed=0' checks the run (docs/budgets.md).
Exit code: 0 done, 1 failure or --budget not kept, 2 bad input, 130 signal.")]
pub struct PlanRunArgs {
    /// The plan, text or binary (see `rtlab plan compile`).
    pub file: PathBuf,

    /// Pin the dispatcher to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Run the plan this many times (its `repeat` period apart, or back to back).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "forever")]
    pub repeat: Option<u64>,

    /// Repeat the plan until stopped (Ctrl-C, SIGTERM).
    #[arg(long)]
    pub forever: bool,

    /// How early to wake before each event and spin: `auto` (from a 0.2 s
    /// warm-up of this machine's wake-up latency) or a duration.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION")]
    pub guard: String,

    /// Skip an event reached later than this (counted missed).
    #[arg(long, default_value = "1ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub skip_after: u64,

    /// The dispatcher's real-time priority (SCHED_FIFO).
    #[arg(long, default_value_t = rtlab_probe::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: u32,

    /// Testing the dispatcher: spin this long before firing every
    /// --inject-every-th event; it must show in the dispatch error there.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,

    /// With --inject-delay: every N-th event.
    #[arg(long, default_value = "100", value_name = "N", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub inject_every: u64,

    #[command(flatten)]
    pub run: RunArgs,
}
