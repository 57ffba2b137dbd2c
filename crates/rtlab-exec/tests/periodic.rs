//! Periodic tasks: every planned activation is accounted for (samples +
//! missed) in both modes, an injected stall of known size shows in the
//! lateness series, the stop flag ends a run early, and bad settings are
//! refused.
//!
//! These tests need real-time scheduling (CI is root) and skip with a
//! printed reason without it. They never assert absolute timings. They run
//! one at a time (each holds `SERIAL`).

use rtlab_core::result::Series;
use rtlab_core::sched::{self, Policy, SchedParams};
use rtlab_exec::guard::{Guard, Learning};
use rtlab_exec::periodic::{self, Mode, PeriodicConfig, Phasing};
use rtlab_exec::taskset::{TaskSet, TaskSpec, Work};
use rtlab_probe::{ProbeOutcome, ProbeRun};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

struct Serial {
    _guard: MutexGuard<'static, ()>,
}

impl Drop for Serial {
    fn drop(&mut self) {
        sched::unlock_memory();
    }
}

/// None (with the reason printed) when real-time scheduling is not allowed.
fn serial() -> Option<Serial> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let allowed = std::thread::spawn(|| {
        sched::set_current_thread(&SchedParams {
            policy: Policy::Fifo,
            priority: 1,
            deadline: None,
        })
    })
    .join()
    .unwrap();
    if let Err(e) = allowed {
        use std::io::Write;
        let _ = write!(
            std::io::stderr(),
            "\nskipped: sched_setscheduler(SCHED_FIFO) is not allowed here ({e})\n"
        );
        return None;
    }
    let _ = sched::lock_memory();
    Some(Serial { _guard: guard })
}

fn config(mode: Mode, tasks: usize, period_ns: u64, activations: u64) -> PeriodicConfig {
    let mut config = PeriodicConfig::new(tasks, period_ns, 20_000, period_ns * activations);
    config.mode = mode;
    config
}

fn run_with(config: &PeriodicConfig, stop: Arc<AtomicBool>) -> ProbeOutcome {
    let run = periodic::start(config, stop, None).expect("the periodic run starts");
    while !run.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    Box::new(run).finish().expect("the periodic run finishes")
}

fn lateness(outcome: &ProbeOutcome) -> Vec<&Series> {
    outcome
        .series
        .iter()
        .filter(|s| s.metric == "activation_lateness")
        .collect()
}

/// Every task has its two series and every planned activation is a
/// sample or a missed activation; every sample has its response.
fn assert_accounted(outcome: &ProbeOutcome, tasks: usize, activations: u64) {
    assert_eq!(outcome.series.len(), 2 * tasks);
    for task in 0..tasks {
        let lateness = &outcome.series[2 * task];
        let response = &outcome.series[2 * task + 1];
        assert_eq!(lateness.name, format!("task{task}.lateness"));
        assert_eq!(response.name, format!("task{task}.response"));
        assert_eq!(response.metric, "response_time");
        assert_eq!(lateness.stats.dropped, 0);
        assert_eq!(
            lateness.stats.samples + lateness.stats.missed,
            activations,
            "{}: {} samples + {} missed",
            lateness.name,
            lateness.stats.samples,
            lateness.stats.missed
        );
        assert_eq!(response.stats.samples, lateness.stats.samples);
        assert!(response.stats.min_ns >= 20_000, "the work takes 20 µs");
    }
    assert!(!outcome.stopped_early);
}

#[test]
fn every_activation_is_accounted_for_in_both_modes() {
    let Some(_serial) = serial() else { return };
    for mode in [Mode::Executive, Mode::Fifo] {
        for phasing in [Phasing::Staggered, Phasing::InPhase] {
            let mut config = config(mode, 5, 2_000_000, 300);
            config.phasing = phasing;
            let outcome = run_with(&config, Arc::new(AtomicBool::new(false)));
            assert_accounted(&outcome, 5, 300);
        }
    }
}

/// A SCHED_FIFO 99 thread on `cpu` spinning `stall` every `every`,
/// `count` times.
fn inject_stalls(
    cpu: usize,
    stall: Duration,
    every: Duration,
    count: u32,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        sched::pin_current_thread(cpu).expect("pinned");
        sched::set_current_thread(&SchedParams {
            policy: Policy::Fifo,
            priority: 99,
            deadline: None,
        })
        .expect("FIFO 99");
        for _ in 0..count {
            std::thread::sleep(every);
            let start = Instant::now();
            while start.elapsed() < stall {
                std::hint::spin_loop();
            }
        }
    })
}

#[test]
fn an_injected_stall_shows_in_the_lateness_series() {
    let Some(_serial) = serial() else { return };
    for mode in [Mode::Executive, Mode::Fifo] {
        // 4 tasks every 1 ms, 2 s; 3 ms stalls every 200 ms from 300 ms on.
        let config = config(mode, 4, 1_000_000, 2000);
        let stalls = 5;
        let cpu = config.cpu;
        let injector = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            inject_stalls(
                cpu,
                Duration::from_millis(3),
                Duration::from_millis(200),
                stalls,
            )
            .join()
            .unwrap();
        });
        let outcome = run_with(&config, Arc::new(AtomicBool::new(false)));
        injector.join().unwrap();
        assert_accounted(&outcome, 4, 2000);
        // Each 3 ms stall delays the activations of its first 2 ms by
        // at least 1 ms: one such sample per stall at least.
        let late: u64 = lateness(&outcome)
            .iter()
            .flat_map(|s| s.stats.histogram_ns.iter())
            .filter(|bin| bin[0] >= 1_000_000)
            .map(|bin| bin[1])
            .sum();
        assert!(
            late >= u64::from(stalls),
            "{mode}: {late} activations late by 1 ms or more, {stalls} stalls injected"
        );
        let max = lateness(&outcome)
            .iter()
            .map(|s| s.stats.max_ns)
            .max()
            .unwrap();
        assert!(max >= 2_000_000, "{mode}: max lateness {max} ns");
    }
}

#[test]
fn the_stop_flag_ends_a_run_early_with_what_was_measured() {
    let Some(_serial) = serial() else { return };
    for mode in [Mode::Executive, Mode::Fifo] {
        let config = config(mode, 3, 10_000_000, 1000);
        let stop = Arc::new(AtomicBool::new(false));
        let setter = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            })
        };
        let outcome = run_with(&config, stop);
        setter.join().unwrap();
        // Far fewer activations than the 1000 planned (10 s) is the proof
        // that the stop ended it, not a time.
        assert!(outcome.stopped_early, "{mode}");
        for series in lateness(&outcome) {
            assert!(series.stats.samples > 0, "{mode}: {}", series.name);
            assert!(series.stats.samples < 1000, "{mode}: {}", series.name);
        }
    }
}

#[test]
fn bad_settings_are_refused() {
    let mut c = config(Mode::Executive, 0, 1_000_000, 10);
    // The error names the setting by its key (rtlab_core::settings).
    assert_eq!(c.validate().unwrap_err().field, "tasks");
    c.tasks = 2;
    c.work_ns = 1_000_000;
    assert_eq!(c.validate().unwrap_err().field, "work");
    c.work_ns = 1000;
    c.release_early_ns = c.guard_ns + 1;
    // Above a learned guard is fine (it is learned above the margin),
    // not above a fixed one.
    assert_eq!(c.validate(), Ok(()));
    c.learn = Learning::fixed();
    assert_eq!(c.validate().unwrap_err().field, "release_early");
    c.learn.spin_budget_percent = 0;
    c.release_early_ns = 0;
    assert_eq!(c.validate().unwrap_err().field, "spin_budget");
    c.learn.spin_budget_percent = 25;
    c.release_early_ns = 0;
    c.executive_priority = c.task_priority;
    assert!(c.validate().unwrap_err().to_string().contains("priority"));
    assert!(periodic::start(&c, Arc::new(AtomicBool::new(false)), None).is_err());
}

#[test]
fn the_config_is_recorded_with_every_default() {
    use rtlab_probe::Probe;
    let c = PeriodicConfig::new(30, 10_000_000, 100_000, 5_000_000_000);
    assert_eq!(c.activations, 500);
    assert_eq!(Probe::kind(&c), "periodic");
    assert_eq!(Probe::planned_ns(&c), 5_000_000_000);
    let json = c.config_json();
    assert_eq!(json["mode"], "executive");
    assert_eq!(json["phasing"], "staggered");
    assert_eq!(json["guard_ns"], 100_000);
    assert_eq!(json["learn"]["guard"], true);
    assert_eq!(json["learn"]["release_early"], true);
    assert_eq!(json["learn"]["spin_budget_percent"], 25);
    assert_eq!(json["executive_priority"], 90);
    assert_eq!(json["task_priority"], 80);
    assert_eq!(c.offset_of(3), 1_000_000);
}

/// A stop during a long sleep is seen within a chunk, not at the next
/// activation: 2 tasks every 10 min (task 1 at 5 min), stop after
/// ~300 ms. The 30 s guard is a hang check (a stop seen only at the next
/// activation would take 5 min), not a timing claim.
#[test]
fn a_stop_is_seen_while_sleeping_toward_a_far_activation() {
    let Some(_serial) = serial() else { return };
    for mode in [Mode::Executive, Mode::Fifo] {
        let config = config(mode, 2, 600_000_000_000, 10);
        let stop = Arc::new(AtomicBool::new(false));
        let run = periodic::start(&config, Arc::clone(&stop), None).expect("starts");
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        let stopped = Instant::now();
        while !run.is_finished() {
            assert!(
                stopped.elapsed() < Duration::from_secs(30),
                "{mode}: the run ignores its stop flag"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let outcome = Box::new(run).finish().expect("finishes");
        assert!(outcome.stopped_early, "{mode}");
        for (task, series) in lateness(&outcome).into_iter().enumerate() {
            let accounted = series.stats.samples + series.stats.missed;
            assert!(accounted < 10, "{mode}: {} accounted", series.name);
            // Task 1 (offset 5 min) never reached its first activation.
            if task == 1 {
                assert_eq!(accounted, 0, "{mode}: {}", series.name);
            }
        }
    }
}

/// A release the task has not handled when the executive gives up its
/// drain (and tells the tasks to leave) is still a sample: 16 tasks in
/// phase, each working 180 ms of a 200 ms period once, run one after the
/// other for ~2.9 s, longer than the drain (2 s + a period); the last
/// ones get the CPU with their release and the order to leave together.
/// Whatever the timing, every activation is a sample or missed.
#[test]
fn a_release_pending_when_the_drain_gives_up_is_still_accounted() {
    let Some(_serial) = serial() else { return };
    let mut config = PeriodicConfig::new(16, 200_000_000, 180_000_000, 200_000_000);
    config.phasing = Phasing::InPhase;
    assert_eq!(config.activations, 1);
    let outcome = run_with(&config, Arc::new(AtomicBool::new(false)));
    for series in lateness(&outcome) {
        assert_eq!(
            series.stats.samples + series.stats.missed,
            1,
            "{}: {} samples + {} missed",
            series.name,
            series.stats.samples,
            series.stats.missed
        );
    }
    assert!(!outcome.stopped_early);
}

#[test]
fn absurd_periods_and_lengths_are_refused_without_overflow() {
    // Below the minimum period.
    let c = config(Mode::Executive, 2, periodic::MIN_PERIOD_NS - 1, 10);
    assert_eq!(c.validate().unwrap_err().field, "period", "{c:?}");
    assert!(config(Mode::Fifo, 2, periodic::MIN_PERIOD_NS, 10)
        .validate()
        .is_ok());
    // activations × period overflows, or is longer than the longest run.
    let mut c = config(Mode::Executive, 2, 3_600_000_000_000, 10);
    c.activations = u64::MAX / 2;
    assert_eq!(c.planned_ns(), u64::MAX);
    assert_eq!(c.planned_activations(), u64::MAX - 1);
    assert_eq!(c.validate().unwrap_err().field, "duration");
    c.activations = periodic::MAX_RUN_NS / c.period_ns + 1;
    assert_eq!(c.validate().unwrap_err().field, "duration");
    c.activations = periodic::MAX_RUN_NS / c.period_ns;
    assert!(c.validate().is_ok());
    // The phase of the last of 1000 tasks of a huge period.
    let mut c = PeriodicConfig::new(1000, u64::MAX / 2, 0, u64::MAX);
    assert_eq!(c.activations, 2);
    assert!(c.offset_of(999) < c.period_ns);
    c.phasing = Phasing::InPhase;
    assert_eq!(c.offset_of(999), 0);
}

/// A task set of `tasks` on the config's default CPU (and CPU 0 for the
/// one named `other-cpu`).
fn set_config(mode: Mode, tasks: Vec<TaskSpec>, duration_ns: u64) -> PeriodicConfig {
    let set = TaskSet {
        tasks,
        source: None,
    };
    let mut config = PeriodicConfig::from_task_set(set, duration_ns);
    config.mode = mode;
    config
}

fn task(name: &str, period_ns: u64, work: Work) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        period_ns,
        offset_ns: 0,
        work,
        deadline_ns: period_ns,
        budget_ns: None,
        priority: 80,
        cpu: None,
    }
}

fn series<'a>(outcome: &'a ProbeOutcome, name: &str) -> &'a Series {
    outcome
        .series
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no series {name}"))
}

/// Tasks of different periods, offsets, work, deadlines, budgets and
/// priorities, on two CPUs: each task's activations are its own duration
/// / period, every one accounted for; a work longer than the deadline is a
/// deadline miss every time, one longer than the budget an overrun every
/// time (counts, not timings: the work spins at least its length).
#[test]
fn a_task_set_runs_each_task_on_its_own_grid() {
    let Some(_serial) = serial() else { return };
    for mode in [Mode::Executive, Mode::Fifo] {
        let mut fast = task("fast", 2_000_000, Work::Fixed { ns: 50_000 });
        fast.offset_ns = 500_000;
        fast.budget_ns = Some(40_000);
        fast.priority = 85;
        let mut slow = task(
            "slow",
            5_000_000,
            Work::Uniform {
                min_ns: 100_000,
                max_ns: 300_000,
            },
        );
        slow.deadline_ns = 90_000;
        slow.budget_ns = Some(90_000);
        let mut other = task("other-cpu", 3_000_000, Work::Fixed { ns: 20_000 });
        other.cpu = Some(0);
        let config = set_config(mode, vec![fast, slow, other], 600_000_000);
        assert_eq!(config.planned_activations(), 300 + 120 + 200);
        let outcome = run_with(&config, Arc::new(AtomicBool::new(false)));
        let names: Vec<&str> = outcome.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fast.lateness",
                "fast.response",
                "fast.execution",
                "slow.lateness",
                "slow.response",
                "slow.execution",
                "other-cpu.lateness",
                "other-cpu.response",
            ],
            "{mode}"
        );
        for (name, planned) in [("fast", 300), ("slow", 120), ("other-cpu", 200)] {
            let lateness = series(&outcome, &format!("{name}.lateness"));
            let s = &lateness.stats;
            assert_eq!(s.samples + s.missed, planned, "{mode}: {name}");
            assert_eq!(s.dropped, 0, "{mode}: {name}");
            let response = series(&outcome, &format!("{name}.response"));
            assert_eq!(response.stats.samples, s.samples, "{mode}: {name}");
        }
        assert_eq!(series(&outcome, "other-cpu.lateness").cpu, Some(0));
        assert_eq!(series(&outcome, "slow.lateness").interval_ns, 5_000_000);
        // fast: 50 µs of work against a 40 µs budget, every time.
        let fast = &series(&outcome, "fast.execution").stats;
        assert_eq!(
            fast.missed, fast.samples,
            "{mode}: every fast activation overruns"
        );
        assert!(fast.min_ns >= 50_000, "{mode}");
        // slow: 100-300 µs of work against a 90 µs deadline, every time;
        // its 1 ms budget is kept as long as nothing preempts it for long.
        let slow = &series(&outcome, "slow.response").stats;
        assert_eq!(
            slow.missed, slow.samples,
            "{mode}: every slow response misses"
        );
        let slow_exec = &series(&outcome, "slow.execution").stats;
        assert!(slow_exec.min_ns >= 100_000, "{mode}");
        assert!(slow_exec.samples > 0);
        assert!(!outcome.stopped_early, "{mode}");
        assert!(
            outcome
                .warnings
                .iter()
                .any(|w| w.contains("budget overruns")),
            "{mode}: {:?}",
            outcome.warnings
        );
    }
}

#[test]
fn a_task_set_s_config_is_recorded_and_checked() {
    use rtlab_probe::Probe;
    let mut a = task("a", 1_000_000, Work::Fixed { ns: 10_000 });
    a.priority = 95;
    let b = task("b", 4_000_000, Work::Fixed { ns: 10_000 });
    let mut config = set_config(Mode::Executive, vec![a, b], 1_000_000_000);
    // The executive (90) is not above task a (95).
    let e = config.validate().unwrap_err();
    assert_eq!(e.field, "priority");
    assert!(e.message.contains("task `a`"), "{}", e.message);
    config.executive_priority = 96;
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(config.planned_activations(), 1000 + 250);
    assert_eq!(Probe::planned_ns(&config), 1_000_000_000);
    let json = config.config_json();
    assert_eq!(
        json["task_set"]["activations"],
        serde_json::json!([1000, 250])
    );
    assert_eq!(json["task_set"]["set"]["tasks"][1]["name"], "b");
    // A set the task-set rules refuse is refused by the config too.
    config.task_set.as_mut().unwrap().set.tasks[1].offset_ns = 5_000_000;
    let e = config.validate().unwrap_err();
    assert_eq!(e.field, "taskset");
    assert!(e.message.contains("task `b`: offset 5ms"), "{}", e.message);
    // The equal-task form records no task set.
    assert!(PeriodicConfig::new(2, 1_000_000, 0, 1_000_000_000)
        .config_json()
        .get("task_set")
        .is_none());
}

/// The executive reports what it learned: per CPU its wake-ups (one per
/// sleep, at most one per activation), its tasks' wake-ups after their
/// release, the guard of each idle length within its bounds, the spin.
#[test]
fn the_executive_reports_its_guards_and_spin() {
    let Some(_serial) = serial() else { return };
    let activations = 200;
    let config = config(Mode::Executive, 2, 2_000_000, activations);
    let outcome = run_with(&config, Arc::new(AtomicBool::new(false)));
    assert_accounted(&outcome, 2, activations);
    let report = outcome.executive.expect("an executive report");
    assert_eq!(report.threads.len(), 1);
    let t = &report.threads[0];
    assert_eq!((t.role.as_str(), t.cpu), ("executive", Some(config.cpu)));
    assert_eq!(
        (t.guard_mode.as_str(), t.release_early_mode.as_str()),
        ("auto", "auto")
    );
    let sleeps: u64 = t.guards.iter().map(|b| b.observations).sum();
    assert!(sleeps > 0 && sleeps <= 2 * activations, "{sleeps} sleeps");
    for b in &t.guards {
        assert!(
            (rtlab_exec::guard::MIN_LEARNED_GUARD_NS..=rtlab_exec::guard::MAX_LEARNED_GUARD_NS)
                .contains(&b.guard_ns)
                || b.guard_ns == periodic::GUARD_NS,
            "{b:?}"
        );
        assert!(b.idle_below_ns.is_none_or(|below| below > b.idle_from_ns));
    }
    let release = t.release_early.as_ref().expect("the release margin");
    // Every released activation but the last of each task was seen by the
    // executive at that task's next release.
    assert!(release.observations > 0 && release.observations <= 2 * activations);
    // The spin is part of the thread's time, never more than all of it.
    assert!(t.spin_ns > 0 && t.spin_ns <= t.elapsed_ns, "{t:?}");
    assert!(t.spin_percent > 0.0 && t.spin_percent <= 100.0);

    // A fixed guard is used as it is, and still reported.
    let mut fixed = config.clone();
    fixed.set_margins(Guard::Fixed(150_000), Guard::Fixed(40_000), 25);
    let outcome = run_with(&fixed, Arc::new(AtomicBool::new(false)));
    assert_accounted(&outcome, 2, activations);
    let t = &outcome.executive.expect("an executive report").threads[0];
    assert_eq!(
        (t.guard_mode.as_str(), t.release_early_mode.as_str()),
        ("fixed", "fixed")
    );
    assert!(
        t.guards.iter().all(|b| b.guard_ns == 150_000),
        "{:?}",
        t.guards
    );
    assert_eq!(t.release_early.as_ref().unwrap().guard_ns, 40_000);
    // The self-timed tasks have no executive.
    let fifo = config.clone();
    let outcome = run_with(
        &PeriodicConfig {
            mode: Mode::Fifo,
            ..fifo
        },
        Arc::new(AtomicBool::new(false)),
    );
    assert!(outcome.executive.is_none());
}
