//! cyclictest's options on `rtlab measure timer`: `--smp`, `--threads`,
//! `--priospread`, `--aligned`, `--mode posix` and durations in days. Bad
//! values are refused naming their flag (exit code 2, nothing changed);
//! what each asks for shows in the result (series, CPUs, priorities,
//! config) and every deadline is a sample or a missed one.

mod common;

use serde_json::Value;

#[test]
fn bad_values_are_refused_naming_their_flag() {
    let timer = |flags: &[&'static str]| [&["measure", "timer", "--no-store"], flags].concat();
    common::assert_refused(
        &timer(&["--threads", "0"]),
        &["--threads: must be at least 1"],
    );
    common::assert_refused(
        &timer(&["--threads", "1025"]),
        &["--threads 1025 is more than the 1024"],
    );
    common::assert_refused(
        &timer(&["--priospread", "--policy", "other"]),
        &["--priospread needs --policy fifo or rr"],
    );
    common::assert_refused(
        &timer(&["--threads", "3", "--priospread", "--priority", "2"]),
        &["--priority 2 with --priospread over 3 threads would run the last at priority 0"],
    );
    common::assert_refused(&timer(&["--smp", "--cpus", "0"]), &["--smp", "--cpus"]);
    common::assert_refused(
        &timer(&["--smp", "--threads", "2"]),
        &["--smp", "--threads"],
    );
    common::assert_refused(
        &timer(&["--smp", "--priospread"]),
        &["--smp", "--priospread"],
    );
    common::assert_refused(
        &timer(&["--aligned", "fast"]),
        &["--aligned", "invalid duration"],
    );
    common::assert_refused(
        &timer(&["--threads", "2", "--aligned", "106751d23h47m17s"]),
        &["--aligned 106751d23h47m17s is too long"],
    );
    common::assert_refused(&timer(&["--mode", "sigwait"]), &["posix"]);
    common::assert_refused(&timer(&["--duration", "213504d"]), &["too large"]);
}

#[test]
fn days_are_read_and_printed_in_messages() {
    // Read as days, printed as days: 2d is longer than 1d12h.
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--no-store",
            "--policy",
            "deadline",
            "--interval",
            "1d12h",
            "--dl-runtime",
            "2d",
        ],
        &["--dl-runtime 2d is longer than the --interval 1d12h"],
    );
}

/// Runs `rtlab measure timer ARGS` to its end and returns its result.
fn measured(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = common::run(
        common::rtlab(dir.path())
            .args(["measure", "timer", "--quiet", "--no-store", "--json"])
            .arg(&json)
            .args(args),
    );
    assert!(out.status.success(), "{args:?}");
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "complete");
    doc
}

/// Every series accounts for every deadline: samples + missed = loops.
fn assert_accounted(doc: &Value, loops: u64) {
    for series in doc["series"].as_array().unwrap() {
        let samples = series["samples"].as_u64().unwrap();
        let missed = series["missed"].as_u64().unwrap();
        assert_eq!(samples + missed, loops, "{}", series["name"]);
        assert!(samples > 0, "{}", series["name"]);
    }
}

#[test]
fn priospread_floating_threads_have_their_own_priorities() {
    require_realtime!();
    let doc = measured(&[
        "--threads",
        "3",
        "--priospread",
        "--priority",
        "50",
        "--aligned",
        "100us",
        "--loops",
        "300",
    ]);
    assert_accounted(&doc, 300);
    let series = doc["series"].as_array().unwrap();
    let seen: Vec<Value> = series
        .iter()
        .map(|s| {
            serde_json::json!([
                s["name"],
                s["cpu"],
                s["thread"]["pinned_cpu"],
                s["thread"]["requested"]["priority"],
                s["thread"]["actual"]["priority"]
            ])
        })
        .collect();
    let floating =
        |name: &str, priority: u64| serde_json::json!([name, null, null, priority, priority]);
    assert_eq!(
        seen,
        [
            floating("thread0", 50),
            floating("thread1", 49),
            floating("thread2", 48)
        ]
    );
    let config = &doc["config"];
    assert_eq!(
        (
            &config["threads"],
            &config["priospread"],
            &config["aligned_ns"]
        ),
        (&3.into(), &true.into(), &100_000.into())
    );
}

#[test]
fn smp_pins_one_thread_per_online_cpu() {
    require_realtime!();
    let doc = measured(&["--smp", "--loops", "200"]);
    assert_accounted(&doc, 200);
    let online: Vec<usize> = rtlab_core::cpuset::CpuSet::online().iter().collect();
    let placed: Vec<(String, u64, u64)> = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["cpu"].as_u64().unwrap(),
                s["thread"]["pinned_cpu"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, u64, u64)> = online
        .iter()
        .map(|&cpu| (format!("cpu{cpu}"), cpu as u64, cpu as u64))
        .collect();
    assert_eq!(placed, expected);
    // One priority for all, as cyclictest -S.
    for series in doc["series"].as_array().unwrap() {
        assert_eq!(series["thread"]["requested"]["priority"], 90);
    }
}

#[test]
fn posix_timers_account_for_every_deadline() {
    require_realtime!();
    let doc = measured(&["--mode", "posix", "--interval", "500us", "--loops", "1000"]);
    assert_accounted(&doc, 1000);
    assert_eq!(doc["config"]["mode"], "posix");
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        !warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("POSIX timer")),
        "fell back: {warnings:?}"
    );
}

/// A thread aligned an hour after the start waits for its own start in
/// short sleeps: SIGINT ends the run within the test's patience (it waited
/// for the whole hour before), with a partial result.
#[test]
fn a_stop_ends_a_thread_still_waiting_for_its_aligned_start() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let child = common::rtlab(dir.path())
        .args(["measure", "timer", "--quiet", "--no-store", "--cpus", "0"])
        .args([
            "--threads",
            "2",
            "--aligned",
            "1h",
            "--duration",
            "1s",
            "--json",
        ])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut run = Running(child, dir.path().to_path_buf());
    common::wait_until_running(&json, &mut run.0);
    common::signal(&run.0, libc::SIGINT);
    let mut ended = None;
    common::eventually("rtlab to end after SIGINT", || {
        ended = run.0.try_wait().unwrap();
        ended.is_some()
    });
    assert_eq!(ended.unwrap().code(), Some(130));
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "partial");
}

/// An rtlab the test started, ended and its host changes put back even
/// when the test fails half-way.
struct Running(std::process::Child, std::path::PathBuf);

impl Drop for Running {
    fn drop(&mut self) {
        common::end_and_restore(&mut self.0, &self.1);
    }
}
