//! `rtlab monitor`: continuous, low-duty measuring of timer wake-up
//! latency on every CPU, served as Prometheus metrics.
//!
//! One measuring thread per CPU ([`measure`]: SCHED_FIFO, pinned, memory
//! locked, the hot-path rules of ARCHITECTURE.md) wakes on an absolute
//! grid in one burst of `--duty` per second; an aggregator thread
//! ([`aggregate`]) turns the samples into each CPU's histograms, counters
//! and max gauges; [`exposition`] encodes them as `prometheus-client`
//! text or protobuf; [`http`] serves them. The monitor changes nothing on
//! the host: it measures the machine as it runs (it does not hold
//! `/dev/cpu_dma_latency`).

pub mod aggregate;
pub mod config;
pub mod exposition;
pub mod http;
pub mod measure;

pub use aggregate::{CpuSummary, CLASSIC_BUCKETS_S, NATIVE_SCHEMA};
pub use config::MonitorConfig;
pub use exposition::{Exposition, Format};
pub use http::Server;

use aggregate::{Aggregator, CpuFigures};
use rtlab_core::result::ThreadSettings;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A monitor measuring: its threads, and the figures a scrape reads.
pub struct Monitor {
    threads: Vec<JoinHandle<()>>,
    aggregator: Aggregator,
    stop: Arc<AtomicBool>,
    /// How each measuring thread was set up (in `config.cpus` order).
    pub settings: Vec<ThreadSettings>,
    /// What the threads could not get (a priority refused, ...).
    pub warnings: Vec<String>,
}

impl Monitor {
    /// Validates `config` and starts measuring on every CPU of it, until
    /// [`Monitor::finish`] or `stop` is set. The caller locks the
    /// process's memory (`rtlab_core::sched::lock_memory`) first.
    pub fn start(config: &MonitorConfig, stop: Arc<AtomicBool>) -> anyhow::Result<Monitor> {
        config
            .validate()
            .map_err(|e| anyhow::anyhow!("{}", e.render(rtlab_core::settings::flag)))?;
        let (measuring, inputs) = measure::start(config, &stop)?;
        // The aggregator ends by itself once the measuring threads are gone.
        let aggregator = match Aggregator::spawn(inputs, config.interval_ns, config.window_ns) {
            Ok(aggregator) => aggregator,
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                for thread in measuring.threads {
                    let _ = thread.join();
                }
                anyhow::bail!("cannot start the aggregator thread: {e}");
            }
        };
        Ok(Monitor {
            threads: measuring.threads,
            aggregator,
            stop,
            settings: measuring.settings,
            warnings: measuring.warnings,
        })
    }

    /// The figures scrapes read.
    pub fn figures(&self) -> Arc<Vec<CpuFigures>> {
        Arc::clone(&self.aggregator.figures)
    }

    /// Each CPU's figures so far.
    pub fn summary(&self) -> Vec<CpuSummary> {
        self.aggregator
            .figures
            .iter()
            .map(CpuFigures::summary)
            .collect()
    }

    /// Stops measuring, waits for every sample to be counted and returns
    /// each CPU's figures.
    pub fn finish(self) -> Vec<CpuSummary> {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            let _ = thread.join();
        }
        self.aggregator
            .finish()
            .iter()
            .map(CpuFigures::summary)
            .collect()
    }
}
