//! `rtlab traffic import|gen|export`: traffic plans from captures and
//! patterns, and plans as captures.
//!
//! CONTRACT (issue 20): the plan-side part owns this file and may add
//! flags; the names below are the contract.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab traffic import capture.pcap -o replay.plan
  rtlab traffic import capture.pcapng --filter 'udp and dst port 7000' -o replay.plan --json

Reads pcap (microsecond or nanosecond) and pcapng captures of Ethernet,
Linux cooked (v1, v2) or raw IP links, keeps the UDP datagrams (IPv4, IPv6,
VLAN tags) that pass --filter, one flow per source and destination, and
writes a traffic plan: offsets from the first kept packet, sizes, payload
digests. Streamed: a capture of 10 M packets is read once, in bounded memory.
Exit code: 0 written, 1 the plan could not be written, 2 bad input (the file
and where it stops making sense). Docs: docs/traffic-plans.md.")]
pub struct TrafficImportArgs {
    /// The capture (pcap or pcapng, told apart by its first bytes).
    pub file: PathBuf,
    /// Which datagrams: tcpdump's words, joined by `and`: `udp`, `[src|dst] port N`, `[src|dst] host ADDR`.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Where to write the plan (binary form).
    #[arg(short, long, value_name = "PLAN")]
    pub output: PathBuf,
    /// Print what was read and kept as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `rtlab traffic gen`'s patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TrafficPattern {
    /// Evenly spaced at --rate.
    Constant,
    /// Exponential gaps of mean 1/--rate.
    Poisson,
    /// --burst packets --gap apart, a burst every --every.
    Bursts,
    /// --rate during --on, silence during --off (--exponential: random lengths of those means).
    OnOff,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab traffic gen constant --rate 2k --count 10000 --size 64 -o cbr.plan
  rtlab traffic gen poisson --rate 10k --duration 10s --size 64-1400 -o poisson.plan
  rtlab traffic gen bursts --burst 16 --gap 10us --every 1ms --count 16000 -o bursts.plan
  rtlab traffic gen on-off --rate 50k --on 100ms --off 400ms --duration 5s -o onoff.plan

Writes a traffic plan, streamed (10 M packets in bounded memory) and
seeded (the same seed, the same plan). Rates: 2000, 2k, 2000/s, 5/ms.
Exit code: 0 written, 1 the output could not be written, 2 bad input.
Docs: docs/traffic-plans.md.")]
pub struct TrafficGenArgs {
    #[arg(value_enum)]
    pub pattern: TrafficPattern,
    /// Packets per second (constant, poisson, on-off): 2000, 2k, 1.5M, 5/ms.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Bursts: packets per burst.
    #[arg(long, value_name = "N")]
    pub burst: Option<u64>,
    /// Bursts: time between the packets of a burst.
    #[arg(long, value_name = "DURATION")]
    pub gap: Option<String>,
    /// Bursts: time between the starts of bursts.
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// On-off: length of an on-period.
    #[arg(long, value_name = "DURATION")]
    pub on: Option<String>,
    /// On-off: length of an off-period.
    #[arg(long, value_name = "DURATION")]
    pub off: Option<String>,
    /// On-off: exponential period lengths of those means.
    #[arg(long)]
    pub exponential: bool,
    /// Datagram size in bytes (UDP payload), or MIN-MAX for uniform sizes.
    #[arg(long, default_value = "64", value_name = "BYTES|MIN-MAX")]
    pub size: String,
    /// How many packets.
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub count: Option<u64>,
    /// Packets whose offset is below this.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Flows the packets are spread over, round-robin.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub flows: u16,
    /// Where the flows are sent unless `replay --to` says otherwise.
    #[arg(long, value_name = "ADDR:PORT")]
    pub dest: Option<String>,
    /// Seed of the random gaps and sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(short, long, value_name = "PLAN")]
    pub output: PathBuf,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab traffic export cbr.plan --to 10.0.0.2:7000 -o cbr.pcap
  rtlab traffic export cbr.plan --to 10.0.0.2:7000 --from 10.0.0.1:5000 --dst-mac 02:00:00:00:00:02 -o cbr.pcap

Writes one Ethernet/IP/UDP frame per event, timestamped exactly at its
offset, each payload carrying rtlab's stamp (stream, sequence, planned
instant) so `rtlab traffic record` measures whatever replays it.
Exit code: 0 written, 1 the output could not be written, 2 bad input.
Docs: docs/traffic-plans.md.")]
pub struct TrafficExportArgs {
    /// The traffic plan.
    pub plan: PathBuf,
    /// Destination of every packet (else each flow's dest=).
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: Option<String>,
    /// Source address and port (flow i gets port + i).
    #[arg(long, default_value = "10.0.0.1:5000", value_name = "ADDR:PORT")]
    pub from: String,
    #[arg(long, default_value = "02:00:00:00:00:01", value_name = "MAC")]
    pub src_mac: String,
    #[arg(long, default_value = "02:00:00:00:00:02", value_name = "MAC")]
    pub dst_mac: String,
    /// The stamps' stream id (hex or decimal; random by default).
    #[arg(long, value_name = "ID")]
    pub stream: Option<String>,
    #[arg(short, long, value_name = "PCAP")]
    pub output: PathBuf,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
