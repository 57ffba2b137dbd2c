//! The command line: `rtlab <noun> <verb>`.

//!
//! One file per noun, with the argument groups several commands share in
//! `shared.rs`; every type is re-exported here (`crate::cli::RunArgs`).
//! The files import `shared` only (and the value types of `crate::input`
//! and `crate::outputs`; this one the load worker's name in
//! `crate::session`), never each other or this one, and the commands
//! import the command line, never the other way round.

mod campaign;
mod exec;
mod exec_admit;
mod exec_serve;
mod exec_taskset;
mod focus;
mod install;
mod load;
mod measure;
mod monitor;
mod net;
mod plan;
mod report;
mod runs;
mod shared;
mod store;
mod traffic;
mod traffic_plan;
mod traffic_record;
mod traffic_replay;
mod tune;

pub use campaign::*;
pub use exec::*;
pub use exec_admit::*;
pub use exec_serve::*;
pub use exec_taskset::*;
pub use focus::*;
pub use install::*;
pub use load::*;
pub use measure::*;
pub use monitor::*;
pub use net::*;
pub use plan::*;
pub use report::*;
pub use runs::*;
pub use shared::*;
pub use store::*;
pub use traffic::*;
pub use traffic_plan::*;
pub use traffic_record::*;
pub use traffic_replay::*;
pub use tune::*;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "rtlab",
    version,
    about = "Make a stock Linux machine time-critical and prove it",
    after_help = "Examples:
  rtlab quick                          # timer latency idle and under load, promoted and not (~1 min)
  rtlab measure timer --duration 10s --load vm,io
  rtlab campaign run hallberg2017      # paper 000's loads x promotion
  rtlab net probe --netns              # response time of 4 round trips per message, open loop
  rtlab runs                           # every stored result
  rtlab compare RUN_A RUN_B            # percentiles side by side, with significance
  rtlab restore                        # undo what a killed rtlab left changed"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The command line as clap sees it, with what the derive attributes would
/// have to repeat on every duration: its value may start with `-`, so that
/// `--duration -1s` reaches the duration parser and gets its message
/// ("negative durations are not allowed") instead of clap's "unexpected
/// argument". Every duration argument is named `DURATION`.
pub fn command() -> clap::Command {
    fn durations_take_hyphens(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|arg| {
            let duration = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|n| n == "DURATION"));
            if duration {
                arg.allow_hyphen_values(true)
            } else {
                arg
            }
        })
        .mut_subcommands(durations_take_hyphens)
    }
    durations_take_hyphens(Cli::command())
}

/// Parses the process's arguments with [`command`]; exits with clap's
/// message and code 2 on bad usage.
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches)
        .map_err(|e| e.format(&mut command()))
        .unwrap_or_else(|e| e.exit())
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
    /// The quick campaign (idle, cpu, vm, io × promoted / not promoted, ~1 min) and a verdict.
    Quick(QuickArgs),
    /// Plan or run a campaign: probes × loads × configurations, every result stored.
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// List stored runs, newest first; delete and tag them.
    Runs(RunsArgs),
    /// Show one stored run.
    Show(ShowArgs),
    /// Compare stored runs side by side: percentiles, ratios and significance.
    Compare(CompareArgs),
    /// Write a stored run as json, csv, histfile or markdown.
    Export(ExportArgs),
    /// Charts and tables of stored runs or a campaign: one self-contained HTML page, Markdown or the terminal.
    Report(Box<ReportArgs>),
    /// Store cyclictest results (histfile or --json output) so they compare with rtlab's.
    Import(ImportArgs),
    /// The result store itself: check its integrity.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run one load generator alone (cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd).
    Load(Box<LoadArgs>),
    /// End-to-end network response time: a robust server and an open-loop probe.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab net probe --netns                       # rtlab's server across a veth pair\n  rtlab net serve --listen 0.0.0.0:7700 --policy fifo --priority 80   # on the server host\n  rtlab net probe 10.0.0.2:7700 --count 10000  # from the client host: paper 000's measurement"
    )]
    Net(Net),
    /// Plan files of events at exact offsets: compile, check, show, generate.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab plan gen periodic --period 1ms --count 1000 -o tick.plan\n  rtlab plan check plan.txt\n  rtlab plan show tick.plan --events 5\n  rtlab plan compile plan.txt -o plan.bin\n\nFormats: docs/plan-format.md; commands: docs/plan.md."
    )]
    Plan(PlanCommand),
    /// The executive's periodic tasks, and paper 002's KURT table (executive vs SCHED_FIFO).
    #[command(subcommand)]
    Exec(ExecCommand),
    /// Packet traffic on an exact schedule: record, import, generate, export and replay (paper 002's ARTS).
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab traffic gen constant --rate 2k --count 2000 -o cbr.plan\n  rtlab traffic record --listen 127.0.0.1:7000 --idle 1s -o got.plan &\n  rtlab traffic replay cbr.plan --to 127.0.0.1:7000\n  rtlab traffic import capture.pcap -o capture.plan\n\nDocs: docs/traffic.md; the plan's traffic events: docs/plan-format.md."
    )]
    Traffic(TrafficCommand),
    /// Measure latency continuously at a low duty and serve it to Prometheus (/metrics).
    Monitor(Box<MonitorArgs>),
    /// Give CPUs to a command alone: a cpuset partition, every other task and IRQ moved away, all put back after.
    Focus(FocusArgs),
    /// Promote the processes on the critical path and keep them promoted; audit the system.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab tune check                                    # what stands between this machine and real time\n  rtlab tune show --rt                                # the real-time threads now\n  rtlab tune set 'alarmd|msgd' --policy fifo --priority 50\n  rtlab tune apply --rules /etc/rtlab/rules.toml      # once\n  rtlab tune watch                                    # and as processes restart\n  rtlab tune systemd alarmd --policy fifo --priority 50\n  rtlab tune undo                                     # take the last command back\n\nDocs: docs/tune.md, docs/tune-rules.md, docs/tune-systemd.md, docs/tune-check.md."
    )]
    Tune(TuneCommand),
    /// Print the completion script of a shell (bash, zsh, fish, ...) on stdout.
    Completions(CompletionsArgs),
    /// Manual pages: rtlab(1) on stdout, or one page per command with --dir.
    Man(ManArgs),
    /// Internal: the process a load runs in.
    #[command(name = crate::session::LOAD_WORKER, hide = true)]
    LoadWorker(WorkerArgs),
}
