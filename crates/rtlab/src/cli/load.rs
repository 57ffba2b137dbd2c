//! `rtlab load` and the hidden `__load-worker`.

use crate::input;
use crate::outputs::OutputTarget;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab load cpu                                  # one busy thread per CPU for 30 s
  rtlab load vm --workers 40 --bytes 256M         # stress --vm 40 --vm-bytes 256M, capped to fit
  rtlab load io --dir /mnt/disk --duration 5m     # write + fsync 64 MiB files on that disk
  rtlab load fswalk --no-stat                     # ls -RU / instead of ls -lR /
  rtlab load dohell --forever                     # all of dohell's parts until Ctrl-C
  rtlab load vm:workers=4,bytes=256M,io           # several loads, as --load takes them
  rtlab load 'cmd:\"stress-ng --cpu 2 --vm 1\"'     # any external command

Loads: cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd:\"COMMAND\" (docs/load.md).
Every load runs at SCHED_OTHER in its own process group (and cgroup where
cgroup v2 is writable), dies with rtlab even on SIGKILL and removes its
temporary files. Flags set the parameter on every load that takes it.
Exit code: 0 done, 1 a load failed or ended early, 2 bad input, 130 stopped by a signal.")]
pub struct LoadArgs {
    /// The load: cpu, vm, io, fswalk, net, timers, msg, procfs, dohell or
    /// cmd:"COMMAND", with parameters as --load takes them (vm:workers=4,bytes=256M);
    /// several separated by commas.
    #[arg(value_name = "LOAD", value_parser = input::Label)]
    pub name: String,

    /// How long to load [default: 30s].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// Load until stopped (Ctrl-C, SIGTERM) instead of for a duration.
    #[arg(long, conflicts_with = "duration")]
    pub forever: bool,

    /// Threads doing the work (cpu, vm, io, fswalk, timers, procfs; net: senders).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,

    /// vm: bytes per worker [default: 256M]; io: bytes per file [default: 64M] (4096, 64K, 1G).
    #[arg(long, value_name = "SIZE")]
    pub bytes: Option<String>,

    /// io: bytes per write [default: 1M].
    #[arg(long, value_name = "SIZE")]
    pub block: Option<String>,

    /// net: datagram payload; msg: message size.
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// msg: groups of senders and receivers [default: 1].
    #[arg(long, value_name = "N")]
    pub groups: Option<u32>,

    /// msg: senders (= receivers) per group [default: 20].
    #[arg(long, value_name = "N")]
    pub fds: Option<u32>,

    /// timers: timers per worker [default: 8].
    #[arg(long, value_name = "N")]
    pub timers: Option<u32>,

    /// timers: period of every timer [default: 100us].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,

    /// io, dohell: where the private temporary directory is made (a disk, not tmpfs).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// fswalk, dohell: where the walk starts [default: /].
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,

    /// fswalk, dohell: list names without lstat (the modified dohell).
    #[arg(long)]
    pub no_stat: bool,

    /// Nice value of the load's processes (-20 to 19) [default: 0].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub nice: Option<i32>,

    /// Write the loads' records as JSON (schema rtlab.load/1) to PATH, or `-` for stdout.
    /// A file is rewritten every 2 s (status "running"), so a killed run still leaves one.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,

    /// No progress and no table (errors and notes still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

/// The child side of a load: started by rtlab itself, never by a user.
#[derive(Args)]
pub struct WorkerArgs {
    /// The load to run, as JSON.
    pub spec: String,
}
