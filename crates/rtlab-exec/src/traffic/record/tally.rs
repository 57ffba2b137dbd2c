//! Off the hot path (a SCHED_OTHER thread): each [`Arrival`] becomes an
//! event of the plan written (one flow per source, offsets from the first
//! arrival), samples of the series `interarrival`, `arrival` and
//! `arrival_gap`, and the counts of the report.
//!
//! Stamped datagrams of the first stream seen are matched: `arrival` is
//! |arrival − (reference arrival + planned − reference planned)|. The
//! sender's and the receiver's clocks share no epoch, so one datagram is
//! the reference: of the first [`REFERENCE_PACKETS`] stamped, the one
//! with the smallest arrival − planned (the fastest way through seen at
//! the start). The very first is a poor reference: it is usually the
//! slowest (cold caches, a first ARP or route look-up), and its delay
//! would shift every other error (one run here: all arrivals −22 µs
//! "early"). And
//! `arrival_gap` |(arr_k − arr_j) − (plan_k − plan_j)| for consecutive
//! first copies j, k. Datagrams of another stream count as unstamped.
//! Everything a peer sends is hostile: arithmetic is checked or done in
//! i128, and memory is the matcher's window plus at most 65535 flows.

use super::against::Against;
use super::matcher::{Matcher, Seen, WINDOW};
use super::receive::Arrival;
use crate::plan::model::MAX_MODULES;
use crate::traffic::accuracy::Accuracy;
use crate::traffic::format::{TrafficData, MAX_PAYLOAD};
use crate::traffic::sink::{FlowKey, PlanSink};
use rtlab_core::result::{TrafficCounts, TrafficReport};
use rtlab_core::units::human_duration;
use rtlab_probe::recorder::Sample;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Stamped datagrams held until the reference is chosen among them.
pub const REFERENCE_PACKETS: usize = 64;

/// Errors larger than this (1 s) are not sampled into the `arrival` and
/// `arrival_gap` series, only summed into the accuracy table and counted.
/// A peer chooses its stamps' planned instants, so it chooses these
/// errors: a new µs value per datagram grew the series' 1 µs histogram
/// (a map entry per distinct µs) by every packet of a flood. Bounded, a
/// series holds at most a million µs bins; a real replay's packet that
/// is a second off its plan is a stall the report names anyway.
pub const MAX_SAMPLED_ERROR_NS: u64 = 1_000_000_000;

/// The series, in the order of [`Outlets`].
pub const SERIES: [(&str, &str); 3] = [
    ("interarrival", "interarrival"),
    ("arrival", "arrival_error"),
    ("arrival_gap", "arrival_gap_error"),
];

/// Where the samples go: one ring per series of [`SERIES`].
pub struct Outlets {
    pub rings: Vec<rtrb::Producer<Sample>>,
    pub dropped: Vec<Arc<AtomicU64>>,
}

impl Outlets {
    fn push(&mut self, series: usize, at_ns: u64, value_ns: u64) {
        let sample = Sample {
            at_ns,
            latency_ns: value_ns,
            missed: 0,
        };
        if self.rings[series].push(sample).is_err() {
            self.dropped[series].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A recording's plan, if one is written.
pub struct PlanOut {
    pub path: PathBuf,
    pub sink: PlanSink,
}

/// Everything counted so far.
pub struct Tally {
    listen: SocketAddr,
    plan: Option<PlanOut>,
    plan_path: Option<PathBuf>,
    plan_error: Option<String>,
    against: Option<Against>,
    outlets: Outlets,
    flows: HashSet<Option<SocketAddr>>,
    more_flows: bool,
    received: u64,
    bytes: u64,
    without_kernel_stamp: u64,
    oversize: u64,
    /// Arrivals stamped before their predecessor.
    clamped: u64,
    first_ns: Option<u64>,
    previous_ns: u64,
    last_offset_ns: u64,
    stream: Option<u32>,
    other_stream: u64,
    unstamped: u64,
    unplannable: u64,
    matcher: Matcher,
    /// (arrival stamp, planned) of the reference datagram (see the
    /// module's documentation).
    reference: Option<(u64, u64)>,
    /// The first stamped datagrams (arrival, time axis, planned), until
    /// the reference is chosen among them.
    early: Vec<(u64, u64, u64)>,
    previous_stamped: Option<(u64, u64)>,
    planned_range: Option<(u64, u64)>,
    arrival: Accuracy,
    gap: Accuracy,
    /// Errors past [`MAX_SAMPLED_ERROR_NS`], not sampled.
    unsampled: u64,
}

/// A finished tally.
pub struct Tallied {
    pub report: TrafficReport,
    pub warnings: Vec<String>,
    /// The plan asked for could not be written.
    pub failure: Option<String>,
    /// Mean gap between arrivals, ns (0: fewer than two).
    pub mean_gap_ns: u64,
}

impl Tally {
    pub fn new(
        listen: SocketAddr,
        plan: Option<PlanOut>,
        against: Option<Against>,
        outlets: Outlets,
    ) -> Tally {
        Tally {
            listen,
            plan_path: plan.as_ref().map(|p| p.path.clone()),
            plan,
            plan_error: None,
            against,
            outlets,
            flows: HashSet::new(),
            more_flows: false,
            received: 0,
            bytes: 0,
            without_kernel_stamp: 0,
            oversize: 0,
            clamped: 0,
            first_ns: None,
            previous_ns: 0,
            last_offset_ns: 0,
            stream: None,
            other_stream: 0,
            unstamped: 0,
            unplannable: 0,
            matcher: Matcher::default(),
            reference: None,
            early: Vec::with_capacity(REFERENCE_PACKETS),
            previous_stamped: None,
            planned_range: None,
            arrival: Accuracy::default(),
            gap: Accuracy::default(),
            unsampled: 0,
        }
    }

    /// One datagram.
    pub fn take(&mut self, a: &Arrival) {
        self.received += 1;
        self.bytes += u64::from(a.size);
        self.without_kernel_stamp += u64::from(!a.kernel_stamped);
        let first = *self.first_ns.get_or_insert(a.stamp_ns);
        if self.received > 1 {
            let gap = a.stamp_ns.saturating_sub(self.previous_ns);
            self.outlets.push(0, a.at_ns, gap);
        }
        let mut offset = a.stamp_ns.saturating_sub(first);
        if offset < self.last_offset_ns {
            self.clamped += 1;
            offset = self.last_offset_ns;
        }
        self.last_offset_ns = offset;
        self.previous_ns = self.previous_ns.max(a.stamp_ns);
        self.write(a, offset);
        match a.stamp {
            Some(stamp) if *self.stream.get_or_insert(stamp.stream) == stamp.stream => {
                self.stamped(a, stamp.sequence, stamp.planned_ns);
            }
            Some(_) => {
                self.other_stream += 1;
                self.unstamped += 1;
            }
            None => self.unstamped += 1,
        }
    }

    /// The datagram into the flows and the plan.
    fn write(&mut self, a: &Arrival, offset_ns: u64) {
        if !self.flows.contains(&a.src) {
            if self.flows.len() < MAX_MODULES {
                self.flows.insert(a.src);
            } else {
                self.more_flows = true;
            }
        }
        let size = if a.size as usize > MAX_PAYLOAD {
            self.oversize += 1;
            MAX_PAYLOAD as u16
        } else {
            a.size as u16
        };
        let Some(plan) = self.plan.as_mut() else {
            return;
        };
        let key = FlowKey {
            src: a.src,
            dest: Some(self.listen),
        };
        let data = TrafficData {
            size,
            digest: a.digest,
        };
        let written = plan
            .sink
            .flow(key)
            .and_then(|flow| plan.sink.push(offset_ns, flow, data));
        if let Err(e) = written {
            // The plan is given up, the measurement goes on.
            self.plan_error = Some(format!(
                "{}: not written: {e} (the measurement went on)",
                plan.path.display()
            ));
            self.plan = None;
        }
    }

    /// A first-stream stamp: matched, then its first copy measured
    /// against its planned instant.
    fn stamped(&mut self, a: &Arrival, sequence: u64, stamp_planned_ns: u64) {
        if !matches!(self.matcher.see(sequence), Seen::New { .. }) {
            return;
        }
        let planned = match &self.against {
            Some(against) => against.planned_ns(sequence),
            None => Some(stamp_planned_ns),
        };
        let Some(planned) = planned else {
            self.unplannable += 1;
            return;
        };
        self.planned_range = Some(match self.planned_range {
            None => (planned, planned),
            Some((low, high)) => (low.min(planned), high.max(planned)),
        });
        if self.reference.is_none() {
            self.early.push((a.stamp_ns, a.at_ns, planned));
            if self.early.len() == REFERENCE_PACKETS {
                self.choose_reference();
            }
            return;
        }
        self.measure(a.stamp_ns, a.at_ns, planned);
    }

    /// The reference: of the datagrams held, the one with the smallest
    /// arrival − planned; then the held datagrams are measured in order.
    fn choose_reference(&mut self) {
        let since = |x: u64, y: u64| i128::from(x) - i128::from(y);
        let Some(&(arrival, _, planned)) = self
            .early
            .iter()
            .min_by_key(|(arrival, _, planned)| since(*arrival, *planned))
        else {
            return;
        };
        self.reference = Some((arrival, planned));
        for (arrival, at_ns, planned) in std::mem::take(&mut self.early) {
            self.measure(arrival, at_ns, planned);
        }
    }

    /// One first copy against its planned instant (and its gap from the
    /// previous one).
    fn measure(&mut self, arrival_ns: u64, at_ns: u64, planned: u64) {
        let Some((reference_arrival, reference_planned)) = self.reference else {
            return;
        };
        let since = |x: u64, y: u64| i128::from(x) - i128::from(y);
        let error = since(arrival_ns, reference_arrival) - since(planned, reference_planned);
        let at_s = since(arrival_ns, reference_arrival) as f64 / 1e9;
        self.arrival.add_instant(error, at_s);
        self.sample(1, at_ns, error);
        if let Some((arrival_j, planned_j)) = self.previous_stamped {
            let planned_gap = since(planned, planned_j);
            let gap_error = since(arrival_ns, arrival_j) - planned_gap;
            self.gap.add_gap(gap_error, planned_gap.unsigned_abs());
            self.sample(2, at_ns, gap_error);
        }
        self.previous_stamped = Some((arrival_ns, planned));
    }

    /// An error into its series, unless past [`MAX_SAMPLED_ERROR_NS`].
    fn sample(&mut self, series: usize, at_ns: u64, error_ns: i128) {
        match u64::try_from(error_ns.unsigned_abs()) {
            Ok(size) if size <= MAX_SAMPLED_ERROR_NS => self.outlets.push(series, at_ns, size),
            _ => self.unsampled += 1,
        }
    }

    /// The report, the warnings, and the plan written.
    pub fn finish(mut self) -> Tallied {
        if self.reference.is_none() {
            self.choose_reference();
        }
        let mut warnings = self.warnings();
        if let Some(plan) = self.plan.take() {
            if let Err(e) = plan.sink.finish(|_| {}) {
                self.plan_error = Some(format!("{e}"));
            }
        }
        let span_ns = self.previous_ns.saturating_sub(self.first_ns.unwrap_or(0));
        let per_second =
            |n: u64, span: u64| (n >= 2 && span > 0).then(|| (n - 1) as f64 * 1e9 / span as f64);
        let stamped = self.matcher.distinct.saturating_sub(self.unplannable);
        let planned_pps = self
            .planned_range
            .and_then(|(low, high)| per_second(stamped, high - low));
        let (planned, lost) = match (&self.against, self.matcher.range()) {
            (Some(against), Some((_, highest))) => {
                let expected = against.expected(highest);
                (expected, expected.saturating_sub(self.matcher.distinct))
            }
            (Some(against), None) => (
                against.events_per_repetition(),
                against.events_per_repetition(),
            ),
            (None, Some((lowest, highest))) => {
                ((highest - lowest).saturating_add(1), self.matcher.lost())
            }
            (None, None) => (0, 0),
        };
        let mut accuracy = Vec::new();
        if self.reference.is_some() {
            accuracy.push(self.arrival.summary(
                "arrival",
                "arrival − planned instant, aligned on the fastest of the first 64 stamped datagrams",
            ));
            accuracy.push(self.gap.summary(
                "arrival_gap",
                "gap between consecutive stamped arrivals − planned gap",
            ));
        }
        let timestamps = match self.without_kernel_stamp {
            0 => "kernel-rx",
            n if n == self.received => "user-space",
            _ => "mixed",
        };
        if let Some(e) = &self.plan_error {
            warnings.push(e.clone());
        }
        let report = TrafficReport {
            role: "record".into(),
            plan: self.plan_path.as_ref().map(|p| p.display().to_string()),
            peer: self.listen.to_string(),
            timestamps: timestamps.into(),
            txtime: None,
            counts: TrafficCounts {
                planned,
                received: self.received,
                lost,
                duplicates: self.matcher.duplicates,
                reordered: self.matcher.reordered,
                unstamped: self.unstamped,
                ..TrafficCounts::default()
            },
            bytes: self.bytes,
            span_ns,
            achieved_pps: per_second(self.received, span_ns).unwrap_or(0.0),
            planned_pps,
            accuracy,
            stream: self.stream.map(|s| format!("{s:08x}")),
        };
        Tallied {
            report,
            warnings,
            failure: self.plan_error,
            mean_gap_ns: if self.received >= 2 {
                span_ns / (self.received - 1)
            } else {
                0
            },
        }
    }

    /// What the counts alone do not say.
    fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut say = |n: u64, text: String| {
            if n > 0 {
                warnings.push(text);
            }
        };
        say(
            self.without_kernel_stamp,
            format!(
                "{} of {} datagrams came without a kernel receive stamp: the user-space time after the receive was used",
                self.without_kernel_stamp, self.received
            ),
        );
        say(
            self.other_stream,
            format!(
                "{} datagrams carried the stamp of another stream than {:08x} (the first seen): counted unstamped",
                self.other_stream,
                self.stream.unwrap_or(0)
            ),
        );
        say(
            self.matcher.outside,
            format!(
                "{} stamped datagrams came more than {WINDOW} sequences below the highest: counted reordered, neither matched nor measured",
                self.matcher.outside
            ),
        );
        say(
            self.unplannable,
            format!(
                "{} stamped sequences have no planned instant a u64 holds: not measured",
                self.unplannable
            ),
        );
        say(
            self.unsampled,
            format!(
                "{} arrival or gap errors were past {} (stamps that do not fit their stream: a broken or hostile sender, or a stall): in the accuracy table, not in the arrival and arrival_gap series",
                self.unsampled,
                human_duration(MAX_SAMPLED_ERROR_NS)
            ),
        );
        say(
            self.clamped,
            format!(
                "{} datagrams were stamped before the one received ahead of them (a clock step, or CPUs stamping out of order): written at the previous offset",
                self.clamped
            ),
        );
        say(
            self.oversize,
            format!(
                "{} datagrams were larger than {MAX_PAYLOAD} bytes: written as {MAX_PAYLOAD}",
                self.oversize
            ),
        );
        if self.more_flows {
            warnings.push(format!(
                "more than {MAX_MODULES} sources: a plan holds at most {MAX_MODULES} flows"
            ));
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::format::Stamp;
    use rtlab_probe::recorder::Sample;
    use std::path::Path;

    fn outlets() -> (Outlets, Vec<rtrb::Consumer<Sample>>) {
        let mut outlets = Outlets {
            rings: Vec::new(),
            dropped: Vec::new(),
        };
        let mut consumers = Vec::new();
        for _ in SERIES {
            let (p, c) = rtrb::RingBuffer::new(1 << 16);
            outlets.rings.push(p);
            outlets.dropped.push(Arc::new(AtomicU64::new(0)));
            consumers.push(c);
        }
        (outlets, consumers)
    }

    fn arrival(stamp_ns: u64, port: u16, stamp: Option<Stamp>) -> Arrival {
        Arrival {
            stamp_ns,
            kernel_stamped: true,
            at_ns: stamp_ns,
            size: 100,
            digest: 1,
            src: Some(SocketAddr::from(([127, 0, 0, 1], port))),
            stamp,
        }
    }

    fn stamp(stream: u32, sequence: u64, planned_ns: u64) -> Option<Stamp> {
        Some(Stamp {
            stream,
            sequence,
            planned_ns,
        })
    }

    #[test]
    fn counts_and_errors_of_a_stream_with_a_late_packet() {
        let (outlets, mut consumers) = outlets();
        let listen = "127.0.0.1:7000".parse().unwrap();
        let mut tally = Tally::new(listen, None, None, outlets);
        // 1 ms apart as planned; sequence 3 arrives 40 µs late; 5 twice;
        // one unstamped datagram; one of another stream.
        for s in 0..8u64 {
            let late = if s == 3 { 40_000 } else { 0 };
            tally.take(&arrival(
                10_000_000 + s * 1_000_000 + late,
                5000,
                stamp(7, s, s * 1_000_000),
            ));
        }
        tally.take(&arrival(19_000_000, 5000, stamp(7, 5, 5_000_000)));
        tally.take(&arrival(19_500_000, 5001, None));
        tally.take(&arrival(19_600_000, 5001, stamp(8, 9, 0)));
        let t = tally.finish();
        let c = t.report.counts;
        assert_eq!(
            (
                c.received,
                c.planned,
                c.lost,
                c.duplicates,
                c.reordered,
                c.unstamped
            ),
            (11, 8, 0, 1, 0, 2)
        );
        assert_eq!(t.report.stream.as_deref(), Some("00000007"));
        let arrival = &t.report.accuracy[0];
        assert_eq!(
            (arrival.samples, arrival.min_ns, arrival.max_ns),
            (8, 0, 40_000)
        );
        let gap = &t.report.accuracy[1];
        assert_eq!((gap.samples, gap.min_ns, gap.max_ns), (7, -40_000, 40_000));
        assert_eq!(gap.within_1pct_of_gap_pct, Some(5.0 / 7.0 * 100.0));
        assert_eq!(t.report.planned_pps, Some(1000.0));
        assert!(
            t.warnings.iter().any(|w| w.contains("another stream")),
            "{:?}",
            t.warnings
        );
        // Every datagram after the first has its interarrival sample.
        assert_eq!(consumers[0].slots(), 10);
        assert_eq!(consumers[2].slots(), 7);
        let gap_at_3 = (0..3).map(|_| consumers[2].pop().unwrap()).last().unwrap();
        assert_eq!(gap_at_3.latency_ns, 40_000);
    }

    /// A tally on 127.0.0.1:7000 writing `got.plan` in `dir`, with its
    /// series' consumers (kept alive by the caller, not looked at).
    fn tally_writing(dir: &Path) -> (Tally, PathBuf, Vec<rtrb::Consumer<Sample>>) {
        let (outlets, consumers) = outlets();
        let path = dir.join("got.plan");
        let plan = PlanOut {
            path: path.clone(),
            sink: PlanSink::create(&path).unwrap(),
        };
        let listen = "127.0.0.1:7000".parse().unwrap();
        (
            Tally::new(listen, Some(plan), None, outlets),
            path,
            consumers,
        )
    }

    #[test]
    fn hostile_stamps_and_clock_steps_are_counted_not_panicked_on() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tally, path, _consumers) = tally_writing(dir.path());
        for i in 0..5_000u64 {
            let sequence = if i % 2 == 0 { 1 << 63 } else { i };
            let planned = if i % 3 == 0 { u64::MAX } else { i };
            // The clock stepped back once, halfway.
            let at = if i < 2_500 { 1 << 40 } else { 1 << 39 } + i;
            tally.take(&arrival(at, (i % 7) as u16, stamp(1, sequence, planned)));
        }
        let t = tally.finish();
        assert_eq!(t.report.counts.received, 5_000);
        assert!(t.failure.is_none(), "{:?}", t.failure);
        assert!(
            t.warnings.iter().any(|w| w.contains("stamped before")),
            "{:?}",
            t.warnings
        );
        let plan = crate::plan::load(&path).unwrap();
        assert_eq!(plan.header.modules.len(), 7);
        assert_eq!(plan.events.len(), 5_000);
        let offsets: Vec<u64> = (0..5_000).map(|i| plan.events.event(i).offset_ns).collect();
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn errors_a_peer_makes_past_a_second_are_summed_not_sampled() {
        let (outlets, consumers) = outlets();
        let listen = "127.0.0.1:7000".parse().unwrap();
        let mut tally = Tally::new(listen, None, None, outlets);
        // 1 ms apart; from sequence 100 on, each planned 10 ms later than
        // the one before it: errors of -10 ms, -20 ms, ... -1.99 s.
        for i in 0..300u64 {
            let planned = i * 1_000_000 + i.saturating_sub(100) * 10_000_000;
            tally.take(&arrival(
                (1 << 30) + i * 1_000_000,
                5000,
                stamp(3, i, planned),
            ));
        }
        let t = tally.finish();
        let arrival = &t.report.accuracy[0];
        assert_eq!((arrival.samples, arrival.min_ns), (300, -1_990_000_000));
        // Sequences 0-200 are within 1 s of their plan; every gap is.
        assert_eq!(consumers[1].slots(), 201);
        assert_eq!(consumers[2].slots(), 299);
        assert!(
            t.warnings
                .iter()
                .any(|w| w.starts_with("99 arrival or gap errors were past 1s")),
            "{:?}",
            t.warnings
        );
    }

    #[test]
    fn past_65535_flows_the_plan_is_given_up_and_the_counting_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tally, path, _consumers) = tally_writing(dir.path());
        for i in 0..70_000u64 {
            let mut a = arrival(i * 1_000, 0, None);
            a.src = Some(SocketAddr::from(([10, 0, (i >> 16) as u8, 1], i as u16)));
            tally.take(&a);
        }
        let t = tally.finish();
        assert_eq!(t.report.counts.received, 70_000);
        let failure = t.failure.expect("the plan cannot hold the flows");
        assert!(failure.contains("more than 65535 flows"), "{failure}");
        assert!(t
            .warnings
            .iter()
            .any(|w| w.contains("more than 65535 sources")));
        assert!(!path.exists(), "no plan is written");
    }
}
