//! The recording as a probe: the socket bound and the plan's file made at
//! start (so a bad `--listen` or `-o` fails before anything is
//! measured), the receiving thread (SCHED_FIFO, pinned, hot path), the
//! tally thread and the recorder (both SCHED_OTHER), and the outcome.

use super::against::Against;
use super::config::RecordConfig;
use super::receive::{receive_loop, Arrival, End, Limits};
use super::socket::RxSocket;
use super::tally::{Outlets, PlanOut, Tallied, Tally, SERIES};
use crate::traffic::sink::PlanSink;
use rtlab_core::clock;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{Series, SeriesStats, ThreadSettings};
use rtlab_core::sched;
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::{ring_capacity, Recorder, SamplesCsv, SeriesInput};
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Arrivals the ring between the receiver and the tally holds: 2.6 s at
/// 50 kpps (12 MiB, locked like all memory of a run).
const ARRIVAL_RING: usize = 1 << 17;
/// The sample rings are sized for a datagram every 20 µs.
const SAMPLE_SPACING_NS: u64 = 20_000;
/// How long the tally sleeps when the ring is empty.
const TALLY_PERIOD: Duration = Duration::from_millis(2);
const READY_TIMEOUT: Duration = Duration::from_secs(30);

impl Probe for RecordConfig {
    fn kind(&self) -> &'static str {
        "traffic-record"
    }

    /// `--duration`, else unknown (a recording ends when its sender
    /// stops): u64::MAX, as a plan run `--forever`.
    fn planned_ns(&self) -> u64 {
        self.duration_ns.unwrap_or(u64::MAX)
    }

    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }

    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        Ok(Box::new(RecordRun::start(self, with)?))
    }
}

/// What the receiving thread reports once set up.
struct Ready {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// A recording under way.
pub struct RecordRun {
    receiver: Option<JoinHandle<End>>,
    tally: Option<JoinHandle<Tallied>>,
    recorder: Option<Recorder>,
    ring_dropped: Arc<AtomicU64>,
    start_ns: u64,
    local: SocketAddr,
    buffer_bytes: usize,
    cpu: Option<usize>,
    settings: ThreadSettings,
    warnings: Vec<String>,
}

impl RecordRun {
    /// Starts recording as [`Probe::start`] does, with the concrete run
    /// (whose [`local_addr`](Self::local_addr) says the port chosen for
    /// port 0).
    pub fn start(config: &RecordConfig, with: Start) -> anyhow::Result<RecordRun> {
        start(config, with.stop, with.samples_csv)
    }
}

fn start(
    config: &RecordConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn std::io::Write + Send>>,
) -> anyhow::Result<RecordRun> {
    config.validate()?;
    let against = match &config.against {
        Some(path) => Some(Against::load(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let plan = match &config.output {
        Some(path) => Some(PlanOut {
            path: path.clone(),
            sink: PlanSink::create(path)?,
        }),
        None => None,
    };
    let mut socket = RxSocket::bind(config.listen)
        .map_err(|e| anyhow::anyhow!("listen {}: {e}", config.listen))?;
    let local = socket.local_addr();
    let buffer_bytes = socket.buffer_bytes;

    let mut inputs = Vec::new();
    let mut outlets = Outlets {
        rings: Vec::new(),
        dropped: Vec::new(),
    };
    for (name, _) in SERIES {
        let (producer, consumer) = rtrb::RingBuffer::new(ring_capacity(SAMPLE_SPACING_NS));
        let dropped = Arc::new(AtomicU64::new(0));
        outlets.rings.push(producer);
        outlets.dropped.push(Arc::clone(&dropped));
        inputs.push(SeriesInput {
            csv_label: name.into(),
            consumer,
            dropped,
        });
    }
    let recorder = Recorder::spawn(
        inputs,
        None,
        samples_csv.map(|out| SamplesCsv {
            out,
            label_column: "series",
        }),
    )?;
    let (mut producer, consumer) = rtrb::RingBuffer::<Arrival>::new(ARRIVAL_RING);
    let tally = Tally::new(local, plan, against, outlets);
    let tally = std::thread::Builder::new()
        .name("rtlab-tally".into())
        .spawn(move || drain(consumer, tally))?;

    let ring_dropped = Arc::new(AtomicU64::new(0));
    let thread_dropped = Arc::clone(&ring_dropped);
    let cfg = config.clone();
    let mut launch: Launch<End, Ready> = Launch::new();
    let builder = std::thread::Builder::new()
        .name("rtlab-receive".into())
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
    launch.spawn("the receiver".into(), builder, move |gate| {
        let ready = launch::caught(|| {
            let (settings, warnings) =
                rtlab_probe::thread::set_up_measuring_thread(cfg.cpu, &cfg.sched);
            Ok(Ready { settings, warnings })
        });
        let Some(start_ns) = gate.ready(ready) else {
            return End::default();
        };
        let limits = Limits {
            end_ns: cfg.duration_ns.map(|d| start_ns.saturating_add(d)),
            count: cfg.count,
            idle_ns: cfg.idle_ns,
        };
        receive_loop(
            &mut socket,
            &mut producer,
            &thread_dropped,
            limits,
            &stop,
            start_ns,
        )
    })?;
    let ready = match launch.wait_ready(READY_TIMEOUT) {
        Ok(mut reports) => reports.remove(0),
        Err(why) => {
            let error = launch.fail(why);
            let _ = tally.join();
            let _ = recorder.finish();
            return Err(error);
        }
    };
    let start_ns = clock::now_ns();
    let receiver = launch.go(start_ns).remove(0);
    let mut warnings = ready.warnings;
    if config.listen.port() == 0 {
        warnings.push(format!("listening on {local} (port 0: the kernel chose)"));
    }
    Ok(RecordRun {
        receiver: Some(receiver),
        tally: Some(tally),
        recorder: Some(recorder),
        ring_dropped,
        start_ns,
        local,
        buffer_bytes,
        cpu: config.cpu,
        settings: ready.settings,
        warnings,
    })
}

/// The tally thread: every arrival until the receiver is gone and the
/// ring is empty.
fn drain(mut ring: rtrb::Consumer<Arrival>, mut tally: Tally) -> Tallied {
    loop {
        // Checked before draining: a producer that is gone has pushed its
        // last arrival, so this drain sees everything.
        let done = ring.is_abandoned();
        while let Ok(arrival) = ring.pop() {
            tally.take(&arrival);
        }
        if done {
            return tally.finish();
        }
        std::thread::sleep(TALLY_PERIOD);
    }
}

impl RecordRun {
    /// Where it listens (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn series(&self, stats: Vec<SeriesStats>, interval_ns: u64) -> Vec<Series> {
        SERIES
            .iter()
            .zip(stats)
            .map(|((name, metric), stats)| Series {
                name: (*name).into(),
                metric: (*metric).into(),
                cpu: self.cpu,
                interval_ns,
                thread: self.settings.clone(),
                stats,
            })
            .collect()
    }
}

impl ProbeRun for RecordRun {
    fn series_names(&self) -> Vec<String> {
        SERIES.iter().map(|(name, _)| (*name).to_string()).collect()
    }

    fn live(&self) -> Vec<LiveStats> {
        self.recorder
            .as_ref()
            .map(Recorder::live)
            .unwrap_or_default()
    }

    fn is_finished(&self) -> bool {
        self.receiver.as_ref().is_none_or(JoinHandle::is_finished)
    }

    fn elapsed_ns(&self) -> u64 {
        clock::now_ns().saturating_sub(self.start_ns)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn snapshot(&self) -> Vec<Series> {
        let stats = self
            .recorder
            .as_ref()
            .map(Recorder::stats)
            .unwrap_or_default();
        self.series(stats, 0)
    }

    fn finish(mut self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let end = self
            .receiver
            .take()
            .expect("finished once")
            .join()
            .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
        let tallied = self
            .tally
            .take()
            .expect("finished once")
            .join()
            .map_err(|_| anyhow::anyhow!("the tally thread panicked"))?;
        let stats = self.recorder.take().expect("finished once").finish()?;
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.extend(self.hot_path_warnings(&end));
        warnings.extend(tallied.warnings);
        let failure = match (end.error, tallied.failure) {
            (Some(e), _) => Some(e),
            (None, plan) => plan,
        };
        let mut report = tallied.report;
        // Every datagram the socket gave, those the ring could not take
        // included (they are missing from the plan and the series).
        report.counts.received = end.received;
        Ok(ProbeOutcome {
            series: self.series(stats, tallied.mean_gap_ns),
            elapsed_ns: end.end_ns.saturating_sub(self.start_ns),
            stopped_early: end.stopped,
            failure,
            warnings,
            traffic: Some(report),
            ..ProbeOutcome::default()
        })
    }
}

impl RecordRun {
    /// What the receiving thread counted that nothing else shows.
    fn hot_path_warnings(&self, end: &End) -> Vec<String> {
        let mut warnings = Vec::new();
        let dropped = self.ring_dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            warnings.push(format!(
                "{dropped} of {} datagrams were received but not recorded (the ring to the tally thread was full): missing from the plan, the series and every count but received",
                end.received
            ));
        }
        if let Some(n) = end.kernel_dropped.filter(|&n| n > 0) {
            warnings.push(format!(
                "the kernel dropped {n} datagrams for a full receive buffer ({} bytes; SO_RXQ_OVFL): they never reached rtlab",
                self.buffer_bytes
            ));
        }
        if end.truncated > 0 {
            warnings.push(format!(
                "{} datagrams were truncated to the receive buffer",
                end.truncated
            ));
        }
        warnings
    }
}
