//! `rtlab traffic gen|import|export` through the binary: what they print
//! (--json), a plan that goes out as a pcap and comes back the same, and
//! bad input refused with exit code 2 and nothing left behind.

mod common;

use common::{assert_refused, rtlab, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rtlab-exec/tests/data")
        .join(name)
}

/// Runs rtlab with `args` in `dir`; its JSON on stdout.
fn json(dir: &Path, args: &[&str]) -> Value {
    let out = run(rtlab(&dir.join("state")).current_dir(dir).args(args));
    assert!(out.status.success(), "{args:?}");
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn gen_export_import_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gen = json(
        d,
        &[
            "traffic",
            "gen",
            "constant",
            "--rate",
            "2k",
            "--count",
            "1000",
            "--size",
            "64-512",
            "--flows",
            "2",
            "--dest",
            "10.0.0.2:7000",
            "-o",
            "cbr.plan",
            "--json",
        ],
    );
    assert_eq!(gen["schema"], "rtlab.traffic-gen/1");
    assert_eq!(gen["written"]["events"], 1000);
    assert_eq!(gen["written"]["flows"], 2);
    assert_eq!(gen["written"]["last_offset_ns"], 999 * 500_000);
    let export = json(
        d,
        &[
            "traffic", "export", "cbr.plan", "--stream", "0x10", "-o", "cbr.pcap", "--json",
        ],
    );
    assert_eq!(export["schema"], "rtlab.traffic-export/1");
    assert_eq!(
        (export["frames"].as_u64(), export["stream"].as_u64()),
        (Some(1000), Some(16))
    );
    let import = json(
        d,
        &["traffic", "import", "cbr.pcap", "-o", "back.plan", "--json"],
    );
    assert_eq!(import["schema"], "rtlab.traffic-import/1");
    assert_eq!(import["read"]["format"], "pcap");
    assert_eq!(import["read"]["resolution"], "us");
    assert_eq!(import["read"]["kept"], 1000);
    assert_eq!(
        import["written"]["last_offset_ns"],
        gen["written"]["last_offset_ns"]
    );
    assert_eq!(
        import["written"]["payload_bytes"],
        gen["written"]["payload_bytes"]
    );
    // Flows by source port: 5000 and 5001, both to --dest.
    assert_eq!(import["written"]["flows"], 2);
    let show = json(d, &["plan", "show", "back.plan", "--json", "--events", "2"]);
    let modules = show["modules"].as_array().unwrap();
    assert_eq!(
        modules[1]["settings"][0],
        serde_json::json!(["dest", "10.0.0.2:7000"])
    );
    assert_eq!(
        modules[1]["settings"][1],
        serde_json::json!(["src", "10.0.0.1:5001"])
    );
}

#[test]
fn a_real_capture_imports_with_a_one_line_summary() {
    let dir = tempfile::tempdir().unwrap();
    let capture = fixture("lo_us.pcap");
    let out = run(rtlab(&dir.path().join("state"))
        .current_dir(dir.path())
        .args([
            "traffic",
            "import",
            capture.to_str().unwrap(),
            "-o",
            "lo.plan",
        ]));
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.contains("60 packets, 40 UDP datagrams kept in 4 flows, 20 not UDP → lo.plan"),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1);
    // `plan show` reads a traffic event's data: the first datagram is 10
    // bytes of 0 (tests/data/udp_sender.py).
    let show = run(rtlab(&dir.path().join("state"))
        .current_dir(dir.path())
        .args(["plan", "show", "lo.plan", "--events", "1"]));
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("  size=10 digest=69d307cc20f6ef8d"), "{text}");
}

#[test]
fn bad_input_exits_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let garbage = d.join("capture.bin");
    std::fs::write(&garbage, b"\x12\x34\x56\x78 not a capture").unwrap();
    let out = d.join("x.plan");
    let out_s = out.to_str().unwrap();
    assert_refused(
        &["traffic", "import", garbage.to_str().unwrap(), "-o", out_s],
        &["capture.bin: not a pcap or pcapng capture (first bytes 12 34 56 78)"],
    );
    let whole = std::fs::read(fixture("lo.pcapng")).unwrap();
    let cut = d.join("cut.pcapng");
    std::fs::write(&cut, &whole[..whole.len() - 30]).unwrap();
    assert_refused(
        &["traffic", "import", cut.to_str().unwrap(), "-o", out_s],
        &[
            "cut.pcapng: block at byte",
            "the file ends inside the block",
        ],
    );
    let lo = fixture("lo.pcapng");
    assert_refused(
        &[
            "traffic",
            "import",
            lo.to_str().unwrap(),
            "--filter",
            "dst port x",
            "-o",
            out_s,
        ],
        &["--filter: word 3 `x`: expected a port number"],
    );
    assert_refused(
        &[
            "traffic", "gen", "poisson", "--rate", "0", "--count", "5", "-o", out_s,
        ],
        &["--rate 0: expected packets per second"],
    );
    assert_refused(
        &[
            "traffic", "gen", "constant", "--rate", "1k", "--size", "9-3", "--count", "5", "-o",
            out_s,
        ],
        &["--size: 9-3: the minimum is above the maximum"],
    );
    assert_refused(
        &[
            "traffic", "gen", "on-off", "--rate", "1k", "--on", "1ms", "--count", "5", "-o", out_s,
        ],
        &["on-off needs --rate, --on DURATION and --off DURATION"],
    );
    assert_refused(
        &[
            "traffic",
            "export",
            lo.to_str().unwrap(),
            "--to",
            "1.2.3.4:5",
            "-o",
            out_s,
        ],
        &["lo.pcapng:"],
    );
    assert!(std::fs::read_dir(d).unwrap().all(|e| {
        let name = e.unwrap().file_name();
        name == "capture.bin" || name == "cut.pcapng"
    }));
}

#[test]
fn a_plan_that_cannot_be_written_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(&dir.path().join("state")).args([
        "traffic",
        "gen",
        "constant",
        "--rate",
        "1k",
        "--count",
        "5",
        "-o",
        "/nonexistent/dir/x.plan",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/dir/x.plan: cannot write there"),
        "{stderr}"
    );
}
