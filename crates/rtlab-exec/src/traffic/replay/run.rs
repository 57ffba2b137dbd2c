//! A replay running: the dispatcher with one sender module per flow and
//! the collector's two series, and at the end the traffic report.

use super::collector::{self, Collected, Inputs, Outputs};
use super::config::{ReplayConfig, TxStamps, TxTime};
use super::flows::{flows_of, Flow};
use super::sender::{connect, Departure, FlowSender, SendCounts};
use super::txstamps::ClockOffset;
use super::txtime::qdisc_for;
use crate::dispatch::{self, DispatchRun, ExtraSeries, Extras, Modules, Repeat};
use rtlab_core::record::LiveStats;
use rtlab_core::result::{Series, TrafficCounts, TrafficReport, TrafficTxtime};
use rtlab_probe::recorder::{ring_capacity, SeriesInput};
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Records a flow's ring holds: half a second at the plan's rate, within
/// bounds (the collector takes them every few ms).
fn flow_ring_capacity(events: u64, span_ns: u64) -> usize {
    let per_half_second = u128::from(events) * 500_000_000 / u128::from(span_ns.max(1));
    (per_half_second as usize).clamp(1024, 1 << 18)
}

impl Probe for ReplayConfig {
    fn kind(&self) -> &'static str {
        "traffic-replay"
    }
    fn planned_ns(&self) -> u64 {
        let once = crate::dispatch::scaled(self.dispatch().planned_ns(), self.speed);
        match self.repeat {
            Repeat::Times(_) => once,
            Repeat::Forever => u64::MAX,
        }
    }
    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        Ok(Box::new(start(self, with)?))
    }
}

pub struct ReplayRun {
    dispatch: Box<DispatchRun>,
    collector: JoinHandle<Collected>,
    about: About,
}

/// What the report needs besides the collector's figures.
struct About {
    counts: Arc<SendCounts>,
    config: ReplayConfig,
    events: u64,
    planned_span_ns: u64,
    peer: String,
}

/// The sender modules and the collector's inputs for `flows`.
fn senders(
    config: &ReplayConfig,
    flows: &[Flow],
    span_ns: u64,
    counts: &Arc<SendCounts>,
) -> anyhow::Result<(Modules, Inputs)> {
    let kernel_stamps = config.timestamps == TxStamps::Kernel;
    let with_txtime = config.txtime != TxTime::Off;
    let mut modules: Modules = Vec::with_capacity(flows.len());
    let mut inputs = Inputs {
        rings: Vec::with_capacity(flows.len()),
        sockets: Vec::with_capacity(flows.len()),
        kernel_stamps,
        late_after_ns: config.late_after_ns,
    };
    let mut clocks: Vec<(std::net::SocketAddr, libc::clockid_t)> = Vec::new();
    for (index, flow) in flows.iter().enumerate() {
        let clock = if with_txtime {
            // One look-up (two processes) per destination, not per flow.
            let known = clocks.iter().find(|(dest, _)| *dest == flow.dest);
            let clock = match known {
                Some(&(_, clock)) => clock,
                None => {
                    let clock = qdisc_for(flow.dest)
                        .map_err(|e| anyhow::anyhow!("--txtime: {e}"))?
                        .clock;
                    clocks.push((flow.dest, clock));
                    clock
                }
            };
            Some(clock)
        } else {
            None
        };
        // fq reads CLOCK_MONOTONIC, the dispatcher's; etf CLOCK_TAI.
        let ahead = clock.map(|c| match c {
            libc::CLOCK_MONOTONIC => 0,
            other => ClockOffset::of(other).ahead_ns(),
        });
        let socket = Arc::new(connect(flow, kernel_stamps, clock).map_err(anyhow::Error::msg)?);
        let (producer, consumer) =
            rtrb::RingBuffer::<Departure>::new(flow_ring_capacity(flow.events, span_ns));
        let sender = FlowSender::new(
            index as u32,
            flow.largest,
            Arc::clone(&socket),
            config.stamp.then_some(config.stream),
            ahead,
            producer,
            Arc::clone(counts),
        );
        modules.push((flow.name.clone(), Box::new(sender)));
        inputs.rings.push(consumer);
        inputs.sockets.push(socket);
    }
    Ok((modules, inputs))
}

/// A series the collector produces.
fn collected_series(
    name: &str,
    metric: &str,
    interval_ns: u64,
) -> (
    ExtraSeries,
    rtrb::Producer<rtlab_probe::recorder::Sample>,
    Arc<AtomicU64>,
) {
    let (producer, consumer) = rtrb::RingBuffer::new(ring_capacity(interval_ns));
    let dropped = Arc::new(AtomicU64::new(0));
    let series = ExtraSeries {
        name: name.into(),
        metric: metric.into(),
        interval_ns,
        input: SeriesInput {
            csv_label: name.into(),
            consumer,
            dropped: Arc::clone(&dropped),
        },
    };
    (series, producer, dropped)
}

pub fn start(config: &ReplayConfig, with: Start) -> anyhow::Result<ReplayRun> {
    config.validate()?;
    let plan = crate::plan::load(&config.plan).map_err(anyhow::Error::new)?;
    let flows = flows_of(&plan, config.to)
        .map_err(|e| anyhow::anyhow!("{}: {e}", config.plan.display()))?;
    let events = plan.events.len();
    anyhow::ensure!(
        events > 0,
        "{}: the plan has no events",
        config.plan.display()
    );
    let last = plan.events.event(events - 1).offset_ns;
    let first = plan.events.event(0).offset_ns;
    let span_ns = dispatch::scaled(last, config.speed);
    drop(plan);
    let counts = Arc::new(SendCounts::default());
    let (modules, inputs) = senders(config, &flows, span_ns, &counts)?;
    let interval = (span_ns / events.saturating_sub(1).max(1)).max(1);
    let (departure, departure_ring, departure_dropped) =
        collected_series("departure", "departure_error", interval);
    let (gap, gap_ring, gap_dropped) = collected_series("gap", "gap_error", interval);
    let outputs = Outputs {
        departure: departure_ring,
        gap: gap_ring,
        departure_dropped,
        gap_dropped,
    };
    let collector = std::thread::Builder::new()
        .name("rtlab-txstamps".into())
        .spawn(move || collector::run(inputs, outputs))?;
    let extras = Extras {
        modules: Some(modules),
        series: vec![departure, gap],
        speed: config.speed,
        lead: config.lead(),
    };
    // On an error here the modules are gone, so the collector ends too.
    let dispatch = dispatch::start_with(&config.dispatch(), with.stop, with.samples_csv, extras)?;
    let peer = match config.to {
        Some(to) => to.to_string(),
        None => {
            let mut dests: Vec<String> = flows.iter().map(|f| f.dest.to_string()).collect();
            dests.dedup();
            dests.join(",")
        }
    };
    Ok(ReplayRun {
        dispatch: Box::new(dispatch),
        collector,
        about: About {
            counts,
            config: config.clone(),
            events,
            planned_span_ns: dispatch::scaled(last - first, config.speed),
            peer,
        },
    })
}

impl ProbeRun for ReplayRun {
    fn series_names(&self) -> Vec<String> {
        self.dispatch.series_names()
    }
    fn live(&self) -> Vec<LiveStats> {
        self.dispatch.live()
    }
    fn is_finished(&self) -> bool {
        self.dispatch.is_finished()
    }
    fn elapsed_ns(&self) -> u64 {
        self.dispatch.elapsed_ns()
    }
    fn warnings(&self) -> Vec<String> {
        self.dispatch.warnings()
    }
    fn snapshot(&self) -> Vec<Series> {
        self.dispatch.snapshot()
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let ReplayRun {
            dispatch,
            collector,
            about,
        } = *self;
        let lead_ns = dispatch.lead_ns();
        // The dispatcher's end drops the senders, which ends the
        // collector, whose end lets the recorder finish.
        let mut outcome = dispatch.finish()?;
        let collected = collector
            .join()
            .map_err(|_| anyhow::anyhow!("the transmit stamp collector panicked"))?;
        let skipped = outcome.series.first().map_or(0, |s| s.stats.missed);
        let mut report = about.report(&collected, skipped);
        if about.config.txtime != TxTime::Off {
            report.txtime = Some(TrafficTxtime {
                delta_ns: lead_ns,
                dropped: collected.txtime_dropped,
            });
        }
        // The departure series accounts for every packet reached: one
        // not sent (skipped or refused) has no departure and counts
        // missed, so `--budget 'departure:missed=0'` sees it.
        if let Some(departure) = outcome.series.iter_mut().find(|s| s.name == "departure") {
            departure.stats.missed = report.counts.skipped + report.counts.failed;
        }
        outcome
            .warnings
            .extend(about.warnings_of(&collected, &report));
        outcome.traffic = Some(report);
        Ok(outcome)
    }
}

impl About {
    fn report(&self, c: &Collected, skipped: u64) -> TrafficReport {
        let sent = self.counts.sent.load(Ordering::Relaxed);
        let failed = self.counts.failed.load(Ordering::Relaxed);
        let planned = match self.config.repeat {
            Repeat::Times(n) => self.events.saturating_mul(n),
            // Until stopped: what was reached.
            Repeat::Forever => sent + skipped + failed,
        };
        let timestamps = match (self.config.timestamps, c.without_kernel_stamp) {
            (TxStamps::User, _) => "user-space",
            (TxStamps::Kernel, 0) => "kernel-tx-software",
            (TxStamps::Kernel, n) if n >= c.departures => "user-space",
            (TxStamps::Kernel, _) => "mixed",
        };
        let (span_ns, planned_span) = match (c.first, c.last) {
            (Some(first), Some(last)) => (last.0 - first.0, last.1 - first.1),
            _ => (0, 0),
        };
        // Rates between the first packet and the last: n packets, n − 1 gaps.
        let rate = |span: u64| {
            (span > 0 && c.departures > 1).then(|| (c.departures - 1) as f64 * 1e9 / span as f64)
        };
        let planned_pps = if planned_span > 0 {
            rate(planned_span)
        } else {
            let gaps = self.events.saturating_sub(1) as f64;
            (self.planned_span_ns > 0).then(|| gaps * 1e9 / self.planned_span_ns as f64)
        };
        TrafficReport {
            role: "replay".into(),
            plan: Some(self.config.plan.display().to_string()),
            peer: self.peer.clone(),
            timestamps: timestamps.into(),
            txtime: None,
            counts: TrafficCounts {
                planned,
                sent,
                late: c.late,
                late_after_ns: self.config.late_after_ns,
                skipped,
                failed,
                without_kernel_stamp: c.without_kernel_stamp,
                ..TrafficCounts::default()
            },
            bytes: self.counts.bytes.load(Ordering::Relaxed),
            span_ns,
            achieved_pps: rate(span_ns).unwrap_or(0.0),
            planned_pps,
            accuracy: vec![
                c.departure
                    .report("departure", "departure − planned instant", false),
                c.gap.report(
                    "gap",
                    "(departure − previous departure) − (planned gap)",
                    true,
                ),
            ],
            stream: self
                .config
                .stamp
                .then(|| format!("{:08x}", self.config.stream)),
        }
    }

    fn warnings_of(&self, c: &Collected, report: &TrafficReport) -> Vec<String> {
        let mut warnings = Vec::new();
        let n = &report.counts;
        if self.config.timestamps == TxStamps::Kernel && n.without_kernel_stamp > 0 {
            warnings.push(format!(
                "{} of {} packets had no kernel transmit stamp within {} ms: their user-space send time stands in",
                n.without_kernel_stamp,
                c.departures,
                collector::STAMP_WAIT_NS / 1_000_000
            ));
        }
        let unrecorded = self.counts.unrecorded.load(Ordering::Relaxed);
        if unrecorded > 0 {
            warnings.push(format!(
                "{unrecorded} sent packets found the collector's ring full: their departures are not measured"
            ));
        }
        if c.stamps_refused > 0 {
            warnings.push(format!(
                "{} kernel transmit stamps came before their packet's send and were not used (the kernel's count of sent datagrams does not match rtlab's)",
                c.stamps_refused
            ));
        }
        if c.txtime_dropped > 0 {
            warnings.push(format!(
                "the qdisc dropped {} packets whose transmit time had passed when they reached it (SO_TXTIME): a larger --txtime delta leaves more room",
                c.txtime_dropped
            ));
        }
        if let Some(e) = &c.queue_error {
            warnings.push(format!("reading transmit stamps: {e}"));
        }
        warnings
    }
}
