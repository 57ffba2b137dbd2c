//! What the noise and net probes found, as stored in a run's result.

use super::effective::ThreadSettings;
use serde::{Deserialize, Serialize};

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
