//! The Markdown and CSV exporters against golden files, and the CSV's
//! RFC 4180 quoting and unknown (empty) fields.

use rtlab_core::env::Environment;
use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{
    CampaignRef, Effective, LoadRecord, RunResult, RunStatus, Series, SeriesStats, ThreadSettings,
    RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::export::{CsvExporter, Exporter, MarkdownExporter};
use rtlab_report::import::import_file;
use std::path::PathBuf;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares with tests/golden/NAME; `RTLAB_UPDATE_GOLDEN=1` rewrites it.
fn check_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("RTLAB_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(actual, want, "{name} differs; got:\n{actual}");
}

fn render(exporter: &dyn Exporter, run: &RunResult) -> String {
    let mut out = Vec::new();
    exporter.write(run, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn series(name: &str, cpu: Option<usize>, stats: SeriesStats) -> Series {
    let sched = SchedParams {
        policy: Policy::Fifo,
        priority: 90,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: "wakeup_latency".into(),
        cpu,
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 4242,
            pinned_cpu: cpu,
            requested: sched,
            actual: Some(sched),
            timer_slack_ns: Some(1),
        },
        stats,
    }
}

/// A run under load in a campaign: one busy series with a spike, one
/// series that recorded nothing.
fn campaign_run() -> RunResult {
    let mut rec = SeriesRecorder::new(None);
    for i in 0..10_000u64 {
        let latency = 12_000 + (i * 7_919) % 9_000 + if i == 7_777 { 480_123 } else { 0 };
        rec.record(latency, i * 1_000_000, u64::from(i == 7_777));
    }
    let mut environment = Environment {
        hostname: Some("rt-box".into()),
        kernel_release: Some("6.12.0-rt5".into()),
        kernel_version: Some("#1 SMP PREEMPT_RT".into()),
        preempt_model: "rt".into(),
        ..Environment::default()
    };
    environment.machine = Some("x86_64".into());
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: "20261121T193012Z-4242".into(),
        probe: "timer".into(),
        status: RunStatus::Complete,
        started_at: "2026-11-21T19:30:12.000000Z".into(),
        ended_at: Some("2026-11-21T19:30:22.000000Z".into()),
        elapsed_ns: 10_000_000_000,
        command: vec![
            "rtlab".into(),
            "campaign".into(),
            "run".into(),
            "quick.toml".into(),
        ],
        config: serde_json::json!({}),
        effective: Effective::default(),
        environment,
        series: vec![
            series("cpu0", Some(0), rec.stats()),
            series("cpu1", Some(1), SeriesStats::default()),
        ],
        break_event: None,
        loads: vec![
            LoadRecord {
                name: "vm".into(),
                spec: "vm:workers=2,bytes=64M".into(),
                ..LoadRecord::default()
            },
            LoadRecord {
                name: "io".into(),
                spec: "io".into(),
                ..LoadRecord::default()
            },
        ],
        campaign: Some(CampaignRef {
            name: "quick".into(),
            execution: "20261121T193000Z-4242".into(),
            index: 3,
            total: 12,
            configuration: "promoted".into(),
            load: "vm+io".into(),
            repeat: 1,
        }),
        warnings: vec!["cpu1: no sample recorded".into()],
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
    }
}

/// An imported cyclictest run without histogram: percentiles unknown.
fn imported_run() -> RunResult {
    let mut run = import_file(&golden("cyclictest-2.40-no-hist.json")).unwrap();
    run.id = "20261121T200219Z-1".into();
    run.config["imported_from"] = "cyclictest-2.40-no-hist.json".into();
    run
}

#[test]
fn markdown_of_a_campaign_run() {
    check_golden(
        "run_campaign.md",
        &render(&MarkdownExporter, &campaign_run()),
    );
}

#[test]
fn markdown_of_an_imported_run() {
    let md = render(&MarkdownExporter, &imported_run());
    check_golden("run_imported.md", &md);
    assert!(md.contains("| cpu0 | 1000 | 0 | 13.000 | - | - | - | - | - | 329.000 |"));
}

#[test]
fn csv_of_a_campaign_run() {
    let csv = render(&CsvExporter, &campaign_run());
    check_golden("run_campaign.csv", &csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], CsvExporter::COLUMNS.join(","));
    // Every row has every column.
    for line in &lines {
        assert_eq!(
            line.split(',').count(),
            CsvExporter::COLUMNS.len(),
            "{line}"
        );
    }
    // No samples: counts only, every statistic empty (unknown).
    assert_eq!(
        lines[2],
        "20261121T193012Z-4242,cpu1,wakeup_latency,1,0,0,0,,,,,,,,,,"
    );
}

#[test]
fn csv_of_an_imported_run_leaves_unknowns_empty() {
    let csv = render(&CsvExporter, &imported_run());
    check_golden("run_imported.csv", &csv);
    assert_eq!(
        csv.lines().nth(1).unwrap(),
        "20261121T200219Z-1,cpu0,wakeup_latency,0,1000,0,0,13000,27440.000,,,,,,,329000,"
    );
}

#[test]
fn csv_quotes_fields_as_rfc_4180_says() {
    let mut run = campaign_run();
    run.id = "run \"one\"".into();
    run.series[0].name = "cpu0,main".into();
    run.series[0].metric = "two\nlines".into();
    let mut rows = Vec::new();
    CsvExporter::write_rows(&run, &mut rows).unwrap();
    let rows = String::from_utf8(rows).unwrap();
    assert!(
        rows.starts_with("\"run \"\"one\"\"\",\"cpu0,main\",\"two\nlines\",0,10000,"),
        "{rows}"
    );
    // write_rows has no header: runs can be concatenated.
    assert!(!rows.contains("run_id"));
}
