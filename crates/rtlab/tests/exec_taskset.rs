//! Task sets end to end: `exec periodic --taskset` (each task its own
//! series and grid, every planned activation accounted for, an injected
//! stall seen), `exec import-rt-app` and `exec check-taskset`, bad input
//! refused with its file and line. Never an absolute timing.

mod common;

use common::{assert_refused, rtlab, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

const SET: &str = r#"
[[task]]
name = "fast"
period = "1ms"
work = "20us"

[[task]]
name = "slow"
period = "5ms"
offset = "1ms"
work = { uniform = ["50us", "150us"] }
deadline = "4ms"
budget = "1ms"
priority = 70
"#;

#[test]
fn periodic_runs_a_task_set_each_task_on_its_own_grid_and_shows_a_stall() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.toml");
    std::fs::write(&set, SET).unwrap();
    let json = dir.path().join("run.json");
    let cpu = common::last_cpu();
    let stalls = 5;
    let injector = common::stall_a_periodic_run(stalls);
    let out = run(rtlab(&dir.path().join("state"))
        .args(["exec", "periodic", "--taskset"])
        .arg(&set)
        .args(["--duration", "3s", "--no-store", "--json"])
        .arg(&json));
    assert_eq!(injector.join().unwrap(), stalls);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "periodic (executive): 2 tasks of the task set",
        "activations: 3600 planned",
        "slow.execution",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["probe"], "periodic");
    assert_eq!(doc["status"], "complete");
    assert_eq!(
        doc["config"]["task_set"]["activations"],
        serde_json::json!([3000, 600])
    );
    let series = doc["series"].as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "fast.lateness",
            "fast.response",
            "slow.lateness",
            "slow.response",
            "slow.execution"
        ]
    );
    let by_name = |name: &str| series.iter().find(|s| s["name"] == name).unwrap();
    // exec periodic's identity, per task: samples + missed = planned.
    for (task, planned) in [("fast", 3000), ("slow", 600)] {
        let late = by_name(&format!("{task}.lateness"));
        let samples = late["samples"].as_u64().unwrap();
        let missed = late["missed"].as_u64().unwrap();
        assert_eq!(samples + missed, planned, "{task}");
        assert_eq!(by_name(&format!("{task}.response"))["samples"], samples);
        assert_eq!(late["cpu"], cpu);
    }
    assert_eq!(by_name("slow.execution")["metric"], "execution_time");
    let late: u64 = ["fast.lateness", "slow.lateness"]
        .iter()
        .map(|name| common::samples_at_least(by_name(name), 1000))
        .sum();
    assert!(
        late >= u64::from(stalls),
        "{late} activations 1 ms late or more, {stalls} stalls of 3 ms injected"
    );
}

#[test]
fn bad_task_sets_are_refused_with_their_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.toml");
    std::fs::write(&set, SET.replace("offset = \"1ms\"", "offset = \"6ms\"")).unwrap();
    let path = set.to_str().unwrap();
    assert_refused(
        &["exec", "periodic", "--taskset", path],
        &[&format!(
            "{path}:10: offset 6ms is not shorter than the period 5ms"
        )],
    );
    assert_refused(&["exec", "check-taskset", path], &[&format!("{path}:10:")]);
    // The executive runs above every task.
    let good = example("taskset.toml");
    let good = good.to_str().unwrap();
    assert_refused(
        &["exec", "periodic", "--taskset", good, "--priority", "80"],
        &["--priority 80", "task `control`"],
    );
    // The flags of equal tasks do not mix with a task set.
    assert_refused(
        &["exec", "periodic", "--taskset", good, "--tasks", "3"],
        &["--tasks"],
    );
    assert_refused(
        &["exec", "periodic", "--taskset", "/nonexistent.toml"],
        &["/nonexistent.toml: cannot read it"],
    );
}

#[test]
fn check_taskset_prints_the_tasks_and_the_utilization() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(dir.path())
        .args(["exec", "check-taskset"])
        .arg(example("taskset.toml")));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "control",
        "video",
        "100us-500us",
        "utilization",
        "3 tasks, valid",
    ] {
        assert!(stdout.contains(needle), "'{needle}' not in:\n{stdout}");
    }
    let out = run(rtlab(dir.path())
        .args(["exec", "check-taskset", "--json"])
        .arg(example("taskset.toml")));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 3);
    // control: 100 µs every 1 ms, logger 300 µs every 20 ms, video 300 µs
    // (the mean of 100-500 µs) every 10 ms; all on one CPU but control.
    let total: f64 = doc["utilization"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["utilization"].as_f64().unwrap())
        .sum();
    assert!((total - 0.145).abs() < 1e-9, "{total}");
}

#[test]
fn import_rt_app_writes_a_task_set_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("imported.toml");
    let out = run(rtlab(dir.path())
        .args(["exec", "import-rt-app"])
        .arg(example("rt-app-periodic.json"))
        .arg("--output")
        .arg(&output));
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning: global.duration 2 s"), "{stderr}");
    assert!(stderr.contains("4 tasks written to"), "{stderr}");
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.starts_with("# Imported from "), "{text}");
    assert!(text.contains("name = \"video-1\""), "{text}");
    // The file written is a valid task set.
    let out = run(rtlab(dir.path())
        .args(["exec", "check-taskset"])
        .arg(&output));
    assert_eq!(out.status.code(), Some(0));
    // --json: the tasks and the warnings.
    let out = run(rtlab(dir.path())
        .args(["exec", "import-rt-app", "--json"])
        .arg(example("rt-app-periodic.json")));
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.taskset-import/1");
    assert_eq!(doc["tasks"][3]["name"], "encoder");
    assert_eq!(doc["tasks"][3]["budget_ns"], 2_000_000);
    assert!(doc["warnings"].as_array().unwrap().len() >= 3);
    // Without --output: the task set on stdout.
    let out = run(rtlab(dir.path())
        .args(["exec", "import-rt-app"])
        .arg(example("rt-app-periodic.json")));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[[task]]"));
}

#[test]
fn import_rt_app_refuses_what_is_not_periodic() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locks.json");
    std::fs::write(
        &file,
        "{\n \"tasks\" : {\n  \"t\" : {\n   \"lock\" : \"m\",\n   \"run\" : 10,\n   \"timer\" : { \"period\" : 1000 }\n  }\n }\n}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    assert_refused(
        &["exec", "import-rt-app", path],
        &[&format!("{path}:4:13: task `t`: `lock`")],
    );
    std::fs::write(&file, "{ \"tasks\" : { ").unwrap();
    assert_refused(
        &["exec", "import-rt-app", path],
        &[&format!("{path}:1:"), "JSON syntax"],
    );
}
