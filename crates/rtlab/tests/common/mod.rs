//! Shared helpers of rtlab's end-to-end tests.
#![allow(dead_code)]

#[allow(unused_imports)]
pub mod netns;
#[allow(unused_imports)]
pub mod postgres;
#[allow(unused_imports)]
pub mod prometheus;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The rtlab binary built for this test run, with its journal and its
/// default result store kept under `state_dir`, so tests never touch each
/// other's (or the user's) journal and results.
pub fn rtlab(state_dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtlab"));
    cmd.env("RTLAB_STATE_DIR", state_dir);
    cmd.env("XDG_DATA_HOME", state_dir.join("data"));
    cmd
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("rtlab runs");
    eprintln!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    out
}

pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this process may use SCHED_FIFO (root, CAP_SYS_NICE or an
/// rtprio limit); the reason when not.
pub fn realtime_allowed() -> Result<(), String> {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: valid param for the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "SCHED_FIFO not allowed ({}): run the tests as root or with CAP_SYS_NICE",
                std::io::Error::last_os_error()
            ))
        }
    })
    .join()
    .unwrap()
}

/// Says why a test is skipped, on the real stderr: the test harness
/// captures eprintln! of passing tests, and a skip must be seen.
pub fn skip(reason: &str) {
    use std::io::Write;
    let _ = write!(std::io::stderr(), "\nskipped: {reason}\n");
}

/// Skips the calling test, with the reason printed, unless RT scheduling works.
#[macro_export]
macro_rules! require_realtime {
    () => {
        if let Err(why) = common::realtime_allowed() {
            common::skip(&why);
            return;
        }
    };
}

/// Reads a result file that may not be written yet.
pub fn read_json(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits until the run writing `path` is measuring (status "running").
pub fn wait_until_running(path: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(doc) = read_json(path) {
            if doc["status"] == "running" {
                return;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("rtlab exited early with {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("rtlab did not start measuring within 30 s");
}

pub fn signal(child: &Child, signal: i32) {
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

/// Ends `child`, an rtlab that changed the host with its journal in the
/// test's temporary `state_dir`, and puts the host back: SIGTERM first (it
/// restores), SIGKILL after 15 s, then `rtlab restore` on `state_dir`
/// before that directory goes. For the `Drop` of a test's guard: a test
/// that fails half-way must not leave the host changed.
pub fn end_and_restore(child: &mut Child, state_dir: &Path) {
    if let Ok(None) = child.try_wait() {
        // SAFETY: plain kill(2) on our own child, still running.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let give_up = Instant::now() + Duration::from_secs(15);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = rtlab(state_dir)
        .arg("restore")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A thread at SCHED_FIFO 99 on `cpu` that spins for `stall` every `every`,
/// `count` times: a latency of known size that a probe on that CPU must see.
pub fn inject_stalls(
    cpu: usize,
    stall: Duration,
    every: Duration,
    count: u32,
) -> std::thread::JoinHandle<u32> {
    std::thread::spawn(move || {
        // SAFETY: cpu_set_t is plain data; the calls affect this thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
            let param = libc::sched_param { sched_priority: 99 };
            assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &param), 0);
        }
        let mut done = 0;
        for _ in 0..count {
            std::thread::sleep(every);
            let start = Instant::now();
            while start.elapsed() < stall {
                std::hint::spin_loop();
            }
            done += 1;
        }
        done
    })
}

/// The CPU `exec periodic`'s tasks run on by default: the last online one.
pub fn last_cpu() -> usize {
    // SAFETY: sysconf has no memory side effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n.max(1) - 1) as usize
}

/// `count` stalls of 3 ms every 200 ms on the last online CPU, from
/// 600 ms on (once a periodic run started beside it is set up, well
/// within its first second); the thread returns the stalls it made.
pub fn stall_a_periodic_run(count: u32) -> std::thread::JoinHandle<u32> {
    let cpu = last_cpu();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        inject_stalls(
            cpu,
            Duration::from_millis(3),
            Duration::from_millis(200),
            count,
        )
        .join()
        .unwrap()
    })
}

/// Counts samples of a series at or above `at_least_us`.
pub fn samples_at_least(series: &serde_json::Value, at_least_us: u64) -> u64 {
    series["histogram_us"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|bin| bin[0].as_u64().unwrap() >= at_least_us)
        .map(|bin| bin[1].as_u64().unwrap())
        .sum()
}

/// Starts `rtlab measure timer ARGS --quiet --json JSON` and returns once
/// it is measuring.
pub fn start_timer(state: &Path, args: &[&str], json: &Path) -> Child {
    let mut child = rtlab(state)
        .args(["measure", "timer", "--quiet"])
        .args(args)
        .arg("--json")
        .arg(json)
        .stdin(Stdio::null())
        .spawn()
        .expect("rtlab starts");
    wait_until_running(json, &mut child);
    child
}

/// Runs `rtlab ARGS` and checks it is refused as bad input: exit code 2, a
/// message with every word of `must_mention`, no panic, and nothing changed
/// (no journal was ever written).
pub fn assert_refused(args: &[&str], must_mention: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = run(rtlab(&state).args(args));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    for word in must_mention {
        assert!(stderr.contains(word), "{args:?}: '{word}' not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!state.exists() || std::fs::read_dir(&state).unwrap().next().is_none());
}

/// The lateness series of a periodic run.
pub fn lateness(run: &serde_json::Value) -> Vec<&serde_json::Value> {
    run["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["metric"] == "activation_lateness")
        .collect()
}

/// `run` is a complete run of `probe` in which every one of its `tasks`
/// has `activations` samples + missed, and a response series with as
/// many samples; returns the series by task (lateness, response).
pub fn assert_periodic_accounted<'a>(
    run: &'a serde_json::Value,
    probe: &str,
    tasks: usize,
    activations: u64,
) -> Vec<&'a [serde_json::Value]> {
    assert_eq!(run["probe"], probe);
    assert_eq!(run["status"], "complete", "{}", run["warnings"]);
    let series = run["series"].as_array().unwrap();
    assert_eq!(series.len(), 2 * tasks);
    for pair in series.chunks(2) {
        let (late, resp) = (&pair[0], &pair[1]);
        assert_eq!(late["metric"], "activation_lateness");
        assert_eq!(resp["metric"], "response_time");
        let samples = late["samples"].as_u64().unwrap();
        let missed = late["missed"].as_u64().unwrap();
        assert_eq!(samples + missed, activations, "{}", late["name"]);
        assert_eq!(resp["samples"].as_u64().unwrap(), samples);
    }
    series.chunks(2).collect()
}

/// `stalls` stalls of 3 ms injected on the CPU of a periodic run's tasks
/// show in its lateness: each delays the activations of its first 2 ms by
/// 1 ms at least, so one such sample per stall at least.
pub fn assert_stalls_show(run: &serde_json::Value, stalls: u32) {
    let late: u64 = lateness(run)
        .iter()
        .map(|s| samples_at_least(s, 1000))
        .sum();
    assert!(
        late >= u64::from(stalls),
        "{late} activations 1 ms late or more, {stalls} stalls of 3 ms injected"
    );
}

/// Waits until the `exec serve` started as `child` answers at `socket`
/// (at most 20 s); panics if it exits first.
pub fn wait_until_serving(child: &mut Child, socket: &Path) {
    let give_up = Instant::now() + Duration::from_secs(20);
    while rtlab_client::executive_status(Some(socket)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("exec serve exited early: {status}");
        }
        assert!(Instant::now() < give_up, "exec serve not ready in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `done` until it holds. A hang guard, not a timing claim: the
/// bound (a minute) only keeps a broken build from hanging CI, and the
/// failure says what never happened.
pub fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..6_000 {
        if done() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{what} never happened");
}
