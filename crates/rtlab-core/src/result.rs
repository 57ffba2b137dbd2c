//! The result of one run, as stored, exported and compared. Serialized as
//! JSON with the versioned schema `rtlab.run/1` (docs/schema/rtlab.run-1.json).
//! All times are nanoseconds; keys are snake_case identifiers.

use crate::env::Environment;
use crate::sched::SchedParams;
use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// `20261121T193012Z-12345`.
    pub fn new_id() -> String {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        format!("{compact}-{}", std::process::id())
    }
}

/// Now as an RFC 3339 UTC timestamp with µs.
pub fn timestamp_now() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}
