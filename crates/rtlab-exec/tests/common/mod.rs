//! Shared helpers of rtlab-exec's tests that run a probe.
#![allow(dead_code)]

use rtlab_probe::{Probe, ProbeOutcome, Start};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Whether this process may use SCHED_FIFO (root or CAP_SYS_NICE).
pub fn fifo_allowed() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: valid param for the calling thread.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap()
}

/// Says why a test is skipped, on the real stderr (the harness captures
/// eprintln! of passing tests).
pub fn skip(reason: &str) {
    let _ = writeln!(std::io::stderr(), "\nskipped: {reason}");
}

/// Runs `probe` to its end (its journal in a temporary directory), every
/// sample to `samples` when given.
pub fn run(probe: &dyn Probe, samples: Option<&Path>) -> ProbeOutcome {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let csv: Option<Box<dyn Write + Send>> =
        samples.map(|p| Box::new(std::fs::File::create(p).unwrap()) as Box<dyn Write + Send>);
    let run = probe
        .start(Start {
            stop: Arc::new(AtomicBool::new(false)),
            samples_csv: csv,
            journal: &journal,
        })
        .unwrap();
    while !run.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    run.finish().unwrap()
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
