//! What examples/monitor ships beside `rtlab monitor`, checked by the
//! tools that will read it: the systemd unit by `systemd-analyze verify`,
//! the scrape configuration and the alerting rules by `promtool check`, the
//! alerts' behaviour by `promtool test rules` (series in, alerts out), and
//! every query of the Grafana dashboard by Prometheus's own PromQL parser.
//! No Prometheus server, no root: the live half (the queries answering on
//! a real scrape of the monitor) is in monitor_prometheus.rs.

mod common;

use common::prometheus::{dashboard_queries, examples_dir, promtool, MONITOR_METRICS};
use std::process::{Command, Stdio};

const UNIT: &str = "rtlab-monitor.service";
/// Where the unit expects rtlab (docs/install.md's `--root /usr/local`).
const INSTALLED_RTLAB: &str = "/usr/local/bin/rtlab";

fn example(name: &str) -> String {
    let path = examples_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_success(what: &str, out: &std::process::Output) {
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{said}",
        out.status
    );
}

/// The lines of a unit file that set `key` (`key=value`), values only.
fn unit_values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn the_unit_passes_systemd_analyze_verify() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map_or(true, |s| !s.success())
    {
        common::skip("systemd-analyze is not installed (scripts/setup installs systemd)");
        return;
    }
    let unit = example(UNIT);
    assert_eq!(
        unit_values(&unit, "ExecStart"),
        [format!("{INSTALLED_RTLAB} monitor --listen 127.0.0.1:9477")]
    );
    // systemd-analyze checks that the program exists: the one built for
    // this test run stands in for the installed one.
    let built = env!("CARGO_BIN_EXE_rtlab");
    assert!(!built.contains(char::is_whitespace), "{built}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(UNIT), unit.replace(INSTALLED_RTLAB, built)).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no", "--recursive-errors=no", UNIT])
        .env("SYSTEMD_UNIT_PATH", format!("{}:", dir.path().display()))
        .env("SYSTEMD_COLORS", "0")
        .env("SYSTEMD_LOG_TARGET", "console")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_success("systemd-analyze verify", &out);
    // An unknown or misspelt key is only a warning, with exit code 0 on
    // some versions: any message at all fails.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.trim().is_empty(),
        "systemd-analyze verify said:\n{said}"
    );
}

#[test]
fn the_units_command_line_is_one_rtlab_accepts() {
    let unit = example(UNIT);
    let exec = unit_values(&unit, "ExecStart");
    let words: Vec<&str> = exec[0].split_whitespace().collect();
    assert_eq!(words[0], INSTALLED_RTLAB);
    let args = std::iter::once("rtlab").chain(words[1..].iter().copied());
    if let Err(e) = rtlab::cli::command().try_get_matches_from(args) {
        panic!("ExecStart={}: {e}", exec[0]);
    }
}

#[test]
fn the_unit_lets_the_measuring_threads_be_real_time_and_nothing_else() {
    let unit = example(UNIT);
    // SCHED_FIFO and mlockall for the measuring threads.
    let caps = unit_values(&unit, "CapabilityBoundingSet");
    assert_eq!(caps.len(), 1, "{caps:?}");
    for cap in ["CAP_SYS_NICE", "CAP_IPC_LOCK"] {
        assert!(
            caps[0].split_whitespace().any(|c| c == cap),
            "{cap} not in {caps:?}"
        );
    }
    assert_eq!(unit_values(&unit, "LimitMEMLOCK"), ["infinity"]);
    let rtprio: Vec<u32> = unit_values(&unit, "LimitRTPRIO")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        rtprio == [99],
        "LimitRTPRIO must allow every --priority: {rtprio:?}"
    );
    // Settings that would break it, or make its HTTP server real-time.
    for key in [
        "RestrictRealtime",
        "CPUSchedulingPolicy",
        "PrivateDevices",
        "CPUQuota",
    ] {
        assert!(unit_values(&unit, key).is_empty(), "{key}= set in {UNIT}");
    }
    assert_eq!(unit_values(&unit, "Restart"), ["on-failure"]);
}

#[test]
fn the_scrape_config_and_its_rules_pass_promtool_check() {
    let config = examples_dir().join("prometheus.yml");
    let Some(out) = promtool(&["check", "config", config.to_str().unwrap()], b"") else {
        return;
    };
    assert_success("promtool check config", &out);
    // promtool check config also checks the rule files the config names.
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 rule files found"));
    let rules = examples_dir().join("rtlab-alerts.yml");
    let out = promtool(&["check", "rules", rules.to_str().unwrap()], b"").unwrap();
    assert_success("promtool check rules", &out);
}

#[test]
fn every_alert_fires_when_it_must_and_only_then() {
    // The unit tests name their rule file relative to their own directory.
    let Some(out) = promtool(
        &[
            "test",
            "rules",
            examples_dir()
                .join("rtlab-alerts.test.yml")
                .to_str()
                .unwrap(),
        ],
        b"",
    ) else {
        return;
    };
    assert_success("promtool test rules", &out);
    // Every alert but the native-histogram one (which promtool 2.42's
    // series cannot feed; monitor_prometheus.rs evaluates it) is tested.
    let tests = example("rtlab-alerts.test.yml");
    for alert in alert_names() {
        if alert == "RtlabWakeupP99OverBudget" {
            continue;
        }
        assert!(
            tests.contains(&format!("alertname: {alert}\n")),
            "no unit test of {alert} in rtlab-alerts.test.yml"
        );
    }
}

/// The alerts rtlab-alerts.yml defines.
fn alert_names() -> Vec<String> {
    example("rtlab-alerts.yml")
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- alert: "))
        .map(str::to_string)
        .collect()
}

/// `promtool check rules` on a rule file with `queries` as recording rules:
/// Prometheus's own PromQL parser on each, offline.
fn check_queries_parse(queries: &[(String, String)]) -> Option<std::process::Output> {
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (n, (_, expr)) in queries.iter().enumerate() {
        let quoted = serde_json::to_string(expr).unwrap(); // a valid YAML string
        rules.push_str(&format!(
            "      - record: dashboard:query_{n}\n        expr: {quoted}\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dashboard-rules.yml");
    std::fs::write(&file, rules).unwrap();
    promtool(&["check", "rules", file.to_str().unwrap()], b"")
}

#[test]
fn every_dashboard_query_parses() {
    let queries = dashboard_queries("1m");
    let Some(out) = check_queries_parse(&queries) else {
        return;
    };
    assert_success("promtool check rules (the dashboard's queries)", &out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{} rules found", queries.len())),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The check can fail: one broken query is refused, with its text.
    let mut broken = queries.clone();
    broken.push((
        "broken".into(),
        "sum(rate(rtlab_wakeup_samples_total[1m])".into(),
    ));
    let out = check_queries_parse(&broken).unwrap();
    assert!(!out.status.success(), "a broken query passed the check");
}

#[test]
fn the_dashboard_is_an_importable_grafana_dashboard_covering_every_metric() {
    let text = example("grafana-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let inputs = dashboard["__inputs"].as_array().unwrap();
    assert!(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["pluginId"] == "prometheus"),
        "no DS_PROMETHEUS datasource input: {inputs:?}"
    );
    // Every panel and query reads the datasource chosen at import.
    let mut datasources = Vec::new();
    collect_datasources(&dashboard, &mut datasources);
    assert!(!datasources.is_empty());
    for ds in &datasources {
        assert_eq!(ds["uid"], "${DS_PROMETHEUS}", "{ds}");
    }
    let ids: Vec<u64> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "panel ids repeat: {ids:?}");
    let queries = dashboard_queries("1m");
    for metric in MONITOR_METRICS {
        assert!(
            queries.iter().any(|(_, q)| q.contains(metric)),
            "no panel shows {metric}"
        );
    }
    for quantile in ["0.99,", "0.999,"] {
        for family in [
            "rtlab_wakeup_latency_seconds_bucket",
            "rtlab_wakeup_latency_native_seconds",
        ] {
            assert!(
                queries
                    .iter()
                    .any(|(_, q)| q.contains(quantile) && q.contains(family)),
                "no {quantile} quantile of {family}"
            );
        }
    }
}

fn collect_datasources<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                if key == "datasource" {
                    found.push(inner);
                } else {
                    collect_datasources(inner, found);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                collect_datasources(item, found);
            }
        }
        _ => {}
    }
}
