//! `rtlab measure switch --pacing rt-tests` from the command line: bad
//! combinations refused as bad input naming the flag; a run counts every
//! cycle in both series and records its pacing; a stall of known size on
//! the CPU and a delay injected on the release path both show.

mod common;

use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn refused(args: &[&str], must_mention: &[&str]) {
    common::assert_refused(&[&["measure", "switch"], args].concat(), must_mention);
}

#[test]
fn bad_pacing_input_is_refused() {
    refused(
        &["--pacing", "cyclic"],
        &["--pacing", "cyclic", "grid, rt-tests"],
    );
    // The default mechanism, futex, has no rt-tests tool.
    refused(
        &["--pacing", "rt-tests"],
        &["--pacing", "`futex` has no rt-tests counterpart", "pmqtest"],
    );
    refused(
        &["--pacing", "rt-tests", "--mechanism", "mq,pipe"],
        &["--pacing", "`pipe`"],
    );
    refused(
        &["--pacing", "rt-tests", "--mechanism", "mq", "--process"],
        &["--process", "threads"],
    );
}

fn series<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no series {name} in {}", result["series"]))
}

fn count(series: &Value, key: &str) -> u64 {
    series[key].as_u64().unwrap()
}

/// `rtlab measure switch --pacing rt-tests ARGS` on the last CPU.
fn paced(state: &Path, args: &[&str]) -> Value {
    let json = state.join("paced.json");
    let cpu = common::last_cpu().to_string();
    let out = common::run(
        common::rtlab(state)
            .args(["measure", "switch", "--pacing", "rt-tests", "--cpu", &cpu])
            .args(["--no-store", "--quiet", "--json"])
            .arg(&json)
            .args(args),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::read_json(&json).expect("a result file")
}

#[test]
fn a_paced_run_counts_every_cycle_and_records_its_pacing() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let result = paced(
        dir.path(),
        &[
            "--mechanism",
            "pthread-mutex,mq,signal,sysv-sem",
            "--interval",
            "500us",
            "--events",
            "200",
        ],
    );
    assert_eq!(result["status"], "complete");
    assert_eq!(result["config"]["pacing"], "rt-tests");
    for mechanism in ["pthread-mutex", "mq", "signal", "sysv-sem"] {
        for kind in ["interrupt", "switch"] {
            let s = series(&result, &format!("{mechanism}.{kind}"));
            // Nothing is ever late in this pacing: every cycle is a sample.
            assert_eq!(
                (count(s, "samples"), count(s, "missed")),
                (200, 0),
                "{mechanism}.{kind}"
            );
        }
        // Both threads at --priority (default 90), as the tools' one pair.
        let switch = series(&result, &format!("{mechanism}.switch"));
        assert_eq!(switch["thread"]["requested"]["priority"], 90);
    }
}

#[test]
fn stalls_and_injected_delays_show_in_a_paced_run() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    // 10 stalls of 3 ms every 150 ms on the run's CPU, from about 1 s on
    // (once the run, about 2.5 s of measuring, has started).
    let stalls = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(800));
        let cpu = common::last_cpu();
        common::inject_stalls(
            cpu,
            Duration::from_millis(3),
            Duration::from_millis(150),
            10,
        )
        .join()
        .unwrap()
    });
    let result = paced(
        dir.path(),
        &[
            "--mechanism",
            "mq",
            "--interval",
            "1ms",
            "--events",
            "2500",
            "--inject-delay",
            "200us",
            "--inject-every",
            "100",
        ],
    );
    let made = stalls.join().unwrap();
    let interrupt = series(&result, "mq.interrupt");
    let switch = series(&result, "mq.switch");
    // 25 releases delayed (every 100th of 2500): each sample >= the spin.
    assert!(common::samples_at_least(switch, 200) >= 25, "{switch}");
    // A 3 ms stall in the receiver's 1 ms sleep wakes it at least 2 ms
    // late; in a hand-off it delays the switch by 3 ms. Only a stall that
    // starts in the few µs between the receiver's wake-up and the
    // sender's next stamp shows in neither (as in the tools).
    let seen = common::samples_at_least(interrupt, 2000) + common::samples_at_least(switch, 2000);
    assert!(
        seen + 1 >= u64::from(made),
        "{made} stalls, {seen} samples >= 2 ms: {interrupt}"
    );
}
