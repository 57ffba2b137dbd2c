//! Nothing rtlab changes outlives it: a sysctl changed for a run is back
//! after a normal exit, after SIGTERM, and after SIGKILL + `rtlab restore`;
//! so is a SysV semaphore set of the switch probe, also when the killed
//! rtlab is a zombie nobody reaped; an interrupted run still leaves a
//! valid result file.

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

/// The SysV semaphore set of `measure switch --mechanism sysv-sem` outlives
/// a SIGKILLed rtlab (the kernel keeps it), but it is in the journal from
/// the moment it exists: `rtlab restore` removes it.
#[test]
fn a_sysv_set_left_by_a_killed_switch_run_is_removed_by_restore() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let json = dir.path().join("run.json");
    let before = private_sysv_sets();
    // SCHED_OTHER: no privilege needed.
    let mut child = common::rtlab(&state)
        .args(["measure", "switch", "--mechanism", "sysv-sem"])
        .args(["--policy", "other", "--duration", "5m", "--rate", "1khz"])
        .args(["--no-store", "--quiet", "--json"])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("rtlab starts");
    common::wait_until_running(&json, &mut child);
    let pid = child.id() as i32;
    // The set is journaled; wait until it is in use (semop by rtlab).
    let semid = journaled_sysv_set(&state);
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: plain syscall; GETPID takes no argument.
    while unsafe { libc::semctl(semid, 0, libc::GETPID) } != pid {
        assert!(Instant::now() < deadline, "set {semid} never used by rtlab");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left: Vec<i32> = private_sysv_sets().difference(&before).copied().collect();
    assert!(
        left.contains(&semid),
        "SIGKILL leaves set {semid}: {left:?}"
    );

    let out = common::run(common::rtlab(&state).args(["restore", "--json"]));
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let restored = report["recovered"][0]["restored"].to_string();
    assert!(
        restored.contains("\"kind\":\"sysv_sem\"") && restored.contains("\"status\":\"removed\""),
        "{report}"
    );
    // No set of the killed rtlab is left (sets of other programs may come
    // and go beside the test).
    let left: Vec<i32> = private_sysv_sets()
        .difference(&before)
        .copied()
        // SAFETY: plain syscall; GETPID takes no argument.
        .filter(|&id| unsafe { libc::semctl(id, 0, libc::GETPID) } == pid)
        .collect();
    assert_eq!(left, Vec::<i32>::new(), "removed by rtlab restore");
    assert!(!private_sysv_sets().contains(&semid));
    let out = common::run(common::rtlab(&state).arg("restore"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to restore"));
}

/// An rtlab killed by SIGKILL whose parent has not reaped it yet (here:
/// the test, until the end) is a zombie: it still has a /proc entry with
/// its pid and start time, but nothing of it runs any more. `rtlab
/// restore` treats its journal as dead and restores it.
#[test]
fn the_journal_of_a_killed_unreaped_rtlab_is_restored() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let json = dir.path().join("run.json");
    // SCHED_OTHER and a SysV set: no privilege needed.
    let mut child = common::rtlab(&state)
        .args(["measure", "switch", "--mechanism", "sysv-sem"])
        .args(["--policy", "other", "--duration", "5m", "--rate", "1khz"])
        .args(["--no-store", "--quiet", "--json"])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("rtlab starts");
    common::wait_until_running(&json, &mut child);
    let semid = journaled_sysv_set(&state);
    let pid = child.id();
    child.kill().unwrap();
    // Not reaped: wait until the kernel shows it as a zombie, its other
    // threads gone (until then, one may still finish a write).
    let deadline = Instant::now() + Duration::from_secs(30);
    let tasks = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    while process_state(pid) != Some('Z') || tasks() != 1 {
        assert!(
            Instant::now() < deadline,
            "rtlab {pid} never became a zombie"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        private_sysv_sets().contains(&semid),
        "the kill leaves set {semid}"
    );

    let out = common::run(common::rtlab(&state).args(["restore", "--json"]));
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let recovered = &report["recovered"][0];
    assert_eq!(recovered["owner"]["pid"], pid, "{report}");
    assert!(
        recovered["restored"]
            .to_string()
            .contains("\"status\":\"removed\""),
        "{report}"
    );
    assert!(
        !private_sysv_sets().contains(&semid),
        "removed by rtlab restore"
    );
    assert_eq!(process_state(pid), Some('Z'), "still a zombie meanwhile");
    child.wait().unwrap();
}

/// Field 3 of /proc/PID/stat (R, S, Z, ...), None once the pid is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// SysV semaphore sets of the kind the switch probe creates (IPC_PRIVATE,
/// one semaphore, mode 600), by id.
fn private_sysv_sets() -> std::collections::BTreeSet<i32> {
    let table = std::fs::read_to_string("/proc/sysvipc/sem").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // key semid perms nsems ...
            let ours =
                fields.len() > 3 && fields[0] == "0" && fields[2] == "600" && fields[3] == "1";
            ours.then(|| fields[1].parse().ok()).flatten()
        })
        .collect()
}

/// The id of the one SysV set in the journal of the rtlab using `state`.
fn journaled_sysv_set(state: &Path) -> i32 {
    let journals: Vec<_> = std::fs::read_dir(state)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(journals.len(), 1, "one journal: {journals:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&journals[0]).unwrap()).unwrap();
    let sets: Vec<i32> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "sysv_sem")
        .map(|e| e["semid"].as_i64().unwrap() as i32)
        .collect();
    assert_eq!(sets.len(), 1, "one sysv_sem entry: {doc}");
    sets[0]
}
