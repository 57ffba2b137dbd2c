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

/// What `rtlab traffic replay` or `rtlab traffic record` found (paper
/// 002's ARTS): the packets' accounting and how close to the plan they
/// left or arrived. The error distributions themselves are the run's
/// series (absolute values, so that percentiles and budgets apply); this
/// keeps what a series cannot: signs, drift and the within-x figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrafficReport {
    /// `replay` (the sender's side) or `record` (the receiver's).
    pub role: String,
    /// The plan replayed, or the plan written (record `-o`), as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Where the packets went (`replay --to`) or where they were received
    /// (`record --listen`), `ADDR:PORT`.
    pub peer: String,
    /// Where each departure or arrival time came from: `kernel-tx-software`
    /// (SO_TIMESTAMPING, software transmit stamps), `user-space` (the
    /// clock read before send), `kernel-rx` (SO_TIMESTAMPNS), or `mixed`
    /// (some packets had a kernel stamp, the others the user-space time).
    pub timestamps: String,
    /// SO_TXTIME with the ETF qdisc, when the replay used it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txtime: Option<TrafficTxtime>,
    pub counts: TrafficCounts,
    /// UDP payload bytes sent or received.
    pub bytes: u64,
    /// From the first packet's departure (arrival) to the last's, ns.
    pub span_ns: u64,
    /// Packets per second over `span_ns`.
    pub achieved_pps: f64,
    /// Packets per second the plan asked for over the same packets (the
    /// replay's plan, or the plan the stamps name); None when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_pps: Option<f64>,
    /// One entry per error series of the run (`departure`, `gap`,
    /// `arrival`, `arrival_gap`, ...).
    pub accuracy: Vec<TrafficAccuracy>,
    /// The stream the receiver matched (the replay's random stream id,
    /// hex), when the packets carried rtlab's stamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
}

/// Packet accounting. Replay: `planned` = `sent` + `skipped` + `failed`
/// (+ those never reached when stopped early). Record: `received` counts
/// every datagram, the others only stamped ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficCounts {
    pub planned: u64,
    /// Handed to the kernel (send returned success).
    pub sent: u64,
    /// Sent, but later than `late_after_ns` after the planned instant.
    pub late: u64,
    /// A departure counts late above this, ns (the `--late` threshold).
    pub late_after_ns: u64,
    /// Reached too late (past `--skip-after`) and not sent.
    pub skipped: u64,
    /// The kernel refused the send (a full socket buffer, no route).
    pub failed: u64,
    /// Sent without a kernel transmit timestamp (the user-space time was used).
    pub without_kernel_stamp: u64,
    pub received: u64,
    /// Stamped sequence numbers never received (between the first and the
    /// highest seen, plus those the `--against` plan has past the highest).
    pub lost: u64,
    pub duplicates: u64,
    /// Received after a higher sequence number.
    pub reordered: u64,
    /// Datagrams without rtlab's stamp (or of another stream).
    pub unstamped: u64,
}

/// How close to the plan one series of packets was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrafficAccuracy {
    /// The run's series this describes (its absolute values).
    pub series: String,
    /// What is compared: `departure − planned instant`, ...
    pub meaning: String,
    pub samples: u64,
    /// Signed extremes and mean, ns (negative: early or a gap too short).
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    /// % of samples with |error| ≤ 1 µs and ≤ 5 µs.
    pub within_1us_pct: f64,
    pub within_5us_pct: f64,
    /// Gap series: % of gaps within 1 % of the planned gap (paper 002:
    /// 99.7 % at 500 µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_1pct_of_gap_pct: Option<f64>,
    /// Instant series: the least-squares slope over time of the error's
    /// floor (the smallest error of each block of packets, which stalls
    /// cannot tilt),
    /// ns per second: a schedule computed from the previous packet
    /// drifts, an absolute one does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ns_per_s: Option<f64>,
}

/// SO_TXTIME as used by a replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficTxtime {
    /// How long before its transmit time each packet was handed to the
    /// kernel, ns (chosen from the measured wake-up latency, or as given).
    pub delta_ns: u64,
    /// Packets the qdisc dropped (their transmit time had passed).
    pub dropped: u64,
}
