//! `rtlab monitor` end to end, without Prometheus (promproof's
//! monitor_prometheus.rs has that): it serves every CPU's samples, ends
//! on --duration or SIGTERM with exit 0 and its summary, leaves nothing
//! behind, refuses bad flags with exit 2, and shows an injected stall in
//! its max gauges, its histogram's top buckets and its missed deadlines.

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::time::Duration;

/// A running `rtlab monitor --json`, ended (SIGTERM, then SIGKILL) when
/// dropped, so that a failing test leaves no monitor behind.
struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// The serving line.
    serving: Value,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            common::signal(&self.child, libc::SIGTERM);
            for _ in 0..1_500 {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    fn start(state: &Path, args: &[&str]) -> Running {
        let mut child = common::rtlab(state)
            .args(["monitor", "--listen", "127.0.0.1:0", "--json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("rtlab runs");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let serving: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a serving line ({e}): {line:?}"));
        assert_eq!(serving["schema"], "rtlab.monitor/1");
        assert_eq!(serving["event"], "serving");
        Running {
            child,
            stdout,
            serving,
        }
    }

    fn listen(&self) -> String {
        self.serving["listen"].as_str().unwrap().to_string()
    }

    fn cpus(&self) -> Vec<u64> {
        let cpus = self.serving["cpus"].as_array().unwrap();
        cpus.iter().map(|c| c.as_u64().unwrap()).collect()
    }

    /// Waits for the exit (which must be 0) and returns the summary line.
    fn summary(mut self) -> Value {
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}: {rest}");
        let summary: Value = serde_json::from_str(rest.trim())
            .unwrap_or_else(|e| panic!("not a summary line ({e}): {rest:?}"));
        assert_eq!(summary["event"], "summary");
        summary
    }
}

/// `GET /metrics` as text.
fn scrape(listen: &str) -> String {
    let mut stream = TcpStream::connect(listen).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: rtlab\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    answer.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The value of the series `name{labels}` in a text exposition.
fn value(text: &str, name: &str, labels: &str) -> f64 {
    let prefix = format!("{name}{{{labels}}} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in:\n{text}"));
    line[prefix.len()..].parse().unwrap()
}

fn cpu_label(cpu: u64) -> String {
    format!("cpu=\"{cpu}\"")
}

/// Every CPU's summary: (samples + missed) deadlines of the interval are
/// the time measured, and there were samples.
fn assert_accounted(summary: &Value, interval_ns: u64) {
    for cpu in summary["cpus"].as_array().unwrap() {
        let samples = cpu["samples"].as_u64().unwrap();
        let missed = cpu["missed"].as_u64().unwrap();
        assert!(samples > 0, "{cpu}");
        assert_eq!(cpu["dropped"], 0, "{cpu}");
        assert_eq!(
            (samples + missed) * interval_ns,
            cpu["measuring_ns"].as_u64().unwrap(),
            "{cpu}"
        );
        assert!(cpu["max_ns"].as_u64() >= cpu["p99_ns"].as_u64(), "{cpu}");
    }
}

#[test]
fn it_serves_every_cpu_until_its_duration_and_leaves_nothing_behind() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let monitor = Running::start(&state, &["--duration", "3s"]);
    let listen = monitor.listen();
    let cpus = monitor.cpus();
    let online = std::thread::available_parallelism().unwrap().get();
    assert_eq!(cpus.len(), online, "every online CPU by default");
    common::eventually("samples on every CPU", || {
        let text = scrape(&listen);
        cpus.iter()
            .all(|&cpu| value(&text, "rtlab_wakeup_samples_total", &cpu_label(cpu)) > 0.0)
    });
    let summary = monitor.summary();
    assert_eq!(summary["cpus"].as_array().unwrap().len(), cpus.len());
    assert_accounted(&summary, 1_000_000);
    assert!(summary["monitor_cpu_seconds"].as_f64().unwrap() > 0.0);
    // Nothing journaled, nothing left: the port is free again.
    assert!(
        !state.exists() || std::fs::read_dir(&state).unwrap().next().is_none(),
        "the monitor wrote state"
    );
    TcpListener::bind(&listen).expect("the port is free once the monitor ended");
}

#[test]
fn sigterm_ends_it_with_its_summary_and_exit_0() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let monitor = Running::start(dir.path(), &["--cpus", "0", "--duty", "50"]);
    let listen = monitor.listen();
    common::eventually("samples on CPU 0", || {
        value(&scrape(&listen), "rtlab_wakeup_samples_total", "cpu=\"0\"") > 0.0
    });
    common::signal(&monitor.child, libc::SIGTERM);
    let summary = monitor.summary();
    assert_accounted(&summary, 1_000_000);
}

#[test]
fn bad_flags_and_a_busy_address_are_refused_with_exit_2() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    common::assert_refused(
        &["monitor", "--listen", &busy],
        &["--listen", &busy, "cannot listen"],
    );
    common::assert_refused(
        &["monitor", "--listen", "localhost"],
        &["--listen", "ADDR:PORT"],
    );
    common::assert_refused(&["monitor", "--duty", "0"], &["--duty", "out of range"]);
    common::assert_refused(&["monitor", "--duty", "ten"], &["--duty", "percentage"]);
    common::assert_refused(
        &["monitor", "--interval", "200ms"],
        &["--interval 200ms is longer than a burst"],
    );
    common::assert_refused(&["monitor", "--window", "100ms"], &["--window"]);
    common::assert_refused(&["monitor", "--cpus", "4096"], &["--cpus"]);
    common::assert_refused(&["monitor", "--priority", "0"], &["--priority"]);
}

/// A stall of known size on the measured CPU (duty 100 %: every stall is
/// inside a burst) shows in full: in the max gauge and in its window's,
/// above the 10 ms bucket, and as the deadlines it swallowed.
#[test]
fn an_injected_stall_shows_in_the_max_the_top_buckets_and_the_missed_deadlines() {
    require_realtime!();
    const STALL: Duration = Duration::from_millis(20);
    const INTERVAL_NS: u64 = 1_000_000;
    let cpu = common::last_cpu() as u64;
    let dir = tempfile::tempdir().unwrap();
    let cpu_arg = cpu.to_string();
    let args = ["--cpus", &cpu_arg, "--duty", "100", "--window", "1s"];
    let monitor = Running::start(dir.path(), &args);
    let listen = monitor.listen();
    let label = cpu_label(cpu);
    common::eventually("samples", || {
        value(&scrape(&listen), "rtlab_wakeup_samples_total", &label) > 0.0
    });
    let injected = common::inject_stalls(cpu as usize, STALL, Duration::from_millis(300), 5)
        .join()
        .unwrap();
    // The sample of the last stall reaches the aggregator at its next
    // drain: wait for every stall's sample above 10 ms.
    let over_10ms = |text: &str| {
        let count = value(text, "rtlab_wakeup_latency_seconds_count", &label);
        let bucket = format!("{label},le=\"0.01\"");
        count - value(text, "rtlab_wakeup_latency_seconds_bucket", &bucket)
    };
    common::eventually("a sample over 10 ms per stall", || {
        over_10ms(&scrape(&listen)) >= f64::from(injected)
    });
    let text = scrape(&listen);
    let floor_s = (STALL.as_nanos() as u64 - INTERVAL_NS) as f64 / 1e9;
    let max = value(&text, "rtlab_wakeup_latency_max_seconds", &label);
    assert!(max >= floor_s, "max {max} s < {floor_s} s");
    // The 1 s windows: one with a stall is shown once complete, and a
    // later one without is shown after it, while the max since start stays.
    let window_max = |text: &str| value(text, "rtlab_wakeup_latency_window_max_seconds", &label);
    common::eventually("a window with a stall shown", || {
        window_max(&scrape(&listen)) >= floor_s
    });
    common::eventually("a later window without a stall shown", || {
        window_max(&scrape(&listen)) < floor_s
    });
    let text = scrape(&listen);
    assert!(value(&text, "rtlab_wakeup_latency_max_seconds", &label) >= max);
    // Each stall swallowed the deadlines between its first late wake-up's
    // deadline and its end.
    let missed = value(&text, "rtlab_wakeup_missed_total", &label);
    let per_stall = (STALL.as_nanos() as u64 - INTERVAL_NS) / INTERVAL_NS - 1;
    assert!(
        missed >= f64::from(injected) * per_stall as f64,
        "{missed} missed for {injected} stalls of {per_stall}+ periods"
    );
    let samples = value(&text, "rtlab_wakeup_samples_total", &label);
    let measured = value(&text, "rtlab_monitor_measuring_seconds_total", &label);
    let expected = (samples + missed) * INTERVAL_NS as f64 / 1e9;
    assert!(
        (measured - expected).abs() < 1e-6,
        "{measured} s measured, {expected} s of deadlines"
    );
    common::signal(&monitor.child, libc::SIGTERM);
    let summary = monitor.summary();
    assert_accounted(&summary, INTERVAL_NS);
    assert!(summary["cpus"][0]["max_ns"].as_f64().unwrap() >= floor_s * 1e9);
}
