//! `rtlab traffic record`.
//!
//! The flags' names are issue 20's contract (docs/traffic-record.md).

use super::shared::RunArgs;
use crate::input;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab traffic record --listen 127.0.0.1:7000 --duration 10s -o got.plan
  rtlab traffic record --listen 0.0.0.0:7000 --count 20000 --idle 1s --json run.json
  rtlab traffic record --listen 127.0.0.1:7000 --idle 1s --against sent.plan --budget 'arrival_gap:p99<10us'

Every datagram is timestamped by the kernel as it arrives (SO_TIMESTAMPNS)
and written to the plan (-o): one flow per source, offsets from the first
arrival, sizes and payload digests (never the payloads). Series:
interarrival (the gaps); when the datagrams carry `rtlab traffic replay`'s
stamps, also arrival (|arrival - planned instant|, aligned on the first
stamped datagram) and arrival_gap (|arrival gap - planned gap|), with
lost, duplicate and reordered packets counted. --against: the plan that
was sent gives the planned instants and the packets expected. Datagrams
the kernel dropped for a full buffer are counted in a warning. Stops after
--duration, --count, --idle or at Ctrl-C (the run is then partial, the
plan written).
Exit code: 0 done, 1 failure or --budget not kept, 2 bad input, 130 signal.
Docs: docs/traffic-record.md.")]
pub struct TrafficRecordArgs {
    /// Where to receive: ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,
    /// Write what came as a traffic plan.
    #[arg(short, long, value_name = "PLAN")]
    pub output: Option<PathBuf>,
    /// Stop after this long.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,
    /// Stop after this many datagrams.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Stop once nothing came for this long after the first datagram.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub idle: Option<u64>,
    /// The plan that was sent: planned instants by stamp sequence, and the packets expected.
    #[arg(long, value_name = "PLAN")]
    pub against: Option<PathBuf>,
    /// Pin the receiver to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// The receiver's real-time priority (SCHED_FIFO).
    #[arg(long, default_value_t = rtlab_probe::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: u32,
    #[command(flatten)]
    pub run: RunArgs,
}
