//! Bad input is refused with exit code 2 and a message naming the flag and
//! the value; missing privileges are reported and the run goes on.

mod common;

use std::os::unix::process::CommandExt;

fn refused(args: &[&str], must_mention: &[&str]) {
    common::assert_refused(&[&["measure", "timer"], args].concat(), must_mention);
}

#[test]
fn bad_cpu_lists() {
    refused(&["--cpus", "0-"], &["--cpus", "'0-'"]);
    refused(&["--cpus", "3-1"], &["--cpus", "backwards"]);
    refused(&["--cpus", "8000"], &["--cpus", "8000", "not online"]);
}

#[test]
fn bad_durations() {
    refused(&["--interval", "1000"], &["--interval", "'1000'", "unit"]);
    refused(&["--interval", "0ms"], &["--interval", "longer than 0"]);
    refused(&["--duration", "ten seconds"], &["--duration"]);
    refused(
        &["--hist-max", "1500ns"],
        &["--hist-max", "whole number of µs"],
    );
    refused(
        &["--duration", "1s", "--loops", "10"],
        &["--loops", "--duration"],
    );
}

#[test]
fn bad_policies_and_priorities() {
    refused(&["--policy", "realtime"], &["--policy", "'realtime'"]);
    refused(&["--priority", "100"], &["--priority", "100"]);
    refused(
        &["--policy", "other", "--priority", "10"],
        &["--priority 10", "fifo or rr"],
    );
    refused(
        &[
            "--policy",
            "deadline",
            "--interval",
            "1ms",
            "--dl-runtime",
            "2ms",
        ],
        &["--dl-runtime", "longer than the --interval"],
    );
}

#[test]
fn bad_files_and_sysctls() {
    refused(
        &["--json", "/nonexistent/dir/run.json"],
        &["--json", "/nonexistent/dir/run.json"],
    );
    refused(
        &["--histfile", "/nonexistent/h"],
        &["--histfile", "/nonexistent/h"],
    );
    refused(
        &["--sysctl", "kernel.no_such_key=1"],
        &["--sysctl", "kernel.no_such_key"],
    );
    refused(&["--sysctl", "../../etc/passwd=x"], &["--sysctl"]);
    // Two values for one sysctl: the run had one of them, silently.
    refused(
        &[
            "--sysctl",
            "kernel.timer_migration=0",
            "--sysctl",
            "kernel/timer_migration=1",
        ],
        &["--sysctl", "timer_migration is given twice", "give it once"],
    );
}

#[test]
fn help_shows_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(common::rtlab(dir.path()).args(["measure", "timer", "--help"]));
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Examples:") && help.contains("rtlab measure timer --cpus"));
}

/// Without privileges the run still measures, says what was refused and
/// how to allow it, and records the policy that was really in effect.
#[test]
fn unprivileged_run_warns_and_records_what_was_in_effect() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = common::rtlab(&dir.path().join("state"));
    cmd.args([
        "measure",
        "timer",
        "--cpus",
        "0",
        "--loops",
        "300",
        "--interval",
        "500us",
    ])
    .args(["--quiet", "--json", "-"]);
    if common::is_root() {
        // Drop to nobody, as a user without any RT privilege.
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    } else if common::realtime_allowed().is_ok() {
        common::skip("this user has RT privileges and cannot drop them");
        return;
    }
    let out = common::run(&mut cmd);
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "complete");
    let series = &doc["series"][0];
    assert_eq!(series["thread"]["requested"]["policy"], "fifo");
    assert_eq!(series["thread"]["actual"]["policy"], "other");
    assert_eq!(
        series["samples"].as_u64().unwrap() + series["missed"].as_u64().unwrap(),
        300
    );
    assert_eq!(doc["effective"]["dma_latency_us"], serde_json::Value::Null);
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("could not set fifo 90"), "{warnings}");
    assert!(warnings.contains("LimitRTPRIO"), "{warnings}");
    assert!(warnings.contains("cpu_dma_latency"), "{warnings}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: could not set fifo 90"),
        "{stderr}"
    );
}
