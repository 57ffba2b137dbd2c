//! The engine's rules, with a fake probe (tests/fake): a run is stored
//! complete when it ends, partial on a signal, failed when a load will not
//! start or dies; a refused sysctl refuses the run; loads are reaped and
//! the journal is restored before `execute` returns; checkpoints come as
//! often as the context says.
//!
//! The loads are real worker processes and this test binary is their
//! worker (`engine __load-worker SPEC`), so it has its own main and runs
//! its cases one after another.

mod fake;

use fake::{as_json, known_series, Fixture, Recorder, Seen, KNOB_MEASURING, NOT_STOPPED};
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_run::{execute, Refused, Unobserved};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The arguments that make this binary a load worker.
pub const LOAD_WORKER: &str = "__load-worker";

/// A sysctl nothing else in rtlab's tests changes, for the cases that
/// need a real one (they need root).
const SYSCTL: &str = "kernel.printk_ratelimit";

const CASES: &[(&str, fn())] = &[
    ("a_run_that_ends_is_complete", a_run_that_ends_is_complete),
    (
        "the_observer_sees_start_ticks_and_checkpoints",
        the_observer_sees_start_ticks_and_checkpoints,
    ),
    ("the_stop_flag_gives_partial", the_stop_flag_gives_partial),
    (
        "a_load_that_will_not_start_fails_the_run",
        a_load_that_will_not_start_fails_the_run,
    ),
    (
        "a_load_that_dies_stops_the_run",
        a_load_that_dies_stops_the_run,
    ),
    (
        "a_refused_sysctl_refuses_the_run",
        a_refused_sysctl_refuses_the_run,
    ),
    // Last: it installs the signal handlers for good.
    (
        "begin_recovers_the_dead_and_wires_signals",
        begin_recovers_the_dead_and_wires_signals,
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, worker, spec] = args.as_slice() {
        if worker == LOAD_WORKER {
            std::process::exit(rtlab_load::worker_main(spec));
        }
    }
    // `begin` takes the state directory from the environment: set before
    // any thread runs, and a directory of this binary's own.
    let state = tempfile::TempDir::new().unwrap();
    std::env::set_var("RTLAB_STATE_DIR", state.path().join("state"));
    // `cargo test NAME` passes a filter; flags such as --quiet are ignored.
    let filter = args[1..].iter().find(|a| !a.starts_with('-'));
    let chosen: Vec<_> = CASES
        .iter()
        .filter(|(name, _)| filter.is_none_or(|f| name.contains(f.as_str())))
        .collect();
    let mut failed = Vec::new();
    for (name, case) in &chosen {
        let ok = std::panic::catch_unwind(case).is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(name);
        }
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        chosen.len() - failed.len(),
        failed.len(),
        CASES.len() - chosen.len()
    );
    std::process::exit(if failed.is_empty() { 0 } else { 101 });
}

fn a_run_that_ends_is_complete() {
    let fixture = Fixture::new();
    let request = fixture.request(Some(5), "", &[]);
    let result = execute(request, &fixture.context, &mut Unobserved).unwrap();
    assert_eq!(result.status, RunStatus::Complete, "{:?}", result.warnings);
    assert_eq!(result.probe, "fake");
    assert_eq!(result.elapsed_ns, 5_000, "the fake's own clock");
    assert_eq!(result.config, serde_json::json!({ "looks": 5 }));
    assert_eq!(result.command, ["rtlab", "measure", "fake"]);
    assert!(result.ended_at.is_some());
    assert!(!result
        .warnings
        .iter()
        .any(|w| w.contains("nothing measured")));
    assert_kept_and_put_back(&fixture, &result, 0);
}

fn the_observer_sees_start_ticks_and_checkpoints() {
    let fixture = Fixture::new();
    let mut observer = Recorder::new(&fixture);
    let request = fixture.request(Some(5), "", &[]);
    execute(request, &fixture.context, &mut observer).unwrap();
    let started = Seen::Started {
        knob: KNOB_MEASURING.into(),
    };
    assert_eq!(observer.seen.first(), Some(&started), "{:?}", observer.seen);
    assert_eq!(observer.count(|s| matches!(s, Seen::Started { .. })), 1);
    let ticks = observer.count(|s| *s == Seen::Tick);
    assert!(ticks >= 1, "{:?}", observer.seen);
    // A checkpoint interval of zero: one after every tick, of the result
    // so far (still running).
    let checkpoint = Seen::Checkpoint {
        running: true,
        series: as_json(&known_series()),
    };
    assert_eq!(observer.count(|s| *s == checkpoint), ticks);
    fixture.assert_restored();

    // A checkpoint interval longer than the run: none.
    let mut fixture = Fixture::new();
    fixture.context.checkpoint = Duration::from_secs(3600);
    let mut observer = Recorder::new(&fixture);
    let request = fixture.request(Some(5), "", &[]);
    execute(request, &fixture.context, &mut observer).unwrap();
    assert_eq!(
        observer.count(|s| matches!(s, Seen::Checkpoint { .. })),
        0,
        "{:?}",
        observer.seen
    );
    assert!(observer.count(|s| *s == Seen::Tick) >= 1);
    fixture.assert_restored();
}

fn the_stop_flag_gives_partial() {
    let fixture = Fixture::new();
    let mut observer = Recorder::new(&fixture);
    observer.stop_at = Some((3, fixture.context.stop.clone()));
    // The fake runs until stopped; a load runs until the run ends.
    let request = fixture.request(None, "cmd:\"sleep 600\"", &[]);
    let result = execute(request, &fixture.context, &mut observer).unwrap();
    assert_eq!(result.status, RunStatus::Partial, "{:?}", result.warnings);
    assert_kept_and_put_back(&fixture, &result, 1);
}

fn a_load_that_will_not_start_fails_the_run() {
    let fixture = Fixture::new();
    let sysctl = SysctlChange::new();
    let sysctls = SysctlChange::assignments(&sysctl);
    let request = fixture.request(Some(5), "io:dir=/nonexistent/rtlab-run-test", &sysctls);
    let result = execute(request, &fixture.context, &mut Unobserved).unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    let why = warning_after(&result, "nothing measured: ");
    assert!(why.contains("/nonexistent/rtlab-run-test"), "{why}");
    assert!(!fixture.started.load(Ordering::SeqCst), "the probe started");
    assert!(result.series.is_empty());
    if let Some(sysctl) = &sysctl {
        let change = format!("sysctl {}", sysctl.assignment());
        assert!(result.effective.system_changes.contains(&change));
        sysctl.assert_back();
    }
    assert_loads_reaped(&result, 0);
    fixture.assert_restored();
}

fn a_load_that_dies_stops_the_run() {
    let fixture = Fixture::new();
    let request = fixture.request(None, "cmd:\"sleep 1\"", &[]);
    let result = execute(request, &fixture.context, &mut Unobserved).unwrap();
    assert_eq!(result.status, RunStatus::Failed, "{:?}", result.warnings);
    assert!(fixture.started.load(Ordering::SeqCst));
    let why = warning_after(&result, "stopped after ");
    assert!(why.contains("load cmd:\"sleep 1\" stopped early"), "{why}");
    // The death stopped the probe.
    assert!(!result.warnings.iter().any(|w| w == NOT_STOPPED));
    // What it measured until then is kept.
    assert_kept_and_put_back(&fixture, &result, 1);
}

fn a_refused_sysctl_refuses_the_run() {
    let fixture = Fixture::new();
    // With root, a sysctl that is set first and must be put back.
    let sysctl = SysctlChange::new();
    let mut sysctls = SysctlChange::assignments(&sysctl);
    sysctls.push("kernel.no_such_key_of_rtlab=1".into());
    let request = fixture.request(Some(5), "cmd:\"sleep 600\"", &sysctls);
    let error = execute(request, &fixture.context, &mut Unobserved).unwrap_err();
    let refused = error.downcast::<Refused>().unwrap();
    assert!(
        refused
            .reason
            .starts_with("sysctl kernel.no_such_key_of_rtlab=1 refused: "),
        "{}",
        refused.reason
    );
    let result = &refused.result;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.probe, "fake");
    assert_eq!(
        result.warnings,
        [format!("nothing measured: {}", refused.reason)]
    );
    assert!(!fixture.started.load(Ordering::SeqCst), "the probe started");
    if let Some(sysctl) = &sysctl {
        sysctl.assert_back();
    }
    assert!(my_children().is_empty(), "a load started");
    fixture.assert_restored();
}

fn begin_recovers_the_dead_and_wires_signals() {
    let state_dir = rtlab_core::journal::state_dir();
    assert!(state_dir.ends_with("state"), "set by main: {state_dir:?}");
    fs::create_dir(&state_dir).unwrap();
    fs::set_permissions(&state_dir, fs::Permissions::from_mode(0o700)).unwrap();
    // A dead rtlab left a knob changed.
    let knob = state_dir.parent().unwrap().join("dead-knob");
    fs::write(&knob, "0\n").unwrap();
    let left = dead_journal(&state_dir, &knob);

    let context = rtlab_run::begin(&[LOAD_WORKER]).unwrap();
    assert_eq!(fake::read_value(&knob), "1", "recovered by begin");
    assert!(!left.exists());
    assert!(!context.stop.load(Ordering::SeqCst));
    signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !context.stop.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "SIGINT did not set the stop flag"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The stopped session's run ends partial at its first look.
    let fixture = Fixture::new();
    let request = fixture.request(None, "", &[]);
    let result = execute(request, &context, &mut Unobserved).unwrap();
    assert_eq!(result.status, RunStatus::Partial, "{:?}", result.warnings);
    assert!(context.journal.lock().unwrap().entries().is_empty());
    assert_eq!(fixture.knob(), fake::KNOB_BEFORE);
}

/// The journal file of a dead rtlab that set `knob` from 1 to 0.
fn dead_journal(state_dir: &Path, knob: &Path) -> std::path::PathBuf {
    let pid_max: u32 = fake::read_value(Path::new("/proc/sys/kernel/pid_max"))
        .parse()
        .unwrap();
    let dead_pid = pid_max + 1;
    let path = state_dir.join(format!("journal-{dead_pid}-1.json"));
    let journal = serde_json::json!({
        "schema": rtlab_core::journal::SCHEMA,
        "owner": { "pid": dead_pid, "starttime": 1, "command": "rtlab measure timer" },
        "created_at": "2024-01-01T00:00:00Z",
        "entries": [{ "kind": "file", "path": fs::canonicalize(knob).unwrap(), "old": "1", "new": "0" }],
    });
    fs::write(&path, serde_json::to_vec_pretty(&journal).unwrap()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// The run kept the fake's series, reaped its `loads` and put back all
/// it changed.
fn assert_kept_and_put_back(fixture: &Fixture, result: &RunResult, loads: usize) {
    assert_eq!(as_json(&result.series), as_json(&known_series()));
    assert_loads_reaped(result, loads);
    fixture.assert_restored();
}

/// The loads were stopped, their records are in the result, and no worker
/// of them is left.
fn assert_loads_reaped(result: &RunResult, loads: usize) {
    assert_eq!(result.loads.len(), loads, "{:?}", result.loads);
    assert!(
        my_children().is_empty(),
        "workers left: {:?}",
        my_children()
    );
}

/// The warning of `result` that starts with `prefix`, from its prefix on.
fn warning_after<'a>(result: &'a RunResult, prefix: &str) -> &'a str {
    let found = result.warnings.iter().find_map(|w| w.strip_prefix(prefix));
    found.unwrap_or_else(|| panic!("no warning {prefix}…: {:?}", result.warnings))
}

/// This process's children, zombies included (a load worker not reaped
/// would be one), as every thread's `children` file lists them.
fn my_children() -> Vec<i32> {
    let mut children = Vec::new();
    for task in fs::read_dir("/proc/self/task").unwrap() {
        let listed = fs::read_to_string(task.unwrap().path().join("children"));
        let pids = listed.unwrap_or_default();
        children.extend(
            pids.split_whitespace()
                .map(|pid| pid.parse::<i32>().unwrap()),
        );
    }
    children
}

/// A real sysctl set to another value than it has, when this process may
/// (root): the cases that use it check the engine puts it back.
struct SysctlChange {
    path: std::path::PathBuf,
    before: String,
}

impl SysctlChange {
    fn new() -> Option<SysctlChange> {
        let path = Path::new("/proc/sys").join(SYSCTL.replace('.', "/"));
        if fs::OpenOptions::new().write(true).open(&path).is_err() {
            eprintln!("\nskipped: a real sysctl set by the run and put back ({SYSCTL} cannot be changed here; run as root)");
            return None;
        }
        let before = fake::read_value(&path);
        Some(SysctlChange { path, before })
    }

    /// The assignment of `change`, if any, as a run asks for it.
    fn assignments(change: &Option<SysctlChange>) -> Vec<String> {
        change.iter().map(SysctlChange::assignment).collect()
    }

    fn assignment(&self) -> String {
        let before: u64 = self.before.parse().unwrap();
        format!("{SYSCTL}={}", before + 1)
    }

    fn assert_back(&self) {
        assert_eq!(
            fake::read_value(&self.path),
            self.before,
            "{SYSCTL} put back"
        );
    }
}
