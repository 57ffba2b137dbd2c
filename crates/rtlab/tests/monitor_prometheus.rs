//! `rtlab monitor` scraped by a real Prometheus (the Debian 2.42 binary with
//! native histograms on, started by the test): the quantile of the classic
//! histogram, the window maxima and the missed-deadline counter answer
//! PromQL per CPU; the native histogram comes back through the API as a
//! histogram and its quantile as a number; an injected stall shows in the
//! counter, the gauges and the alerts of examples/monitor; every query of
//! the Grafana dashboard answers with data; the text exposition passes
//! `promtool check metrics`; SIGTERM ends the monitor with exit code 0 and
//! nothing left. Every claim is a relation or a count, never a latency the
//! VM must meet: the waits are `common::eventually`, a hang guard.
//!
//! Live (it measures at SCHED_FIFO): run it under the host lock,
//! `flock /tmp/rtlab-host.lock cargo test -p rtlab --test monitor_prometheus`.

mod common;

use common::prometheus::{
    dashboard_queries, examples_dir, http_get, promtool, Prometheus, ACCEPT_PROTOBUF, ACCEPT_TEXT,
};
use common::{eventually, inject_stalls, last_cpu, rtlab};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The wake-up period the test monitors with.
const INTERVAL: Duration = Duration::from_millis(1);
/// The stalls injected on one CPU: several periods long, so each one that
/// falls in a measuring burst makes missed deadlines and a maximum of the
/// stall's order (the first wake-up due after a stall starts is delayed by
/// at least STALL - INTERVAL).
const STALL: Duration = Duration::from_millis(5);

/// `rtlab monitor` started by a test; ended (SIGTERM, then the journal of
/// its state directory restored) when dropped, also on a panic.
struct Monitor {
    child: Child,
    state: tempfile::TempDir,
    /// Its stdout, line by line (the JSON lines of --json).
    lines: mpsc::Receiver<String>,
    /// The first JSON line: where it serves.
    started: Value,
}

impl Monitor {
    fn start(args: &[&str]) -> Monitor {
        let state = tempfile::tempdir().unwrap();
        let stderr = std::fs::File::create(state.path().join("stderr")).unwrap();
        let mut child = rtlab(&state.path().join("state"))
            .arg("monitor")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("rtlab monitor starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut monitor = Monitor {
            child,
            state,
            lines,
            started: Value::Null,
        };
        let Some(line) = monitor.next_line() else {
            panic!(
                "rtlab monitor {args:?} printed no line: {}",
                monitor.stderr()
            );
        };
        monitor.started = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{}", monitor.stderr()));
        assert_eq!(monitor.started["schema"], "rtlab.monitor/1", "{line}");
        monitor
    }

    /// Its next line of output; None once it closed stdout (hang guard:
    /// a minute).
    fn next_line(&self) -> Option<String> {
        self.lines.recv_timeout(Duration::from_secs(60)).ok()
    }

    fn listen(&self) -> String {
        let listen = self.started["listen"]
            .as_str()
            .expect("listen in the JSON line");
        assert!(listen.starts_with("127.0.0.1:"), "{listen}");
        assert_ne!(
            listen, "127.0.0.1:0",
            "the port it picked, not the one asked"
        );
        listen.to_string()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.state.path().join("stderr")).unwrap_or_default()
    }

    /// SIGTERM; its exit status and the summary line it printed last.
    fn terminate(&mut self) -> (std::process::ExitStatus, Option<Value>) {
        common::signal(&self.child, libc::SIGTERM);
        let mut status = None;
        eventually("rtlab monitor ends on SIGTERM", || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        let last = std::iter::from_fn(|| self.next_line())
            .last()
            .and_then(|line| serde_json::from_str(&line).ok());
        (status.unwrap(), last)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        common::end_and_restore(&mut self.child, &self.state.path().join("state"));
    }
}

/// The CPUs the monitor measures by default: every online one.
fn online_cpus() -> Vec<String> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
        cpus.extend((first..=last).map(|cpu| cpu.to_string()));
    }
    cpus
}

/// Whether `values` has a finite number > 0 for every CPU of `cpus`.
fn positive_for_every_cpu(values: &BTreeMap<String, f64>, cpus: &[String]) -> bool {
    cpus.iter()
        .all(|cpu| values.get(cpu).is_some_and(|v| v.is_finite() && *v > 0.0))
}

#[test]
fn a_real_prometheus_scrapes_the_monitor() {
    require_realtime!();
    if let Err(why) = common::prometheus::available("prometheus") {
        common::skip(&why);
        return;
    }
    let mut monitor = Monitor::start(&[
        "--listen",
        "127.0.0.1:0",
        "--json",
        "--interval",
        "1ms",
        "--duty",
        "50%",
        "--window",
        "2s",
    ]);
    let listen = monitor.listen();
    let rules = examples_dir().join("rtlab-alerts.yml");
    let Some(prometheus) = Prometheus::start(&listen, &[rules]) else {
        return;
    };
    let cpus = online_cpus();

    classic_histogram_gauges_and_counters_answer(&prometheus, &cpus);
    native_histogram_comes_back_as_a_histogram(&prometheus, &cpus);
    the_exposition_passes_promtool_and_negotiates(&listen);
    every_dashboard_query_and_alert_rule_answers(&prometheus);
    a_stall_shows_in_the_counter_the_gauges_and_the_alerts(&prometheus);

    let (status, summary) = monitor.terminate();
    assert_eq!(status.code(), Some(0), "{}", monitor.stderr());
    let summary = summary.expect("a JSON summary line on SIGTERM");
    eprintln!("summary: {summary}");
    // Every deadline of the time it measured is a sample or a missed one.
    let cpus_summed = summary["cpus"].as_array().unwrap();
    assert_eq!(cpus_summed.len(), online_cpus().len(), "{summary}");
    for cpu in cpus_summed {
        let count = |key: &str| cpu[key].as_u64().unwrap();
        assert_eq!(
            count("samples") + count("missed"),
            count("measuring_ns") / INTERVAL.as_nanos() as u64,
            "{cpu}"
        );
        assert!(count("samples") > 0, "{cpu}");
    }
    assert_eq!(summary["schema"], "rtlab.monitor/1", "{summary}");
    // Nothing left: the port is closed and no journal is left to restore.
    assert!(
        std::net::TcpStream::connect(&listen).is_err(),
        "{listen} still open"
    );
    let state = monitor.state.path().join("state");
    let journals: Vec<_> = std::fs::read_dir(&state)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("journal-"))
        .collect();
    assert!(journals.is_empty(), "journals left: {journals:?}");
    drop(prometheus);
}

fn classic_histogram_gauges_and_counters_answer(prometheus: &Prometheus, cpus: &[String]) {
    let p99 = "histogram_quantile(0.99, sum by (le, cpu) (rate(rtlab_wakeup_latency_seconds_bucket[10s])))";
    eventually("a p99 of the classic histogram for every CPU", || {
        positive_for_every_cpu(&prometheus.values_by_cpu(p99), cpus)
    });
    eprintln!("p99 (classic, s): {:?}", prometheus.values_by_cpu(p99));
    // A window is 2 s: the first complete one has a maximum.
    eventually("a window maximum > 0 for every CPU", || {
        positive_for_every_cpu(
            &prometheus.values_by_cpu("rtlab_wakeup_latency_window_max_seconds"),
            cpus,
        )
    });
    let max = prometheus.values_by_cpu("rtlab_wakeup_latency_max_seconds");
    let window_max = prometheus.values_by_cpu("rtlab_wakeup_latency_window_max_seconds");
    for cpu in cpus {
        // The largest since start covers every window's (both read at one
        // instant, the latest scrape).
        assert!(
            max[cpu] >= window_max[cpu],
            "CPU {cpu}: {max:?} {window_max:?}"
        );
    }
    for counter in [
        "rtlab_wakeup_missed_total",
        "rtlab_wakeup_samples_total",
        "rtlab_monitor_measuring_seconds_total",
    ] {
        let values = prometheus.values_by_cpu(counter);
        let found: BTreeSet<&String> = values.keys().collect();
        assert_eq!(found, cpus.iter().collect(), "{counter}");
        assert!(values.values().all(|v| *v >= 0.0), "{counter}: {values:?}");
    }
    let samples = prometheus.values_by_cpu("rtlab_wakeup_samples_total");
    assert!(samples.values().all(|v| *v > 0.0), "{samples:?}");

    let info = prometheus.vector("rtlab_environment_info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0]["value"][1], "1");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(info[0]["metric"]["kernel"], kernel.trim(), "{}", info[0]);
    for label in ["preemption", "hostname", "version"] {
        assert!(
            info[0]["metric"][label]
                .as_str()
                .is_some_and(|v| !v.is_empty()),
            "no {label} in {}",
            info[0]
        );
    }
    eventually("the monitor's own CPU time counts", || {
        let cpu = prometheus.vector("rtlab_monitor_cpu_seconds_total");
        cpu.len() == 1 && cpu[0]["value"][1].as_str().unwrap().parse::<f64>().unwrap() > 0.0
    });
}

fn native_histogram_comes_back_as_a_histogram(prometheus: &Prometheus, cpus: &[String]) {
    let native = prometheus.vector("rtlab_wakeup_latency_native_seconds");
    let found: BTreeSet<&str> = native
        .iter()
        .map(|e| e["metric"]["cpu"].as_str().unwrap())
        .collect();
    assert_eq!(
        found,
        cpus.iter().map(String::as_str).collect(),
        "{native:?}"
    );
    for element in &native {
        // A native histogram, not a float sample: count, sum and buckets.
        assert!(element.get("value").is_none(), "{element}");
        let histogram = &element["histogram"][1];
        let count: f64 = histogram["count"].as_str().unwrap().parse().unwrap();
        assert!(count > 0.0, "{element}");
        assert!(
            !histogram["buckets"].as_array().unwrap().is_empty(),
            "{element}"
        );
    }
    let p99 = "histogram_quantile(0.99, rate(rtlab_wakeup_latency_native_seconds[10s]))";
    eventually("a p99 of the native histogram for every CPU", || {
        positive_for_every_cpu(&prometheus.values_by_cpu(p99), cpus)
    });
    eprintln!("p99 (native, s): {:?}", prometheus.values_by_cpu(p99));
    // The same samples in both families: one scrape (between two measuring
    // bursts, at the latest) has as many in each.
    eventually("one count in the classic and the native histogram", || {
        let classic = prometheus.values_by_cpu("rtlab_wakeup_latency_seconds_count");
        let native =
            prometheus.values_by_cpu("histogram_count(rtlab_wakeup_latency_native_seconds)");
        classic.len() == cpus.len() && classic == native
    });
}

fn the_exposition_passes_promtool_and_negotiates(listen: &str) {
    let text = http_get(listen, "/metrics", Some(ACCEPT_TEXT)).unwrap();
    assert_eq!(text.status, 200);
    assert!(
        text.content_type.starts_with("text/plain"),
        "{}",
        text.content_type
    );
    let body = String::from_utf8(text.body).unwrap();
    assert!(
        body.contains("rtlab_wakeup_latency_seconds_bucket{"),
        "{body}"
    );
    // The native family exists only in the protobuf exposition.
    assert!(
        !body.contains("rtlab_wakeup_latency_native_seconds"),
        "{body}"
    );
    let Some(out) = promtool(&["check", "metrics"], body.as_bytes()) else {
        return;
    };
    assert!(
        out.status.success(),
        "promtool check metrics ({}):\n{}{}\non:\n{body}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let protobuf = http_get(listen, "/metrics", Some(ACCEPT_PROTOBUF)).unwrap();
    assert_eq!(protobuf.status, 200);
    assert!(
        protobuf
            .content_type
            .starts_with("application/vnd.google.protobuf"),
        "{}",
        protobuf.content_type
    );
    assert!(!protobuf.body.is_empty());
}

fn every_dashboard_query_and_alert_rule_answers(prometheus: &Prometheus) {
    // Each panel's query answers with data from the monitor: a misspelt
    // metric or label would answer an empty vector, a syntax error an error.
    for (panel, expr) in dashboard_queries("10s") {
        eventually(&format!("data for panel {panel:?}: {expr}"), || {
            let answer = prometheus.query(&expr);
            assert_eq!(answer["status"], "success", "{panel}: {expr}: {answer}");
            !answer["data"]["result"].as_array().unwrap().is_empty()
        });
    }
    // Every rule of rtlab-alerts.yml evaluated without an error on the real
    // series (the native-histogram alert included).
    eventually("every alerting rule evaluated", || {
        let rules = prometheus.api("/api/v1/rules");
        let all: Vec<&Value> = rules["data"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .collect();
        for rule in &all {
            assert_ne!(rule["health"], "err", "{rule}");
        }
        !all.is_empty() && all.iter().all(|r| r["health"] == "ok")
    });
}

fn a_stall_shows_in_the_counter_the_gauges_and_the_alerts(prometheus: &Prometheus) {
    let cpu = last_cpu().to_string();
    let selector = format!("{{cpu=\"{cpu}\"}}");
    let missed = |prometheus: &Prometheus| {
        let values = prometheus.values_by_cpu(&format!("rtlab_wakeup_missed_total{selector}"));
        values.get(&cpu).copied().unwrap_or(0.0)
    };
    let before = missed(prometheus);
    // 30 stalls every 100 ms: 3 s, so about half fall in the 50 % duty's
    // measuring bursts whatever the phase.
    let stalls = inject_stalls(last_cpu(), STALL, Duration::from_millis(100), 30);
    assert_eq!(stalls.join().unwrap(), 30);
    // One stall in a burst makes at least STALL / INTERVAL - 2 missed
    // deadlines (a wake-up late by k periods counts k - 1).
    let one_stall = (STALL.as_nanos() / INTERVAL.as_nanos()) as f64 - 2.0;
    eventually("the stalls counted as missed deadlines", || {
        missed(prometheus) >= before + one_stall
    });
    eprintln!(
        "CPU {cpu}: missed {before} before the stalls, {} after",
        missed(prometheus)
    );
    let half_stall = STALL.as_secs_f64() / 2.0;
    for gauge in [
        "rtlab_wakeup_latency_max_seconds",
        "max_over_time(rtlab_wakeup_latency_window_max_seconds",
    ] {
        let expr = if gauge.starts_with("max_over_time") {
            format!("{gauge}{selector}[1m])")
        } else {
            format!("{gauge}{selector}")
        };
        eventually(&format!("{expr} of the stall's order"), || {
            prometheus
                .values_by_cpu(&expr)
                .get(&cpu)
                .is_some_and(|max| *max >= half_stall)
        });
        eprintln!("{expr}: {:?}", prometheus.values_by_cpu(&expr));
    }
    eventually("an increase of the missed deadlines in PromQL", || {
        let increase = format!("increase(rtlab_wakeup_missed_total{selector}[1m])");
        prometheus
            .values_by_cpu(&increase)
            .get(&cpu)
            .is_some_and(|increase| *increase > 0.0)
    });
    // examples/monitor's alerts fire on it, for that CPU.
    for alert in ["RtlabMissedDeadlines", "RtlabWakeupLatencyBudgetBroken"] {
        let firing =
            format!("ALERTS{{alertname=\"{alert}\", alertstate=\"firing\", cpu=\"{cpu}\"}}");
        eventually(&format!("{alert} firing for CPU {cpu}"), || {
            !prometheus.vector(&firing).is_empty()
        });
    }
}
