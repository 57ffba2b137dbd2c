//! The outputs agree with each other and with the formats other tools
//! read: JSON, the samples CSV, and cyclictest's histfile.

mod common;

use std::path::Path;
use std::process::Command;

fn shape(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

#[test]
fn json_samples_and_histfile_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (hist, csv) = (dir.path().join("h.txt"), dir.path().join("s.csv"));
    // Files that were there are replaced, not written over: nothing of
    // what they held is left after the run's output.
    for file in [&hist, &csv] {
        std::fs::write(file, "old,0,0\n".repeat(100_000)).unwrap();
    }
    let out = common::run(
        common::rtlab(dir.path())
            .args([
                "measure",
                "timer",
                "--cpus",
                "all",
                "--loops",
                "500",
                "--interval",
                "500us",
            ])
            .args(["--hist-max", "50us", "--json", "-", "--histfile"])
            .arg(&hist)
            .arg("--samples")
            .arg(&csv),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON only");
    assert_eq!(doc["schema"], "rtlab.run/1");
    let series = doc["series"].as_array().unwrap();
    let total: u64 = series.iter().map(|s| s["samples"].as_u64().unwrap()).sum();

    // Every sample is one CSV row.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cpu,t_ns,latency_ns"));
    assert_eq!(lines.count() as u64, total);

    // The histfile counts every sample: in range plus overflows.
    let hist = std::fs::read_to_string(&hist).unwrap();
    let field = |prefix: &str| -> Vec<u64> {
        let line = hist.lines().find(|l| l.starts_with(prefix)).unwrap();
        line[prefix.len()..]
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (in_range, overflows, max) = (
        field("# Total:"),
        field("# Histogram Overflows:"),
        field("# Max Latencies:"),
    );
    for (i, s) in series.iter().enumerate() {
        assert_eq!(in_range[i] + overflows[i], s["samples"].as_u64().unwrap());
        assert_eq!(max[i], s["max_ns"].as_u64().unwrap() / 1000);
        let hist_sum: u64 = s["histogram_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[1].as_u64().unwrap())
            .sum();
        assert_eq!(hist_sum, s["samples"].as_u64().unwrap());
        let p = &s["percentiles_ns"];
        let ordered = [
            s["min_ns"].clone(),
            p["p50"].clone(),
            p["p90"].clone(),
            p["p99"].clone(),
            p["p99_9"].clone(),
            p["p99_99"].clone(),
            s["max_ns"].clone(),
        ];
        assert!(
            ordered.windows(2).all(|w| w[0].as_u64() <= w[1].as_u64()),
            "{ordered:?}"
        );
    }
    assert_eq!(
        hist.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count(),
        50
    );
}

/// The histfile has the very layout cyclictest writes: same lines, same
/// field widths, same trailer. Needs cyclictest (rt-tests) and root.
#[test]
fn histfile_layout_matches_real_cyclictest() {
    if Command::new("cyclictest").arg("--help").output().is_err() {
        common::skip("cyclictest is not installed (apt-get install rt-tests)");
        return;
    }
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let (theirs, ours) = (dir.path().join("ct.hist"), dir.path().join("rt.hist"));
    let ct = Command::new("cyclictest")
        .args([
            "-m", "-p", "90", "-i", "1000", "-t", "2", "-a", "0,1", "-l", "300", "-q", "-H", "30",
        ])
        .arg(format!("--histfile={}", theirs.display()))
        .output()
        .unwrap();
    assert!(
        ct.status.success(),
        "{}",
        String::from_utf8_lossy(&ct.stderr)
    );
    let out = common::run(
        common::rtlab(dir.path())
            .args([
                "measure", "timer", "--cpus", "0,1", "--loops", "300", "--quiet",
            ])
            .args(["--hist-max", "30us", "--histofall", "--histfile"])
            .arg(&ours),
    );
    assert!(out.status.success());
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let (theirs, ours) = (read(&theirs), read(&ours));
    assert_eq!(
        theirs.lines().count(),
        ours.lines().count(),
        "line count\n{theirs}\n---\n{ours}"
    );
    for (t, o) in theirs.lines().zip(ours.lines()) {
        if t.starts_with("# Thread") {
            // Which samples overflowed differs from run to run.
            assert_eq!(t.split(':').next(), o.split(':').next());
        } else {
            assert_eq!(shape(t), shape(o), "\ncyclictest: {t:?}\nrtlab:      {o:?}");
        }
    }
    assert!(ours.ends_with("\n\n"));
}

/// The policy, priority and per-thread interval asked for are the ones
/// the kernel applied, for every policy family.
#[test]
fn policies_and_distance_are_applied() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(
        common::rtlab(dir.path())
            .args([
                "measure",
                "timer",
                "--cpus",
                "0,1",
                "--policy",
                "rr",
                "--priority",
                "10",
            ])
            .args([
                "--distance",
                "500us",
                "--loops",
                "100",
                "--quiet",
                "--json",
                "-",
            ]),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (i, s) in doc["series"].as_array().unwrap().iter().enumerate() {
        assert_eq!(s["interval_ns"], 1_000_000 + 500_000 * i as u64);
        assert_eq!(s["thread"]["actual"]["policy"], "rr");
        assert_eq!(s["thread"]["actual"]["priority"], 10);
        assert_eq!(s["thread"]["pinned_cpu"], i);
    }

    let out = common::run(
        common::rtlab(dir.path())
            .args([
                "measure",
                "timer",
                "--cpus",
                "0",
                "--policy",
                "deadline",
                "--dl-runtime",
                "50us",
            ])
            .args(["--loops", "100", "--quiet", "--json", "-"]),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = &doc["series"][0];
    assert_eq!(series["name"], "thread0", "deadline threads are not pinned");
    let actual = &series["thread"]["actual"];
    assert_eq!(actual["policy"], "deadline");
    assert_eq!(actual["deadline"]["runtime_ns"], 50_000);
    assert_eq!(actual["deadline"]["period_ns"], 1_000_000);
    assert_eq!(
        series["samples"].as_u64().unwrap() + series["missed"].as_u64().unwrap(),
        100
    );
}

#[test]
fn samples_go_through_a_pipe() {
    // `--samples >(gzip > s.csv.gz)` hands rtlab a pipe, which has no
    // length to empty.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("samples.fifo");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = common::run(
        common::rtlab(dir.path())
            .args(["measure", "timer", "--cpus", "0", "--loops", "50"])
            .args(["--quiet", "--no-store", "--json", "-", "--samples"])
            .arg(&fifo),
    );
    let text = reader.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every sample is one row (not every loop is a sample when another
    // test's thread takes the CPU).
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = doc["series"][0]["samples"].as_u64().unwrap();
    assert!(samples > 0, "{doc}");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cpu,t_ns,latency_ns"));
    assert_eq!(lines.count() as u64, samples);
}

#[test]
fn samples_on_stdout() {
    // `--samples -`: the CSV is stdout and the table goes to stderr; the
    // JSON goes to a file (`--json -` beside it is refused: one stdout, see
    // outputs_safe.rs).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = common::run(
        common::rtlab(dir.path())
            .args(["measure", "timer", "--cpus", "0", "--loops", "50"])
            .args(["--no-store", "--samples", "-", "--json"])
            .arg(&json),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples = doc["series"][0]["samples"].as_u64().unwrap();
    assert!(samples > 0, "{doc}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cpu,t_ns,latency_ns"));
    assert_eq!(lines.count() as u64, samples, "stdout is the CSV only");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("series"),
        "the table is on stderr: {stderr}"
    );
}
