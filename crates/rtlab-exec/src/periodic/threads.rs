//! The threads of a periodic run: the tasks, one executive per CPU in use
//! (or the self-timed FIFO tasks), the recorder; the [`ProbeRun`].

use super::config::{Mode, PeriodicConfig, START_MARGIN_NS};
use super::handoff::{Ring, Shared, Slot, TaskRings};
use super::release::{ExecutivePlan, Released, TaskPlan, ThreadEnd};
use super::timing::{cpus_of, TaskTiming, WorkDraw};
use rtlab_core::result::{ExecutiveReport, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{self, Policy, SchedParams};
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::{ring_capacity, Recorder, Sample, SamplesCsv, SeriesInput};
use rtlab_probe::run::Threads;
use rtlab_probe::timer::dedup_keep_order;
use rtlab_probe::{ProbeOutcome, ProbeRun};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the threads get to set themselves up.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Most samples in one ring (2^16 × 24 B = 1.5 MiB): a full ring counts
/// its drops.
const MAX_RING_SAMPLES: usize = 1 << 16;
/// Fewest samples in one ring, whatever the task count.
const MIN_RING_SAMPLES: usize = 1024;
/// Most memory for every ring of a run together (locked under mlockall).
const RINGS_BUDGET_BYTES: usize = 64 << 20;

/// Samples per ring of a run of `rings` rings, for a task every
/// `period_ns`: two seconds of samples (at least 4096) as every probe, at
/// most [`MAX_RING_SAMPLES`], and the run's rings within
/// [`RINGS_BUDGET_BYTES`] (never below [`MIN_RING_SAMPLES`]).
fn task_ring_capacity(rings: usize, period_ns: u64) -> usize {
    let per_ring_budget = RINGS_BUDGET_BYTES / (rings.max(1) * std::mem::size_of::<Sample>());
    ring_capacity(period_ns)
        .min(MAX_RING_SAMPLES)
        .min(per_ring_budget)
        .max(MIN_RING_SAMPLES)
}

/// The series of a task, in the result's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `<task>.lateness`: the start of the work minus the activation;
    /// `missed`: activations missed.
    Lateness,
    /// `<task>.response`: the end of the work minus the activation;
    /// `missed`: deadline misses.
    Response,
    /// `<task>.execution` (a task with a budget): the end of the work
    /// minus its start; `missed`: budget overruns.
    Execution,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Lateness => "lateness",
            Kind::Response => "response",
            Kind::Execution => "execution",
        }
    }
    fn metric(self) -> &'static str {
        match self {
            Kind::Lateness => "activation_lateness",
            Kind::Response => "response_time",
            Kind::Execution => "execution_time",
        }
    }
}

/// The series of each task: lateness, response, and execution with a budget.
fn series_of(timings: &[TaskTiming]) -> Vec<(usize, Kind)> {
    let mut out = Vec::with_capacity(3 * timings.len());
    for (task, t) in timings.iter().enumerate() {
        out.push((task, Kind::Lateness));
        out.push((task, Kind::Response));
        if t.budget_ns.is_some() {
            out.push((task, Kind::Execution));
        }
    }
    out
}

/// A periodic run in progress.
pub struct PeriodicRun {
    run: Threads<ThreadEnd>,
    layout: Layout,
}

/// What the series of a run are made of.
struct Layout {
    shared: Arc<Shared>,
    timings: Vec<TaskTiming>,
    /// Per series, its task and kind, in the recorder's order.
    series: Vec<(usize, Kind)>,
    /// Per task, its thread's settings.
    settings: Vec<ThreadSettings>,
}

fn fifo(priority: u32) -> SchedParams {
    SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    }
}

struct ThreadReady {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

fn set_up(cpu: usize, priority: u32) -> Result<ThreadReady, String> {
    let (settings, warnings) =
        rtlab_probe::thread::set_up_measuring_thread(Some(cpu), &fifo(priority));
    Ok(ThreadReady { settings, warnings })
}

pub(crate) fn builder(name: &str) -> std::thread::Builder {
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024)
}

/// The rings of every series, and their recorder inputs and names.
fn make_rings(
    timings: &[TaskTiming],
    series: &[(usize, Kind)],
) -> (Vec<TaskRings>, Vec<SeriesInput>, Vec<String>) {
    let mut inputs = Vec::with_capacity(series.len());
    let mut names = Vec::with_capacity(series.len());
    let mut per_task: Vec<Vec<Ring>> = timings.iter().map(|_| Vec::with_capacity(3)).collect();
    for &(task, kind) in series {
        let t = &timings[task];
        let (producer, consumer) =
            rtrb::RingBuffer::new(task_ring_capacity(series.len(), t.period_ns));
        let dropped = Arc::new(AtomicU64::new(0));
        let name = format!("{}.{}", t.name, kind.suffix());
        inputs.push(SeriesInput {
            csv_label: name.clone(),
            consumer,
            dropped: Arc::clone(&dropped),
        });
        names.push(name);
        per_task[task].push(Ring { producer, dropped });
    }
    let rings = per_task
        .into_iter()
        .zip(timings)
        .map(|(rings, t)| {
            let mut rings = rings.into_iter();
            TaskRings {
                lateness: rings.next().expect("a lateness ring"),
                response: rings.next().expect("a response ring"),
                execution: rings.next(),
                deadline_ns: t.deadline_ns,
                budget_ns: t.budget_ns.unwrap_or(u64::MAX),
            }
        })
        .collect();
    (rings, inputs, names)
}

/// The executive of each CPU in use and the tasks it releases.
fn executives(config: &PeriodicConfig, timings: &[TaskTiming]) -> Vec<ExecutivePlan> {
    cpus_of(timings)
        .into_iter()
        .map(|cpu| ExecutivePlan {
            cpu,
            priority: config.executive_priority,
            tasks: timings
                .iter()
                .enumerate()
                .filter(|(_, t)| t.cpu == cpu)
                .map(|(slot, t)| Released {
                    slot,
                    period_ns: t.period_ns,
                    offset_ns: t.offset_ns,
                    activations: t.activations,
                })
                .collect(),
            guard_ns: config.guard_ns,
            release_early_ns: config.release_early_ns,
            learning: config.learn,
        })
        .collect()
}

/// Starts the tasks (and the executives) and the recorder; `stop` ends the
/// run early when set.
pub fn start(
    config: &PeriodicConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
) -> anyhow::Result<PeriodicRun> {
    config.validate()?;
    let timings = config.timings();
    let n = timings.len();
    let series = series_of(&timings);
    let shared = Arc::new(Shared {
        stop,
        slots: (0..n).map(|_| Slot::default()).collect(),
    });
    let mut launch: Launch<ThreadEnd, ThreadReady> = Launch::new();
    let (rings, inputs, names) = make_rings(&timings, &series);
    for ((index, t), rings) in timings.iter().enumerate().zip(rings) {
        let mut plan = TaskPlan {
            index,
            period_ns: t.period_ns,
            offset_ns: t.offset_ns,
            activations: t.activations,
            work: WorkDraw::new(t.work, &t.name),
        };
        let (cpu, priority) = (t.cpu, t.priority);
        let shared = Arc::clone(&shared);
        let mode = config.mode;
        let spawned = launch.spawn(
            format!("periodic task {}", t.name),
            builder(&format!("rtlab-task{index}")),
            move |gate| {
                let ready = launch::caught(|| set_up(cpu, priority));
                let Some(start_ns) = gate.ready(ready) else {
                    return ThreadEnd {
                        accounted: 0,
                        planned: plan.activations,
                        guards: None,
                    };
                };
                let mut rings = rings;
                match mode {
                    Mode::Executive => plan.released(start_ns, &shared, &mut rings),
                    Mode::Fifo => plan.self_timed(start_ns, &shared, &mut rings),
                }
            },
        );
        if let Err(e) = spawned {
            return Err(launch.fail(e.to_string()));
        }
    }
    if config.mode == Mode::Executive {
        for plan in executives(config, &timings) {
            let executive_shared = Arc::clone(&shared);
            let spawned = launch.spawn(
                format!("the executive of CPU {}", plan.cpu),
                builder(&format!("rtlab-exec{}", plan.cpu)),
                move |gate| {
                    // Whatever happens to the executive, its tasks leave.
                    let shared = executive_shared;
                    let _quit = QuitOnDrop(&plan, &shared);
                    let ready = launch::caught(|| set_up(plan.cpu, plan.priority));
                    match gate.ready(ready) {
                        Some(start_ns) => plan.run(start_ns, &shared),
                        None => ThreadEnd {
                            accounted: 0,
                            planned: plan.planned(),
                            guards: None,
                        },
                    }
                },
            );
            if let Err(e) = spawned {
                shared.quit_all();
                return Err(launch.fail(e.to_string()));
            }
        }
    }

    let csv = samples_csv.map(|out| SamplesCsv {
        out,
        label_column: "series",
    });
    let recorder = match Recorder::spawn(inputs, None, csv) {
        Ok(recorder) => recorder,
        Err(e) => {
            shared.quit_all();
            return Err(launch.fail(format!("cannot start the recorder thread: {e}")));
        }
    };
    let reports = match launch.wait_ready(READY_TIMEOUT) {
        Ok(reports) => reports,
        Err(why) => {
            shared.quit_all();
            let error = launch.fail(why);
            let _ = recorder.finish();
            return Err(error);
        }
    };
    let mut warnings = Vec::new();
    let mut settings = Vec::with_capacity(n);
    for (index, report) in reports.into_iter().enumerate() {
        warnings.extend(report.warnings);
        if index < n {
            settings.push(report.settings);
        }
    }
    dedup_keep_order(&mut warnings);
    Ok(PeriodicRun {
        run: Threads::go(launch, START_MARGIN_NS, recorder, names, warnings),
        layout: Layout {
            shared,
            timings,
            series,
            settings,
        },
    })
}

/// Tells an executive's tasks to leave when it ends, however it ends.
struct QuitOnDrop<'a>(&'a ExecutivePlan, &'a Shared);

impl Drop for QuitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.quit(self.1);
    }
}

/// The run's series: per task its lateness, its response and, with a
/// budget, its execution.
fn build_series(run: &Layout, names: &[String], stats: Vec<SeriesStats>) -> Vec<Series> {
    stats
        .into_iter()
        .zip(&run.series)
        .zip(names)
        .map(|((mut stats, &(task, kind)), name)| {
            if kind == Kind::Lateness {
                // Skips the task has not reported with a sample yet.
                stats.missed += run.shared.slots[task].skipped.load(Ordering::Acquire);
            }
            let t = &run.timings[task];
            Series {
                name: name.clone(),
                metric: kind.metric().into(),
                cpu: Some(t.cpu),
                interval_ns: t.period_ns,
                thread: run.settings[task].clone(),
                stats,
            }
        })
        .collect()
}

/// The warnings of a run that missed: activations, deadlines, budgets.
fn miss_warnings(series: &[Series], warnings: &mut Vec<String>) {
    let what = [
        (
            "activation_lateness",
            "activations missed (the task was still working, or woke a period or more late)",
            "lateness",
        ),
        (
            "response_time",
            "deadline misses (a response later than the task's deadline)",
            "response",
        ),
        (
            "execution_time",
            "budget overruns (work longer than the task's budget)",
            "execution",
        ),
    ];
    for (metric, text, suffix) in what {
        let (mut count, mut tasks) = (0, 0);
        for s in series.iter().filter(|s| s.metric == metric) {
            count += s.stats.missed;
            tasks += usize::from(s.stats.missed > 0);
        }
        if count > 0 {
            warnings.push(format!(
                "{count} {text} in {tasks} tasks: the `missed` count of the <task>.{suffix} series"
            ));
        }
    }
}

impl ProbeRun for PeriodicRun {
    rtlab_probe::threads_answer_common_questions!(run);

    fn snapshot(&self) -> Vec<Series> {
        build_series(&self.layout, &self.run.names, self.run.recorder.stats())
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let PeriodicRun { mut run, layout } = *self;
        let mut stopped_early = false;
        let mut executives = Vec::new();
        for end in run.join("a periodic thread")? {
            stopped_early |= end.accounted < end.planned;
            executives.extend(end.guards);
        }
        let elapsed_ns = run.elapsed_ns();
        let Threads {
            recorder,
            names,
            mut warnings,
            ..
        } = run;
        let stats = recorder.finish()?;
        let series = build_series(&layout, &names, stats);
        miss_warnings(&series, &mut warnings);
        warnings.extend(executives.iter().filter_map(crate::guard::capped_warning));
        Ok(ProbeOutcome {
            series,
            elapsed_ns,
            stopped_early,
            warnings,
            executive: (!executives.is_empty()).then_some(ExecutiveReport {
                threads: executives,
            }),
            ..ProbeOutcome::default()
        })
    }
}
