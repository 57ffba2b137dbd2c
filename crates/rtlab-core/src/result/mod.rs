//! The result of one run, as stored, exported and compared. Serialized as
//! JSON with the versioned schema `rtlab.run/1` (docs/schema/rtlab.run-1.json).
//! All times are nanoseconds; keys are snake_case identifiers.

mod effective;
mod executive;
mod probe_reports;
mod run_id;
mod safe_text;
mod witness;

use crate::env::Environment;
use crate::json_position;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

pub use effective::{Effective, ThreadSettings};
pub use executive::{ExecutiveReport, ExecutiveThread, GuardBucket};
pub use probe_reports::{
    NetMessageCounts, NetReport, NetServerCounters, NoiseCpu, NoiseReport, NoiseSource,
    OsnoiseSummary, TimelineRow, TrafficAccuracy, TrafficCounts, TrafficReport, TrafficTxtime,
};
pub use run_id::{check_run_id, RUN_ID_MAX_LEN};
pub use safe_text::{is_invisible, printable, terminal_text};
pub use witness::{ExplainedSpike, SourceCount, ThreadRan, WitnessReport};

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
    /// `rtlab traffic replay|record`'s packet accounting and accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<TrafficReport>,
    /// What the host did on the measured CPUs, and each series' top
    /// spikes explained by it; absent when the witness was off and in
    /// results of older rtlab versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessReport>,
    /// The executive's learned guards and spin (periodic and plan runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executive: Option<ExecutiveReport>,
    /// Things that could not be done as asked, and anything else a reader
    /// of the figures must know.
    #[serde(default)]
    pub warnings: Vec<String>,
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
#[serde(from = "SeriesFields")]
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

/// What a [`Series`] reads from: its fields and its statistics' side by
/// side, as `#[serde(flatten)]` writes them. Reading them through flatten
/// buffers the object and loses the path of a bad value inside it (an
/// error said `$.series[1]`, not `$.series[1].samples`); listed here, every
/// value has its own path. The struct literals below fail to compile when
/// a field is added to one side and not the other.
#[derive(Deserialize)]
struct SeriesFields {
    name: String,
    metric: String,
    cpu: Option<usize>,
    interval_ns: u64,
    thread: ThreadSettings,
    samples: u64,
    missed: u64,
    dropped: u64,
    min_ns: u64,
    max_ns: u64,
    mean_ns: f64,
    stdev_ns: f64,
    percentiles_ns: Percentiles,
    max_at: Option<Spike>,
    top: Vec<Spike>,
    histogram_ns: Vec<[u64; 2]>,
    histogram_us: Vec<[u64; 2]>,
    #[serde(default)]
    overflows: Option<Overflows>,
    #[serde(default)]
    block_maxima: Option<BlockMaxima>,
}

impl From<SeriesFields> for Series {
    fn from(f: SeriesFields) -> Series {
        Series {
            name: f.name,
            metric: f.metric,
            cpu: f.cpu,
            interval_ns: f.interval_ns,
            thread: f.thread,
            stats: SeriesStats {
                samples: f.samples,
                missed: f.missed,
                dropped: f.dropped,
                min_ns: f.min_ns,
                max_ns: f.max_ns,
                mean_ns: f.mean_ns,
                stdev_ns: f.stdev_ns,
                percentiles_ns: f.percentiles_ns,
                max_at: f.max_at,
                top: f.top,
                histogram_ns: f.histogram_ns,
                histogram_us: f.histogram_us,
                overflows: f.overflows,
                block_maxima: f.block_maxima,
            },
        }
    }
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

/// Why a text is not an `rtlab.run/1` result: the JSON path of the value
/// at fault (`$.series[0].samples`), where it is in the text, and what is
/// wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}, line {line} column {column}: {message}")]
pub struct RunJsonError {
    /// `$` for the document, `$.series[0].samples` for a value in it.
    pub path: String,
    /// 1-based line and column (in characters) of the value at `path`;
    /// for a syntax error, of the place the parser stopped.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Reads an `rtlab.run/1` result from JSON text. An error names the JSON
/// path of the value at fault and its line and column in `text`.
///
/// serde_json's values keep no positions and its own errors carry the
/// place the parser had reached, often past the value at fault (the end
/// of an object missing a field). So the path comes from
/// `serde_path_to_error`, and the position from a scan of the (by then
/// known to be well-formed) text along that path.
pub fn parse_run_json(text: &str) -> Result<RunResult, RunJsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let error = match serde_path_to_error::deserialize::<_, RunResult>(&mut de) {
        Ok(run) => return de.end().map(|()| run).map_err(|e| syntax_error(&e)),
        Err(e) => e,
    };
    if error.inner().is_syntax() || error.inner().is_eof() {
        return Err(syntax_error(error.inner()));
    }
    let mut path = String::from("$");
    let mut steps = Vec::new();
    for segment in error.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                path.push_str(&format!("[{index}]"));
                steps.push(json_position::Step::Index(*index));
            }
            serde_path_to_error::Segment::Map { key } => {
                if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !key.is_empty() {
                    path.push_str(&format!(".{key}"));
                } else {
                    path.push_str(&format!("[{}]", serde_json::Value::from(key.as_str())));
                }
                steps.push(json_position::Step::Key(key.clone()));
            }
            serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
        }
    }
    let offset = json_position::locate(text, &steps);
    let (line, column) = json_position::line_column(text, offset);
    // serde_json appends " at line L column C" of its own reading position.
    let message = error.inner().to_string();
    let message = match message.rfind(" at line ") {
        Some(at) if error.inner().line() > 0 => message[..at].to_string(),
        _ => message,
    };
    Err(RunJsonError {
        path,
        line,
        column,
        message: format!("not a valid {RUN_SCHEMA} result: {message}"),
    })
}

fn syntax_error(e: &serde_json::Error) -> RunJsonError {
    let message = e.to_string();
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message,
    };
    RunJsonError {
        path: "$".into(),
        line: e.line(),
        column: e.column(),
        message: if e.is_eof() {
            "the JSON ends early (truncated file?)".into()
        } else {
            format!("invalid JSON: {message}")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked() {
        assert!(check_run_id(&RunResult::new_id()).is_ok());
        assert!(check_run_id("20261121T193012Z-12345-2").is_ok());
        assert!(check_run_id("a.b_c-1").is_ok());
        assert!(check_run_id(&"x".repeat(RUN_ID_MAX_LEN)).is_ok());
        for (bad, says) in [
            ("", "empty"),
            ("x\u{1b}[2J", "\\u{1b}"),
            ("a b", "a space"),
            ("a/b", "'/'"),
            ("-rf", "start with"),
            (".hidden", "start with"),
            ("last", "newest"),
            ("é", "'é'"),
        ] {
            let error = check_run_id(bad).unwrap_err();
            assert!(error.contains(says), "{bad:?}: {error}");
            assert!(!error.contains('\u{1b}'), "{error}");
        }
        let long = "x".repeat(RUN_ID_MAX_LEN + 1);
        assert!(check_run_id(&long).unwrap_err().contains("at most 64"));
    }
}
