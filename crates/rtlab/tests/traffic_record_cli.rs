//! `rtlab traffic record` through the binary: a recording ends at
//! `--count`, prints its run as JSON and writes its plan; bad flags exit 2
//! and name the flag. The recording promotes a thread and receives timed
//! traffic: run it under the machine-wide lock (`flock
//! /tmp/rtlab-host.lock cargo test -p rtlab --test traffic_record_cli`).

mod common;

use common::{assert_refused, read_json, rtlab, signal, wait_until_running};
use std::net::UdpSocket;
use std::process::Stdio;

/// A port nobody listens on now (the kernel's choice, released).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn stamped(sequence: u64) -> Vec<u8> {
    let mut payload = vec![0u8; 200];
    payload[..4].copy_from_slice(b"RTS1");
    payload[4..8].copy_from_slice(&0x5eed_u32.to_le_bytes());
    payload[8..16].copy_from_slice(&sequence.to_le_bytes());
    payload[16..24].copy_from_slice(&(sequence * 1_000_000).to_le_bytes());
    payload
}

#[test]
fn a_recording_ends_at_count_with_its_run_and_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let plan = dir.path().join("got.plan");
    let listen = format!("127.0.0.1:{port}");
    let mut child = rtlab(dir.path())
        .args(["traffic", "record", "--listen", &listen, "--count", "50"])
        .args(["--no-store", "--json", "-", "-o"])
        .arg(&plan)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Sends until rtlab has its 50 (it binds some time after it starts:
    // those sent before are not received, and not counted).
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sequence = 0;
    common::eventually("the recording's end at --count", || {
        tx.send_to(&stamped(sequence), ("127.0.0.1", port)).unwrap();
        sequence += 1;
        child.try_wait().unwrap().is_some()
    });
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["probe"], "traffic-record");
    assert_eq!(result["status"], "complete");
    let traffic = &result["traffic"];
    assert_eq!(traffic["role"], "record");
    assert_eq!(traffic["peer"], listen.as_str());
    assert_eq!(traffic["counts"]["received"], 50);
    assert_eq!(traffic["counts"]["lost"], 0);
    assert_eq!(traffic["counts"]["duplicates"], 0);
    assert_eq!(traffic["stream"], "00005eed");
    let names: Vec<&str> = result["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["interarrival", "arrival", "arrival_gap"]);
    assert!(
        stderr.contains("received 50 datagrams from 1 flow"),
        "{stderr}"
    );
    assert_eq!(rtlab_exec::plan::load(&plan).unwrap().events.len(), 50);
}

/// `rtlab traffic record ARGS` must exit 2 saying `says`.
fn refused(args: &[&str], says: &str) {
    let args: Vec<&str> = ["traffic", "record"].iter().chain(args).copied().collect();
    assert_refused(&args, &[says]);
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    refused(
        &["--listen", "localhost"],
        "--listen localhost: expected ADDR:PORT",
    );
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    refused(
        &["--listen", &taken],
        &format!("--listen {taken}: cannot bind"),
    );
    let free = format!("127.0.0.1:{}", free_port());
    refused(
        &["--listen", &free, "-o", "/nonexistent/dir/got.plan"],
        "--output /nonexistent/dir/got.plan: cannot write there",
    );
    refused(
        &["--listen", &free, "--against", "/nonexistent/sent.plan"],
        "--against /nonexistent/sent.plan",
    );
    refused(
        &["--listen", &free, "-o", "-"],
        "--output: a plan is written to a file",
    );
    // Found at the end, a directory cost the recording its plan.
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    refused(
        &["--listen", &free, "-o", dir],
        &format!("--output {dir}: cannot write there: Is a directory"),
    );
}

/// Ends the rtlab of a test that failed half-way (and undoes what it
/// changed on the host).
struct Running<'a> {
    child: std::process::Child,
    state: &'a std::path::Path,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        common::end_and_restore(&mut self.child, self.state);
    }
}

#[test]
fn sigint_keeps_what_came_as_a_partial_run_and_writes_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let plan = dir.path().join("got.plan");
    let json = dir.path().join("run.json");
    let child = rtlab(dir.path())
        .args([
            "traffic",
            "record",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--no-store", "--quiet", "-o"])
        .arg(&plan)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running {
        child,
        state: dir.path(),
    };
    // Running: the socket is bound (the probe binds before it starts).
    wait_until_running(&json, &mut running.child);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for sequence in 0..30 {
        tx.send_to(&stamped(sequence), ("127.0.0.1", port)).unwrap();
    }
    // Until a checkpoint shows all 30 (29 gaps) came.
    common::eventually("a checkpoint with all 30 datagrams", || {
        read_json(&json).is_some_and(|r| r["series"][0]["samples"] == 29)
    });
    signal(&running.child, libc::SIGINT);
    let status = running.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let result = read_json(&json).unwrap();
    assert_eq!(result["status"], "partial");
    assert_eq!(result["traffic"]["counts"]["received"], 30);
    assert_eq!(rtlab_exec::plan::load(&plan).unwrap().events.len(), 30);
}
