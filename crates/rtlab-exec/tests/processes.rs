//! The run side of `--processes` with stand-in workers (python3) in the
//! place of the rtlab binary, for what a real worker never does: they
//! speak the record format (settings, ready, samples, end) with a missed
//! activation planted, die at a known activation or send a record that
//! does not exist. Every activation accounted for, a worker that dies or
//! says something unknown fails the run with the reason; every child
//! reaped. The real workers, and the executive form with the real
//! `rtlab exec serve`, are tested end to end in
//! crates/rtlab/tests/exec_processes.rs.

use rtlab_exec::periodic::{Mode, PeriodicConfig};
use rtlab_exec::processes::{start, ProcessesConfig};
use rtlab_probe::{ProbeOutcome, ProbeRun};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The stand-in for `rtlab exec process-worker PLAN`: reports like a
/// self-timed worker, its activation 3 missed; BEHAVIOUR changes what
/// task 1 does.
const FAKE: &str = r#"#!/usr/bin/env python3
import json, os, signal, struct, sys, time
BEHAVIOUR = "@BEHAVIOUR@"
DONE = "@DIR@/done-"
args = sys.argv[1:]
plan = json.loads(args[2])
def record(tag, small=0, words=(0, 0, 0, 0)):
    os.write(1, struct.pack("<II4Q", tag, small, *words))
record(2, 1, (os.getpid(), plan["cpu"], plan["priority"], 1))
record(1)
start = struct.unpack("<Q", sys.stdin.buffer.read(8))[0]
k, planned, period = 0, plan["activations"], plan["period_ns"]
while k < planned:
    if plan["task"] == 1 and k == 5 and BEHAVIOUR == "dies":
        # Dies once the others have said all: what they measured must be
        # kept, and a loaded machine may start them after this one.
        give_up = time.time() + 30
        while not all(os.path.exists(DONE + t) for t in "02") and time.time() < give_up:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    if plan["task"] == 1 and k == 5 and BEHAVIOUR == "babbles":
        record(99)
    missed = 1 if k == 3 else 0
    activation = start + plan["offset_ns"] + k * period
    record(3, 0, (activation, 1000 + k, missed, 5000 + k))
    k += 1 + missed
record(4, 0, (k, 0, 0, 0))
open(DONE + str(plan["task"]), "w").close()
"#;

fn fake(dir: &Path, behaviour: &str) -> PathBuf {
    let path = dir.join(format!("fake-rtlab-{}", behaviour.replace(' ', "-")));
    let script = FAKE
        .replace("@BEHAVIOUR@", behaviour)
        .replace("@DIR@", &dir.display().to_string());
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs 3 tasks of 20 activations released as `release` by `program`.
fn run(program: PathBuf, release: Mode) -> ProbeOutcome {
    let periodic = PeriodicConfig::new(3, 1_000_000, 10_000, 20_000_000);
    let config = ProcessesConfig::new(periodic, release, program);
    let stop = Arc::new(AtomicBool::new(false));
    let run = start(&config, stop, None).unwrap();
    let give_up = Instant::now() + Duration::from_secs(60);
    while !run.is_finished() {
        assert!(Instant::now() < give_up, "the run did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    Box::new(run).finish().unwrap()
}

fn assert_accounted(outcome: &ProbeOutcome) {
    assert_eq!(outcome.failure, None);
    assert!(!outcome.stopped_early);
    assert_eq!(outcome.series.len(), 6);
    for pair in outcome.series.chunks(2) {
        let (lateness, response) = (&pair[0].stats, &pair[1].stats);
        assert_eq!(lateness.samples + lateness.missed, 20, "{}", pair[0].name);
        assert_eq!(lateness.missed, 1);
        assert_eq!(response.samples, lateness.samples);
        // Each process's own settings, as it reported them.
        assert!(pair[0].thread.tid > 0);
        assert_eq!(pair[0].thread.actual.map(|a| a.priority), Some(80));
    }
    let names: Vec<&str> = outcome.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "task0.lateness",
            "task0.response",
            "task1.lateness",
            "task1.response",
            "task2.lateness",
            "task2.response"
        ]
    );
}

#[test]
fn self_timed_processes_account_for_every_activation() {
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(fake(tmp.path(), "works"), Mode::Fifo);
    assert_accounted(&outcome);
}

#[test]
fn a_worker_that_dies_fails_the_run_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(fake(tmp.path(), "dies"), Mode::Fifo);
    let failure = outcome.failure.unwrap();
    assert!(failure.starts_with("task1's process (pid "), "{failure}");
    assert!(
        failure.contains(") killed by signal 9 (SIGKILL) after 5 of 20 activations"),
        "{failure}"
    );
    // What the others measured is kept.
    assert_eq!(
        outcome.series[0].stats.samples + outcome.series[0].stats.missed,
        20
    );
}

#[test]
fn a_worker_that_says_something_unknown_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(fake(tmp.path(), "babbles"), Mode::Fifo);
    let failure = outcome.failure.unwrap();
    assert!(
        failure.contains("sent a record this run does not understand"),
        "{failure}"
    );
}
