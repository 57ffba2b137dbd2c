//! The probe is honest: stalls of known size, injected by a higher-priority
//! thread on the probe's CPU, must show up in full in the maximum, in the
//! count of late samples and in the missed deadlines.

mod common;

use std::time::Duration;

const INTERVAL_US: u64 = 200;
const STALL: Duration = Duration::from_millis(3);
const STALLS: u32 = 8;

fn injected_stalls_are_reported(mode: &str) {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let loops = 20_000u64; // 4 s at 200 µs, longer than the injection below
    let mut child = common::start_timer(
        dir.path(),
        &[
            "--cpus",
            "0",
            "--interval",
            "200us",
            "--mode",
            mode,
            "--loops",
            &loops.to_string(),
        ],
        &json,
    );
    let injected = common::inject_stalls(0, STALL, Duration::from_millis(250), STALLS)
        .join()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "complete");
    let series = &doc["series"][0];
    let samples = series["samples"].as_u64().unwrap();
    let missed = series["missed"].as_u64().unwrap();
    let max = series["max_ns"].as_u64().unwrap();

    // A wake-up due during a stall runs when the stall ends: at least the
    // stall minus one interval late, and every deadline passed meanwhile
    // is a missed one.
    let floor_ns = STALL.as_nanos() as u64 - INTERVAL_US * 1000;
    let late_per_stall = floor_ns / (INTERVAL_US * 1000) - 1;
    eprintln!("{mode}: samples {samples} missed {missed} max {max} ns");
    assert_eq!(
        samples + missed,
        loops,
        "every deadline is a sample or a missed one"
    );
    assert!(max >= floor_ns, "max {max} ns < injected {floor_ns} ns");
    let late = common::samples_at_least(series, floor_ns / 1000);
    assert!(
        late >= u64::from(injected),
        "{late} late samples for {injected} stalls"
    );
    assert!(
        missed >= u64::from(injected) * late_per_stall,
        "{missed} missed for {injected} stalls of {late_per_stall}+ periods"
    );
    assert!(series["max_at"]["latency_ns"].as_u64().unwrap() == max);
}

#[test]
fn abs_mode_reports_injected_stalls() {
    injected_stalls_are_reported("abs");
}

#[test]
fn timerfd_mode_reports_injected_stalls() {
    injected_stalls_are_reported("timerfd");
}

#[test]
fn rel_mode_reports_injected_stalls() {
    injected_stalls_are_reported("rel");
}

#[test]
fn break_at_stops_at_the_first_late_wakeup() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut child = common::start_timer(
        dir.path(),
        &[
            "--cpus",
            "0",
            "--interval",
            "200us",
            "--loops",
            "100000",
            "--break-at",
            "1ms",
        ],
        &json,
    );
    common::inject_stalls(0, STALL, Duration::from_millis(100), 3)
        .join()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "a crossed --break-at exits with 1");
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "break");
    let event = &doc["break_event"];
    assert!(event["latency_ns"].as_u64().unwrap() > 1_000_000);
    assert_eq!(event["threshold_ns"], 1_000_000);
    assert_eq!(event["series"], "cpu0");
    let series = &doc["series"][0];
    // The breaking sample is the last and largest one recorded.
    assert_eq!(series["max_ns"], event["latency_ns"]);
    assert_eq!(
        series["samples"].as_u64().unwrap(),
        event["sample"].as_u64().unwrap() + 1
    );
    let deadlines = series["samples"].as_u64().unwrap() + series["missed"].as_u64().unwrap();
    assert!(deadlines < 100_000, "the run stopped early");
}

#[test]
fn posix_mode_reports_injected_stalls() {
    injected_stalls_are_reported("posix");
}
