//! `rtlab traffic record|import|gen|export|replay` (paper 002's ARTS).

use super::traffic_plan::{TrafficExportArgs, TrafficGenArgs, TrafficImportArgs};
use super::traffic_record::TrafficRecordArgs;
use super::traffic_replay::TrafficReplayArgs;
use clap::Subcommand;

/// `rtlab traffic ...`: packet traffic on an exact schedule (docs/traffic.md).
#[derive(Subcommand)]
pub enum TrafficCommand {
    /// Receive UDP datagrams with kernel timestamps: a plan of what came, and how close to its plan.
    Record(Box<TrafficRecordArgs>),
    /// A pcap or pcapng capture's UDP datagrams as a traffic plan.
    Import(TrafficImportArgs),
    /// A traffic plan from a pattern: constant rate, Poisson, bursts, on/off.
    Gen(TrafficGenArgs),
    /// A traffic plan as a pcap on its exact schedule (for tcpreplay and others).
    Export(TrafficExportArgs),
    /// Send a traffic plan's packets, each at its planned instant, and measure their departures.
    Replay(Box<TrafficReplayArgs>),
}
