//! A processes run: the executive (executive form) and the workers
//! started, their rendezvous and common start, the recorder and the
//! supervisor; the [`ProbeRun`] the runner watches.

use super::children;
use super::config::{ProcessesConfig, WORKER_SUBCOMMAND};
use super::serve;
use super::supervisor::{Live, Rings, Supervisor, SupervisorEnd, Worker};
use crate::periodic::Mode;
use rtlab_core::clock;
use rtlab_core::result::{Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_probe::recorder::{ring_capacity, Recorder, SamplesCsv, SeriesInput};
use rtlab_probe::run::Threads;
use rtlab_probe::timer::dedup_keep_order;
use rtlab_probe::{ProbeOutcome, ProbeRun};
use std::ffi::OsStr;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

/// Margin between every worker being ready and the common start: the
/// start goes through one pipe per worker, each of which must wake up.
pub const START_MARGIN_NS: u64 = 100_000_000;
/// How much longer than the run the executive is asked to serve (it is
/// stopped at the run's end): the workers attach after the start.
const SERVE_MARGIN_NS: u64 = 60_000_000_000;

/// A processes run in progress.
pub struct ProcessesRun {
    run: Threads<SupervisorEnd>,
    live: Arc<Live>,
    config: ProcessesConfig,
}

/// The recorder inputs (per task its lateness then its response) and
/// the workers' ends of them.
fn rings(config: &ProcessesConfig) -> (Vec<SeriesInput>, Vec<String>, Vec<Rings>) {
    let n = config.periodic.tasks;
    let capacity = ring_capacity(config.periodic.period_ns);
    let mut inputs = Vec::with_capacity(2 * n);
    let mut names = Vec::with_capacity(2 * n);
    let mut rings = Vec::with_capacity(n);
    for task in 0..n {
        let mut ends = ["lateness", "response"].map(|what| {
            let (producer, consumer) = rtrb::RingBuffer::new(capacity);
            let dropped = Arc::new(AtomicU64::new(0));
            let name = format!("task{task}.{what}");
            inputs.push(SeriesInput {
                csv_label: name.clone(),
                consumer,
                dropped: Arc::clone(&dropped),
            });
            names.push(name);
            Some((producer, dropped))
        });
        let (lateness, dropped_lateness) = ends[0].take().expect("two rings");
        let (response, dropped_response) = ends[1].take().expect("two rings");
        rings.push(Rings {
            lateness,
            response,
            dropped_lateness,
            dropped_response,
        });
    }
    (inputs, names, rings)
}

/// Starts the executive (executive form), the workers and the recorder,
/// and gives the workers their common start once all are ready. On any
/// error every child is killed and reaped before it returns.
pub fn start(
    config: &ProcessesConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
) -> anyhow::Result<ProcessesRun> {
    config.validate()?;
    let p = &config.periodic;
    let requested = SchedParams {
        policy: Policy::Fifo,
        priority: p.task_priority,
        deadline: None,
    };
    let executive = match config.release {
        Mode::Executive => Some(serve::start(
            &config.program,
            p.cpu,
            p.tasks,
            p.planned_ns()
                .saturating_add(p.period_ns)
                .saturating_add(SERVE_MARGIN_NS),
            config.focus.as_ref(),
        )?),
        Mode::Fifo => None,
    };
    let socket = executive.as_ref().map(|e| e.socket.clone());
    let (inputs, names, rings) = rings(config);
    let mut workers = Vec::with_capacity(p.tasks);
    for (task, rings) in rings.into_iter().enumerate() {
        let plan = config.worker_plan(task, socket.as_deref()).to_arg();
        let args = [
            OsStr::new("exec"),
            OsStr::new(WORKER_SUBCOMMAND),
            OsStr::new(&plan),
        ];
        let child = children::spawn(&config.program, &args, libc::SIGKILL, true).map_err(|e| {
            anyhow::anyhow!(
                "cannot start task{task}'s process ({} exec {WORKER_SUBCOMMAND}): {e}",
                config.program.display()
            )
        })?;
        workers.push(Worker::new(task, child, rings));
    }
    let unknown = ThreadSettings {
        tid: 0,
        pinned_cpu: None,
        requested,
        actual: None,
        timer_slack_ns: None,
    };
    let live = Arc::new(Live {
        settings: Mutex::new(vec![unknown; p.tasks]),
    });
    let mut supervisor = Supervisor::new(workers, executive, Arc::clone(&live), requested);
    supervisor.wait_ready().map_err(anyhow::Error::msg)?;
    let csv = samples_csv.map(|out| SamplesCsv {
        out,
        label_column: "series",
    });
    let recorder = Recorder::spawn(inputs, None, csv)
        .map_err(|e| anyhow::anyhow!("cannot start the recorder thread: {e}"))?;
    let start_ns = clock::now_ns() + START_MARGIN_NS;
    supervisor.go(start_ns).map_err(anyhow::Error::msg)?;
    let mut warnings = std::mem::take(&mut supervisor.warnings);
    dedup_keep_order(&mut warnings);
    let planned = p.activations;
    let period_ns = p.period_ns;
    let hang_after_ns = p.planned_ns().saturating_add(p.period_ns);
    let handle = std::thread::Builder::new()
        .name("rtlab-supervisor".into())
        .spawn(move || supervisor.run(&stop, planned, period_ns, hang_after_ns))
        .map_err(|e| anyhow::anyhow!("cannot start the supervisor thread: {e}"))?;
    Ok(ProcessesRun {
        run: Threads {
            handles: vec![handle],
            recorder,
            names,
            start_ns,
            warnings,
        },
        live,
        config: config.clone(),
    })
}

/// The run's series: per task its lateness then its response.
fn build_series(
    config: &ProcessesConfig,
    names: &[String],
    settings: &[ThreadSettings],
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    stats
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (stats, name))| Series {
            name: name.clone(),
            metric: if i % 2 == 0 {
                "activation_lateness"
            } else {
                "response_time"
            }
            .into(),
            cpu: Some(config.periodic.cpu),
            interval_ns: config.periodic.period_ns,
            thread: settings[i / 2].clone(),
            stats,
        })
        .collect()
}

/// The series of `stats`, with each process's settings as it reported them.
fn series_of(
    config: &ProcessesConfig,
    names: &[String],
    live: &Live,
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    let settings = live
        .settings
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    build_series(config, names, &settings, stats)
}

/// What the series say about missed activations and deadline misses.
fn accounting_warnings(series: &[Series]) -> Vec<String> {
    let missed: u64 = series.iter().step_by(2).map(|s| s.stats.missed).sum();
    let misses: u64 = series
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| s.stats.missed)
        .sum();
    let mut warnings = Vec::new();
    if missed > 0 {
        warnings.push(format!(
            "{missed} activations missed (the process was still working, or woke a period or more late): the `missed` count of the taskN.lateness series"
        ));
    }
    if misses > 0 {
        warnings.push(format!(
            "{misses} deadline misses (a response later than the next activation): the `missed` count of the taskN.response series"
        ));
    }
    warnings
}

impl ProbeRun for ProcessesRun {
    rtlab_probe::threads_answer_common_questions!(run);

    fn snapshot(&self) -> Vec<Series> {
        let stats = self.run.recorder.stats();
        series_of(&self.config, &self.run.names, &self.live, stats)
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let ProcessesRun {
            mut run,
            live,
            config,
        } = *self;
        let end = run
            .join("the supervisor of the processes")?
            .pop()
            .expect("one supervisor");
        let elapsed_ns = run.elapsed_ns();
        // The supervisor has dropped every ring: the recorder ends.
        let stats = run.recorder.finish()?;
        let series = series_of(&config, &run.names, &live, stats);
        let planned = config.periodic.activations;
        let mut warnings = run.warnings;
        warnings.extend(end.warnings);
        warnings.extend(accounting_warnings(&series));
        dedup_keep_order(&mut warnings);
        Ok(ProbeOutcome {
            series,
            elapsed_ns,
            stopped_early: end.accounted.iter().any(|&a| a < planned),
            failure: (!end.failures.is_empty()).then(|| end.failures.join("; ")),
            warnings,
            ..ProbeOutcome::default()
        })
    }
}
