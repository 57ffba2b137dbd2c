//! The result of one run, as stored, exported and compared. Serialized as
//! JSON with the versioned schema `rtlab.run/1` (docs/schema/rtlab.run-1.json).
//! All times are nanoseconds; keys are snake_case identifiers.

use crate::env::Environment;
use crate::sched::SchedParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

pub const RUN_SCHEMA: &str = "rtlab.run/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still measuring: a file in this state was written by a run that has
    /// not finished (or was killed); its series hold what was measured.
    Running,
    /// Ran to its planned end.
    Complete,
    /// Stopped early by the user (SIGINT/SIGTERM): what was measured is kept.
    Partial,
    /// Stopped by `--break-at`: see `break_event`.
    Break,
    /// Could not run to the end because something failed (a load that
    /// could not start, a probe error): see `warnings`.
    Failed,
}

/// The whole record of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub id: String,
    /// Probe that produced it: `timer`.
    pub probe: String,
    pub status: RunStatus,
    pub started_at: String,
    #[serde(default)]
    pub ended_at: Option<String>,
    /// Measured time from the first deadline to the end, ns.
    pub elapsed_ns: u64,
    /// The command line that started the run.
    pub command: Vec<String>,
    /// Every setting of the probe, defaults included.
    pub config: serde_json::Value,
    /// What was actually in effect for the process.
    pub effective: Effective,
    pub environment: Environment,
    pub series: Vec<Series>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_event: Option<BreakEvent>,
    /// Loads that ran beside the probe; empty for an idle machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadRecord>,
    /// Where the run sits in a campaign, when it was run by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<CampaignRef>,
    /// The noise probe's attribution: noise per CPU and per source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseReport>,
    /// The net probe's message counts, server counters and per-message
    /// timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetReport>,
    /// Things that could not be done as asked, and anything else a reader
    /// of the figures must know.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Process-wide settings as they were in effect during the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Effective {
    pub mlockall: bool,
    /// The PM QoS target held on /dev/cpu_dma_latency, None when not held.
    pub dma_latency_us: Option<i32>,
    pub prefaulted_stack_bytes: usize,
    /// Changes made through the journal (and restored afterwards).
    #[serde(default)]
    pub system_changes: Vec<String>,
}

/// How one measuring thread ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSettings {
    pub tid: i32,
    /// The CPU the thread was pinned to; None when it was not pinned.
    pub pinned_cpu: Option<usize>,
    pub requested: SchedParams,
    /// What the kernel reported after the request (the request may have
    /// been refused).
    pub actual: Option<SchedParams>,
    pub timer_slack_ns: Option<u64>,
}

/// The percentiles rtlab reports everywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub p99_99: u64,
}

/// One of the largest samples of a series, with when it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spike {
    /// Index of the sample in the series (0-based, as cyclictest's cycle).
    pub sample: u64,
    /// Time since the run's first deadline, ns.
    pub at_ns: u64,
    pub latency_ns: u64,
}

/// Samples at or above the histfile limit, as cyclictest lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overflows {
    pub limit_us: u64,
    pub count: u64,
    /// Sample indices of the first `limit_us` overflows (cyclictest's cap).
    pub first_samples: Vec<u64>,
}

/// Statistics of a latency series. Everything here is exact except the
/// percentiles, which come from an HDR histogram with 3 significant digits
/// (within 0.1 %, and exact below 2048 ns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesStats {
    pub samples: u64,
    /// Deadlines that passed without a wake-up of their own: a wake-up
    /// late by k periods counts k missed (one for each deadline overrun).
    pub missed: u64,
    /// Samples lost between the measuring thread and the recorder because
    /// the ring was full; should always be 0.
    pub dropped: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stdev_ns: f64,
    pub percentiles_ns: Percentiles,
    /// When the maximum happened.
    pub max_at: Option<Spike>,
    /// The largest samples, largest first.
    pub top: Vec<Spike>,
    /// HDR histogram as [value_ns, count] for every non-empty bucket; the
    /// value is the highest value equivalent to the bucket.
    pub histogram_ns: Vec<[u64; 2]>,
    /// Exact histogram in 1 µs bins (latency truncated to µs, as cyclictest)
    /// as [bin_us, count] for every non-empty bin: no overflow bucket.
    pub histogram_us: Vec<[u64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflows: Option<Overflows>,
    /// The largest sample of each consecutive block of samples, in time
    /// order: what an extreme-value (block maxima) fit of the worst case
    /// needs, kept small however long the run. Absent in results of older
    /// rtlab versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_maxima: Option<BlockMaxima>,
}

/// Maxima of consecutive blocks of `block_samples` samples each (the last,
/// incomplete block is left out). When a run is long the recorder merges
/// neighbouring blocks, doubling `block_samples`, so at most
/// [`BlockMaxima::MAX_BLOCKS`] are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockMaxima {
    pub block_samples: u64,
    pub maxima_ns: Vec<u64>,
}

impl BlockMaxima {
    /// The most blocks kept (32 KiB per series; tens of KiB of JSON).
    pub const MAX_BLOCKS: usize = 4096;
    /// The size of a block before any merging.
    pub const FIRST_BLOCK_SAMPLES: u64 = 16;
}

/// One latency series: one measuring thread of a probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    /// e.g. `cpu0`.
    pub name: String,
    /// What the values are: `wakeup_latency`.
    pub metric: String,
    pub cpu: Option<usize>,
    pub interval_ns: u64,
    pub thread: ThreadSettings,
    #[serde(flatten)]
    pub stats: SeriesStats,
}

/// A load generator that ran during the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    /// The load's name: `cpu`, `vm`, `io`, ..., `cmd`.
    pub name: String,
    /// The load as it was asked for, intensity included, e.g. `vm:workers=4,bytes=256M`.
    pub spec: String,
    /// The work it did, by counter name (`ops`, `bytes_written`, `packets`, ...).
    #[serde(default)]
    pub work: BTreeMap<String, u64>,
    /// Caps applied, early exits and anything else a reader must know.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The place of a run in a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignRef {
    /// The campaign's name, e.g. `quick`.
    pub name: String,
    /// Id of this execution of the campaign (all its runs share it).
    pub execution: String,
    /// 1-based position of the run in the plan.
    pub index: usize,
    /// Number of runs in the plan.
    pub total: usize,
    /// The configuration's name, e.g. `promoted`.
    pub configuration: String,
    /// The load's label, e.g. `idle` or `vm+io`.
    pub load: String,
    /// 1-based repeat number.
    pub repeat: u32,
}

/// What the noise probe found: how much of the measured time each CPU lost,
/// and to which sources (paper 002's Table 4.3, per CPU).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseReport {
    /// A gap between two clock reads above this is a noise event, ns.
    pub threshold_ns: u64,
    /// Length of an attribution window, ns: the interrupt, softirq and
    /// context-switch counters are read at each window's edges.
    pub window_ns: u64,
    /// Duty cycle: the spinner measures for `runtime_ns` of every `period_ns`.
    pub runtime_ns: u64,
    pub period_ns: u64,
    pub cpus: Vec<NoiseCpu>,
    /// Why the kernel's osnoise tracer was not run beside rtlab, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osnoise_note: Option<String>,
}

/// The noise one CPU saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseCpu {
    pub cpu: usize,
    /// Name of this CPU's series of noise events.
    pub series: String,
    /// Time spent measuring (inside windows), ns.
    pub measured_ns: u64,
    /// Sum of the noise events' durations, ns.
    pub noise_ns: u64,
    /// `noise_ns` as a percentage of `measured_ns`.
    pub noise_percent: f64,
    /// Longest single noise event, ns.
    pub max_single_ns: u64,
    pub events: u64,
    pub windows: u64,
    /// One row per source, the largest total first.
    pub sources: Vec<NoiseSource>,
    /// The kernel osnoise tracer's summary for this CPU, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osnoise: Option<OsnoiseSummary>,
}

/// The noise attributed to one source: `irq:NAME`, `softirq:NAME`,
/// `preempted` or `unattributed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseSource {
    pub source: String,
    /// Noise events attributed to the source.
    pub events: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// How often the source's counter rose inside the windows, whether or
    /// not it caused a gap above the threshold (0 for `unattributed`).
    pub counted: u64,
}

/// One CPU's line of the kernel osnoise tracer's summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OsnoiseSummary {
    pub runtime_us: u64,
    pub noise_us: u64,
    pub cpu_available_percent: f64,
    pub max_noise_us: u64,
    pub max_single_noise_us: u64,
    pub hw: u64,
    pub nmi: u64,
    pub irq: u64,
    pub softirq: u64,
    pub thread: u64,
}

/// What the net probe saw beyond its series: what happened to every
/// message, the server's own counters when rtlab ran the server, and the
/// per-message timeline (paper 000's scatter plot of response times).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetReport {
    /// Where the messages went, `ADDR:PORT`.
    pub target: String,
    /// `udp` or `tcp`.
    pub transport: String,
    /// Wire format: `exchange`, `echo` or `sockperf`.
    pub mode: String,
    /// Request/acknowledge steps per message.
    pub round_trips: u32,
    /// Size of each request, bytes (UDP payload or TCP frame).
    pub payload_bytes: u32,
    /// Messages leave on this absolute schedule, ns.
    pub interval_ns: u64,
    /// A message without its last reply this long after its first send is lost, ns.
    pub timeout_ns: u64,
    pub messages: NetMessageCounts,
    /// The server's counters, when rtlab ran the server itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<NetServerCounters>,
    /// How rtlab's own server thread was placed and scheduled (promoted or
    /// not), when rtlab ran the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_thread: Option<ThreadSettings>,
    /// One row per message in index order: `[index, at_ns, send_lag_ns,
    /// response_ns]`, `at_ns` the scheduled send time since the run's start,
    /// `response_ns` from the scheduled time to the last reply, null when
    /// the message was lost or never sent.
    pub timeline: Vec<TimelineRow>,
    /// False when the timeline stops short of the last message (it keeps at
    /// most a fixed number of rows; the samples CSV has them all).
    pub timeline_complete: bool,
}

/// One message of the net probe's timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineRow(pub u64, pub u64, pub u64, pub Option<u64>);

/// What happened to the messages of a net probe run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetMessageCounts {
    /// Messages the schedule held for the run.
    pub planned: u64,
    /// Messages whose first request left.
    pub sent: u64,
    /// Messages with every reply in time.
    pub completed: u64,
    /// Messages sent that timed out: a request or a reply was lost or too late.
    pub lost: u64,
    /// Messages not sent because the run was stopped early.
    pub unsent: u64,
    /// Replies that arrived after their message had timed out.
    pub late_replies: u64,
    /// Replies received a second time.
    pub duplicate_replies: u64,
    /// Replies that arrived after a reply to a later request.
    pub reordered_replies: u64,
    /// Replies that did not parse, were not for a request of this run, or
    /// failed authentication.
    pub bad_replies: u64,
    /// Requests the kernel refused to send (e.g. ICMP port unreachable).
    pub send_errors: u64,
}

/// A net server's counters (`rtlab net serve` prints them on SIGUSR1 and at exit).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetServerCounters {
    /// Datagrams (UDP) or frames (TCP) received.
    pub received: u64,
    pub replied: u64,
    /// Well-formed requests that ask for no reply (sockperf without pong request).
    pub unanswered: u64,
    /// Dropped: header not of the mode's format.
    pub malformed: u64,
    /// Dropped: shorter than the length its header announces.
    pub truncated: u64,
    /// Dropped: larger than the server's `--max-size`.
    pub oversized: u64,
    /// Dropped: authentication tag missing or wrong (`--key-file`).
    pub bad_auth: u64,
    /// Dropped: the source exceeded its rate limit.
    pub rate_limited: u64,
    /// Replies held back by `--inject-delay`.
    pub delayed: u64,
    /// Replies the kernel refused to send.
    pub send_errors: u64,
    /// TCP connections accepted, and closed by the server (malformed stream,
    /// slow reader, too many clients, deadline, per-source cap).
    pub connections: u64,
    pub connections_dropped: u64,
    /// Of `connections_dropped`: a frame begun and not finished within the
    /// frame timeout, or no frame within the idle timeout.
    #[serde(default)]
    pub connections_timed_out: u64,
    /// Of `connections_dropped`: refused at once, their source already
    /// holding its most connections.
    #[serde(default)]
    pub connections_refused_per_source: u64,
}

/// The sample that stopped a run under `--break-at`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BreakEvent {
    pub series: String,
    pub threshold_ns: u64,
    pub latency_ns: u64,
    pub at_ns: u64,
    pub sample: u64,
    /// Whether the line reached the ftrace trace_marker.
    pub trace_marker: bool,
    pub trace_note: String,
}

impl RunResult {
    /// A run id that sorts by time and is unique on this host:
    /// `20261121T193012Z-12345`, then `-2`, `-3`, ... for further runs of
    /// the same process (a campaign runs many).
    pub fn new_id() -> String {
        static RUNS_IN_PROCESS: AtomicU32 = AtomicU32::new(0);
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        match RUNS_IN_PROCESS.fetch_add(1, Ordering::Relaxed) {
            0 => format!("{compact}-{}", std::process::id()),
            n => format!("{compact}-{}-{}", std::process::id(), n + 1),
        }
    }
}

/// Now as an RFC 3339 UTC timestamp with µs.
pub fn timestamp_now() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}
