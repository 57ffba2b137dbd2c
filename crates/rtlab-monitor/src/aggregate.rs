//! The aggregator: a SCHED_OTHER thread that drains the measuring threads'
//! rings into each CPU's figures (the histograms, the counters, the max
//! gauges) that a scrape reads. Every figure has a fixed size, whatever
//! the monitor runs for: the classic buckets are the contract's, the
//! native buckets are bounded by the range of a u64 of ns at schema 3
//! (under 800), the quantile recorder has a fixed range.

use crate::measure::CpuInput;
use prometheus_client::metrics::histogram::{Histogram, NativeHistogramConfig};
use rtlab_probe::recorder::Sample;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Upper bounds of the classic histogram's buckets, seconds: 1 µs to
/// 100 ms in 1-2-5 steps (+Inf is implicit).
pub const CLASSIC_BUCKETS_S: [f64; 16] = [
    1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3,
    50e-3, 100e-3,
];
/// The native histogram's schema: buckets grow by 2^(1/8) ≈ 1.09, so a
/// quantile read from them is within about 4.5 % of the truth.
pub const NATIVE_SCHEMA: i8 = 3;
/// How often the rings are drained: each holds 2 s of samples, and a
/// scrape sees samples at most this old; rarer wake-ups cost less of the
/// monitor's own CPU.
const DRAIN_PERIOD: Duration = Duration::from_millis(50);
/// The range of the quantile recorder (the summary's p99), ns: above it a
/// latency counts as this much (the max gauges keep the exact value).
const QUANTILE_MAX_NS: u64 = 100_000_000_000;

const NS_PER_S: f64 = 1e9;

/// The largest latency per tumbling window of `window_ns` on the samples'
/// planned times: what the gauge shows is the last complete window's,
/// or the running one's until one is complete.
#[derive(Debug, Clone)]
pub struct WindowMax {
    window_ns: u64,
    current: u64,
    running_ns: u64,
    last_complete_ns: Option<u64>,
}

impl WindowMax {
    pub fn new(window_ns: u64) -> WindowMax {
        WindowMax {
            window_ns: window_ns.max(1),
            current: 0,
            running_ns: 0,
            last_complete_ns: None,
        }
    }

    /// Counts a sample planned at `at_ns` (since the start). A sample of a
    /// window already closed (drained late) counts in the running one.
    pub fn record(&mut self, at_ns: u64, latency_ns: u64) {
        let window = at_ns / self.window_ns;
        if window > self.current {
            self.last_complete_ns = Some(self.running_ns);
            self.current = window;
            self.running_ns = 0;
        }
        self.running_ns = self.running_ns.max(latency_ns);
    }

    /// The gauge's value, ns.
    pub fn shown_ns(&self) -> u64 {
        self.last_complete_ns.unwrap_or(self.running_ns)
    }
}

/// One CPU's figures, as a scrape reads them.
pub struct CpuFigures {
    pub cpu: usize,
    /// The contract's µs-scale buckets.
    pub classic: Histogram,
    /// The same samples in exponential buckets (protobuf only).
    pub native: Histogram,
    pub samples: AtomicU64,
    pub missed: AtomicU64,
    /// Samples that found the ring full (the aggregator was starved).
    pub dropped: Arc<AtomicU64>,
    /// Time covered by the bursts' deadlines, met or missed, ns.
    pub measuring_ns: AtomicU64,
    pub max_ns: AtomicU64,
    pub window_max_ns: AtomicU64,
    quantiles: Mutex<hdrhistogram::Histogram<u64>>,
}

/// One CPU's figures for a summary.
#[derive(Debug, Clone, Serialize)]
pub struct CpuSummary {
    pub cpu: usize,
    pub samples: u64,
    pub missed: u64,
    pub dropped: u64,
    pub max_ns: u64,
    pub p99_ns: u64,
    pub measuring_ns: u64,
}

impl CpuFigures {
    fn new(cpu: usize, dropped: Arc<AtomicU64>) -> CpuFigures {
        let native = NativeHistogramConfig::with_schema(NATIVE_SCHEMA);
        CpuFigures {
            cpu,
            classic: Histogram::new(CLASSIC_BUCKETS_S),
            native: Histogram::new_native(native),
            samples: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            dropped,
            measuring_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            window_max_ns: AtomicU64::new(0),
            quantiles: Mutex::new(
                hdrhistogram::Histogram::new_with_bounds(1, QUANTILE_MAX_NS, 2)
                    .expect("valid quantile bounds"),
            ),
        }
    }

    fn quantiles(&self) -> MutexGuard<'_, hdrhistogram::Histogram<u64>> {
        // A panic elsewhere must not cost the figures: use them as they are.
        self.quantiles.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, sample: &Sample, interval_ns: u64, window: &mut WindowMax) {
        let seconds = sample.latency_ns as f64 / NS_PER_S;
        self.classic.observe(seconds);
        self.native.observe(seconds);
        self.samples.fetch_add(1, Ordering::Relaxed);
        self.missed.fetch_add(sample.missed, Ordering::Relaxed);
        let covered = (1 + sample.missed).saturating_mul(interval_ns);
        self.measuring_ns.fetch_add(covered, Ordering::Relaxed);
        self.max_ns.fetch_max(sample.latency_ns, Ordering::Relaxed);
        window.record(sample.at_ns, sample.latency_ns);
        self.window_max_ns
            .store(window.shown_ns(), Ordering::Relaxed);
        self.quantiles()
            .saturating_record(sample.latency_ns.clamp(1, QUANTILE_MAX_NS));
    }

    pub fn summary(&self) -> CpuSummary {
        let max_ns = self.max_ns.load(Ordering::Relaxed);
        CpuSummary {
            cpu: self.cpu,
            samples: self.samples.load(Ordering::Relaxed),
            missed: self.missed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            max_ns,
            // The recorder answers with its bucket's top, which may be
            // above the largest sample itself.
            p99_ns: self.quantiles().value_at_quantile(0.99).min(max_ns),
            measuring_ns: self.measuring_ns.load(Ordering::Relaxed),
        }
    }
}

/// The aggregator thread and the figures it keeps.
pub struct Aggregator {
    pub figures: Arc<Vec<CpuFigures>>,
    handle: JoinHandle<()>,
}

impl Aggregator {
    /// Starts draining `inputs`; the thread ends once every producer is
    /// gone and its ring drained.
    pub fn spawn(
        inputs: Vec<CpuInput>,
        interval_ns: u64,
        window_ns: u64,
    ) -> std::io::Result<Aggregator> {
        let figures: Arc<Vec<CpuFigures>> = Arc::new(
            inputs
                .iter()
                .map(|input| CpuFigures::new(input.cpu, Arc::clone(&input.dropped)))
                .collect(),
        );
        let shared = Arc::clone(&figures);
        let handle = std::thread::Builder::new()
            .name("rtlab-mon-agg".into())
            .spawn(move || drain_loop(inputs, &shared, interval_ns, window_ns))?;
        Ok(Aggregator { figures, handle })
    }

    /// Waits for the thread to drain the rings of the threads that ended.
    pub fn finish(self) -> Arc<Vec<CpuFigures>> {
        let _ = self.handle.join();
        self.figures
    }
}

fn drain_loop(mut inputs: Vec<CpuInput>, figures: &[CpuFigures], interval_ns: u64, window_ns: u64) {
    let mut windows = vec![WindowMax::new(window_ns); inputs.len()];
    loop {
        let mut all_done = true;
        for ((input, cpu), window) in inputs.iter_mut().zip(figures).zip(windows.iter_mut()) {
            let abandoned = input.consumer.is_abandoned();
            while let Ok(sample) = input.consumer.pop() {
                cpu.record(&sample, interval_ns, window);
            }
            all_done &= abandoned;
        }
        if all_done {
            return;
        }
        std::thread::sleep(DRAIN_PERIOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_max_shows_the_running_window_until_one_is_complete() {
        let mut window = WindowMax::new(1_000);
        window.record(10, 5);
        window.record(900, 7);
        assert_eq!(window.shown_ns(), 7);
        // The first sample of the next window closes the first.
        window.record(1_100, 3);
        assert_eq!(window.shown_ns(), 7);
        window.record(1_500, 50);
        assert_eq!(window.shown_ns(), 7, "the running window is not shown");
        window.record(2_000, 1);
        assert_eq!(window.shown_ns(), 50);
        // A late sample of a closed window counts in the running one.
        window.record(1_900, 60);
        window.record(3_000, 0);
        assert_eq!(window.shown_ns(), 60);
    }

    fn figures() -> CpuFigures {
        CpuFigures::new(3, Arc::new(AtomicU64::new(0)))
    }

    #[test]
    fn every_sample_counts_once_and_its_missed_deadlines_as_time_measured() {
        let cpu = figures();
        let mut window = WindowMax::new(1_000_000_000);
        let samples = [
            (1_000_000, 2_000, 0),
            (2_000_000, 4_500_000, 4),
            (7_000_000, 800, 0),
        ];
        for (at_ns, latency_ns, missed) in samples {
            let sample = Sample {
                at_ns,
                latency_ns,
                missed,
            };
            cpu.record(&sample, 1_000_000, &mut window);
        }
        let summary = cpu.summary();
        assert_eq!(summary.samples, 3);
        assert_eq!(summary.missed, 4);
        // (samples + missed) deadlines of 1 ms each.
        assert_eq!(summary.measuring_ns, 7 * 1_000_000);
        assert_eq!(summary.max_ns, 4_500_000);
        assert_eq!(cpu.window_max_ns.load(Ordering::Relaxed), 4_500_000);
        assert_eq!(cpu.classic.count(), 3);
        assert_eq!(cpu.native.count(), 3);
        assert!((cpu.classic.sum() - cpu.native.sum()).abs() < 1e-12);
        let p99 = summary.p99_ns as f64;
        assert!((p99 - 4_500_000.0).abs() / 4_500_000.0 < 0.01, "{p99}");
    }
}
