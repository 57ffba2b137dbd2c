//! `rtlab plan compile|check|show|gen|run`.

use super::shared::RunArgs;
use crate::input;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `rtlab plan ...`: plan files (docs/plan.md).
#[derive(Subcommand)]
pub enum PlanCommand {
    /// Convert a plan to the binary form (or to text with --text), checked first.
    Compile(CompileArgs),
    /// Check a plan: offsets in order, modules known, spacing, repeat period.
    Check(PlanCheckArgs),
    /// Show a plan's header, modules, timing figures and first events.
    Show(PlanShowArgs),
    /// Generate a periodic, jittered or Poisson plan, streamed to a file.
    Gen(GenArgs),
    /// Fire a plan's events at their exact times and record each one's dispatch error.
    Run(Box<PlanRunArgs>),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan run ticks.plan                     # once, guard learned online, FIFO 90
  rtlab plan run ticks.plan --cpu 1 --repeat 100 --guard 50us
  rtlab plan run traffic.txt --forever --load io --json run.json

A FIFO thread sleeps on an absolute clock_nanosleep programmed only for the next
event, until the event's time minus the guard, then spins on the clock to the exact
nanosecond and fires the event's module (mark, udp, wake, signal). With --guard auto
(the default) the guard starts from a 0.2 s warm-up and is then learned from every
wake-up: the 99.5 % quantile of its lateness at that idle length plus a margin, within
--spin-budget (the result's `executive` records the guards and the spin). Each event's
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

    /// How early to wake before each event and spin: `auto` (learned
    /// online from every wake-up, from a 0.2 s warm-up) or a duration.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION")]
    pub guard: String,

    /// With --guard auto: the most a learned guard may spin, % of the time between two events.
    #[arg(long, default_value = "25%", value_parser = rtlab_exec::guard::parse_percent, value_name = "PERCENT")]
    pub spin_budget: u32,

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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan compile examples/plan.txt -o plan.bin      # text -> binary
  rtlab plan compile plan.bin --text -o plan.txt        # binary -> text

Reads a plan in either form (told apart by its first bytes), checks it and
writes it in the binary form (or the text form with --text). A plan with
check errors (offsets out of order, unknown module ids, ...) is refused.
Exit code: 0 written, 2 bad input (file:line: what was expected).")]
pub struct CompileArgs {
    /// The plan to read (text or binary).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Where to write (replaced atomically).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Write the text form instead of the binary one.
    #[arg(long)]
    pub text: bool,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan check plan.txt
  rtlab plan check big.plan --json

Errors: offsets out of order, events for a module outside the table, a repeat
period not longer than the last offset, non-zero (reserved) flags. Warnings:
modules never used, events closer than 1 us, no events. Each finding names
the event index and, for a text plan, its line.
Exit code: 0 no errors (warnings allowed), 1 errors found, 2 the file does not read.")]
pub struct PlanCheckArgs {
    /// The plan (text or binary).
    pub file: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan show plan.txt
  rtlab plan show big.plan --events 3 --json")]
pub struct PlanShowArgs {
    /// The plan (text or binary).
    pub file: PathBuf,
    /// How many of the first events to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub events: u64,
    /// Print it all as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum GenPattern {
    /// One event every --period.
    Periodic,
    /// Every --period, each moved by a uniform ±--jitter (seeded).
    Jittered,
    /// Exponential gaps of mean 1/--rate (or --period), seeded.
    Poisson,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan gen periodic --period 1ms --count 1000 -o tick.plan
  rtlab plan gen periodic --period 1us --count 10000000 -o big.plan   # 240 MB, bounded memory
  rtlab plan gen jittered --period 1ms --jitter 50us --duration 10s --seed 7 -o j.plan
  rtlab plan gen poisson --rate 1000/s --duration 1m --data seq --module tx:udp:dest=127.0.0.1:7700 -o p.plan
  rtlab plan gen periodic --period 10ms --count 5 --text -o small.txt

Events are generated one at a time and streamed to the file (binary by
default, text with --text). --data seq puts the event's sequence number (u32,
little-endian) in data bytes 0-3. Exit code: 0 written, 2 bad input.")]
pub struct GenArgs {
    /// The pattern of offsets.
    #[arg(value_enum)]
    pub pattern: GenPattern,
    /// The module every event goes to: NAME:KIND[:key=value,...].
    #[arg(long, default_value = "tick:mark", value_name = "NAME:KIND[:k=v,...]")]
    pub module: String,
    /// Time between events (periodic, jittered), or the mean gap (poisson).
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub period: Option<u64>,
    /// Poisson: mean events per time, e.g. 1000/s, 5/ms, 2khz.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// How many events.
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub count: Option<u64>,
    /// Events whose (nominal) offset is below --start + DURATION.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,
    /// Jittered: the largest shift either way (at most half the period).
    #[arg(long, value_parser = input::duration, value_name = "DURATION")]
    pub jitter: Option<u64>,
    /// Offset of the first (nominal) event.
    #[arg(long, default_value = "0ns", value_parser = input::duration, value_name = "DURATION")]
    pub start: u64,
    /// Seed of the jitter and Poisson gaps (the same seed, the same plan).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Event data: hex:0102.. (up to 24 digits), seq, or text (up to 12 bytes).
    #[arg(long, value_name = "hex:..|seq|TEXT")]
    pub data: Option<String>,
    /// The plan repeats with this period (longer than the last offset).
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub repeat: Option<u64>,
    /// Where to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Write the text form instead of the binary one.
    #[arg(long)]
    pub text: bool,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
