//! `rtlab exec periodic` and `rtlab exec kurt-table` end to end: every
//! activation accounted for in both modes, an injected stall seen in the
//! lateness series, paper 002's table printed with its rows and columns,
//! bad input refused. Never an absolute timing.

mod common;

use common::{assert_refused, lateness, rtlab, run};
use serde_json::Value;
use std::time::Duration;

/// Every task of `run` (a periodic run of threads) has `activations`
/// samples + missed, and a response series with as many samples.
fn assert_accounted(run: &Value, tasks: usize, activations: u64) {
    common::assert_periodic_accounted(run, "periodic", tasks, activations);
}

#[test]
fn periodic_with_baseline_accounts_every_activation_and_prints_both() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("periodic.json");
    let out = run(rtlab(&dir.path().join("state"))
        .args([
            "exec",
            "periodic",
            "--tasks",
            "3",
            "--period",
            "5ms",
            "--work",
            "50us",
            "--duration",
            "1s",
            "--baseline",
            "fifo",
            "--json",
        ])
        .arg(&json));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "periodic (executive): 3 tasks",
        "periodic (fifo): 3 tasks",
        "% of activations within x µs of the expected time: 3 tasks",
        "rtlab executive",
        "SCHED_FIFO",
        "10 µs",
        "50 µs",
        "100 µs",
        "500 µs",
        "1000 µs",
        "stored as run",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["schema"], "rtlab.exec-periodic/1");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["config"]["mode"], "executive");
    assert_eq!(runs[1]["config"]["mode"], "fifo");
    for run in runs {
        assert_accounted(run, 3, 200);
    }
    for cell in doc["cells"].as_array().unwrap() {
        assert_eq!(cell["activations"], 600);
        let within = cell["within_percent"].as_array().unwrap();
        assert_eq!(within.len(), 5);
        // Cumulative: never decreasing with the bound.
        let values: Vec<f64> = within.iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
        assert!(values[4] <= 100.0);
    }
}

#[test]
fn an_injected_stall_shows_in_the_executive_lateness() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stall.json");
    let stalls = 5;
    let injector = common::stall_a_periodic_run(stalls);
    let out = run(rtlab(&dir.path().join("state"))
        .args([
            "exec",
            "periodic",
            "--tasks",
            "4",
            "--period",
            "1ms",
            "--work",
            "20us",
            "--duration",
            "3s",
            "--quiet",
            "--no-store",
            "--json",
        ])
        .arg(&json));
    assert_eq!(injector.join().unwrap(), stalls);
    let doc = common::read_json(&json).unwrap();
    for s in lateness(&doc) {
        eprintln!(
            "{}: {} samples, {} missed",
            s["name"], s["samples"], s["missed"]
        );
    }
    eprintln!("warnings: {}", doc["warnings"]);
    assert_eq!(out.status.code(), Some(0));
    assert_accounted(&doc, 4, 3000);
    common::assert_stalls_show(&doc, stalls);
}

#[test]
fn kurt_table_prints_paper_002s_layout_for_both_schedulers_and_loads() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kurt.json");
    let out = run(rtlab(&dir.path().join("state"))
        .args([
            "exec",
            "kurt-table",
            "--tasks",
            "1,3",
            "--duration",
            "300ms",
            "--load",
            "cpu",
            "--json",
        ])
        .arg(&json));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Table 4.1 (idle)",
        "Table 4.2 (load cpu)",
        "(a) SCHED_FIFO",
        "(b) rtlab executive",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
    // Per load and scheduler: the header and one row per task count.
    let headers: Vec<&str> = stdout.lines().filter(|l| l.starts_with("tasks")).collect();
    assert_eq!(headers.len(), 4, "{stdout}");
    for header in headers {
        let columns: Vec<&str> = header.split_whitespace().collect();
        assert_eq!(
            columns,
            ["tasks", "10", "µs", "50", "µs", "100", "µs", "500", "µs", "1000", "µs"]
        );
    }
    for task_count in ["1 ", "3 "] {
        let rows = stdout
            .lines()
            .filter(|l| l.starts_with(task_count) && l.matches('%').count() == 5)
            .count();
        assert_eq!(rows, 4, "rows of {task_count}tasks:\n{stdout}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[8/8] 3 tasks, executive, cpu"), "{stderr}");
    assert!(stderr.contains(" (auto), spin "), "{stderr}");
    assert!(
        stdout.contains("the executive's guards and spin") && stdout.contains("  3 tasks: guard "),
        "{stdout}"
    );

    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["schema"], "rtlab.kurt-table/1");
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 8);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 8);
    for (cell, run) in cells.iter().zip(doc["runs"].as_array().unwrap()) {
        let tasks = cell["tasks"].as_u64().unwrap() as usize;
        assert_accounted(run, tasks, 30);
        assert_eq!(cell["activations"].as_u64().unwrap(), 30 * tasks as u64);
        assert_eq!(cell["within_percent"].as_array().unwrap().len(), 5);
        assert_eq!(run["config"]["mode"], cell["mode"]);
        // The executive's cells say what it learned; the self-timed
        // tasks have none.
        if cell["mode"] == "executive" {
            assert_eq!(cell["executive"], run["executive"]);
            let thread = &run["executive"]["threads"][0];
            assert_eq!(thread["guard_mode"], "auto");
            assert!(thread["spin_ns"].as_u64().unwrap() > 0, "{thread}");
        } else {
            assert!(run.get("executive").is_none() && cell["executive"].is_null());
        }
        let loads = run["loads"].as_array().cloned().unwrap_or_default();
        if cell["load"] == "idle" {
            assert!(loads.is_empty());
        } else {
            assert_eq!(loads[0]["name"], "cpu");
        }
    }
}

#[test]
fn bad_periodic_input_is_refused() {
    assert_refused(
        &["exec", "periodic", "--period", "1ms", "--work", "2ms"],
        &["--work", "period"],
    );
    assert_refused(
        &[
            "exec",
            "periodic",
            "--guard",
            "10us",
            "--release-early",
            "20us",
        ],
        &["--release-early", "guard"],
    );
    // Beside a learned guard, a fixed release margin no learned guard can
    // cover (it released tasks a period early: every activation missed).
    assert_refused(
        &["exec", "periodic", "--release-early", "10s"],
        &["--release-early 10s is more than 500us beside a learned --guard"],
    );
    assert_refused(
        &["exec", "periodic", "--period", "1s", "--duration", "100ms"],
        &["--duration", "--period"],
    );
    assert_refused(&["exec", "periodic", "--cpu", "4096"], &["--cpu 4096"]);
    assert_refused(
        &[
            "exec",
            "periodic",
            "--baseline",
            "fifo",
            "--samples",
            "x.csv",
        ],
        &["--samples", "--baseline"],
    );
    assert_refused(
        &["exec", "kurt-table", "--samples", "x.csv"],
        &["--samples"],
    );
    assert_refused(&["exec", "kurt-table", "--load", "nosuch"], &["--load"]);
    assert_refused(&["exec", "periodic", "--tasks", "0"], &["--tasks"]);
    // The learned guard's flags.
    let margins: [(&str, &str, &str, &str); 3] = [
        ("periodic", "--spin-budget", "0", "expected 1-100"),
        (
            "kurt-table",
            "--guard",
            "soon",
            "expected auto or a duration",
        ),
        (
            "periodic",
            "--release-early",
            "later",
            "expected auto or a duration",
        ),
    ];
    for (command, flag, value, says) in margins {
        assert_refused(&["exec", command, flag, value], &[flag, says]);
    }
}

/// SIGINT during a sleep toward a far activation (2 tasks every 60 s,
/// task 1 at 30 s) ends the run at once, and the table shows the true plan
/// (10 min: 20 activations), not a plan shrunk to what was done. The 30 s
/// limit is a hang check, not a timing claim.
#[test]
fn a_stopped_periodic_run_shows_its_true_plan_and_stops_promptly() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stopped.json");
    let mut child = rtlab(&dir.path().join("state"))
        .args([
            "exec",
            "periodic",
            "--tasks",
            "2",
            "--period",
            "60s",
            "--work",
            "20us",
            "--duration",
            "10m",
            "--no-store",
            "--json",
        ])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtlab starts");
    common::wait_until_running(&json, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    common::signal(&child, libc::SIGINT);
    let signalled = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if signalled.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("rtlab exec periodic ignored SIGINT for 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(
        stdout.contains("activations: 20 planned, "),
        "the true plan not in:\n{stdout}"
    );
    assert!(stdout.contains("not reached (stopped early)"), "{stdout}");
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "partial");
    assert_eq!(doc["config"]["activations"], 10);
    let accounted: u64 = lateness(&doc)
        .iter()
        .map(|s| s["samples"].as_u64().unwrap() + s["missed"].as_u64().unwrap())
        .sum();
    assert!(accounted < 20, "{accounted} of 20 accounted");
}

#[test]
fn absurd_periods_and_durations_are_refused() {
    assert_refused(
        &["exec", "periodic", "--period", "50us", "--work", "10us"],
        &["--period 50us", "minimum"],
    );
    assert_refused(
        &["exec", "periodic", "--duration", "5000000h"],
        &["--duration", "longest run"],
    );
    assert_refused(
        &["exec", "kurt-table", "--duration", "5000000h"],
        &["--duration"],
    );
    assert_refused(
        &[
            "exec",
            "kurt-table",
            "--duration",
            "2400h",
            "--tasks",
            "1,2,3,4",
        ],
        &["--duration", "16 runs"],
    );
    assert_refused(
        &["exec", "kurt-table", "--period", "10us", "--work", "1us"],
        &["--period"],
    );
}

/// A stored executive run shows what it learned: its thread, per idle
/// length its wake-ups and guard, its release margin, its spin.
#[test]
fn show_prints_the_guards_the_executive_learned() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let db = dir.path().join("runs.db");
    let args = "exec periodic --tasks 2 --period 2ms --duration 400ms --quiet --db";
    let out = run(rtlab(&state).args(args.split(' ')).arg(&db));
    assert_eq!(out.status.code(), Some(0));
    let out = run(rtlab(&state).args(["show", "last", "--db"]).arg(&db));
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "executive of CPU ",
        ": guard auto, release early auto, spin ",
        "% of its CPU, budget 25 %)",
        "  idle ",
        " wake-ups late by, ",
        "  release early: ",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
}
