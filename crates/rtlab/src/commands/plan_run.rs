//! `rtlab plan run`: the dispatcher fires a plan's events at their exact
//! times and records each one's dispatch error (paper 002's plan scheduler).

use super::measure::measure;
use crate::cli::RunArgs;
use crate::input::{self, bad_input};
use clap::Args;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_exec::dispatch::{DispatchConfig, Guard, Inject, Repeat};
use std::path::PathBuf;
use std::process::ExitCode;

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
    #[arg(long, default_value = "90", value_parser = clap::value_parser!(u32).range(1..=99))]
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

const MAX_GUARD_NS: u64 = 1_000_000_000;
const MAX_SKIP_AFTER_NS: u64 = 3_600_000_000_000;

fn config_from(args: &PlanRunArgs) -> anyhow::Result<DispatchConfig> {
    if let Some(cpu) = args.cpu {
        let online = CpuSet::online();
        if !online.contains(cpu) {
            bad_input!("--cpu {cpu}: not an online CPU (online: {online})");
        }
    }
    let guard = match args.guard.as_str() {
        "auto" => Guard::Auto,
        "0" => Guard::Fixed(0),
        text => match input::duration(text) {
            Ok(ns) if ns <= MAX_GUARD_NS => Guard::Fixed(ns),
            Ok(_) => bad_input!(
                "--guard {text}: at most 1s (the dispatcher spins for the guard at every event)"
            ),
            Err(e) => bad_input!("--guard {text}: expected auto or a duration ({e})"),
        },
    };
    if args.skip_after > MAX_SKIP_AFTER_NS {
        bad_input!("--skip-after: at most 1h");
    }
    // Read and check the plan now: a bad file is bad input, named with
    // its line, before anything runs.
    let plan = match rtlab_exec::plan::load(&args.file) {
        Ok(plan) => plan,
        Err(e) => bad_input!("{e}"),
    };
    if plan.events.is_empty() {
        bad_input!("{}: the plan has no events", args.file.display());
    }
    let report = rtlab_exec::plan::check::check_lines(
        &plan.header,
        plan.events.as_ref(),
        plan.lines.as_deref(),
    );
    if let Some(error) = report
        .findings
        .iter()
        .find(|f| f.severity == rtlab_exec::plan::Severity::Error)
    {
        let at = error.line.map_or(String::new(), |l| format!(":{l}"));
        bad_input!(
            "{}{at}: {} ({} errors: see `rtlab plan check`)",
            args.file.display(),
            error.message,
            report.errors
        );
    }
    Ok(DispatchConfig {
        plan: args.file.clone(),
        cpu: args.cpu,
        sched: SchedParams {
            policy: Policy::Fifo,
            priority: args.priority,
            deadline: None,
        },
        repeat: if args.forever {
            Repeat::Forever
        } else {
            Repeat::Times(args.repeat.unwrap_or(1))
        },
        guard,
        skip_after_ns: args.skip_after,
        inject: args.inject_delay.map(|delay_ns| Inject {
            delay_ns,
            every: args.inject_every,
        }),
    })
}

pub fn run(args: PlanRunArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}
