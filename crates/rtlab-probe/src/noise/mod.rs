//! The noise probe (paper 002, Table 4.3): on each CPU a FIFO thread spins
//! reading the clock; every gap above the threshold is a noise event, and
//! each attribution window's interrupt, softirq and context-switch
//! counters say where the window's noise came from.
//!
//! - `spinner`: the measuring thread (duty cycle, windows, the spin, the
//!   counter reads around each window);
//! - [`counters`]: `/proc/interrupts` and `/proc/softirqs`, learned once and
//!   then read and parsed without allocation;
//! - [`ring`]: the fixed-size records from a spinner to the recorder;
//! - [`attribution`]: which source explains which event of a window;
//! - `collector`: the recorder thread (attribution, series, per-source
//!   totals, samples CSV);
//! - [`osnoise`]: the kernel's osnoise tracer, run afterwards where it exists.

pub mod attribution;
mod collector;
pub mod counters;
pub mod osnoise;
mod report;
pub mod ring;
mod spinner;

pub use report::series_name;

use crate::{ProbeOutcome, ProbeRun};
use attribution::Sources;
use collector::{Collector, CpuInput};
use counters::{CounterFile, CounterKind, CounterLayout, CpuCounterFile};
use rtlab_core::clock;
use rtlab_core::journal::Journal;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{NoiseReport, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{self, SchedParams};
use serde::Serialize;
use spinner::{CpuCounters, Spinner, SpinnerEnd};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Everything the noise probe needs; serialized into the result as the
/// run's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct NoiseConfig {
    pub cpus: Vec<usize>,
    /// A gap between two clock reads above this is a noise event.
    pub threshold_ns: u64,
    /// Duty cycle: measure for `runtime_ns` of every `period_ns`.
    pub runtime_ns: u64,
    pub period_ns: u64,
    /// Attribution window: counters are read at each window's edges.
    pub window_ns: u64,
    /// Whole run, ns.
    pub duration_ns: u64,
    /// The spinners' scheduling.
    pub sched: SchedParams,
    /// Run the kernel's osnoise tracer beside rtlab where it exists.
    pub osnoise: bool,
}

impl NoiseConfig {
    /// rtlab's own measurement. Where the osnoise tracer runs, it runs for
    /// as long again afterwards.
    pub fn planned_ns(&self) -> u64 {
        self.duration_ns
    }

    /// Spinning time the duty cycle plans over the whole run, per CPU.
    fn planned_runtime_ns(&self) -> u64 {
        let period = self.period_ns.max(1);
        let full = self.duration_ns / period;
        let last = (self.duration_ns % period).min(self.runtime_ns);
        full * self.runtime_ns + last
    }
}

/// Margin between the spinners being ready and the common start.
const START_MARGIN_NS: u64 = 50_000_000;

fn validate(config: &NoiseConfig) -> anyhow::Result<()> {
    anyhow::ensure!(!config.cpus.is_empty(), "no CPU to measure on");
    let mut cpus = config.cpus.clone();
    cpus.sort_unstable();
    cpus.dedup();
    anyhow::ensure!(
        cpus.len() == config.cpus.len(),
        "a CPU is listed twice in {:?}",
        config.cpus
    );
    anyhow::ensure!(config.threshold_ns > 0, "the threshold must be above 0");
    anyhow::ensure!(config.window_ns > 0, "the window must be above 0");
    anyhow::ensure!(config.runtime_ns > 0, "the runtime must be above 0");
    anyhow::ensure!(config.duration_ns > 0, "the duration must be above 0");
    anyhow::ensure!(
        config.runtime_ns <= config.period_ns,
        "the runtime ({} ns) is longer than the period ({} ns)",
        config.runtime_ns,
        config.period_ns
    );
    anyhow::ensure!(
        config.threshold_ns < config.window_ns,
        "the threshold ({} ns) must be shorter than the window ({} ns)",
        config.threshold_ns,
        config.window_ns
    );
    Ok(())
}

/// A counter file's layout and the text it was learned from.
struct Learned {
    path: &'static str,
    layout: Arc<CounterLayout>,
    text: Vec<u8>,
}

fn learn(path: &'static str, kind: CounterKind, warnings: &mut Vec<String>) -> Option<Learned> {
    let what = match kind {
        CounterKind::Irq => "irq",
        CounterKind::Softirq => "softirq",
    };
    let learned = std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            let layout = CounterLayout::learn(&String::from_utf8_lossy(&text), kind)?;
            Ok(Learned {
                path,
                layout: Arc::new(layout),
                text,
            })
        });
    match learned {
        Ok(learned) => Some(learned),
        Err(e) => {
            warnings.push(format!(
                "{path} cannot be used ({e}): no noise is attributed to {what}s"
            ));
            None
        }
    }
}

/// Opens `learned`'s file for `cpu`'s column.
fn open_for_cpu(learned: &Option<Learned>, cpu: usize) -> anyhow::Result<Option<CpuCounterFile>> {
    let Some(learned) = learned else {
        return Ok(None);
    };
    let column = counters::column_of(counters::header(&learned.text), cpu).ok_or_else(|| {
        anyhow::anyhow!(
            "CPU {cpu} is not online (no CPU{cpu} column in {})",
            learned.path
        )
    })?;
    let file = CounterFile::open(
        Path::new(learned.path),
        CounterFile::capacity_for(learned.text.len()),
    )
    .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", learned.path))?;
    Ok(Some(CpuCounterFile::new(
        file,
        Arc::clone(&learned.layout),
        column,
    )))
}

/// A warning when the duty cycle asks for more than the kernel's real-time
/// bandwidth: the kernel then takes the CPU from the spinner, which shows
/// as `preempted` noise.
fn bandwidth_warning(config: &NoiseConfig) -> Option<String> {
    if !config.sched.policy.is_realtime() {
        return None;
    }
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let runtime_us = read("sched_rt_runtime_us")?;
    let period_us = read("sched_rt_period_us")?;
    if runtime_us < 0 || period_us <= 0 {
        return None;
    }
    let asked = config.runtime_ns as f64 / config.period_ns as f64;
    let allowed = runtime_us as f64 / period_us as f64;
    (asked > allowed).then(|| {
        format!(
            "the duty cycle ({:.1} % of the CPU) exceeds the real-time bandwidth \
(sched_rt_runtime_us/sched_rt_period_us = {runtime_us}/{period_us}): the kernel will \
take the CPU from the spinners for the rest, which shows as preempted noise",
            asked * 100.0
        )
    })
}

/// What a spinner reports once it has set itself up.
struct ThreadReady {
    index: usize,
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// What the coordinator thread hands back: the spinners' ends, then the
/// osnoise tracer's run.
struct Coordinated {
    ends: Vec<Option<SpinnerEnd>>,
    /// When the last spinner ended.
    measured_end_ns: u64,
    osnoise: Option<osnoise::OsnoiseRun>,
    osnoise_note: Option<String>,
}

/// Starts the noise probe.
pub fn start(
    config: &NoiseConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
    journal: Option<Arc<Mutex<Journal>>>,
) -> anyhow::Result<Box<dyn ProbeRun>> {
    validate(config)?;
    let mut warnings = Vec::new();
    let softirqs = learn(counters::SOFTIRQS, CounterKind::Softirq, &mut warnings);
    let irqs = learn(counters::INTERRUPTS, CounterKind::Irq, &mut warnings);
    let names = |learned: &Option<Learned>| -> Vec<String> {
        learned
            .iter()
            .flat_map(|l| l.layout.lines.iter().map(|line| line.name.clone()))
            .collect()
    };
    let sources = Arc::new(Sources::new(names(&softirqs), names(&irqs)));
    warnings.extend(bandwidth_warning(config));

    let n = config.cpus.len();
    let start_ns = Arc::new(AtomicU64::new(0));
    // Two rendezvous: every spinner set up, then the common start published.
    let ready = Arc::new(Barrier::new(n + 1));
    let go = Arc::new(Barrier::new(n + 1));
    let (ready_tx, ready_rx) = mpsc::channel();
    let capacity = ring::ring_capacity(config.window_ns, sources.len());

    // Open everything before spawning anything, so an error leaves no thread.
    let mut spinners = Vec::with_capacity(n);
    let mut inputs = Vec::with_capacity(n);
    for &cpu in &config.cpus {
        let counters = CpuCounters::new(
            open_for_cpu(&irqs, cpu)?,
            open_for_cpu(&softirqs, cpu)?,
            Arc::clone(&sources),
        );
        let (producer, consumer) = ring::prefaulted_ring(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        inputs.push(CpuInput {
            cpu,
            consumer,
            dropped: Arc::clone(&dropped),
        });
        spinners.push(Spinner {
            cpu,
            sched: config.sched,
            threshold_ns: config.threshold_ns,
            window_ns: config.window_ns,
            runtime_ns: config.runtime_ns,
            period_ns: config.period_ns,
            duration_ns: config.duration_ns,
            counters,
            sink: ring::EventSink::new(producer, sources.len(), dropped),
        });
    }

    let mut threads = Vec::with_capacity(n);
    for (index, mut spinner) in spinners.into_iter().enumerate() {
        let (stop, start_ns, ready, go, ready_tx) = (
            Arc::clone(&stop),
            Arc::clone(&start_ns),
            Arc::clone(&ready),
            Arc::clone(&go),
            ready_tx.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("rtlab-noise{}", spinner.cpu))
            .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024)
            .spawn(move || {
                let (settings, warnings) = spinner.set_up();
                // The receiver lives until every spinner reported.
                let _ = ready_tx.send(ThreadReady {
                    index,
                    settings,
                    warnings,
                });
                ready.wait();
                go.wait();
                spinner.run(start_ns.load(Ordering::Acquire), &stop)
            })?;
        threads.push(thread);
    }
    drop(ready_tx);

    let collector = Collector::spawn(inputs, Arc::clone(&sources), samples_csv, &config.cpus)?;

    ready.wait();
    let mut reports: Vec<ThreadReady> = ready_rx.iter().take(n).collect();
    reports.sort_by_key(|r| r.index);
    let mut settings = Vec::with_capacity(n);
    for report in reports {
        warnings.extend(report.warnings);
        settings.push(report.settings);
    }
    crate::timer::dedup_keep_order(&mut warnings);
    let start = clock::now_ns() + START_MARGIN_NS;
    start_ns.store(start, Ordering::Release);
    go.wait();

    let coordinator = {
        let config = config.clone();
        std::thread::Builder::new()
            .name("rtlab-noise-coord".into())
            .spawn(move || coordinate(threads, &config, &stop, journal))?
    };

    Ok(Box::new(NoiseRun {
        coordinator: Some(coordinator),
        collector,
        start_ns: start,
        config: config.clone(),
        sources,
        names: config.cpus.iter().map(|&cpu| series_name(cpu)).collect(),
        settings,
        warnings,
    }))
}

/// Waits for the spinners, then runs the osnoise tracer when asked.
fn coordinate(
    threads: Vec<JoinHandle<SpinnerEnd>>,
    config: &NoiseConfig,
    stop: &AtomicBool,
    journal: Option<Arc<Mutex<Journal>>>,
) -> Coordinated {
    collector::avoid_cpus(&config.cpus);
    let ends: Vec<Option<SpinnerEnd>> = threads.into_iter().map(|t| t.join().ok()).collect();
    let measured_end_ns = clock::now_ns();
    let completed = ends.iter().all(|e| e.as_ref().is_some_and(|e| e.completed));
    let (osnoise, osnoise_note) = if !config.osnoise {
        (None, Some("not requested".to_string()))
    } else if !completed {
        (
            None,
            Some("not run: rtlab's measurement was stopped early".to_string()),
        )
    } else {
        match osnoise::find_tracer() {
            Err(why) => (None, Some(why)),
            Ok(root) => {
                let settings = osnoise::OsnoiseSettings::from_ns(
                    &config.cpus,
                    config.runtime_ns,
                    config.period_ns,
                    config.threshold_ns,
                );
                let run = osnoise::run(
                    &root,
                    &settings,
                    Duration::from_nanos(config.duration_ns),
                    stop,
                    journal,
                );
                let note = run.note.clone();
                (Some(run), note)
            }
        }
    };
    Coordinated {
        ends,
        measured_end_ns,
        osnoise,
        osnoise_note,
    }
}

/// A noise probe in progress.
struct NoiseRun {
    coordinator: Option<JoinHandle<Coordinated>>,
    collector: Collector,
    start_ns: u64,
    config: NoiseConfig,
    sources: Arc<Sources>,
    names: Vec<String>,
    settings: Vec<ThreadSettings>,
    warnings: Vec<String>,
}

/// One series per CPU: its noise events, in ns.
fn build_series(
    names: &[String],
    cpus: &[usize],
    settings: &[ThreadSettings],
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    stats
        .into_iter()
        .enumerate()
        .map(|(i, stats)| Series {
            name: names[i].clone(),
            metric: "noise".into(),
            cpu: Some(cpus[i]),
            interval_ns: 0,
            thread: settings[i].clone(),
            stats,
        })
        .collect()
}

impl ProbeRun for NoiseRun {
    fn series_names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// Per CPU: events so far, the largest, mean and last duration.
    fn live(&self) -> Vec<LiveStats> {
        self.collector.live()
    }

    fn is_finished(&self) -> bool {
        self.coordinator
            .as_ref()
            .is_none_or(JoinHandle::is_finished)
    }

    /// Time since the common start, ns.
    fn elapsed_ns(&self) -> u64 {
        clock::now_ns().saturating_sub(self.start_ns)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn snapshot(&self) -> Vec<Series> {
        build_series(
            &self.names,
            &self.config.cpus,
            &self.settings,
            self.collector.stats(),
        )
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let NoiseRun {
            coordinator,
            collector,
            start_ns,
            config,
            sources,
            names,
            settings,
            warnings: start_warnings,
        } = *self;
        let coordinated = coordinator
            .map(JoinHandle::join)
            .transpose()
            .map_err(|_| anyhow::anyhow!("the noise coordinator thread panicked"))?
            .ok_or_else(|| anyhow::anyhow!("the noise probe has no coordinator"))?;
        let totals = collector.finish()?;
        if coordinated.ends.iter().any(Option::is_none) {
            anyhow::bail!("a noise spinner thread panicked");
        }
        let stopped_early = coordinated
            .ends
            .iter()
            .any(|e| e.as_ref().is_some_and(|e| !e.completed));

        let mut warnings = start_warnings;
        let mut cpus = Vec::with_capacity(totals.len());
        let mut stats = Vec::with_capacity(totals.len());
        for cpu_totals in &totals {
            let planned = (!stopped_early).then(|| config.planned_runtime_ns());
            warnings.extend(report::warnings(cpu_totals, planned));
            let mut row = report::noise_cpu(cpu_totals, &sources);
            if let Some(osnoise) = &coordinated.osnoise {
                row.osnoise = osnoise.summaries.get(&cpu_totals.cpu).cloned();
            }
            cpus.push(row);
            stats.push(cpu_totals.series.stats());
        }
        if let Some(osnoise) = &coordinated.osnoise {
            for failure in &osnoise.restore_failures {
                warnings.push(format!("osnoise tracer setting not restored: {failure}"));
            }
        }
        let noise = NoiseReport {
            threshold_ns: config.threshold_ns,
            window_ns: config.window_ns,
            runtime_ns: config.runtime_ns,
            period_ns: config.period_ns,
            cpus,
            osnoise_note: coordinated.osnoise_note.clone(),
        };
        Ok(ProbeOutcome {
            series: build_series(&names, &config.cpus, &settings, stats),
            elapsed_ns: coordinated.measured_end_ns.saturating_sub(start_ns),
            break_event: None,
            stopped_early,
            warnings,
            noise: Some(noise),
            failure: None,
        })
    }
}
