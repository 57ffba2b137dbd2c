//! Budgets: specs parsed (and refused with the clause named), evaluated on
//! results built here, shown as JSON that matches the run schema, and
//! written as JUnit XML that XML parsers read back.

use rtlab_core::env::Environment;
use rtlab_core::result::{
    CampaignRef, Effective, NetMessageCounts, NetReport, Percentiles, RunResult, RunStatus, Series,
    SeriesStats, ThreadSettings, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::budget::{
    failures_table, glob_match, reconcile, summary_line, Budget, Evaluation, JsonWithBudget,
    Metric, Op, Outcome,
};
use rtlab_report::export::write_file;
use rtlab_report::junit;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------- results

fn series(name: &str, metric: &str, samples: u64, max_ns: u64) -> Series {
    let fifo = SchedParams {
        policy: Policy::Fifo,
        priority: 90,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: metric.into(),
        cpu: Some(0),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 1,
            pinned_cpu: Some(0),
            requested: fifo,
            actual: Some(fifo),
            timer_slack_ns: Some(1),
        },
        stats: SeriesStats {
            samples,
            missed: 0,
            dropped: 0,
            min_ns: if samples > 0 { 1_000 } else { 0 },
            max_ns,
            mean_ns: if samples > 0 { 12_345.6 } else { 0.0 },
            stdev_ns: if samples > 0 { 2_000.25 } else { 0.0 },
            percentiles_ns: if samples > 0 {
                Percentiles {
                    p50: 10_000,
                    p90: 20_000,
                    p99: 50_000,
                    p99_9: 100_000,
                    p99_99: max_ns,
                }
            } else {
                Percentiles::default()
            },
            ..SeriesStats::default()
        },
    }
}

fn run(probe: &str, series: Vec<Series>) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: "20261121T193012Z-4242".into(),
        probe: probe.into(),
        status: RunStatus::Complete,
        started_at: "2026-11-21T19:30:12.123456Z".into(),
        ended_at: Some("2026-11-21T19:30:22.123456Z".into()),
        elapsed_ns: 10_001_000_000,
        command: vec!["rtlab".into(), "measure".into(), probe.into()],
        config: json!({}),
        effective: Effective::default(),
        environment: Environment {
            captured_at: "2026-11-21T19:30:12Z".into(),
            ..Environment::default()
        },
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings: Vec::new(),
    }
}

/// Two CPUs: cpu0 with a 2.5 ms spike and 2 missed deadlines, cpu1 calm.
fn timer_run() -> RunResult {
    let mut cpu0 = series("cpu0", "wakeup_latency", 10_000, 2_500_000);
    cpu0.stats.missed = 2;
    let cpu1 = series("cpu1", "wakeup_latency", 10_000, 150_000);
    run("timer", vec![cpu0, cpu1])
}

fn net_run(lost: u64) -> RunResult {
    let mut result = run(
        "net",
        vec![
            series("response", "response_time", 997, 900_000),
            series("send_lag", "send_lag", 1000, 20_000),
        ],
    );
    result.net = Some(NetReport {
        target: "10.0.0.2:7700".into(),
        transport: "udp".into(),
        mode: "exchange".into(),
        round_trips: 4,
        payload_bytes: 64,
        interval_ns: 30_000_000,
        timeout_ns: 100_000_000,
        messages: NetMessageCounts {
            planned: 1000,
            sent: 1000,
            completed: 1000 - lost,
            lost,
            late_replies: 1,
            ..NetMessageCounts::default()
        },
        ..NetReport::default()
    });
    result
}

fn budget(spec: &str) -> Budget {
    Budget::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// (series label, clause, outcome) of every check.
fn outcomes(e: &Evaluation) -> Vec<(String, String, Outcome)> {
    e.checks
        .iter()
        .map(|c| (c.series_label().to_string(), c.text.clone(), c.outcome))
        .collect()
}

// ---------------------------------------------------------------- parsing

#[test]
fn the_issue_example_parses() {
    let b = budget("p99.9<100us,max<2ms,missed=0");
    let c = b.clauses();
    assert_eq!(c.len(), 3);
    assert_eq!(
        (c[0].metric, c[0].op, c[0].limit, c[0].series.as_deref()),
        (Metric::P99_9, Op::Lt, 100_000, None)
    );
    assert_eq!(
        (c[1].metric, c[1].op, c[1].limit),
        (Metric::Max, Op::Lt, 2_000_000)
    );
    assert_eq!(
        (c[2].metric, c[2].op, c[2].limit),
        (Metric::Missed, Op::Eq, 0)
    );
    assert_eq!(b.spec(), "p99.9<100us,max<2ms,missed=0");
    assert_eq!(b.to_string(), b.spec());
}

#[test]
fn series_globs_operators_units_and_spaces() {
    let b = budget(" cpu*:p99 <= 50µs , task3.lateness:mean>=1.5us,dispatch:samples>0, p99.99 == 1s,min>250ns,avg<1ms,p99_9<3ms ");
    let c = b.clauses();
    assert_eq!(c.len(), 7);
    assert_eq!(c[0].series.as_deref(), Some("cpu*"));
    assert_eq!(
        (c[0].metric, c[0].op, c[0].limit),
        (Metric::P99, Op::Le, 50_000)
    );
    assert_eq!(c[0].text, "cpu*:p99 <= 50µs");
    assert_eq!(c[1].series.as_deref(), Some("task3.lateness"));
    assert_eq!(
        (c[1].metric, c[1].op, c[1].limit),
        (Metric::Mean, Op::Ge, 1_500)
    );
    assert_eq!(
        (c[2].metric, c[2].op, c[2].limit),
        (Metric::Samples, Op::Gt, 0)
    );
    assert_eq!(
        (c[3].metric, c[3].op, c[3].limit),
        (Metric::P99_99, Op::Eq, 1_000_000_000)
    );
    assert_eq!(
        (c[4].metric, c[4].op, c[4].limit),
        (Metric::Min, Op::Gt, 250)
    );
    assert_eq!(c[5].metric, Metric::Mean, "avg is the table's name of mean");
    assert_eq!(c[6].metric, Metric::P99_9, "the JSON's key is accepted");
    assert_eq!(
        c.iter().map(|c| c.index).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 7]
    );
    // Offsets point at each clause in the spec.
    let spec = " a:max<1ms,  b:min>1ns";
    let b = budget(spec);
    for clause in b.clauses() {
        assert_eq!(
            &spec[clause.offset..clause.offset + clause.text.len()],
            clause.text
        );
    }
}

#[test]
fn every_metric_has_a_name_that_parses_back() {
    for metric in Metric::all() {
        let value = if metric.is_time() { "1ms" } else { "0" };
        let b = budget(&format!("{}={value}", metric.name()));
        assert_eq!(b.clauses()[0].metric, metric);
        assert!(Metric::known().contains(metric.name()));
    }
}

/// Bad specs: the error names the clause, its number and what is wrong.
#[test]
fn bad_specs_name_the_clause() {
    for (spec, clause, words) in [
        (
            "p99.9<100us,p99.5<1ms",
            2,
            &["clause 2 \"p99.5<1ms\"", "unknown metric 'p99.5'", "p99.99"][..],
        ),
        ("max<100", 1, &["no unit", "max is a time"][..]),
        ("max<1 parsec", 1, &["max is a time", "unit"][..]),
        ("missed=1us", 1, &["count", "without a unit"][..]),
        ("missed=0.5", 1, &["not a whole number"][..]),
        ("missed=-1", 1, &["not a whole number"][..]),
        ("max", 1, &["no comparison"][..]),
        ("max<1ms,,min>1ns", 2, &["empty clause"][..]),
        ("max<1ms,", 2, &["empty clause"][..]),
        ("<1ms", 1, &["no metric"][..]),
        ("max<", 1, &["no value"][..]),
        ("max=<1ms", 1, &["unknown comparison '=<'"][..]),
        ("max<<1ms", 1, &["unknown comparison '<<'"][..]),
        ("max!=1ms", 1, &["'!='"][..]),
        (":max<1ms", 1, &["empty series"][..]),
        ("cpu 0:max<1ms", 1, &["no spaces"][..]),
        (
            "response:lost=0",
            1,
            &["whole net run", "drop 'response:'"][..],
        ),
        (
            "max<1ms,median<1ms",
            2,
            &["unknown metric 'median'", "known:"][..],
        ),
    ] {
        let err = Budget::parse(spec).expect_err(spec);
        assert_eq!(err.clause, clause, "{spec}: {err}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("clause {clause} ")),
            "{spec}: {text}"
        );
        for word in words {
            assert!(text.contains(word), "{spec}: '{word}' not in: {text}");
        }
    }
    for spec in ["", "   "] {
        let err = Budget::parse(spec).expect_err("empty");
        assert_eq!(err.clause, 0);
        assert!(err.to_string().contains("empty"), "{err}");
    }
    // The offset points at the bad clause, for a position in a file.
    let spec = "max<1ms, foo<2ms";
    let err = Budget::parse(spec).unwrap_err();
    assert_eq!(&spec[err.offset..], "foo<2ms");
}

#[test]
fn parsing_never_panics() {
    for spec in [
        "µ",
        "<",
        "=",
        ">=",
        "::",
        "a:b:c<1ms",
        "max<1µ",
        "max<1.2.3ms",
        "max<999999999999999s",
        "max<0.0000001ns",
        "\u{0}",
        "max<1ms\u{7}",
        ",",
        "p99.9<100us ,",
        "x:=1",
    ] {
        let _ = Budget::parse(spec);
    }
}

#[test]
fn globs() {
    for (glob, name, matches) in [
        ("cpu*", "cpu0", true),
        ("cpu*", "cpu", true),
        ("cpu*", "xcpu0", false),
        ("cpu?", "cpu12", false),
        ("cpu??", "cpu12", true),
        ("*.switch", "futex.switch", true),
        ("*.switch", "futex.interrupt", false),
        ("task*.response", "task10.response", true),
        ("task*.response", "task1.lateness", false),
        ("*", "anything", true),
        ("*a*b*", "xxaxxbxx", true),
        ("*a*b", "xxaxxbxx", false),
        ("dispatch", "dispatch", true),
        ("dispatch", "dispatch2", false),
    ] {
        assert_eq!(glob_match(glob, name), matches, "{glob} vs {name}");
    }
}

// ---------------------------------------------------------------- evaluation

#[test]
fn every_series_is_checked_against_every_clause() {
    let e = budget("p99.9<100us,max<2ms,missed=0").evaluate(&timer_run());
    assert_eq!(
        outcomes(&e),
        [
            ("cpu0".into(), "p99.9<100us".into(), Outcome::Fail),
            ("cpu1".into(), "p99.9<100us".into(), Outcome::Fail),
            ("cpu0".into(), "max<2ms".into(), Outcome::Fail),
            ("cpu1".into(), "max<2ms".into(), Outcome::Pass),
            ("cpu0".into(), "missed=0".into(), Outcome::Fail),
            ("cpu1".into(), "missed=0".into(), Outcome::Pass),
        ]
    );
    assert!(!e.passed());
    assert_eq!(e.failures(), 4);
    assert_eq!(e.checks[2].observed, Some(2_500_000.0));
    assert_eq!(e.checks[2].observed_text(), "2500.000 µs");
    assert_eq!(e.checks[2].limit_text(), "< 2000.000 µs");
    assert_eq!(
        e.checks[2].message(),
        "observed 2500.000 µs, limit < 2000.000 µs"
    );
    assert!(budget("max<10s,missed<=2").evaluate(&timer_run()).passed());
}

#[test]
fn comparisons_at_the_limit() {
    // p99.9 is exactly 100 µs in both series.
    for (spec, passes) in [
        ("p99.9<100us", false),
        ("p99.9<=100us", true),
        ("p99.9=100us", true),
        ("p99.9>=100us", true),
        ("p99.9>100us", false),
        ("p99.9<100.001us", true),
        ("mean<12.346us", true),
        ("mean<12.345us", false),
        ("stdev>2us", true),
        ("samples>=10000", true),
        ("samples>10000", false),
        ("dropped=0", true),
        ("min=1us", true),
        ("p50<=10us,p90<=20us,p99<=50us", true),
    ] {
        assert_eq!(
            budget(spec).evaluate(&timer_run()).passed(),
            passes,
            "{spec}"
        );
    }
}

#[test]
fn a_series_glob_picks_its_series() {
    let e = budget("cpu1:max<1ms,cpu*:missed<=2").evaluate(&timer_run());
    assert_eq!(
        outcomes(&e),
        [
            ("cpu1".into(), "cpu1:max<1ms".into(), Outcome::Pass),
            ("cpu0".into(), "cpu*:missed<=2".into(), Outcome::Pass),
            ("cpu1".into(), "cpu*:missed<=2".into(), Outcome::Pass),
        ]
    );
    assert!(e.passed());
}

/// A typo in a series name must not pass silently.
#[test]
fn a_glob_that_matches_nothing_fails() {
    let e = budget("cpu9:max<1ms").evaluate(&timer_run());
    assert_eq!(e.checks.len(), 1);
    let check = &e.checks[0];
    assert_eq!(check.outcome, Outcome::Fail);
    assert!(!check.matched);
    assert_eq!(check.observed, None);
    assert_eq!(check.series_label(), "-");
    let note = check.note.as_deref().unwrap();
    assert!(note.contains("no series matches 'cpu9'"), "{note}");
    assert!(note.contains("cpu0, cpu1"), "{note}");
    // A run without any series: every clause fails.
    let e = budget("max<1s").evaluate(&run("timer", Vec::new()));
    assert!(!e.passed());
    assert!(e.checks[0].note.as_deref().unwrap().contains("no series"));
}

#[test]
fn a_series_without_samples_fails_times_but_not_noise() {
    let result = run("timer", vec![series("cpu0", "wakeup_latency", 0, 0)]);
    let e = budget("max<1ms,missed=0").evaluate(&result);
    assert_eq!(e.checks[0].outcome, Outcome::Fail);
    assert!(e.checks[0].note.as_deref().unwrap().contains("no samples"));
    assert_eq!(e.checks[1].outcome, Outcome::Pass, "counts are observed");
    // The noise probe's series hold noise events: none means no noise.
    let result = run("noise", vec![series("cpu0", "noise", 0, 0)]);
    assert!(budget("max<10us").evaluate(&result).passed());
}

#[test]
fn net_counts_are_run_level() {
    let e = budget("lost=0,late<=1,duplicate=0,reordered=0,bad=0").evaluate(&net_run(3));
    assert_eq!(
        outcomes(&e),
        [
            ("(run)".into(), "lost=0".into(), Outcome::Fail),
            ("(run)".into(), "late<=1".into(), Outcome::Pass),
            ("(run)".into(), "duplicate=0".into(), Outcome::Pass),
            ("(run)".into(), "reordered=0".into(), Outcome::Pass),
            ("(run)".into(), "bad=0".into(), Outcome::Pass),
        ]
    );
    assert_eq!(e.checks[0].observed, Some(3.0));
    assert!(budget("lost=0,response:p99<1ms")
        .evaluate(&net_run(0))
        .passed());
    // Not a net run: nothing to count, so it fails and says why.
    let e = budget("lost=0").evaluate(&timer_run());
    assert_eq!(e.checks[0].outcome, Outcome::Fail);
    assert!(e.checks[0]
        .note
        .as_deref()
        .unwrap()
        .contains("not a net run"));
}

#[test]
fn a_partial_run_is_checked_and_says_so() {
    let mut result = timer_run();
    result.status = RunStatus::Partial;
    let e = budget("max<10s").evaluate(&result);
    assert!(e.passed());
    assert!(e.is_partial());
    let note = e.status_note().unwrap();
    assert!(note.contains("partial run"), "{note}");
    assert!(e.report().contains("partial run"), "{}", e.report());
    assert!(budget("max<10s")
        .evaluate(&timer_run())
        .status_note()
        .is_none());
}

#[test]
fn clauses_for_other_runs_are_skipped_in_a_set_of_runs() {
    let b = budget("max<10s,dispatch:max<1ms,task*:missed=0");
    let dispatch = run(
        "dispatch",
        vec![series("dispatch", "dispatch_error", 100, 50_000)],
    );
    let mut evaluations = vec![b.evaluate(&timer_run()), b.evaluate(&dispatch)];
    reconcile(&mut evaluations);
    // dispatch:max applies to the dispatcher's run: skipped in the timer's.
    let timer = &evaluations[0];
    let skipped: Vec<&str> = timer
        .checks
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .map(|c| c.text.as_str())
        .collect();
    assert_eq!(skipped, ["dispatch:max<1ms"]);
    // task* matches nothing anywhere: still a failure in both.
    for e in &evaluations {
        let task = e
            .checks
            .iter()
            .find(|c| c.text == "task*:missed=0")
            .unwrap();
        assert_eq!(task.outcome, Outcome::Fail);
    }
    assert_eq!(timer.skipped(), 1);
    let line = summary_line(&evaluations);
    assert!(line.contains("NOT kept by 2 of 2 runs"), "{line}");
    assert!(line.contains("1 skipped"), "{line}");
    let table = failures_table(&evaluations);
    assert_eq!(table.matches("FAIL").count(), 2, "{table}");
    assert!(table.contains("no series matches 'task*'"), "{table}");
}

#[test]
fn tables_show_observed_limit_and_result() {
    let e = budget("max<2ms,cpu9:min>0ns").evaluate(&timer_run());
    let table = e.table();
    let lines: Vec<&str> = table.lines().collect();
    for head in ["series", "clause", "observed", "limit", "result", "note"] {
        assert!(lines[0].contains(head), "{table}");
    }
    assert!(
        lines[2].starts_with("cpu0")
            && lines[2].contains("2500.000 µs")
            && lines[2].contains("FAIL")
    );
    assert!(
        lines[3].starts_with("cpu1")
            && lines[3].contains("150.000 µs")
            && lines[3].contains("PASS")
    );
    assert!(lines[4].contains("no series matches"), "{table}");
    assert!(
        e.verdict()
            .starts_with("budget NOT kept: 2 of 3 checks failed"),
        "{}",
        e.verdict()
    );
    let kept = budget("max<10s").evaluate(&timer_run());
    assert_eq!(kept.verdict(), "budget kept: 2 checks of 1 clause passed");
    assert!(!kept.table().contains("note"));
}

// ---------------------------------------------------------------- JSON

fn schema_validator() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/rtlab.run-1.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn the_run_json_carries_the_budget_and_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let validator = schema_validator();
    let mut partial = net_run(2);
    partial.status = RunStatus::Partial;
    partial.ended_at = Some("2026-11-21T19:30:15Z".into());
    for (result, spec) in [
        (
            timer_run(),
            "p99.9<100us,max<2ms,missed=0,cpu9:max<1ms,mean<20us",
        ),
        (partial, "lost=0,response:p99<1ms,*:samples>0"),
    ] {
        let e = budget(spec).evaluate(&result);
        let path = dir.path().join("run.json");
        write_file(&JsonWithBudget(&e), &result, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\n{text}");
        // Everything of the run is there, as without a budget...
        let mut without = doc.clone();
        without.as_object_mut().unwrap().remove("budget");
        assert_eq!(without, serde_json::to_value(&result).unwrap());
        // ... and it reads back as a run.
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.id, result.id);
        let budget = &doc["budget"];
        assert_eq!(budget["spec"], spec);
        assert_eq!(budget["passed"], false);
        assert_eq!(budget["partial"], result.status != RunStatus::Complete);
        assert_eq!(budget["failed"], e.failures());
        assert_eq!(budget["checks"].as_array().unwrap().len(), e.checks.len());
    }
    // The fields of one check.
    let e = budget("max<2ms,mean<20us").evaluate(&timer_run());
    let check = serde_json::to_value(&e).unwrap()["checks"][0].clone();
    assert_eq!(
        check,
        json!({
            "clause": 1, "text": "max<2ms", "series": "cpu0", "metric": "max", "op": "<",
            "limit": 2_000_000, "observed": 2_500_000, "unit": "ns", "outcome": "fail", "note": null
        })
    );
    let mean = serde_json::to_value(&e).unwrap()["checks"][2].clone();
    assert_eq!(mean["observed"], 12_345.6);
}

#[test]
fn a_wrong_budget_object_is_refused_by_the_schema() {
    let validator = schema_validator();
    let result = timer_run();
    let e = budget("max<2ms").evaluate(&result);
    let mut doc = serde_json::to_value(rtlab_report::budget::RunWithBudget {
        result: &result,
        budget: &e,
    })
    .unwrap();
    assert!(validator.is_valid(&doc));
    doc["budget"]["checks"][0]["outcome"] = json!("maybe");
    assert!(!validator.is_valid(&doc));
}

// ---------------------------------------------------------------- JUnit

/// The XML as python3's parser reads it: suites with their attributes and
/// properties, cases with classname, name, and failure/skipped messages.
/// None (with the reason printed) where python3 is missing.
fn parse_xml(path: &Path) -> Option<Value> {
    const SCRIPT: &str = r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
def case(c):
    f, s = c.find("failure"), c.find("skipped")
    return {"attrs": c.attrib,
            "failure": None if f is None else {"attrs": f.attrib, "text": f.text},
            "skipped": None if s is None else s.attrib}
print(json.dumps({"tag": root.tag, "attrs": root.attrib, "suites": [
    {"tag": s.tag, "attrs": s.attrib,
     "properties": {p.get("name"): p.get("value") for p in s.iter("property")},
     "system_out": (s.find("system-out").text if s.find("system-out") is not None else None),
     "cases": [case(c) for c in s.findall("testcase")]} for s in root]}))
"#;
    let out = match Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(path)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: the XML checks need python3 ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "not well-formed XML: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(path).unwrap()
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn junit_has_a_suite_per_run_and_a_case_per_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.xml");
    let b = budget("p99.9<=100us,max<2ms,missed=0");
    let mut second = timer_run();
    second.id = "20261121T193112Z-4242-2".into();
    second.series.truncate(1);
    second.campaign = Some(CampaignRef {
        name: "quick".into(),
        execution: "20261121T193000Z-4242".into(),
        index: 2,
        total: 2,
        configuration: "promoted".into(),
        load: "vm".into(),
        repeat: 1,
    });
    let evaluations = vec![b.evaluate(&timer_run()), b.evaluate(&second)];
    junit::write(&path, "rtlab campaign quick", &evaluations).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    assert_eq!(text.matches("<testsuite ").count(), 2);
    assert_eq!(text.matches("<testcase ").count(), 9);
    assert_eq!(text.matches("<failure ").count(), 4);
    let Some(doc) = parse_xml(&path) else {
        return;
    };
    assert_eq!(doc["tag"], "testsuites");
    assert_eq!(doc["attrs"]["name"], "rtlab campaign quick");
    assert_eq!(doc["attrs"]["tests"], "9");
    assert_eq!(doc["attrs"]["failures"], "4");
    assert_eq!(doc["attrs"]["time"], "20.002");
    let suites = doc["suites"].as_array().unwrap();
    assert_eq!(
        suites[0]["attrs"]["name"],
        "rtlab timer 20261121T193012Z-4242"
    );
    assert_eq!(suites[0]["attrs"]["tests"], "6");
    assert_eq!(suites[0]["attrs"]["failures"], "2");
    assert_eq!(suites[0]["attrs"]["time"], "10.001");
    assert_eq!(
        suites[0]["properties"]["budget"],
        "p99.9<=100us,max<2ms,missed=0"
    );
    assert_eq!(suites[0]["properties"]["status"], "complete");
    assert_eq!(
        suites[1]["attrs"]["name"],
        "rtlab timer 20261121T193112Z-4242-2 (run 2: vm × promoted)"
    );
    assert_eq!(suites[1]["properties"]["configuration"], "promoted");
    let cases = suites[0]["cases"].as_array().unwrap();
    let names: Vec<(String, String)> = cases
        .iter()
        .map(|c| {
            (
                c["attrs"]["classname"].as_str().unwrap().to_string(),
                c["attrs"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(names[0], ("timer.cpu0".into(), "p99.9<=100us".into()));
    assert_eq!(names[3], ("timer.cpu1".into(), "max<2ms".into()));
    assert!(cases[0]["failure"].is_null());
    let failure = &cases[2]["failure"];
    assert_eq!(
        failure["attrs"]["message"],
        "observed 2500.000 µs, limit < 2000.000 µs"
    );
    assert_eq!(failure["attrs"]["type"], "budget");
    assert!(failure["text"].as_str().unwrap().contains("clause 2"));
}

#[test]
fn junit_escapes_what_xml_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.xml");
    let name = "a&b<c>\"d'\te\u{1}f]]>";
    let mut result = run("timer", vec![series(name, "wakeup_latency", 10, 5_000)]);
    result.id = "id&<>\"'".into();
    result.environment.hostname = Some("host\n\"quoted\"".into());
    result.status = RunStatus::Partial;
    let e = budget("*:max<1us,nothing:max<1ms").evaluate(&result);
    junit::write(&path, "title & <more>", &[e]).unwrap();
    let Some(doc) = parse_xml(&path) else {
        return;
    };
    assert_eq!(doc["attrs"]["name"], "title & <more>");
    let suite = &doc["suites"][0];
    assert_eq!(suite["attrs"]["hostname"], "host\n\"quoted\"");
    assert_eq!(suite["properties"]["run_id"], "id&<>\"'");
    assert_eq!(suite["properties"]["status"], "partial");
    assert!(suite["system_out"]
        .as_str()
        .unwrap()
        .contains("partial run"));
    let case = &suite["cases"][0];
    // The control character (not allowed in XML 1.0) is replaced.
    assert_eq!(
        case["attrs"]["classname"],
        "timer.a&b<c>\"d'\te\u{FFFD}f]]>"
    );
    assert!(case["failure"].is_object());
}

#[test]
fn junit_marks_skipped_checks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skip.xml");
    let b = budget("lost=0,max<10s");
    let mut evaluations = vec![b.evaluate(&timer_run()), b.evaluate(&net_run(0))];
    reconcile(&mut evaluations);
    junit::write(&path, "t", &evaluations).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("<skipped ").count(), 1, "{text}");
    assert!(text.contains("skipped=\"1\""), "{text}");
    assert_eq!(text.matches("<failure ").count(), 0, "{text}");
    if let Some(doc) = parse_xml(&path) {
        assert_eq!(doc["attrs"]["skipped"], "1");
        let cases = doc["suites"][0]["cases"].as_array().unwrap();
        assert_eq!(cases[0]["attrs"]["classname"], "timer.unmatched");
        assert!(cases[0]["skipped"]["message"]
            .as_str()
            .unwrap()
            .contains("not a net run"));
        assert_eq!(
            doc["suites"][1]["cases"][0]["attrs"]["classname"],
            "net.run"
        );
    }
}

#[test]
fn junit_files_are_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.xml");
    std::fs::write(&path, "old content that is longer than nothing").unwrap();
    let e = budget("max<10s").evaluate(&timer_run());
    junit::write(&path, "t", std::slice::from_ref(&e)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("<?xml") && text.ends_with("</testsuites>\n"));
    assert!(!text.contains("old content"));
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["budget.xml"]);
    // A directory that does not exist is an error, not a panic.
    assert!(junit::write(&dir.path().join("no/such/dir.xml"), "t", &[e]).is_err());
}
