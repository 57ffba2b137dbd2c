//! `rtlab report` end to end: a campaign's newest execution as HTML,
//! Markdown and terminal tables; imported cyclictest files (no root
//! needed); a budget on the report with its JUnit file; and bad input
//! refused with exit 2, naming what and where, before any file is written.
//! The browser and PNG checks are in report_browser.rs.

mod common;

use common::{rtlab, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CAMPAIGN: &str = r#"
name = "reported"
duration = "1s"

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

fn histfile() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rtlab-report/tests/golden/cyclictest-2.40-H40.hist")
}

fn cyclictest_json() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rtlab-report/tests/golden/cyclictest-2.40-H40.json")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the campaign twice into `dir/results.db` and returns the second
/// execution's id.
fn run_campaign(dir: &Path) -> String {
    let file = dir.join("campaign.toml");
    std::fs::write(&file, CAMPAIGN).unwrap();
    let mut execution = String::new();
    for _ in 0..2 {
        let json = dir.join("campaign.json");
        let out = run(rtlab(dir)
            .args(["campaign", "run", "--quiet"])
            .arg(&file)
            .arg("--db")
            .arg(dir.join("results.db"))
            .arg("--json")
            .arg(&json));
        assert!(out.status.success());
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        execution = doc["execution"].as_str().unwrap().to_string();
    }
    execution
}

#[test]
fn a_campaign_report_covers_its_newest_execution_in_every_format() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let execution = run_campaign(dir.path());
    let db = dir.path().join("results.db");
    let html = dir.path().join("quick.html");
    let out = run(rtlab(dir.path())
        .args(["report", "--campaign", "reported", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&html)
        .arg("--json"));
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.report/1");
    assert_eq!(doc["title"], "rtlab report: campaign reported");
    assert_eq!(doc["files"][0], html.display().to_string());
    // Two runs of one series each: the newest execution only.
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    for s in series {
        assert!(s["run_id"].is_string() && s["estimate"]["checks"].is_array());
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2 id=\"run-0\">idle/promoted</h2>"),
        "the runs are labelled by their place"
    );
    assert!(page.contains("<h2 id=\"run-1\">idle/not-promoted</h2>"));
    assert!(page.contains(&format!("execution {execution}")) || page.contains(&execution));
    assert!(page.contains("loads × configurations"));
    // The campaign's picture first, then three charts per series and two
    // overlays.
    assert_eq!(page.matches("<svg ").count(), 1 + 2 * 3 + 2);
    let verdict = page
        .find("<h2 id=\"verdict\">Verdict</h2>")
        .expect("a verdict");
    assert!(verdict < page.find("<h2 id=\"overview\">").unwrap());
    assert!(page[verdict..].contains("Real-time promotion (promoted against not-promoted):"));

    // The same execution by id, as Markdown from the extension.
    let md = dir.path().join("quick.md");
    let out = run(rtlab(dir.path())
        .args(["report", "--execution", &execution, "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&md));
    assert!(out.status.success());
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.starts_with("# rtlab report: campaign reported\n"),
        "{md}"
    );
    assert!(md.contains("| load | promoted: p99.9 / max µs | not-promoted: p99.9 / max µs |"));
    assert!(md.contains("## idle/promoted"));

    // The terminal tables by default.
    let out = run(rtlab(dir.path())
        .args(["report", "--campaign", "reported", "--db"])
        .arg(&db));
    assert!(out.status.success());
    let table = text(&out.stdout);
    assert!(table.contains("latency percentiles (µs)"), "{table}");
    assert!(table.contains("worst-case estimate (pWCET"));
}

#[test]
fn imported_cyclictest_files_report_without_root() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = run(rtlab(dir.path())
        .arg("report")
        .arg(histfile())
        .arg(cyclictest_json())
        .arg("-o")
        .arg(&html)
        .args(["--title", "cyclictest <old> & new"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("report: 2 run(s)"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<title>cyclictest &lt;old&gt; &amp; new</title>"));
    // A histogram has no time order: the time chart says what it draws.
    assert!(page.contains("it has no block maxima"));
    assert!(page.contains("no sample times in this result (a histogram has no time order)"));
    assert!(page.contains("compared: wake-up latency, exceedance per sample"));

    // --format wins over the extension; stdout without -o.
    let out = run(rtlab(dir.path())
        .arg("report")
        .arg(histfile())
        .args(["--format", "md"]));
    assert!(out.status.success());
    assert!(text(&out.stdout).starts_with("# rtlab report: cyclictest run"));
}

#[test]
fn a_budget_on_the_report_exits_1_and_writes_junit_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let xml = dir.path().join("budget.xml");
    let out = run(rtlab(dir.path())
        .arg("report")
        .arg(histfile())
        .arg("-o")
        .arg(&html)
        .args(["--budget", "max<1ns", "--junit"])
        .arg(&xml));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("budget \"max<1ns\" not kept"));
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("budget &quot;max&lt;1ns&quot;: NOT kept"),
        "the report shows it"
    );

    let out = run(rtlab(dir.path())
        .arg("report")
        .arg(histfile())
        .args(["--budget", "max<10s"]));
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("budget \"max<10s\": kept"));
}

/// Exit 2, every word of `must_mention` on stderr, and no file at `output`.
fn refused(dir: &Path, args: &[&str], must_mention: &[&str]) {
    let output = dir.join("never.html");
    let out = run(rtlab(dir).arg("report").args(args).arg("-o").arg(&output));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    for word in must_mention {
        assert!(stderr.contains(word), "{args:?}: `{word}` not in: {stderr}");
    }
    assert!(!output.exists(), "{args:?} left a report behind");
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hist = histfile();
    let hist = hist.to_str().unwrap();
    let json = cyclictest_json();
    let json = json.to_str().unwrap();
    let db = d.join("empty.db");
    let db = db.to_str().unwrap();
    refused(d, &["--db", db], &["give the runs", "--campaign NAME"]);
    refused(
        d,
        &["--db", db, "--campaign", "nope"],
        &["--campaign nope", "no run of this campaign"],
    );
    refused(
        d,
        &["--db", db, "--execution", "X"],
        &["--execution X", "no run of this execution"],
    );
    refused(d, &["--db", db, "no-such-run"], &["no-such-run"]);

    let bad = d.join("bad.csv");
    std::fs::write(
        &bad,
        "series,t_ns,latency_ns\nthread0,10,20\nthread0,30,oops\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    refused(
        d,
        &[hist, "--samples", bad],
        &["--samples", "bad.csv:3", "latency_ns", "oops"],
    );
    refused(
        d,
        &[hist, json, "--samples", bad],
        &["2 runs are reported", "RUN=PATH"],
    );
    refused(
        d,
        &[hist, "--samples", &format!("someone={bad}")],
        &["run `someone` is not one of the runs reported"],
    );
    refused(
        d,
        &[hist, "--junit", "x.xml"],
        &["--junit", "give --budget too"],
    );
    refused(d, &[hist, "--budget", "p99.5<1ms"], &["p99.5"]);

    // -o must be a file it can write; --png a directory.
    let out = run(rtlab(d).args(["report", hist, "-o"]).arg(d));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is a directory"));
    let out = run(rtlab(d).args(["report", hist, "--png", hist]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a directory"));
    let out = run(rtlab(d).args(["report", hist, "--json", "--format", "md"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--json prints on stdout"));

    // A samples file must be the run's own: same series, same counts.
    let other = d.join("other.csv");
    std::fs::write(&other, "series,t_ns,latency_ns\nthread0,10,20\n").unwrap();
    let other = other.to_str().unwrap();
    refused(
        d,
        &[hist, "--samples", other],
        &["not the samples of run", "series thread0 has 1 samples"],
    );
    let empty = d.join("empty.csv");
    std::fs::write(&empty, "cpu,t_ns,latency_ns\n").unwrap();
    refused(
        d,
        &[hist, "--samples", empty.to_str().unwrap()],
        &["not the samples of run", "has 0 samples"],
    );

    // A --png target that is not a file is found before anything is written.
    let pngs = d.join("pngs");
    std::fs::create_dir_all(pngs.join("compare-wakeup_latency-histogram.png")).unwrap();
    let out = run(rtlab(d)
        .args(["report", hist, json, "--png"])
        .arg(&pngs)
        .arg("-o")
        .arg(d.join("never.html")));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("exists and is not a regular file"));
    assert_eq!(
        std::fs::read_dir(&pngs).unwrap().count(),
        1,
        "no PNG written"
    );
    assert!(!d.join("never.html").exists());

    // No output may replace an input: the result store, a RUN file.
    let store = d.join("store.db");
    std::fs::copy(d.join("empty.db"), &store).ok();
    for (args, what) in [
        (
            vec![
                "--db",
                store.to_str().unwrap(),
                hist,
                "-o",
                store.to_str().unwrap(),
            ],
            "result store (--db)",
        ),
        (vec![hist, "-o", hist], "RUN"),
        (vec![hist, "--samples", bad, "-o", bad], "--samples"),
    ] {
        let out = run(rtlab(d).arg("report").args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(&format!("is also the {what} file")),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(
        std::fs::read_to_string(histfile())
            .unwrap()
            .contains("# Histogram"),
        "the RUN file is intact"
    );
    let out = run(rtlab(d).args(["report", hist, "--png", "/proc/rtlab-report"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--png /proc/rtlab-report: cannot write there"));
    // Missing directories of --png are created.
    let nested = d.join("new1/new2");
    let out = run(rtlab(d).args(["report", hist, "-q", "--png"]).arg(&nested));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_dir(&nested).unwrap().count(),
        8,
        "two series: three charts each, two compared"
    );
    let out = run(rtlab(d).args(["report", hist, "-o", "-", "--json", "--format", "md"]));
    assert_eq!(
        out.status.code(),
        Some(2),
        "-o - is stdout, which --json takes"
    );

    // A report that exists is left as it was when the command is refused.
    let kept = d.join("kept.html");
    std::fs::write(&kept, "old report").unwrap();
    let out = run(rtlab(d)
        .args(["report", hist, "--samples", bad, "-o"])
        .arg(&kept));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old report");
}

#[test]
fn help_has_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(dir.path()).args(["report", "--help"]));
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(
        help.contains("rtlab report --campaign quick -o quick.html"),
        "{help}"
    );
    assert!(help.contains("docs/report.md"));
}
