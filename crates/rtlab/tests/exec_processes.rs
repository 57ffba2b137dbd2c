//! `--processes` end to end: every task a separate process of this
//! binary. SCHED_FIFO processes timing themselves: every activation
//! accounted for, every child gone after the run, a worker SIGKILLed
//! mid-run fails the run with its reason and leaves nothing, an injected
//! stall shows in the lateness. Processes under `rtlab exec serve`: the
//! same accounting, and nothing left (socket, processes); those tests
//! skip themselves while this build has no `exec serve`. Never an
//! absolute timing.

mod common;

use common::{assert_refused, last_cpu, lateness, rtlab, run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The children of `parent` whose command line holds `needle`.
fn children_running(parent: u32, needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let ppid = after_name.split_whitespace().nth(1);
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(&parent.to_string()) && String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}

/// Whether `pid` is still a live process of rtlab's (a worker or the
/// executive: its command line says so).
fn still_ours(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text = String::from_utf8_lossy(&cmdline);
    text.contains("process-worker") || text.contains("serve")
}

/// `exec periodic --processes` with `task_set` (tasks, period, work,
/// duration, mode), quiet, not stored, its result in `json`.
fn periodic_processes(json: &Path, task_set: &str) -> Vec<String> {
    let mut args: Vec<String> = ["exec", "periodic", "--processes", "--quiet", "--no-store"]
        .map(String::from)
        .to_vec();
    args.extend(task_set.split_whitespace().map(String::from));
    args.push("--json".into());
    args.push(json.to_str().unwrap().into());
    args
}

/// Runs rtlab with `args` to its end, collecting the pids of its worker
/// (and executive) processes meanwhile; `during` is called once with
/// the workers seen when `workers` of them run.
fn run_watching(
    state: &Path,
    args: &[String],
    workers: usize,
    during: impl FnOnce(&[u32]),
) -> (std::process::ExitStatus, BTreeSet<u32>) {
    let mut child: Child = rtlab(state)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("rtlab starts");
    let mut seen = BTreeSet::new();
    let mut during = Some(during);
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, seen);
        }
        let workers_now = children_running(child.id(), "process-worker");
        seen.extend(&workers_now);
        seen.extend(children_running(child.id(), "serve"));
        if workers_now.len() == workers {
            if let Some(during) = during.take() {
                during(&workers_now);
            }
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            panic!("rtlab {args:?} did not end within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every child seen is gone (reaped, not a zombie, not left running).
fn assert_nothing_left(seen: &BTreeSet<u32>) {
    let left: Vec<u32> = seen.iter().copied().filter(|&p| still_ours(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Every task of `run` (a run of task processes) has `activations`
/// samples + missed, and a response series with as many samples; each
/// process reported its own scheduling.
fn assert_accounted(run: &Value, tasks: usize, activations: u64) {
    assert_eq!(run["config"]["processes"], true);
    for pair in common::assert_periodic_accounted(run, "periodic-processes", tasks, activations) {
        assert_eq!(pair[0]["thread"]["actual"]["policy"], "fifo", "{}", pair[0]);
        assert_eq!(pair[0]["thread"]["pinned_cpu"], last_cpu());
    }
}

#[test]
fn fifo_processes_account_every_activation_and_leave_nothing() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let args = periodic_processes(
        &json,
        "--mode fifo --tasks 3 --period 5ms --work 50us --duration 1s",
    );
    let (status, seen) = run_watching(&dir.path().join("state"), &args, 3, |_| {});
    assert_eq!(status.code(), Some(0));
    assert_eq!(seen.len(), 3, "one process per task: {seen:?}");
    assert_nothing_left(&seen);
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["config"]["mode"], "fifo");
    assert_accounted(&doc, 3, 200);
    // The tasks were processes, not threads of rtlab.
    let tids: BTreeSet<u64> = lateness(&doc)
        .iter()
        .map(|s| s["thread"]["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(tids, seen.iter().map(|&p| u64::from(p)).collect());
}

/// What became of a fifo processes run whose rtlab or second worker got
/// a signal half a second into its activations.
struct Signalled {
    status: std::process::ExitStatus,
    doc: Value,
    /// The pid signalled.
    target: u32,
}

/// Runs `tasks` fifo processes for `duration`, sends `signal` to rtlab
/// (`to_rtlab`) or to the second worker 500 ms in; checks nothing is left.
fn signal_mid_run(tasks: usize, duration: &str, signal: i32, to_rtlab: bool) -> Signalled {
    let (run, seen) = signal_mid_run_seen(tasks, duration, signal, to_rtlab);
    assert_nothing_left(&seen);
    run
}

/// [`signal_mid_run`], without the check: the processes seen, and the
/// run's JSON (Null when it wrote none).
fn signal_mid_run_seen(
    tasks: usize,
    duration: &str,
    signal: i32,
    to_rtlab: bool,
) -> (Signalled, BTreeSet<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let task_set =
        format!("--mode fifo --tasks {tasks} --period 5ms --work 50us --duration {duration}");
    let args = periodic_processes(&json, &task_set);
    let mut target = 0;
    let (status, seen) = run_watching(&dir.path().join("state"), &args, tasks, |workers| {
        std::thread::sleep(Duration::from_millis(500));
        target = if to_rtlab {
            parent_of(workers[1]) as u32
        } else {
            workers[1]
        };
        // SAFETY: plain syscall on a process this test started or watched start.
        unsafe { libc::kill(target as i32, signal) };
    });
    let doc = common::read_json(&json).unwrap_or_default();
    (
        Signalled {
            status,
            doc,
            target,
        },
        seen,
    )
}

/// The run ended before its plan, by behaviour, not by the clock: every
/// task accounted for fewer than its `planned` activations (those never
/// reached are neither samples nor missed; none at all when the end came
/// before the first).
fn assert_ended_early(doc: &Value, planned: u64) {
    let series = lateness(doc);
    assert!(!series.is_empty(), "{doc}");
    for s in series {
        let accounted = s["samples"].as_u64().unwrap() + s["missed"].as_u64().unwrap();
        assert!(accounted < planned, "{s}");
    }
}

/// The run failed, and its warnings hold `reason`.
fn assert_failed_for(run: &Signalled, reason: &str) {
    assert_ne!(run.status.code(), Some(0));
    assert_eq!(run.doc["status"], "failed");
    let warnings = run.doc["warnings"].to_string();
    assert!(warnings.contains(reason), "'{reason}' not in {warnings}");
}

#[test]
fn a_worker_killed_mid_run_fails_the_run_with_its_reason_and_leaves_nothing() {
    require_realtime!();
    let run = signal_mid_run(3, "20s", libc::SIGKILL, false);
    // It did not run the others to the planned end (4000 activations).
    assert_ended_early(&run.doc, 4000);
    let reason = format!("(pid {}) killed by signal 9 (SIGKILL) after", run.target);
    assert_failed_for(&run, &reason);
    // What the processes measured before is kept.
    let samples: u64 = lateness(&run.doc)
        .iter()
        .map(|s| s["samples"].as_u64().unwrap())
        .sum();
    assert!(samples > 0);
}

#[test]
fn a_signal_stops_every_process_and_keeps_what_they_measured() {
    require_realtime!();
    let run = signal_mid_run(3, "30s", libc::SIGINT, true);
    assert_eq!(run.status.code(), Some(130));
    assert_eq!(run.doc["status"], "partial", "{}", run.doc["warnings"]);
    assert_ended_early(&run.doc, 6000);
    // Stopped 500 ms in: what they measured before is kept.
    for s in lateness(&run.doc) {
        assert!(s["samples"].as_u64().unwrap() > 0, "{s}");
    }
}

#[test]
fn the_processes_end_with_a_sigkilled_rtlab() {
    require_realtime!();
    let (run, seen) = signal_mid_run_seen(3, "30s", libc::SIGKILL, true);
    assert_eq!(run.status.code(), None);
    assert_eq!(seen.len(), 3);
    // Told by the kernel (their parent-death signal), at once.
    let give_up = Instant::now() + Duration::from_secs(5);
    while seen.iter().any(|&p| still_ours(p)) {
        assert!(Instant::now() < give_up, "{seen:?} outlived rtlab");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_hung_worker_fails_the_run_and_is_killed() {
    require_realtime!();
    let run = signal_mid_run(2, "1s", libc::SIGSTOP, false);
    let reason = format!("(pid {}) did not finish its 200 activations", run.target);
    assert_failed_for(&run, &reason);
}

/// The parent of `pid`.
fn parent_of(pid: u32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = stat.rsplit_once(')').unwrap().1;
    after_name
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn an_injected_stall_shows_in_the_fifo_processes_lateness() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stall.json");
    let args = periodic_processes(
        &json,
        "--mode fifo --tasks 4 --period 1ms --work 20us --duration 3s",
    );
    let stalls = 5;
    let mut injected = 0;
    let (status, seen) = run_watching(&dir.path().join("state"), &args, 4, |_| {
        // Every process is set up and measuring: 3 ms at SCHED_FIFO 99 on
        // their CPU every 200 ms.
        let stall = Duration::from_millis(3);
        let every = Duration::from_millis(200);
        injected = common::inject_stalls(last_cpu(), stall, every, stalls)
            .join()
            .unwrap();
    });
    assert_eq!(injected, stalls);
    assert_eq!(status.code(), Some(0));
    assert_nothing_left(&seen);
    let doc = common::read_json(&json).unwrap();
    assert_accounted(&doc, 4, 3000);
    common::assert_stalls_show(&doc, stalls);
}

#[test]
fn a_burst_of_more_attaches_than_waiting_places_is_served() {
    require_realtime!();
    let Some(_alone) = executive_form() else {
        return;
    };
    // 40 processes attach at once: more than exec serve's 32 places for
    // connections waiting to be read (the others wait in its backlog).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let args = periodic_processes(&json, "--tasks 40 --period 10ms --work 20us --duration 1s");
    let out = run(rtlab(&dir.path().join("state")).args(&args));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::read_json(&json).unwrap();
    assert_accounted(&doc, 40, 100);
}

#[test]
fn processes_under_the_executive_account_every_activation_and_leave_nothing() {
    require_realtime!();
    let Some(_alone) = executive_form() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let args = periodic_processes(&json, "--tasks 3 --period 5ms --work 50us --duration 1s");
    let before: BTreeSet<_> = private_dirs();
    let (status, seen) = run_watching(&dir.path().join("state"), &args, 3, |_| {});
    assert_eq!(status.code(), Some(0));
    // Three workers and the executive.
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_nothing_left(&seen);
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["config"]["mode"], "executive");
    assert_accounted(&doc, 3, 200);
    // The socket's private directory is gone (another program's may come
    // and go meanwhile).
    let after = private_dirs();
    assert!(
        after.iter().all(|d| before.contains(d) || !d.exists()),
        "{after:?}"
    );
}

#[test]
fn a_killed_executive_fails_the_run_and_leaves_nothing() {
    require_realtime!();
    let Some(_alone) = executive_form() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let args = periodic_processes(&json, "--tasks 2 --period 5ms --work 50us --duration 20s");
    let before = private_dirs();
    let (status, seen) = run_watching(&dir.path().join("state"), &args, 2, |workers| {
        // The workers run: their executive (rtlab exec serve, a child of
        // the same rtlab) is killed under them.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", workers[0])).unwrap();
        let after_name = stat.rsplit_once(')').unwrap().1;
        let rtlab: u32 = after_name
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let executive = children_running(rtlab, "serve");
        assert_eq!(executive.len(), 1, "{executive:?}");
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(executive[0] as i32, libc::SIGKILL) };
    });
    assert_ne!(status.code(), Some(0));
    assert_nothing_left(&seen);
    let doc = common::read_json(&json).unwrap();
    // Told at once (their wait_next returns an error), not at the planned
    // end: fewer than the 4000 activations of 20 s every 5 ms.
    assert_ended_early(&doc, 4000);
    assert_eq!(doc["status"], "failed", "{}", doc["warnings"]);
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("executive"), "{warnings}");
    let after = private_dirs();
    assert!(
        after.iter().all(|d| before.contains(d) || !d.exists()),
        "{after:?}"
    );
}

/// Held by the tests that run the executive form, one of which looks at
/// the private directories of every run's socket.
static EXECUTIVE_FORM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The executive form to oneself: its tests look at the private
/// directories of every run's socket.
fn executive_form() -> Option<std::sync::MutexGuard<'static, ()>> {
    Some(EXECUTIVE_FORM.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The private directories of the executive's sockets now.
fn private_dirs() -> BTreeSet<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("rtlab-processes-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kurt_table_with_processes_prints_both_sub_tables_of_processes() {
    require_realtime!();
    let Some(_alone) = executive_form() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kurt.json");
    let out = run(rtlab(&dir.path().join("state"))
        .args([
            "exec",
            "kurt-table",
            "--processes",
            "--idle-only",
            "--tasks",
            "1,3",
            "--duration",
            "300ms",
            "--no-store",
            "--json",
        ])
        .arg(&json));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Table 4.1 (idle)",
        "(a) SCHED_FIFO processes",
        "(b) processes under rtlab's executive",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["processes"], true);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    for cell in cells {
        let planned = cell["activations"].as_u64().unwrap();
        let started = cell["started"].as_u64().unwrap();
        let missed = cell["missed_activations"].as_u64().unwrap();
        assert_eq!(started + missed, planned, "{cell}");
    }
}

#[test]
fn more_processes_than_a_run_may_start_are_refused() {
    assert_refused(
        &["exec", "kurt-table", "--processes", "--tasks", "1,101"],
        &["--tasks", "101 tasks as processes", "100"],
    );
    assert_refused(
        &["exec", "periodic", "--processes", "--tasks", "101"],
        &["--tasks"],
    );
}

#[test]
fn a_worker_with_a_bad_plan_exits_2_and_says_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtlab"))
        .args(["exec", "process-worker", "{\"task\": 0}"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the worker plan"), "{stderr}");
}
