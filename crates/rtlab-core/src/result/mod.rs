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

/// The longest run id accepted (rtlab's own are about 25 characters).
pub const RUN_ID_MAX_LEN: usize = 64;

/// Checks a run id, or a prefix of one, against the one rule every place
/// that takes an id applies (import, the store's save, `show`, `compare`,
/// `export`, `report`): 1 to [`RUN_ID_MAX_LEN`] ASCII letters, digits, `-`,
/// `_` or `.`, starting with a letter or digit. Ids are printed in tables
/// and messages and typed on command lines: nothing in one may move the
/// cursor, look like an option or hide in a shell. The error says what is
/// wrong and shows the id with control characters escaped.
pub fn check_run_id(id: &str) -> Result<(), String> {
    let shown = printable(id, RUN_ID_MAX_LEN);
    if id.is_empty() {
        return Err("the run id is empty".into());
    }
    if id.len() > RUN_ID_MAX_LEN {
        return Err(format!(
            "run id `{shown}` is {} characters long: at most {RUN_ID_MAX_LEN}",
            id.chars().count()
        ));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "run id `{shown}` holds {}: a run id is ASCII letters, digits, '-', '_' and '.'",
            describe_char(bad)
        ));
    }
    if !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "run id `{shown}` must start with a letter or a digit"
        ));
    }
    if id == "last" {
        return Err("`last` cannot be a run id: it names the newest run".into());
    }
    Ok(())
}

/// `text` with control and other invisible characters escaped (`\u{1b}`),
/// cut to `max` characters: safe to print in a message.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() || is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as it may reach a terminal: every control character but newline
/// and tab, and every invisible format character (bidirectional overrides,
/// zero-width joiners), written as a `\uXXXX` escape; the rest as it is.
/// This is what rtlab's output writer applies to everything it prints, so
/// text from the store, a file or another process (a hostname, a warning,
/// a thread's name) never moves the cursor nor reorders a line. The escape
/// is also JSON's: applied to JSON output it leaves the same document.
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_invisible(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            // Every such character is in the Basic Multilingual Plane.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Format characters that change how the text around them shows
/// (bidirectional overrides, zero-width joiners).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

fn describe_char(c: char) -> String {
    if c.is_control() || is_invisible(c) {
        format!("the control character {}", c.escape_unicode())
    } else if c == ' ' {
        "a space".into()
    } else {
        format!("'{c}'")
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

/// Where a value is in well-formed JSON text: enough of a scanner to walk
/// objects and arrays along a path, skipping everything else.
mod json_position {
    pub enum Step {
        Key(String),
        Index(usize),
    }

    /// The byte offset of the value at `path`, or of the deepest value on
    /// the way that exists (the object a missing field belongs in).
    pub fn locate(text: &str, path: &[Step]) -> usize {
        let b = text.as_bytes();
        let mut pos = skip_ws(b, 0);
        for step in path {
            let Some(found) = child(text, pos, step) else {
                return pos;
            };
            pos = found;
        }
        pos
    }

    /// The offset of the member `step` of the object or array at `pos`.
    fn child(text: &str, pos: usize, step: &Step) -> Option<usize> {
        let b = text.as_bytes();
        match (step, b.get(pos)?) {
            (Step::Key(want), b'{') => {
                let mut at = skip_ws(b, pos + 1);
                while b.get(at) == Some(&b'"') {
                    let end = string_end(b, at);
                    let key: String = serde_json::from_str(text.get(at..end)?).ok()?;
                    at = skip_ws(b, end);
                    at = skip_ws(b, at + 1); // past ':'
                    if key == *want {
                        return Some(at);
                    }
                    at = skip_ws(b, value_end(b, at));
                    if b.get(at) == Some(&b',') {
                        at = skip_ws(b, at + 1);
                    }
                }
                None
            }
            (Step::Index(want), b'[') => {
                let mut at = skip_ws(b, pos + 1);
                let mut index = 0;
                while at < b.len() && b[at] != b']' {
                    if index == *want {
                        return Some(at);
                    }
                    at = skip_ws(b, value_end(b, at));
                    if b.get(at) == Some(&b',') {
                        at = skip_ws(b, at + 1);
                    }
                    index += 1;
                }
                None
            }
            _ => None,
        }
    }

    fn skip_ws(b: &[u8], mut at: usize) -> usize {
        while at < b.len() && b[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    }

    /// Just past the closing quote of the string starting at `at`.
    fn string_end(b: &[u8], at: usize) -> usize {
        let mut i = at + 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return i + 1,
                _ => i += 1,
            }
        }
        b.len()
    }

    /// Just past the value starting at `at`.
    fn value_end(b: &[u8], at: usize) -> usize {
        match b.get(at) {
            Some(b'"') => string_end(b, at),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                let mut i = at;
                while i < b.len() {
                    match b[i] {
                        b'"' => {
                            i = string_end(b, i);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                b.len()
            }
            _ => {
                let mut i = at;
                while i < b.len()
                    && !matches!(b[i], b',' | b'}' | b']')
                    && !b[i].is_ascii_whitespace()
                {
                    i += 1;
                }
                i
            }
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }
}

#[cfg(test)]
mod json_position_tests {
    use super::json_position::{line_column, locate, Step};

    /// The scan finds a value past strings holding quotes, brackets and
    /// braces, and stops at the deepest part of a path that exists.
    #[test]
    fn locates_values_past_tricky_strings() {
        let text =
            "{\n  \"a\": \"x\\\"}]{[\",\n  \"b\\u0063\": [1, {\"k\": \"v\"},\n    {\"n\": 7}]\n}";
        let at = |path: &[Step]| line_column(text, locate(text, path));
        let key = |k: &str| Step::Key(k.into());
        assert_eq!(at(&[key("a")]), (2, 8));
        // An escaped key matches its unescaped name.
        assert_eq!(at(&[key("bc"), Step::Index(2), key("n")]), (4, 11));
        // `n` is not in element 1: the element itself.
        assert_eq!(at(&[key("bc"), Step::Index(1), key("n")]), (3, 18));
        assert_eq!(at(&[key("missing")]), (1, 1));
        assert_eq!(at(&[key("bc"), Step::Index(9)]), (3, 14));
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

    #[test]
    fn terminal_text_escapes_what_a_terminal_obeys() {
        assert!(matches!(
            terminal_text("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            terminal_text("a\u{1b}[2J\rb\u{9b}c\u{7f}\u{202e}d\u{200b}\n"),
            "a\\u001b[2J\\u000db\\u009bc\\u007f\\u202ed\\u200b\n"
        );
        // Applied to JSON it is the same document.
        let json = serde_json::to_string(&"x\u{9b}\u{202e}\u{1b}y").unwrap();
        let escaped = terminal_text(&json);
        assert!(!escaped.contains('\u{9b}') && !escaped.contains('\u{202e}'));
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, "x\u{9b}\u{202e}\u{1b}y");
    }

    #[test]
    fn printable_escapes_control_characters_and_cuts() {
        assert_eq!(printable("x\u{1b}[2J", 10), "x\\u{1b}[2J");
        assert_eq!(printable("a\u{202e}b", 10), "a\\u{202e}b");
        assert_eq!(printable("abcdef", 3), "abc…");
    }
}
