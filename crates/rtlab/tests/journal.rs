//! Nothing rtlab changes outlives it: a sysctl changed for a run is back
//! after a normal exit, after SIGTERM, and after SIGKILL + `rtlab restore`;
//! an interrupted run still leaves a valid result file.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

const SYSCTL: &str = "/proc/sys/kernel/timer_migration";

fn read_sysctl() -> String {
    std::fs::read_to_string(SYSCTL).unwrap().trim().to_string()
}

/// Puts the original value back whatever happens to the test.
struct Reset(String);
impl Drop for Reset {
    fn drop(&mut self) {
        let _ = std::fs::write(SYSCTL, &self.0);
    }
}

fn wait_for_value(want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while read_sysctl() != want {
        assert!(Instant::now() < deadline, "{SYSCTL} never became {want}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn start_long_run(state: &Path, assignment: &str, json: &Path) -> std::process::Child {
    let args = ["--cpus", "0", "--duration", "5m", "--sysctl", assignment];
    common::start_timer(state, &args, json)
}

/// One test for the three ways out, so that no two tests race on the
/// same sysctl.
#[test]
fn sysctl_is_restored_after_exit_sigterm_and_sigkill() {
    if !common::is_root() || !Path::new(SYSCTL).exists() {
        common::skip(&format!("needs root and {SYSCTL} to change a real sysctl"));
        return;
    }
    let original = read_sysctl();
    let _reset = Reset(original.clone());
    let changed = if original == "0" { "1" } else { "0" };
    let assignment = format!("kernel.timer_migration={changed}");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let json = dir.path().join("run.json");

    // Normal exit: changed during the run (the snapshot shows it), back after.
    let out = common::run(
        common::rtlab(&state)
            .args([
                "measure", "timer", "--cpus", "0", "--loops", "200", "--quiet",
            ])
            .args(["--sysctl", &assignment, "--json", "-"]),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["environment"]["timer_migration"].to_string(), changed);
    assert!(doc["effective"]["system_changes"]
        .to_string()
        .contains("kernel.timer_migration"));
    assert_eq!(read_sysctl(), original, "restored after a normal exit");

    // SIGTERM: the run stops, keeps its partial result and restores.
    let mut child = start_long_run(&state, &assignment, &json);
    wait_for_value(changed);
    common::signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(read_sysctl(), original, "restored after SIGTERM");
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "partial");

    // SIGKILL: nothing runs in rtlab, the value stays changed until
    // `rtlab restore` reads the journal; the result file is still valid.
    let mut child = start_long_run(&state, &assignment, &json);
    wait_for_value(changed);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(read_sysctl(), changed, "SIGKILL leaves the change behind");
    assert_eq!(common::read_json(&json).unwrap()["status"], "running");
    let out = common::run(common::rtlab(&state).args(["restore", "--json"]));
    assert!(out.status.success());
    assert_eq!(read_sysctl(), original, "restored by rtlab restore");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["recovered"].to_string().contains("timer_migration"),
        "{report}"
    );
    let out = common::run(common::rtlab(&state).arg("restore"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to restore"));

    // The next run restores by itself what a killed one left.
    let mut child = start_long_run(&state, &assignment, &json);
    wait_for_value(changed);
    child.kill().unwrap();
    child.wait().unwrap();
    let out = common::run(common::rtlab(&state).args([
        "measure", "timer", "--cpus", "0", "--loops", "10", "--quiet",
    ]));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("restore"));
    assert_eq!(read_sysctl(), original, "restored at the next start");
}

#[test]
fn sigint_keeps_a_partial_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut child = common::start_timer(dir.path(), &["--cpus", "0", "--duration", "5m"], &json);
    std::thread::sleep(Duration::from_millis(300));
    common::signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "partial");
    let series = &doc["series"][0];
    assert!(series["samples"].as_u64().unwrap() > 0);
    assert!(doc["ended_at"].is_string());
}
