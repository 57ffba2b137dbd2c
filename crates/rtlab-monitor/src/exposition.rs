//! What a scrape gets: every family of the metrics contract (docs/monitor.md),
//! encoded by `prometheus-client` as Prometheus text 0.0.4 or as the
//! `io.prometheus.client` protobuf with native histograms, as the scrape's
//! `Accept` header asks. One collector reads the aggregator's figures at
//! each scrape; the native family is left out of the text (which has no
//! native histograms, and whose encoder refuses a native-only one).

use crate::aggregate::CpuFigures;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rtlab_core::env::Environment;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The protobuf a Prometheus that wants native histograms asks for.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE as TEXT_CONTENT_TYPE;

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text 0.0.4: every family but the native histogram.
    Text,
    /// Delimited `MetricFamily` messages: every family.
    Protobuf,
}

impl Format {
    /// The format a scrape's `Accept` header asks for: protobuf when one
    /// of its media ranges is the delimited `MetricFamily` with a q above
    /// 0 and at least that of every range text answers (`text/plain`,
    /// `text/*`, `*/*`, OpenMetrics text), else text. A q that is not a
    /// number in 0..=1 counts as 0.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let (mut protobuf_q, mut text_q) = (0.0f64, 0.0f64);
        for range in accept.unwrap_or("").split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let params: Vec<(String, String)> = parts
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let param = |key: &str| params.iter().find(|(k, _)| k == key).map(|(_, v)| v);
            let q = param("q").map_or(1.0, |q| {
                q.parse::<f64>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .unwrap_or(0.0)
            });
            let is_protobuf = media == "application/vnd.google.protobuf"
                && param("proto").is_some_and(|p| p == "io.prometheus.client.MetricFamily")
                && param("encoding").is_some_and(|e| e == "delimited");
            let is_text = matches!(
                media.as_str(),
                "text/plain" | "text/*" | "*/*" | "application/openmetrics-text"
            );
            if is_protobuf {
                protobuf_q = protobuf_q.max(q);
            } else if is_text {
                text_q = text_q.max(q);
            }
        }
        if protobuf_q > 0.0 && protobuf_q >= text_q {
            Format::Protobuf
        } else {
            Format::Text
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT_CONTENT_TYPE,
            Format::Protobuf => PROTOBUF_CONTENT_TYPE,
        }
    }
}

/// The labels of `rtlab_environment_info`: the conditions the latencies
/// are measured in, from rtlab_core's environment snapshot (taken once, at
/// start), and the monitor's own promise not to change them.
pub fn environment_labels(env: &Environment) -> Vec<(String, String)> {
    let mut labels = vec![
        ("kernel", env.kernel_release.clone()),
        ("preemption", Some(env.preempt_model.clone())),
        ("hostname", env.hostname.clone()),
        ("version", Some(rtlab_core::VERSION.to_string())),
        ("machine", env.machine.clone()),
        ("clocksource", env.clocksource.clone()),
        ("isolated_cpus", env.isolated_cpus.clone()),
        ("nohz_full", env.nohz_full.clone()),
        ("cpuidle_driver", env.cpuidle_driver.clone()),
        ("governors", governors(env)),
        (
            "rt_runtime_us",
            env.sched_rt_runtime_us.map(|us| us.to_string()),
        ),
        ("virtualization", env.virtualization.clone()),
        // A monitor measures the machine as it runs: it never holds
        // /dev/cpu_dma_latency nor changes any other host setting.
        ("dma_latency_held", Some("false".to_string())),
    ];
    labels.retain(|(_, value)| value.as_ref().is_some_and(|v| !v.is_empty()));
    labels
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.unwrap_or_default()))
        .collect()
}

/// The CPUs' scaling governors, each named once (`performance`,
/// `performance,powersave`).
fn governors(env: &Environment) -> Option<String> {
    let mut names: Vec<&str> = env.governors.values().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    (!names.is_empty()).then(|| names.join(","))
}

/// The monitor's own CPU time, user + system, seconds.
pub fn own_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data and a valid out-pointer for the call.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// What a scrape encodes.
#[derive(Debug)]
struct Families {
    figures: Arc<Vec<CpuFigures>>,
    environment: Vec<(String, String)>,
    with_native: bool,
}

impl std::fmt::Debug for CpuFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuFigures")
            .field("cpu", &self.cpu)
            .finish()
    }
}

/// One family with a series per CPU, labelled `cpu`.
fn per_cpu(
    encoder: &mut DescriptorEncoder,
    figures: &[CpuFigures],
    (name, help, metric_type): (&str, &str, MetricType),
    encode: impl Fn(&CpuFigures, MetricEncoder) -> Result<(), std::fmt::Error>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    for cpu in figures {
        let labels = [("cpu", cpu.cpu.to_string())];
        encode(cpu, family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// How a per-CPU figure held in an atomic is exposed.
#[derive(Clone, Copy)]
enum Kind {
    /// A gauge in seconds, from ns.
    GaugeSeconds,
    /// A counter in seconds, from ns.
    CounterSeconds,
    /// A counter of events.
    Count,
}

/// A per-CPU family read from one atomic of the figures: its name (a
/// counter's without `_total`, which the encoder adds), help, kind, and
/// which atomic.
type Scalar = (
    &'static str,
    &'static str,
    Kind,
    fn(&CpuFigures) -> &AtomicU64,
);

const SCALARS: [Scalar; 6] = [
    (
        "rtlab_wakeup_latency_window_max_seconds",
        "Largest wake-up latency of the last complete --window (the running one until one is complete).",
        Kind::GaugeSeconds,
        |c| &c.window_max_ns,
    ),
    (
        "rtlab_wakeup_latency_max_seconds",
        "Largest wake-up latency since the monitor started.",
        Kind::GaugeSeconds,
        |c| &c.max_ns,
    ),
    (
        "rtlab_wakeup_samples",
        "Wake-ups measured.",
        Kind::Count,
        |c| &c.samples,
    ),
    (
        "rtlab_wakeup_missed",
        "Deadlines missed: a wake-up late by k periods counts k-1.",
        Kind::Count,
        |c| &c.missed,
    ),
    (
        "rtlab_monitor_dropped_samples",
        "Samples lost because the aggregator fell 2 s behind (should stay 0).",
        Kind::Count,
        |c| &c.dropped,
    ),
    (
        "rtlab_monitor_measuring_seconds",
        "Time covered by the measuring bursts' deadlines (met or missed): the duty's coverage.",
        Kind::CounterSeconds,
        |c| &c.measuring_ns,
    ),
];

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let figures = self.figures.as_slice();
        let e = &mut encoder;
        let classic = (
            "rtlab_wakeup_latency_seconds",
            "Timer wake-up latency per CPU (classic buckets, 1 us to 100 ms).",
            MetricType::Histogram,
        );
        per_cpu(e, figures, classic, |c, m| c.classic.encode(m))?;
        if self.with_native {
            let native = (
                "rtlab_wakeup_latency_native_seconds",
                "Timer wake-up latency per CPU (native histogram, schema 3: the same samples).",
                MetricType::Histogram,
            );
            per_cpu(e, figures, native, |c, m| c.native.encode(m))?;
        }
        for (name, help, kind, atomic) in SCALARS {
            let metric_type = match kind {
                Kind::GaugeSeconds => MetricType::Gauge,
                Kind::CounterSeconds | Kind::Count => MetricType::Counter,
            };
            per_cpu(e, figures, (name, help, metric_type), |c, m| {
                let value = atomic(c).load(Ordering::Relaxed);
                let seconds = value as f64 / 1e9;
                match kind {
                    Kind::GaugeSeconds => ConstGauge::new(seconds).encode(m),
                    Kind::CounterSeconds => ConstCounter::new(seconds).encode(m),
                    Kind::Count => ConstCounter::new(value).encode(m),
                }
            })?;
        }
        Info::new(self.environment.clone()).encode(e.encode_descriptor(
            "rtlab_environment",
            "The measured machine: kernel, preemption model, tuning (dma_latency_held: the monitor never holds /dev/cpu_dma_latency).",
            None,
            MetricType::Info,
        )?)?;
        ConstCounter::new(own_cpu_seconds()).encode(e.encode_descriptor(
            "rtlab_monitor_cpu_seconds",
            "CPU time of the monitor process itself, user + system.",
            None,
            MetricType::Counter,
        )?)
    }
}

/// The two registries a scrape may be answered from.
pub struct Exposition {
    text: Registry,
    protobuf: Registry,
}

impl Exposition {
    pub fn new(figures: Arc<Vec<CpuFigures>>, environment: Vec<(String, String)>) -> Exposition {
        let registry = |with_native| {
            let mut registry = Registry::default();
            registry.register_collector(Box::new(Families {
                figures: Arc::clone(&figures),
                environment: environment.clone(),
                with_native,
            }));
            registry
        };
        Exposition {
            text: registry(false),
            protobuf: registry(true),
        }
    }

    /// The body of a scrape in `format`.
    pub fn encode(&self, format: Format) -> anyhow::Result<Vec<u8>> {
        match format {
            Format::Text => {
                let mut text = String::new();
                prometheus_client::encoding::prometheus_text::encode(&mut text, &self.text)
                    .map_err(|_| anyhow::anyhow!("cannot encode the metrics as text"))?;
                Ok(text.into_bytes())
            }
            Format::Protobuf => {
                prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&self.protobuf)
                    .map_err(|e| anyhow::anyhow!("cannot encode the metrics as protobuf: {e}"))
            }
        }
    }
}
