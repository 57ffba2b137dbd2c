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
//! - `launch`: the start rendezvous, which never leaves a thread behind;
//! - [`osnoise`]: the kernel's osnoise tracer, run afterwards where it exists.

pub mod attribution;
mod collector;
mod config;
pub mod counters;
pub mod osnoise;
mod report;
pub mod ring;
mod spinner;

pub use config::{
    NoiseConfig, DEFAULT_PERIOD_NS, DEFAULT_RUNTIME_NS, DEFAULT_THRESHOLD_NS, DEFAULT_WINDOW_NS,
    MIN_WINDOW_NS,
};
pub use report::series_name;

use crate::launch::{self, Launch, LEAVE_GRACE};
use crate::run::Threads;
use crate::{Probe, ProbeOutcome, ProbeRun, Start};
use attribution::Sources;
use collector::{Collector, CpuInput};
use counters::{CounterFile, CounterKind, CounterLayout, CpuCounterFile};
use rtlab_core::clock;
use rtlab_core::journal::Journal;
use rtlab_core::result::{NoiseReport, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched;
use rtlab_core::units::human_duration;
use spinner::{CpuCounters, Spinner, SpinnerEnd};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Margin between the spinners being ready and the common start.
const START_MARGIN_NS: u64 = 50_000_000;

/// How long the spinners may take to set themselves up (pin, promote,
/// prefault, first counter reads) before the start is given up.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

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
    // Each read finds the CPU's column again; this one says it is online.
    counters::column_of(counters::header(&learned.text), cpu).ok_or_else(|| {
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
        cpu,
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
type SetUp = (ThreadSettings, Vec<String>);

/// What the coordinator thread hands back: the spinners' ends, then the
/// osnoise tracer's run.
struct Coordinated {
    /// Per spinner, how it ended, or its panic's message.
    ends: Vec<Result<SpinnerEnd, String>>,
    /// When the last spinner ended.
    measured_end_ns: u64,
    osnoise: Option<osnoise::OsnoiseRun>,
    osnoise_note: Option<String>,
    /// The stop flag cut the osnoise tracer's phase short or kept it from
    /// starting: the run is stopped early although rtlab's phase was whole.
    osnoise_stopped: bool,
}

/// The osnoise tracer's settings go through the journal.
impl Probe for NoiseConfig {
    fn kind(&self) -> &'static str {
        "noise"
    }
    fn planned_ns(&self) -> u64 {
        NoiseConfig::planned_ns(self)
    }
    fn config_json(&self) -> serde_json::Value {
        crate::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let journal = Some(Arc::clone(with.journal));
        start(self, with.stop, with.samples_csv, journal)
    }
}

/// Starts the noise probe. Every thread it starts is gone again when it
/// returns an error.
pub fn start(
    config: &NoiseConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
    journal: Option<Arc<Mutex<Journal>>>,
) -> anyhow::Result<Box<dyn ProbeRun>> {
    config.validate()?;
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

    // Spawn everything, then meet: each spinner sets itself up, reports
    // and waits for the common start; any failure sends them all away
    // (and joins them) before the error is returned.
    let mut launch: Launch<SpinnerEnd, SetUp> = Launch::new();
    for spinner in spinners {
        if let Err(e) = spawn_spinner(&mut launch, spinner, &stop) {
            return Err(launch.fail(e.to_string()));
        }
    }
    let collector = match Collector::spawn(
        inputs,
        Arc::clone(&sources),
        samples_csv,
        &config.cpus,
        config.period_ns,
    ) {
        Ok(collector) => collector,
        Err(e) => return Err(launch.fail(format!("cannot start the noise recorder thread: {e}"))),
    };
    // The coordinator gets the spinners once they have started; it ends
    // at once when the start is given up (the sender dropped).
    let (threads_tx, threads_rx) = mpsc::channel::<Vec<JoinHandle<SpinnerEnd>>>();
    let coordinator = {
        let config = config.clone();
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("rtlab-noise-coord".into())
            .spawn(move || {
                let threads = threads_rx.recv().ok()?;
                Some(coordinate(threads, &config, &stop, journal))
            })
    };
    let (coordinator, set_ups) = match coordinator {
        Ok(coordinator) => (coordinator, launch.wait_ready(READY_TIMEOUT)),
        Err(e) => {
            let why = format!("cannot start the noise coordinator thread: {e}");
            return Err(give_up(launch, why, collector, None));
        }
    };
    let set_ups = match set_ups {
        Ok(set_ups) => set_ups,
        Err(why) => {
            drop(threads_tx);
            return Err(give_up(launch, why, collector, Some(coordinator)));
        }
    };
    let mut settings = Vec::with_capacity(n);
    for (thread_settings, thread_warnings) in set_ups {
        warnings.extend(thread_warnings);
        settings.push(thread_settings);
    }
    crate::timer::dedup_keep_order(&mut warnings);
    let start = clock::now_ns() + START_MARGIN_NS;
    // The coordinator is alive (it only returns once it has the threads).
    let _ = threads_tx.send(launch.go(start));

    Ok(Box::new(NoiseRun {
        run: Threads {
            handles: vec![coordinator],
            recorder: collector,
            names: config.cpus.iter().map(|&cpu| series_name(cpu)).collect(),
            start_ns: start,
            warnings,
        },
        config: config.clone(),
        sources,
        settings,
    }))
}

/// Spawns a spinner: it sets itself up, reports, and measures from the
/// common start, or leaves when told to.
fn spawn_spinner(
    launch: &mut Launch<SpinnerEnd, SetUp>,
    mut spinner: Spinner,
    stop: &Arc<AtomicBool>,
) -> std::io::Result<()> {
    let stop = Arc::clone(stop);
    let builder = std::thread::Builder::new()
        .name(format!("rtlab-noise{}", spinner.cpu))
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
    launch.spawn(
        format!("the spinner of CPU {}", spinner.cpu),
        builder,
        move |gate| {
            let set_up = launch::caught(|| spinner.set_up());
            match gate.ready(set_up) {
                Some(start_ns) => spinner.run(start_ns, &stop),
                None => SpinnerEnd::NotStarted,
            }
        },
    )
}

/// Gives a start up once every thread is spawned: sends the spinners away
/// and joins them, then the recorder (which ends when they are gone) and
/// the coordinator (which ends when it gets no spinners); returns the error.
fn give_up(
    launch: Launch<SpinnerEnd, SetUp>,
    why: String,
    collector: Collector,
    coordinator: Option<JoinHandle<Option<Coordinated>>>,
) -> anyhow::Error {
    let error = launch.fail(why);
    let recorder_left = !launch::join_within(vec![collector.into_handle()], LEAVE_GRACE).is_empty();
    if let Some(coordinator) = coordinator {
        let _ = launch::join_within(vec![coordinator], LEAVE_GRACE);
    }
    if recorder_left {
        anyhow::anyhow!("{error}; the noise recorder thread was left to end on its own")
    } else {
        error
    }
}

/// Waits for the spinners, then runs the osnoise tracer when asked.
fn coordinate(
    threads: Vec<JoinHandle<SpinnerEnd>>,
    config: &NoiseConfig,
    stop: &AtomicBool,
    journal: Option<Arc<Mutex<Journal>>>,
) -> Coordinated {
    collector::avoid_cpus(&config.cpus);
    let ends: Vec<Result<SpinnerEnd, String>> = threads
        .into_iter()
        .map(|t| t.join().map_err(|panic| launch::panic_message(&*panic)))
        .collect();
    let measured_end_ns = clock::now_ns();
    let completed = ends.iter().all(|e| matches!(e, Ok(SpinnerEnd::Completed)));
    let stopped = ends.iter().any(|e| matches!(e, Ok(SpinnerEnd::Stopped)));
    let mut osnoise_stopped = false;
    let (osnoise, osnoise_note) = if !config.osnoise {
        (None, Some("not requested".to_string()))
    } else if stopped {
        (
            None,
            Some("not run: rtlab's measurement was stopped early".to_string()),
        )
    } else if !completed {
        (
            None,
            Some("not run: rtlab's measurement failed".to_string()),
        )
    } else if stop.load(Ordering::Relaxed) {
        osnoise_stopped = true;
        (
            None,
            Some("not run: the run was stopped before the osnoise tracer started".to_string()),
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
                // A panic here must not cost rtlab's own figures; the
                // session puts the tracer's settings back as it unwinds.
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    osnoise::run(
                        &root,
                        &settings,
                        Duration::from_nanos(config.duration_ns),
                        stop,
                        journal,
                    )
                }));
                match run {
                    Ok(run) => {
                        osnoise_stopped = run.stopped;
                        let note = run.note.clone();
                        (Some(run), note)
                    }
                    Err(panic) => (
                        None,
                        Some(format!(
                            "the osnoise tracer phase failed ({})",
                            launch::panic_message(&*panic)
                        )),
                    ),
                }
            }
        }
    };
    Coordinated {
        ends,
        measured_end_ns,
        osnoise,
        osnoise_note,
        osnoise_stopped,
    }
}

/// Why a spinner's figures are not what the run planned although nobody
/// stopped it, if so. `windows`: the windows it measured.
fn spinner_failure(
    cpu: usize,
    end: &Result<SpinnerEnd, String>,
    windows: u64,
    duration_ns: u64,
) -> Option<String> {
    match end {
        Err(panic) => Some(format!(
            "cpu{cpu}: the spinner panicked ({panic}): its figures stop where it did"
        )),
        Ok(SpinnerEnd::LeftCpu { now_on, at_ns }) => Some(format!(
            "cpu{cpu}: the spinner found itself on CPU {now_on} {} into the run (CPU {cpu} \
went offline) and stopped: its figures cover the time before",
            human_duration(*at_ns)
        )),
        Ok(SpinnerEnd::NotStarted) => Some(format!("cpu{cpu}: the spinner never started")),
        Ok(SpinnerEnd::Completed) if windows == 0 => Some(format!(
            "cpu{cpu}: the spinner measured nothing in the {} run: it never got its CPU \
(a thread of higher priority, or the hypervisor, held it)",
            human_duration(duration_ns)
        )),
        Ok(SpinnerEnd::Completed | SpinnerEnd::Stopped) => None,
    }
}

/// A noise probe in progress.
struct NoiseRun {
    /// The thread waited for is the coordinator (it joins the spinners).
    run: Threads<Option<Coordinated>, Collector>,
    config: NoiseConfig,
    sources: Arc<Sources>,
    settings: Vec<ThreadSettings>,
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
    crate::threads_answer_common_questions!(run);

    fn snapshot(&self) -> Vec<Series> {
        build_series(
            &self.run.names,
            &self.config.cpus,
            &self.settings,
            self.run.recorder.stats(),
        )
    }

    /// Errors only when the coordinator thread panicked; what else went
    /// wrong (a spinner that panicked or lost its CPU, the recorder, the
    /// samples file) is the outcome's `failure`, with every figure kept.
    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let NoiseRun {
            run:
                Threads {
                    mut handles,
                    recorder: collector,
                    names,
                    start_ns,
                    warnings: start_warnings,
                },
            config,
            sources,
            settings,
        } = *self;
        let coordinated = match handles.pop().map(JoinHandle::join) {
            Some(Ok(Some(coordinated))) => coordinated,
            Some(Ok(None)) => anyhow::bail!("the noise coordinator got no spinners"),
            Some(Err(panic)) => anyhow::bail!(
                "the noise coordinator thread panicked ({})",
                launch::panic_message(&*panic)
            ),
            None => anyhow::bail!("the noise probe has no coordinator"),
        };
        let (totals, collector_failure) = collector.finish();
        let stopped_by_flag = coordinated
            .ends
            .iter()
            .any(|e| matches!(e, Ok(SpinnerEnd::Stopped)));
        let stopped_early = stopped_by_flag || coordinated.osnoise_stopped;
        let mut failures: Vec<String> = totals
            .iter()
            .zip(&coordinated.ends)
            .filter_map(|(t, end)| spinner_failure(t.cpu, end, t.windows, config.duration_ns))
            .collect();
        failures.extend(collector_failure);

        let mut warnings = start_warnings;
        let mut cpus = Vec::with_capacity(totals.len());
        let mut stats = Vec::with_capacity(totals.len());
        for (cpu_totals, end) in totals.iter().zip(&coordinated.ends) {
            // A spinner cut short or that measured nothing has its failure.
            let whole = matches!(end, Ok(SpinnerEnd::Completed)) && cpu_totals.windows > 0;
            let planned = whole.then(|| config.planned_runtime_ns());
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
            net: None,
            traffic: None,
            executive: None,
            failure: (!failures.is_empty()).then(|| failures.join("; ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::{Policy, SchedParams};

    fn config(osnoise: bool) -> NoiseConfig {
        NoiseConfig {
            cpus: vec![0],
            threshold_ns: 5_000,
            runtime_ns: 900_000_000,
            period_ns: 1_000_000_000,
            window_ns: 10_000_000,
            duration_ns: 2_000_000_000,
            sched: SchedParams {
                policy: Policy::Fifo,
                priority: 50,
                deadline: None,
            },
            osnoise,
        }
    }

    /// `coordinate` over spinners that have already ended as `ends`, with
    /// the stop flag as given.
    fn coordinated(ends: Vec<SpinnerEnd>, osnoise: bool, stop: bool) -> Coordinated {
        std::thread::spawn(move || {
            let threads = ends
                .into_iter()
                .map(|end| std::thread::spawn(move || end))
                .collect();
            coordinate(threads, &config(osnoise), &AtomicBool::new(stop), None)
        })
        .join()
        .unwrap()
    }

    /// A spinner of `cpu` (SCHED_OTHER, no counters) and its ring's end.
    fn spinner(cpu: usize) -> (Spinner, rtrb::Consumer<ring::Record>) {
        let sources = Arc::new(Sources::new(Vec::new(), Vec::new()));
        let (producer, consumer) = ring::prefaulted_ring(64);
        let spinner = Spinner {
            cpu,
            sched: SchedParams {
                policy: Policy::Other,
                priority: 0,
                deadline: None,
            },
            threshold_ns: 5_000,
            window_ns: 1_000_000,
            runtime_ns: 10_000_000,
            period_ns: 10_000_000,
            duration_ns: 100_000_000,
            counters: CpuCounters::new(None, None, Arc::clone(&sources)),
            sink: ring::EventSink::new(producer, sources.len(), Arc::new(AtomicU64::new(0))),
        };
        (spinner, consumer)
    }

    #[test]
    fn a_spinner_that_cannot_be_pinned_fails_the_start_and_leaves_nothing() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut launch = Launch::new();
        let (good, good_ring) = spinner(0);
        let (bad, bad_ring) = spinner(1000);
        spawn_spinner(&mut launch, good, &stop).unwrap();
        spawn_spinner(&mut launch, bad, &stop).unwrap();
        let why = launch.wait_ready(READY_TIMEOUT).unwrap_err();
        assert!(
            why.starts_with("the spinner of CPU 1000: cannot be pinned to its CPU ("),
            "{why}"
        );
        assert!(why.ends_with("CPU 1000 is offline or outside the CPUs this process may use"));
        let error = launch.fail(why.clone()).to_string();
        assert_eq!(error, why);
        // Both threads are gone, and their rings (and files) with them.
        assert!(good_ring.is_abandoned());
        assert!(bad_ring.is_abandoned());
        // The caller's stop flag was not needed to send them away.
        assert!(!stop.load(Ordering::Relaxed));
    }

    #[test]
    fn a_stop_before_the_osnoise_phase_stops_the_run_early() {
        let c = coordinated(vec![SpinnerEnd::Completed], true, true);
        assert!(c.osnoise_stopped);
        assert!(c.osnoise.is_none());
        assert_eq!(
            c.osnoise_note.as_deref(),
            Some("not run: the run was stopped before the osnoise tracer started")
        );
        // Not asked for: nothing was stopped.
        let c = coordinated(vec![SpinnerEnd::Completed], false, true);
        assert!(!c.osnoise_stopped);
        // Spinners stopped: the tracer is not run, the spinners say stopped.
        let c = coordinated(vec![SpinnerEnd::Stopped], true, true);
        assert!(!c.osnoise_stopped);
        assert!(c.osnoise_note.unwrap().contains("stopped early"));
        // A spinner that failed: not run either, and not for a stop.
        let c = coordinated(
            vec![
                SpinnerEnd::Completed,
                SpinnerEnd::LeftCpu {
                    now_on: 0,
                    at_ns: 1,
                },
            ],
            true,
            false,
        );
        assert_eq!(
            c.osnoise_note.as_deref(),
            Some("not run: rtlab's measurement failed")
        );
    }

    #[test]
    fn a_spinner_that_could_not_measure_is_a_failure() {
        let failure = |end: Result<SpinnerEnd, String>, windows| {
            spinner_failure(3, &end, windows, 10_000_000_000)
        };
        assert_eq!(failure(Ok(SpinnerEnd::Completed), 12), None);
        assert_eq!(failure(Ok(SpinnerEnd::Stopped), 0), None);
        assert_eq!(
            failure(Ok(SpinnerEnd::Completed), 0).unwrap(),
            "cpu3: the spinner measured nothing in the 10s run: it never got its CPU \
(a thread of higher priority, or the hypervisor, held it)"
        );
        assert_eq!(
            failure(
                Ok(SpinnerEnd::LeftCpu {
                    now_on: 0,
                    at_ns: 2_500_000_000
                }),
                200
            )
            .unwrap(),
            "cpu3: the spinner found itself on CPU 0 2.5s into the run (CPU 3 went offline) \
and stopped: its figures cover the time before"
        );
        assert!(failure(Err("boom".into()), 5)
            .unwrap()
            .contains("the spinner panicked (boom)"));
        assert!(failure(Ok(SpinnerEnd::NotStarted), 0)
            .unwrap()
            .contains("never started"));
    }
}
