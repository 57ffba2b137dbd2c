//! The threads of a periodic run: the executive and its tasks, or the
//! self-timed FIFO tasks; the recorder; the [`ProbeRun`].

use super::config::{Mode, PeriodicConfig, START_MARGIN_NS};
use rtlab_core::clock;
use rtlab_core::result::{Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{self, Policy, SchedParams};
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::{ring_capacity, Recorder, Sample, SamplesCsv, SeriesInput};
use rtlab_probe::run::Threads;
use rtlab_probe::switch::{futex_wait, futex_wake};
use rtlab_probe::timer::dedup_keep_order;
use rtlab_probe::{ProbeOutcome, ProbeRun};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the threads get to set themselves up.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the executive waits, after its last release, for the tasks to
/// finish their work before telling them to leave.
const DRAIN_TIMEOUT_NS: u64 = 2_000_000_000;
/// Longest sleep between two looks at the stop flag: a far activation
/// (a long period) is slept toward in absolute chunks of at most this.
const STOP_CHECK_NS: u64 = 50_000_000;
/// Most samples in one ring (2^16 × 24 B = 1.5 MiB): a full ring counts
/// its drops.
const MAX_RING_SAMPLES: usize = 1 << 16;
/// Fewest samples in one ring, whatever the task count.
const MIN_RING_SAMPLES: usize = 1024;
/// Most memory for every ring of a run together (locked under mlockall).
const RINGS_BUDGET_BYTES: usize = 64 << 20;

/// Samples per ring of a run of `tasks` tasks every `period_ns`: two
/// seconds of samples (at least 4096) as every probe, at most
/// [`MAX_RING_SAMPLES`], and the run's `2 × tasks` rings within
/// [`RINGS_BUDGET_BYTES`] (never below [`MIN_RING_SAMPLES`]).
fn task_ring_capacity(tasks: usize, period_ns: u64) -> usize {
    let per_ring_budget = RINGS_BUDGET_BYTES / (2 * tasks.max(1) * std::mem::size_of::<Sample>());
    ring_capacity(period_ns)
        .min(MAX_RING_SAMPLES)
        .min(per_ring_budget)
        .max(MIN_RING_SAMPLES)
}

/// Sleeps (absolute `clock_nanosleep`) to `target_ns`, looking at `stop`
/// at least every [`STOP_CHECK_NS`]: true once the target is reached,
/// false as soon as the stop flag is seen. The chunks before the last end
/// at least half a chunk before the target, so the last one is the real
/// absolute sleep to the target, whatever the wake-up latency of the others.
#[inline]
fn sleep_until_or_stop(target_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        let now = clock::now_ns();
        if now >= target_ns {
            return true;
        }
        if target_ns - now <= STOP_CHECK_NS {
            clock::sleep_until(target_ns);
            return true;
        }
        clock::sleep_until((now + STOP_CHECK_NS).min(target_ns - STOP_CHECK_NS / 2));
        if stop.load(Ordering::Relaxed) {
            return false;
        }
    }
}

/// One task's hand-off with the executive, on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
struct Slot {
    /// The futex word: bumped by the executive at every release (and to
    /// tell the task to leave).
    seq: AtomicU32,
    /// Set by the executive at a release, cleared by the task once its
    /// work for that activation is done and its samples pushed.
    busy: AtomicBool,
    /// The task is to leave (checked after every wake-up).
    quit: AtomicBool,
    /// The activation instant of the current release, ns.
    activation_ns: AtomicU64,
    /// Activations the executive could not release because the task was
    /// still working; the task reports them as `missed` with its next sample.
    skipped: AtomicU64,
}

/// State shared by every thread of one run.
struct Shared {
    stop: Arc<AtomicBool>,
    slots: Vec<Slot>,
}

impl Shared {
    /// Tells every task to leave (executive mode).
    fn quit_all(&self) {
        for slot in &self.slots {
            slot.quit.store(true, Ordering::Release);
            slot.seq.fetch_add(1, Ordering::Release);
            futex_wake(&slot.seq, 1);
        }
    }
}

/// What a thread reports once set up.
struct ThreadReady {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// How a thread ended.
struct ThreadEnd {
    /// Activations accounted for (released or missed).
    accounted: u64,
    planned: u64,
}

/// One task's side of the recorder.
struct TaskRings {
    lateness: rtrb::Producer<Sample>,
    response: rtrb::Producer<Sample>,
    dropped_lateness: Arc<AtomicU64>,
    dropped_response: Arc<AtomicU64>,
}

impl TaskRings {
    /// Hands one activation's two samples over. Hot path: no allocation.
    #[inline]
    fn push(
        &mut self,
        at_ns: u64,
        lateness_ns: u64,
        missed: u64,
        response_ns: u64,
        deadline_miss: bool,
    ) {
        let lateness = Sample {
            at_ns,
            latency_ns: lateness_ns,
            missed,
        };
        if self.lateness.push(lateness).is_err() {
            self.dropped_lateness.fetch_add(1, Ordering::Relaxed);
        }
        let response = Sample {
            at_ns,
            latency_ns: response_ns,
            missed: u64::from(deadline_miss),
        };
        if self.response.push(response).is_err() {
            self.dropped_response.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Spins until the clock reaches `instant_ns`; returns the time read last.
#[inline(always)]
fn spin_until(instant_ns: u64) -> u64 {
    loop {
        let now = clock::now_ns();
        if now >= instant_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// A periodic run in progress.
pub struct PeriodicRun {
    run: Threads<ThreadEnd>,
    shared: Arc<Shared>,
    config: PeriodicConfig,
    settings: Vec<ThreadSettings>,
}

fn fifo(priority: u32) -> SchedParams {
    SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    }
}

fn set_up(cpu: usize, priority: u32) -> Result<ThreadReady, String> {
    let (settings, warnings) =
        rtlab_probe::thread::set_up_measuring_thread(Some(cpu), &fifo(priority));
    Ok(ThreadReady { settings, warnings })
}

fn builder(name: &str) -> std::thread::Builder {
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024)
}

/// Starts the tasks (and the executive) and the recorder; `stop` ends the
/// run early when set.
pub fn start(
    config: &PeriodicConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
) -> anyhow::Result<PeriodicRun> {
    config.validate()?;
    let n = config.tasks;
    let shared = Arc::new(Shared {
        stop,
        slots: (0..n).map(|_| Slot::default()).collect(),
    });
    let mut launch: Launch<ThreadEnd, ThreadReady> = Launch::new();
    let mut inputs = Vec::with_capacity(2 * n);
    let mut names = Vec::with_capacity(2 * n);
    for task in 0..n {
        let mut rings = Vec::with_capacity(2);
        for what in ["lateness", "response"] {
            let (producer, consumer) =
                rtrb::RingBuffer::new(task_ring_capacity(n, config.period_ns));
            let dropped = Arc::new(AtomicU64::new(0));
            let name = format!("task{task}.{what}");
            inputs.push(SeriesInput {
                csv_label: name.clone(),
                consumer,
                dropped: Arc::clone(&dropped),
            });
            names.push(name);
            rings.push((producer, dropped));
        }
        let (response, dropped_response) = rings.pop().expect("two rings");
        let (lateness, dropped_lateness) = rings.pop().expect("two rings");
        let rings = TaskRings {
            lateness,
            response,
            dropped_lateness,
            dropped_response,
        };
        let plan = TaskPlan {
            index: task,
            cpu: config.cpu,
            priority: config.task_priority,
            period_ns: config.period_ns,
            work_ns: config.work_ns,
            offset_ns: config.offset_of(task),
            activations: config.activations,
        };
        let shared = Arc::clone(&shared);
        let mode = config.mode;
        let spawned = launch.spawn(
            format!("periodic task {task}"),
            builder(&format!("rtlab-task{task}")),
            move |gate| {
                let ready = launch::caught(|| set_up(plan.cpu, plan.priority));
                let Some(start_ns) = gate.ready(ready) else {
                    return ThreadEnd {
                        accounted: 0,
                        planned: plan.activations,
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
        let plan = ExecutivePlan {
            cpu: config.cpu,
            priority: config.executive_priority,
            period_ns: config.period_ns,
            offsets: (0..n).map(|t| config.offset_of(t)).collect(),
            activations: config.activations,
            guard_ns: config.guard_ns,
            release_early_ns: config.release_early_ns,
        };
        let executive_shared = Arc::clone(&shared);
        let spawned = launch.spawn(
            "the executive".into(),
            builder("rtlab-executive"),
            move |gate| {
                // Whatever happens to the executive, the tasks leave.
                let shared = executive_shared;
                let _quit = QuitOnDrop(&shared);
                let ready = launch::caught(|| set_up(plan.cpu, plan.priority));
                match gate.ready(ready) {
                    Some(start_ns) => plan.run(start_ns, &shared),
                    None => ThreadEnd {
                        accounted: 0,
                        planned: plan.activations.saturating_mul(plan.offsets.len() as u64),
                    },
                }
            },
        );
        if let Err(e) = spawned {
            shared.quit_all();
            return Err(launch.fail(e.to_string()));
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
        shared,
        config: config.clone(),
        settings,
    })
}

/// Tells the tasks to leave when the executive ends, however it ends.
struct QuitOnDrop<'a>(&'a Shared);

impl Drop for QuitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.quit_all();
    }
}

/// What one task does.
struct TaskPlan {
    index: usize,
    cpu: usize,
    priority: u32,
    period_ns: u64,
    work_ns: u64,
    offset_ns: u64,
    activations: u64,
}

impl TaskPlan {
    /// Executive mode: blocked on its futex until released, spins to its
    /// activation instant, works, reports. Hot path: no allocation, lock
    /// or syscall other than the clock, the futex wait and the ring pushes.
    fn released(&self, start_ns: u64, shared: &Shared, rings: &mut TaskRings) -> ThreadEnd {
        let slot = &shared.slots[self.index];
        // The word starts at 0 and only the executive bumps it, after the
        // start: reading it here instead would lose a release made before
        // this thread got the CPU back from the rendezvous.
        let mut seen: u32 = 0;
        let mut done: u64 = 0;
        loop {
            let current = slot.seq.load(Ordering::Acquire);
            if current == seen {
                futex_wait(&slot.seq, seen);
                continue;
            }
            seen = current;
            let quit = slot.quit.load(Ordering::Acquire);
            // Busy here is a release not handled yet (the task clears it
            // once done): handled even when it comes with the order to
            // leave (the executive gave up waiting before this task got
            // the CPU), so that it is a sample, never lost.
            if slot.busy.load(Ordering::Acquire) {
                let activation = slot.activation_ns.load(Ordering::Acquire);
                let started = spin_until(activation);
                let missed = slot.skipped.swap(0, Ordering::AcqRel);
                spin_until(started + self.work_ns);
                let end = clock::now_ns();
                let response = end - activation;
                rings.push(
                    activation - start_ns,
                    started - activation,
                    missed,
                    response,
                    response > self.period_ns,
                );
                done += 1 + missed;
                slot.busy.store(false, Ordering::Release);
            }
            if quit {
                break;
            }
        }
        ThreadEnd {
            accounted: done + slot.skipped.load(Ordering::Acquire),
            planned: self.activations,
        }
    }

    /// FIFO mode: sleeps to each activation with an absolute
    /// clock_nanosleep, stamps the wake-up, works, reports. Hot path: no
    /// allocation, lock or syscall other than the clock, the sleep and
    /// the ring pushes.
    fn self_timed(&self, start_ns: u64, shared: &Shared, rings: &mut TaskRings) -> ThreadEnd {
        let first = start_ns + self.offset_ns;
        let planned = self.activations;
        let mut k: u64 = 0;
        while k < planned && !shared.stop.load(Ordering::Relaxed) {
            let activation = first + k * self.period_ns;
            if !sleep_until_or_stop(activation, &shared.stop) {
                break;
            }
            let started = clock::now_ns();
            let lateness = started.saturating_sub(activation);
            // Activations that passed while this one was late: counted,
            // never measured as fake catch-up samples.
            let missed = (lateness / self.period_ns).min(planned - k - 1);
            spin_until(started + self.work_ns);
            let end = clock::now_ns();
            let response = end - activation;
            rings.push(
                activation - start_ns,
                lateness,
                missed,
                response,
                response > self.period_ns,
            );
            k += 1 + missed;
        }
        ThreadEnd {
            accounted: k,
            planned,
        }
    }
}

/// What the executive does.
struct ExecutivePlan {
    cpu: usize,
    priority: u32,
    period_ns: u64,
    offsets: Vec<u64>,
    activations: u64,
    guard_ns: u64,
    release_early_ns: u64,
}

impl ExecutivePlan {
    /// Releases every activation of every task in time order. Hot path:
    /// no allocation, lock or syscall other than the clock, the sleep and
    /// the futex wake.
    fn run(&self, start_ns: u64, shared: &Shared) -> ThreadEnd {
        let n = self.offsets.len();
        let mut next: Vec<u64> = self.offsets.iter().map(|o| start_ns + o).collect();
        let mut done: Vec<u64> = vec![0; n];
        let mut accounted: u64 = 0;
        while !shared.stop.load(Ordering::Relaxed) {
            // The earliest pending activation (the lowest task on a tie).
            let mut task = usize::MAX;
            let mut activation = u64::MAX;
            for i in 0..n {
                if done[i] < self.activations && next[i] < activation {
                    activation = next[i];
                    task = i;
                }
            }
            if task == usize::MAX {
                break;
            }
            if !sleep_until_or_stop(activation - self.guard_ns, &shared.stop) {
                break;
            }
            spin_until(activation - self.release_early_ns);
            let slot = &shared.slots[task];
            if slot.busy.load(Ordering::Acquire) {
                // Still working on an earlier activation: this one is missed.
                slot.skipped.fetch_add(1, Ordering::AcqRel);
            } else {
                slot.busy.store(true, Ordering::Release);
                slot.activation_ns.store(activation, Ordering::Release);
                slot.seq.fetch_add(1, Ordering::Release);
                futex_wake(&slot.seq, 1);
            }
            next[task] += self.period_ns;
            done[task] += 1;
            accounted += 1;
        }
        // Off the hot path: let the last releases finish their work.
        let give_up = clock::now_ns()
            .saturating_add(DRAIN_TIMEOUT_NS)
            .saturating_add(self.period_ns);
        while shared
            .slots
            .iter()
            .any(|slot| slot.busy.load(Ordering::Acquire))
            && clock::now_ns() < give_up
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        shared.quit_all();
        ThreadEnd {
            accounted,
            planned: self.activations.saturating_mul(n as u64),
        }
    }
}

/// The run's series: per task its lateness then its response.
fn build_series(
    shared: &Shared,
    config: &PeriodicConfig,
    names: &[String],
    settings: &[ThreadSettings],
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    stats
        .into_iter()
        .enumerate()
        .map(|(i, mut stats)| {
            let task = i / 2;
            let lateness = i % 2 == 0;
            if lateness {
                // Skips the task has not reported with a sample yet.
                stats.missed += shared.slots[task].skipped.load(Ordering::Acquire);
            }
            Series {
                name: names[i].clone(),
                metric: if lateness {
                    "activation_lateness"
                } else {
                    "response_time"
                }
                .into(),
                cpu: Some(config.cpu),
                interval_ns: config.period_ns,
                thread: settings[task].clone(),
                stats,
            }
        })
        .collect()
}

impl ProbeRun for PeriodicRun {
    rtlab_probe::threads_answer_common_questions!(run);

    fn snapshot(&self) -> Vec<Series> {
        build_series(
            &self.shared,
            &self.config,
            &self.run.names,
            &self.settings,
            self.run.recorder.stats(),
        )
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let PeriodicRun {
            mut run,
            shared,
            config,
            settings,
        } = *self;
        let mut stopped_early = false;
        for end in run.join("a periodic thread")? {
            stopped_early |= end.accounted < end.planned;
        }
        let elapsed_ns = run.elapsed_ns();
        let Threads {
            recorder,
            names,
            mut warnings,
            ..
        } = run;
        let stats = recorder.finish()?;
        let series = build_series(&shared, &config, &names, &settings, stats);
        let (mut missed, mut misses, mut tasks_missing) = (0, 0, 0);
        for pair in series.chunks(2) {
            missed += pair[0].stats.missed;
            misses += pair[1].stats.missed;
            tasks_missing += usize::from(pair[1].stats.missed > 0);
        }
        if missed > 0 {
            warnings.push(format!(
                "{missed} activations missed (the task was still working, or woke a period or more late): the `missed` count of the taskN.lateness series"
            ));
        }
        if misses > 0 {
            warnings.push(format!(
                "{misses} deadline misses in {tasks_missing} tasks (a response later than the next activation): the `missed` count of the taskN.response series"
            ));
        }
        Ok(ProbeOutcome {
            series,
            elapsed_ns,
            stopped_early,
            warnings,
            ..ProbeOutcome::default()
        })
    }
}
