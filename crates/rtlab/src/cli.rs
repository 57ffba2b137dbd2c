//! The command line: `rtlab <noun> <verb>`.

use crate::input;
use clap::{Args, Parser, Subcommand, ValueEnum};
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::Policy;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "rtlab",
    version,
    about = "Make a stock Linux machine time-critical and prove it",
    after_help = "Examples:\n  rtlab measure timer --duration 10s\n  rtlab restore"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Measure latencies of this machine.
    #[command(subcommand)]
    Measure(Measure),
    /// Undo system changes left by an rtlab that was killed.
    #[command(
        after_help = "Example:\n  rtlab restore          # after `kill -9` of a running rtlab\n\n\
Every change rtlab makes (sysctls, /dev/cpu_dma_latency, ...) is journaled\n\
before it is made. A run restores them itself on exit, on SIGINT/SIGTERM and\n\
on panic; this command (also run at the start of every measurement) restores\n\
what a SIGKILL or a power loss left behind."
    )]
    Restore(RestoreArgs),
    /// Run one load generator alone (cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd).
    Load(Box<crate::commands::load::LoadArgs>),
    /// Internal: the process a load runs in.
    #[command(name = "__load-worker", hide = true)]
    LoadWorker(crate::commands::load::WorkerArgs),
}

#[derive(Subcommand)]
pub enum Measure {
    /// Timer wake-up latency per CPU, as cyclictest measures it.
    Timer(Box<TimerArgs>),
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Print what was restored as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// clock_nanosleep to absolute deadlines on a fixed grid.
    Abs,
    /// clock_nanosleep relative to the time before sleeping (cyclictest -r).
    Rel,
    /// A periodic absolute timerfd; the kernel counts overruns.
    Timerfd,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure timer                                   # every CPU, FIFO 90, 1 ms, 10 s
  rtlab measure timer --cpus 1 --duration 1m --json run.json
  rtlab measure timer --priority 30 --loops 100000 --histfile hist.txt --hist-max 1000us
                                                        # paper 000's cyclictest -p 30 -l 100000 -H 1000
  rtlab measure timer --break-at 500us                  # stop at the first wake-up later than 500 µs

Defaults: SCHED_FIFO 90, one thread pinned per online CPU, absolute clock_nanosleep,
memory locked, /dev/cpu_dma_latency held at 0, timer slack 1 ns. Every setting in
effect is recorded in the JSON result. Exit code: 0 done, 1 failure or --break-at
crossed, 2 bad input, 130 stopped by a signal (the partial result is kept).")]
pub struct TimerArgs {
    /// CPUs to measure on, one pinned thread each: `all` or a list like 0,2-3.
    #[arg(long, default_value = "all", value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: CpuSelection,

    /// Period of the measuring threads.
    #[arg(long, default_value = "1ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub interval: u64,

    /// Added to the interval of each further thread (cyclictest -d).
    #[arg(long, default_value = "0us", value_parser = input::duration, value_name = "DURATION")]
    pub distance: u64,

    /// How long to measure [default: 10s].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION", conflicts_with = "loops")]
    pub duration: Option<u64>,

    /// Deadlines per thread instead of a duration (samples + missed = N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,

    /// Scheduling policy of the measuring threads: fifo, rr, other, batch, idle, deadline.
    #[arg(long, default_value = "fifo", value_parser = parse_policy)]
    pub policy: Policy,

    /// Real-time priority 1-99 for fifo and rr [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// SCHED_DEADLINE runtime per period (deadline = period = interval).
    #[arg(long, default_value = "100us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub dl_runtime: u64,

    /// How the threads wait for their deadline.
    #[arg(long, value_enum, default_value = "abs")]
    pub mode: ModeArg,

    /// Do not hold /dev/cpu_dma_latency at 0 during the run.
    #[arg(long)]
    pub no_dma_latency: bool,

    /// Set a sysctl for the run and restore it afterwards (repeatable),
    /// e.g. kernel.sched_rt_runtime_us=-1.
    #[arg(long, value_name = "KEY=VALUE")]
    pub sysctl: Vec<String>,

    /// Write the result as JSON (schema rtlab.run/1) to PATH, or `-` for stdout.
    /// A file is rewritten every 2 s during the run, so an interrupted run still leaves a valid one.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,

    /// Write a histogram in cyclictest's --histfile layout.
    #[arg(long, value_name = "PATH")]
    pub histfile: Option<PathBuf>,

    /// Range of the histfile: 1 µs bins up to this latency (cyclictest -h).
    #[arg(long, default_value = "1000us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub hist_max: u64,

    /// Add the histfile's all-threads summary column (cyclictest -H).
    #[arg(long)]
    pub histofall: bool,

    /// Write every sample as CSV (cpu,t_ns,latency_ns).
    #[arg(long, value_name = "PATH")]
    pub samples: Option<PathBuf>,

    /// Stop at the first wake-up later than this, mark the ftrace trace and report it.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub break_at: Option<u64>,

    /// No live status and no table (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}
