//! Campaigns end to end: plans, file errors that name line and field, the
//! verdict, every run stored, and an interrupted campaign that keeps run 1
//! complete and run 2 partial.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn runs_in(state: &Path, db: &Path) -> Vec<serde_json::Value> {
    let out = common::run(
        common::rtlab(state)
            .args(["runs", "--json", "--db"])
            .arg(db),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut runs = doc["runs"].as_array().unwrap().clone();
    runs.reverse(); // oldest first
    runs
}

/// Writes `toml` to a file in `dir` and runs it with `--db` and `--json`
/// there; returns the output and the two paths.
fn run_campaign_file(dir: &Path, toml: &str) -> (Output, PathBuf, PathBuf) {
    let file = dir.join("campaign.toml");
    std::fs::write(&file, toml).unwrap();
    let db = dir.join("results.db");
    let json = dir.join("campaign.json");
    let out = common::run(
        common::rtlab(dir)
            .args(["campaign", "run"])
            .arg(&file)
            .arg("--db")
            .arg(&db)
            .arg("--json")
            .arg(&json),
    );
    (out, db, json)
}

#[test]
fn presets_plan_with_an_eta() {
    let dir = tempfile::tempdir().unwrap();
    for (preset, runs) in [
        ("quick", 8),
        ("hallberg2017", 9),
        ("hallberg2017-net", 8),
        ("romero", 5),
        ("straumann2001", 2),
        ("srinivasan1998", 16),
    ] {
        let out = common::run(
            common::rtlab(dir.path()).args(["campaign", "plan", preset, "--json", "-"]),
        );
        assert!(out.status.success(), "{preset}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["runs"].as_array().unwrap().len(), runs, "{preset}");
        assert!(doc["eta_ns"].as_u64().unwrap() > 0);
    }
    let out = common::run(common::rtlab(dir.path()).args(["campaign", "plan", "romero"]));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ETA") || text.contains("eta"), "{text}");
}

#[test]
fn campaign_file_errors_name_the_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\nduration = \"2s\"\n\n[[probe]]\nkind = \"timer\"\n\n\
         [[load]]\nname = \"idle\"\nrun = []\n\n[[configuration]]\nname = \"x\"\n\
         policy = \"other\"\npriority = 50\n",
    )
    .unwrap();
    for verb in ["plan", "run"] {
        let mut cmd = common::rtlab(dir.path());
        cmd.args(["campaign", verb]).arg(&file);
        if verb == "run" {
            cmd.arg("--db").arg(dir.path().join("db"));
        }
        let out = common::run(&mut cmd);
        assert_eq!(out.status.code(), Some(2), "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad.toml:14"), "{verb}: {err}");
        assert!(err.contains("priority"), "{verb}: {err}");
    }
    // A load the load crate refuses is reported at its line too.
    std::fs::write(
        &file,
        "name = \"bad\"\nduration = \"2s\"\n[[probe]]\nkind = \"timer\"\n[[load]]\n\
         name = \"x\"\nrun = [\"vmm\"]\n[[configuration]]\nname = \"x\"\npolicy = \"other\"\n",
    )
    .unwrap();
    let out = common::run(
        common::rtlab(dir.path())
            .args(["campaign", "plan"])
            .arg(&file),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:7") && err.contains("vmm"), "{err}");
    // Neither a file nor a preset.
    let out = common::run(common::rtlab(dir.path()).args(["campaign", "plan", "nosuch"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("quick"));
}

const SMALL: &str = r#"
name = "small"
duration = "1s"

[[probe]]
kind = "timer"
cpus = "0"
interval = "1ms"

[[load]]
name = "idle"
run = []
[[load]]
name = "cpu"
run = ["cpu:workers=1"]

[[configuration]]
name = "promoted"
policy = "fifo"
priority = 80
[[configuration]]
name = "not-promoted"
policy = "other"
"#;

#[test]
fn a_campaign_stores_every_run_and_ends_with_a_matrix() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, db, json) = run_campaign_file(dir.path(), SMALL);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("promoted p99.9 / max"), "{stdout}");
    let runs = runs_in(dir.path(), &db);
    assert_eq!(runs.len(), 4);
    let cells: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "complete");
            assert!(r["samples"].as_u64().unwrap() > 0);
            (
                r["load"].as_str().unwrap().to_string(),
                r["configuration"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("idle", "promoted"),
        ("idle", "not-promoted"),
        ("cpu", "promoted"),
        ("cpu", "not-promoted"),
    ];
    assert_eq!(
        cells,
        want.map(|(l, c)| (l.to_string(), c.to_string())).to_vec()
    );
    // The loaded runs carry their load's record, with work done.
    let doc = common::read_json(&json).unwrap();
    let loaded = &doc["runs"][2];
    assert_eq!(loaded["loads"][0]["name"], "cpu");
    assert!(loaded["loads"][0]["work"]
        .as_object()
        .unwrap()
        .values()
        .any(|v| v.as_u64() > Some(0)));
    assert_eq!(
        doc["runs"][1]["series"][0]["thread"]["requested"]["policy"],
        "other"
    );
}

const SYSCTL: &str = "/proc/sys/kernel/timer_migration";

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// SIGINT in run 2: run 1 stays complete, run 2 is stored as partial with
/// what it measured, its load is reaped and the sysctl it set is back.
#[test]
fn an_interrupted_campaign_keeps_run_1_complete_and_run_2_partial() {
    require_realtime!();
    if !Path::new(SYSCTL).exists() {
        common::skip(&format!("needs {SYSCTL} to change a real sysctl"));
        return;
    }
    let original = std::fs::read_to_string(SYSCTL).unwrap().trim().to_string();
    let changed = if original == "0" { "1" } else { "0" };
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("rtlab-test-{}", std::process::id());
    let file = dir.path().join("two.toml");
    // Two runs of 4 s under a command load: promoted, then not promoted.
    std::fs::write(
        &file,
        format!(
            "name = \"two\"\nduration = \"4s\"\n\
             [[probe]]\nkind = \"timer\"\ncpus = \"0\"\n\
             [[load]]\nname = \"sleeper\"\nrun = [\"cmd:sleep 3600; echo {marker}\"]\n\
             [[configuration]]\nname = \"promoted\"\npolicy = \"fifo\"\npriority = 80\n\
             sysctl = [\"kernel.timer_migration={changed}\"]\n\
             [[configuration]]\nname = \"not-promoted\"\npolicy = \"other\"\n\
             sysctl = [\"kernel.timer_migration={changed}\"]\n"
        ),
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let mut child = common::rtlab(dir.path())
        .args(["campaign", "run", "--quiet"])
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // SIGINT only once run 1 is stored and run 2 measures.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "run 1 was never stored");
        if db.exists() && runs_in(dir.path(), &db).len() == 1 {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the campaign ended early: {status}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !processes_with(&marker).is_empty(),
        "run 2's load is running"
    );
    assert_eq!(std::fs::read_to_string(SYSCTL).unwrap().trim(), changed);
    common::signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let runs = runs_in(dir.path(), &db);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["status"], "complete");
    assert_eq!(runs[1]["status"], "partial");
    assert!(runs[1]["samples"].as_u64().unwrap() > 0);
    assert_eq!(std::fs::read_to_string(SYSCTL).unwrap().trim(), original);
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    // The partial run keeps the record of its load.
    let out = common::run(
        common::rtlab(dir.path())
            .args(["show", runs[1]["id"].as_str().unwrap(), "--json", "--db"])
            .arg(&db),
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["loads"][0]["name"], "cmd");
    assert_eq!(shown["campaign"]["index"], 2);
}

const SWITCH_AND_NOISE: &str = r#"
name = "probes"
duration = "2s"

[[probe]]
kind = "switch"
mechanisms = ["futex", "pipe"]
rate = "2khz"

[[probe]]
kind = "noise"
cpus = "1"
runtime = "400ms"
period = "500ms"

[[load]]
name = "idle"
run = []

[[configuration]]
name = "promoted"
policy = "fifo"
priority = 80
"#;

#[test]
fn switch_and_noise_probes_run_in_a_campaign() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, db, json) = run_campaign_file(dir.path(), SWITCH_AND_NOISE);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // One matrix per probe kind: their figures are not one quantity.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("probe switch:") && stdout.contains("probe noise:"),
        "{stdout}"
    );
    assert!(
        stderr.contains("run 1: switch / idle × promoted"),
        "{stderr}"
    );
    let runs = runs_in(dir.path(), &db);
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["switch", "noise"]);
    let doc = common::read_json(&json).unwrap();
    assert!(doc["matrix"].is_null());
    assert_eq!(doc["matrices"][1]["probe"], "noise");
    assert_eq!(doc["matrices"][0]["matrix"]["cells"][0]["runs"], 1);
    let switch = &doc["runs"][0];
    assert_eq!(switch["status"], "complete");
    // The run's 2 s are shared by its two mechanisms: 1 s at 2 kHz each.
    for name in [
        "futex.interrupt",
        "futex.switch",
        "pipe.interrupt",
        "pipe.switch",
    ] {
        let series = switch["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        let events = series["samples"].as_u64().unwrap() + series["missed"].as_u64().unwrap();
        assert_eq!(events, 2000, "{name}");
        assert_eq!(
            series["thread"]["requested"]["priority"],
            if name.ends_with("interrupt") { 80 } else { 79 }
        );
    }
    let noise = &doc["runs"][1];
    assert_eq!(noise["status"], "complete");
    assert_eq!(noise["noise"]["cpus"][0]["cpu"], 1);
    assert!(noise["noise"]["cpus"][0]["windows"].as_u64().unwrap() > 0);
    assert_eq!(noise["series"][0]["thread"]["requested"]["priority"], 80);
}

const NET: &str = r#"
name = "net"
duration = "1s"

[[probe]]
kind = "net"
interval = "10ms"
round_trips = 2

[[load]]
name = "idle"
run = []

[[configuration]]
name = "promoted"
policy = "fifo"
priority = 30

[[configuration]]
name = "not-promoted"
policy = "other"
"#;

#[test]
fn a_net_campaign_promotes_rtlab_s_server_or_not_and_counts_every_message() {
    require_realtime!();
    if !common::is_root() {
        common::skip("network namespaces need root (CAP_SYS_ADMIN)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, _db, json) = run_campaign_file(dir.path(), NET);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = common::read_json(&json).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, (policy, priority)) in runs.iter().zip([("fifo", 30), ("other", 0)]) {
        assert_eq!(run["status"], "complete");
        let messages = &run["net"]["messages"];
        assert_eq!(messages["completed"], 100, "{messages}");
        assert_eq!(messages["lost"], 0, "{messages}");
        let server = &run["net"]["server_thread"]["actual"];
        assert_eq!(
            server["policy"], policy,
            "the configuration schedules the server"
        );
        assert_eq!(server["priority"], priority);
        // The client, the measuring instrument, is FIFO 90 either way.
        assert_eq!(run["series"][0]["thread"]["requested"]["priority"], 90);
    }
}

const PERIODIC: &str = r#"
name = "periodic"
duration = "1s"

[[probe]]
name = "exec"
kind = "periodic"
tasks = 2
mode = "executive"

[[probe]]
name = "fifo"
kind = "periodic"
tasks = 2
mode = "fifo"

[[load]]
name = "idle"
run = []

[[configuration]]
name = "fifo80"
policy = "fifo"
priority = 80
"#;

#[test]
fn periodic_probes_run_in_a_campaign_executive_and_fifo() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (out, _db, json) = run_campaign_file(dir.path(), PERIODIC);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = common::read_json(&json).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, mode) in runs.iter().zip(["executive", "fifo"]) {
        assert_eq!(run["probe"], "periodic");
        assert_eq!(run["status"], "complete", "{mode}");
        assert_eq!(run["config"]["mode"], mode);
        let lateness: Vec<&serde_json::Value> = run["series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["metric"] == "activation_lateness")
            .collect();
        assert_eq!(lateness.len(), 2, "{mode}: one lateness series per task");
        for series in lateness {
            let events = series["samples"].as_u64().unwrap() + series["missed"].as_u64().unwrap();
            assert_eq!(events, 100, "{mode}: 1 s of 10 ms activations");
            assert_eq!(series["thread"]["requested"]["priority"], 80);
        }
    }
}
