//! `--budget` and `--junit` end to end: an impossible budget (1 ns) fails
//! with exit code 1 and a JUnit failure, a budget always met (10 s) passes,
//! bad specs are refused naming the clause, an interrupted run is checked
//! and keeps its own exit code, and a campaign checks every run with the
//! budget of its file or of the flag. No absolute timing is asserted: 1 ns
//! cannot be met and 10 s always is.

mod common;

use common::{assert_refused, rtlab, run};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn junit(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether python3's XML parser reads the file; true (with a note) when
/// there is no python3 to ask.
fn well_formed(path: &Path) -> bool {
    match std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])",
        ])
        .arg(path)
        .output()
    {
        Ok(out) => out.status.success(),
        Err(e) => {
            common::skip(&format!(
                "XML well-formedness not checked: no python3 ({e})"
            ));
            true
        }
    }
}

fn timer(dir: &Path, budget: &str) -> (Output, Value, String) {
    let json = dir.join("run.json");
    let xml = dir.join("budget.xml");
    let out = run(rtlab(&dir.join("state"))
        .args(["measure", "timer", "--cpus", "0", "--duration", "1s"])
        .args(["--budget", budget, "--junit"])
        .arg(&xml)
        .arg("--json")
        .arg(&json));
    let doc = read_json(&json);
    assert!(well_formed(&xml), "{}", junit(&xml));
    (out, doc, junit(&xml))
}

#[test]
fn an_impossible_budget_exits_1_with_a_junit_failure() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, doc, xml) = timer(dir.path(), "max<1ns");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("budget \"max<1ns\""), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not kept"), "{stderr}");
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["budget"]["passed"], false);
    assert_eq!(doc["budget"]["checks"][0]["series"], "cpu0");
    assert_eq!(doc["budget"]["checks"][0]["outcome"], "fail");
    assert_eq!(xml.matches("<testsuite ").count(), 1, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(
        xml.contains("classname=\"timer.cpu0\" name=\"max&lt;1ns\""),
        "{xml}"
    );
}

#[test]
fn a_budget_always_met_exits_0() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, doc, xml) = timer(dir.path(), "max<10s,missed<=1000000, cpu*:samples>=0");
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("budget kept: 3 checks of 3 clauses passed"),
        "{stdout}"
    );
    assert_eq!(doc["budget"]["passed"], true);
    assert_eq!(doc["budget"]["checks"].as_array().unwrap().len(), 3);
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

#[test]
fn a_series_that_does_not_exist_fails_the_budget() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, doc, xml) = timer(dir.path(), "max<10s,cpu7:max<10s");
    assert_eq!(out.status.code(), Some(1));
    let check = &doc["budget"]["checks"][1];
    assert_eq!(check["outcome"], "fail");
    assert!(check["note"]
        .as_str()
        .unwrap()
        .contains("no series matches 'cpu7'"));
    assert!(xml.contains("timer.unmatched"), "{xml}");
}

#[test]
fn bad_budgets_are_refused_naming_the_clause() {
    for command in [
        &["measure", "timer"][..],
        &["measure", "switch"],
        &["measure", "noise"],
        &["net", "probe", "--netns"],
        &["plan", "run", "no.plan"],
        &["exec", "periodic"],
        &["exec", "kurt-table"],
        &["campaign", "run", "quick"],
        &["quick"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--budget", "p99.9<100us,p99.5<1ms"]);
        assert_refused(
            &args,
            &[
                "--budget",
                "clause 2",
                "p99.5<1ms",
                "unknown metric",
                "p99.99",
            ],
        );
    }
    for (spec, words) in [
        ("max<100", &["clause 1", "no unit"][..]),
        ("missed=1ms", &["count"][..]),
        ("max<1ms,", &["clause 2", "empty clause"][..]),
        ("", &["empty"][..]),
    ] {
        assert_refused(&["measure", "timer", "--budget", spec], words);
    }
}

#[test]
fn junit_needs_a_budget_and_a_writable_path() {
    assert_refused(
        &["measure", "timer", "--junit", "x.xml"],
        &["--junit", "give --budget"],
    );
    assert_refused(
        &["campaign", "run", "quick", "--junit", "x.xml"],
        &["--junit", "give --budget"],
    );
    assert_refused(
        &[
            "measure",
            "timer",
            "--budget",
            "max<1s",
            "--junit",
            "/nonexistent/dir/x.xml",
        ],
        &["--junit", "/nonexistent/dir/x.xml", "cannot create"],
    );
}

#[test]
fn an_interrupted_run_is_checked_and_keeps_exit_code_130() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let json = dir.path().join("run.json");
    let xml = dir.path().join("budget.xml");
    let child = common::start_timer(
        &state,
        &[
            "--cpus",
            "0",
            "--duration",
            "60s",
            "--budget",
            "max<10s,max<1ns",
            "--junit",
            xml.to_str().unwrap(),
        ],
        &json,
    );
    common::signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    // Stopped by a signal: 130, though the budget was not kept either.
    assert_eq!(out.status.code(), Some(130));
    let doc = read_json(&json);
    assert_eq!(doc["status"], "partial");
    let budget = &doc["budget"];
    assert_eq!(budget["partial"], true);
    assert!(budget["note"].as_str().unwrap().contains("partial run"));
    assert_eq!(budget["checks"][0]["outcome"], "pass");
    assert_eq!(budget["checks"][1]["outcome"], "fail");
    let xml = junit(&xml);
    assert!(
        xml.contains("<property name=\"status\" value=\"partial\"/>"),
        "{xml}"
    );
    assert!(xml.contains("<system-out>partial run"), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
}

#[test]
fn plan_run_and_exec_periodic_take_a_budget() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let plan = dir.path().join("ticks.plan");
    let out = run(rtlab(&state)
        .args([
            "plan", "gen", "periodic", "--period", "1ms", "--count", "100", "-o",
        ])
        .arg(&plan));
    assert!(out.status.success());
    let out = run(rtlab(&state)
        .args(["plan", "run"])
        .arg(&plan)
        .args(["--skip-after", "10s", "--no-store", "--json", "-"])
        .args(["--budget", "dispatch:samples=100,dispatch:missed=0,max<10s"]));
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["budget"]["passed"], true, "{}", doc["budget"]);
    assert_eq!(doc["budget"]["checks"][0]["observed"], 100);

    // --baseline makes two runs: both checked, one testsuite each.
    let xml = dir.path().join("periodic.xml");
    let json = dir.path().join("periodic.json");
    let out = run(rtlab(&state)
        .args([
            "exec", "periodic", "--tasks", "2", "--period", "10ms", "--work", "50us",
        ])
        .args([
            "--duration",
            "1s",
            "--baseline",
            "fifo",
            "--no-store",
            "--quiet",
        ])
        .args([
            "--budget",
            "*.response:missed<=1000000,task1.lateness:max<1ns",
            "--junit",
        ])
        .arg(&xml)
        .arg("--json")
        .arg(&json));
    assert_eq!(out.status.code(), Some(1));
    let text = junit(&xml);
    assert!(well_formed(&xml), "{text}");
    assert_eq!(text.matches("<testsuite ").count(), 2, "{text}");
    // Per run: 2 response series + task1's lateness.
    assert_eq!(text.matches("<testcase ").count(), 6, "{text}");
    assert_eq!(text.matches("<failure ").count(), 2, "{text}");
    assert!(
        text.contains("classname=\"periodic.task0.response\""),
        "{text}"
    );
    let doc = read_json(&json);
    assert_eq!(doc["budget"]["passed"], false);
    assert_eq!(doc["budget"]["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn net_counts_are_checked_on_a_net_run() {
    if !common::is_root() {
        common::skip("network namespaces need root (CAP_SYS_ADMIN)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(&dir.path().join("state"))
        .args([
            "net",
            "probe",
            "--netns",
            "--interval",
            "1ms",
            "--count",
            "50",
        ])
        .args(["--no-store", "--json", "-"])
        .args([
            "--budget",
            "lost<=50,response:samples<=50,send_lag:samples=50",
        ]));
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = doc["budget"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0]["series"], Value::Null);
    assert_eq!(checks[0]["observed"], doc["net"]["messages"]["lost"]);
    assert_eq!(checks[2]["observed"], 50);
}

const CAMPAIGN: &str = r#"
name = "budgeted"
duration = "1s"
budget = "max<1ns"

[[probe]]
kind = "timer"
cpus = "0"

[[load]]
name = "idle"
run = []

[[configuration]]
name = "promoted"
policy = "fifo"
priority = 80
[[configuration]]
name = "not-promoted"
policy = "other"
"#;

fn campaign(dir: &Path, toml: &str, extra: &[&str]) -> (Output, String, Value) {
    let file = dir.join("campaign.toml");
    std::fs::write(&file, toml).unwrap();
    let xml = dir.join("budget.xml");
    let json = dir.join("campaign.json");
    let out = run(rtlab(dir)
        .args(["campaign", "run"])
        .arg(&file)
        .arg("--db")
        .arg(dir.join("results.db"))
        .arg("--junit")
        .arg(&xml)
        .arg("--json")
        .arg(&json)
        .args(extra));
    assert!(well_formed(&xml), "{}", junit(&xml));
    (out, junit(&xml), read_json(&json))
}

#[test]
fn a_campaign_checks_every_run_with_the_budget_of_its_file_or_flag() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    // The file's budget: 1 ns, broken by both runs.
    let (out, xml, doc) = campaign(dir.path(), CAMPAIGN, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    assert!(xml.contains("(run 1: idle × promoted)"), "{xml}");
    assert!(xml.contains("(run 2: idle × not-promoted)"), "{xml}");
    assert!(
        xml.contains("<property name=\"configuration\" value=\"not-promoted\"/>"),
        "{xml}"
    );
    assert_eq!(doc["budget"]["spec"], "max<1ns");
    assert_eq!(doc["budget"]["passed"], false);
    assert_eq!(doc["budget"]["runs"].as_array().unwrap().len(), 2);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("NOT kept by 2 of 2 runs"), "{stdout}");

    // --budget replaces it: 10 s, kept by both.
    let (out, xml, doc) = campaign(dir.path(), CAMPAIGN, &["--budget", "max<10s"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("replaces the campaign's budget"),
        "{stderr}"
    );
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    assert_eq!(doc["budget"]["spec"], "max<10s");
    assert_eq!(doc["budget"]["passed"], true);
}

#[test]
fn a_bad_budget_in_a_campaign_file_names_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let toml = CAMPAIGN.replace("budget = \"max<1ns\"", "budget = \"max<1ms, p99.5<1ms\"");
    std::fs::write(&file, toml).unwrap();
    for verb in ["plan", "run"] {
        let out = run(rtlab(dir.path()).args(["campaign", verb]).arg(&file));
        assert_eq!(out.status.code(), Some(2), "{verb}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Line 4 of the file; `p99.5` starts at column 20.
        assert!(
            stderr.contains(
                "c.toml:4:20: field `budget`: clause 2 \"p99.5<1ms\": unknown metric 'p99.5'"
            ),
            "{stderr}"
        );
    }
    // `campaign plan` shows a good one.
    std::fs::write(&file, CAMPAIGN).unwrap();
    let out = run(rtlab(dir.path()).args(["campaign", "plan"]).arg(&file));
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("budget: max<1ns"));
}

#[test]
fn every_command_with_a_budget_says_so_in_its_help() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        &["measure", "timer"][..],
        &["measure", "switch"],
        &["measure", "noise"],
        &["net", "probe"],
        &["plan", "run"],
        &["exec", "periodic"],
        &["exec", "kurt-table"],
        &["campaign", "run"],
        &["quick"],
    ] {
        let out = run(rtlab(dir.path()).args(command).arg("--help"));
        assert!(out.status.success(), "{command:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--budget <SPEC>"), "{command:?}: {help}");
        assert!(help.contains("--junit <PATH>"), "{command:?}: {help}");
        assert!(help.contains("docs/budgets.md"), "{command:?}: {help}");
    }
}

#[test]
fn junit_never_replaces_another_output_of_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("out.file");
    let same = same.to_str().unwrap();
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--duration",
            "1s",
            "--budget",
            "max<10s",
            "--json",
            same,
            "--junit",
            same,
        ],
        &["--junit", "--json", "another file"],
    );
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--duration",
            "1s",
            "--budget",
            "max<10s",
            "--db",
            same,
            "--junit",
            same,
        ],
        &["--junit", "result store"],
    );
    // The store's companion files too, and a spelling through `..`.
    let wal = format!("{same}-wal");
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--duration",
            "1s",
            "--budget",
            "max<10s",
            "--db",
            same,
            "--junit",
            &wal,
        ],
        &["result store"],
    );
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let roundabout = format!("{}/../out.file", sub.display());
    common::assert_refused(
        &[
            "campaign",
            "run",
            "quick",
            "--budget",
            "max<10s",
            "--db",
            same,
            "--junit",
            &roundabout,
        ],
        &["result store"],
    );
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--budget",
            "max<10s",
            "--junit",
            dir.path().to_str().unwrap(),
        ],
        &["not a regular file"],
    );
}
