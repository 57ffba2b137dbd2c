//! `rtlab report` as a library: the tables against golden files (text and
//! Markdown), the HTML page's promises (self-contained, one chart per view,
//! every chart drawable by resvg), and what each chart shows: the fitted
//! tail when there is an estimate, the reasons when there is none, every
//! sample or message on the time chart, missed and lost ones marked.
//!
//! Results are built from seeded samples fed through rtlab's own recorder,
//! so the figures are the same on every run. No timing is asserted.

use rtlab_core::env::Environment;
use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{
    CampaignRef, Effective, NetMessageCounts, NetReport, RunResult, RunStatus, Series,
    ThreadSettings, TimelineRow, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::budget::Budget;
use rtlab_report::report::charts;
use rtlab_report::report::samples::SampleFile;
use rtlab_report::report::svg::{escape, Layer};
use rtlab_report::report::{png, Report, ReportOptions, RunSamples};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// splitmix64: seeded, the same numbers everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Exponential latency: `base` plus a tail of mean `mean` ns.
    fn latency(&mut self, base: f64, mean: f64) -> u64 {
        (base - mean * self.uniform().ln()) as u64
    }
}

const INTERVAL_NS: u64 = 1_000_000;

/// A series recorded from `latencies` (one per period), `missed` of them
/// a whole period late.
fn series(name: &str, metric: &str, latencies: &[u64]) -> Series {
    let mut rec = SeriesRecorder::new(None);
    for (i, &latency) in latencies.iter().enumerate() {
        let missed = latency / INTERVAL_NS;
        rec.record(latency, i as u64 * INTERVAL_NS + latency, missed);
    }
    let fifo = SchedParams {
        policy: Policy::Fifo,
        priority: 90,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: metric.into(),
        cpu: Some(0),
        interval_ns: INTERVAL_NS,
        thread: ThreadSettings {
            tid: 1,
            pinned_cpu: Some(0),
            requested: fifo,
            actual: Some(fifo),
            timer_slack_ns: Some(1),
        },
        stats: rec.stats(),
    }
}

fn run(id: &str, probe: &str, series: Vec<Series>) -> RunResult {
    let elapsed_ns = series
        .iter()
        .map(|s| (s.stats.samples + s.stats.missed) * INTERVAL_NS)
        .max()
        .unwrap_or(0);
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: id.into(),
        probe: probe.into(),
        status: RunStatus::Complete,
        started_at: "2026-11-21T19:30:12.123456Z".into(),
        ended_at: Some("2026-11-21T19:30:22.123456Z".into()),
        elapsed_ns,
        command: vec!["rtlab".into(), "measure".into(), probe.into()],
        config: json!({}),
        effective: Effective {
            mlockall: true,
            dma_latency_us: Some(0),
            ..Effective::default()
        },
        environment: Environment {
            captured_at: "2026-11-21T19:30:12Z".into(),
            hostname: Some("bench1".into()),
            kernel_release: Some("6.18.0-rt".into()),
            kernel_version: Some("#1 SMP PREEMPT_RT".into()),
            preempt_model: "rt".into(),
            cpu_model: Some("Test CPU".into()),
            cpu_count: Some(2),
            clocksource: Some("tsc".into()),
            ..Environment::default()
        },
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings: Vec::new(),
    }
}

/// Exponential wake-up latencies around 20 µs; a loaded run gets a few
/// spikes, one of them past a whole period.
fn latencies(seed: u64, n: usize, loaded: bool) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut out: Vec<u64> = (0..n).map(|_| rng.latency(15_000.0, 5_000.0)).collect();
    if loaded {
        out[n / 3] = 180_000;
        out[n / 2] = 1_450_000;
    }
    out
}

/// The quick campaign in small: idle and cpu load × promoted and not, one
/// timer run each with two CPUs.
fn campaign() -> Vec<RunResult> {
    let mut runs = Vec::new();
    let places = [
        ("idle", "promoted"),
        ("idle", "other"),
        ("cpu", "promoted"),
        ("cpu", "other"),
    ];
    for (index, (load, configuration)) in places.into_iter().enumerate() {
        let loaded = load == "cpu";
        let seed = index as u64 * 10;
        let mut result = run(
            &format!("20261121T1930{index:02}Z-{}", 100 + index),
            "timer",
            vec![
                series("cpu0", "wakeup_latency", &latencies(seed, 4000, loaded)),
                series("cpu1", "wakeup_latency", &latencies(seed + 1, 4000, false)),
            ],
        );
        result.campaign = Some(CampaignRef {
            name: "quick".into(),
            execution: "20261121T193000Z-99".into(),
            index: index + 1,
            total: 4,
            configuration: configuration.into(),
            load: load.into(),
            repeat: 1,
        });
        runs.push(result);
    }
    runs
}

fn build(results: Vec<RunResult>) -> Report {
    build_with(results, BTreeMap::new())
}

fn build_with(results: Vec<RunResult>, samples: BTreeMap<String, RunSamples>) -> Report {
    let mut calls = Vec::new();
    let report = Report::build(
        results,
        samples,
        &ReportOptions::default(),
        &mut |done, total| calls.push((done, total)),
    );
    let total = report.runs.iter().map(|r| r.series.len()).sum::<usize>();
    assert_eq!(
        calls.last(),
        Some(&(total, total)),
        "progress ends at the total"
    );
    report
}

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
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (RTLAB_UPDATE_GOLDEN=1 writes it)", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from the golden file at line {}:\n  golden: {:?}\n  actual: {:?}\n(RTLAB_UPDATE_GOLDEN=1 rewrites it)",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

#[test]
fn campaign_tables_in_the_terminal_and_in_markdown_match_the_golden_files() {
    let mut report = build(campaign());
    let budget = Budget::parse("p99.9<100us,max<1ms").unwrap();
    let evaluations: Vec<_> = report
        .runs
        .iter()
        .map(|r| budget.evaluate(&r.result))
        .collect();
    report.add_budget(&evaluations);
    let text = report.to_text();
    let md = report.to_markdown();
    check_golden("report_campaign.txt", &text);
    check_golden("report_campaign.md", &md);

    // The figures a reader looks for, whatever the layout.
    assert!(text.starts_with("rtlab report: campaign quick\n"), "{text}");
    assert!(text.contains("budget \"p99.9<100us,max<1ms\": NOT kept, 2 check(s) failed"));
    let matrix = md
        .lines()
        .find(|l| l.starts_with("| cpu |"))
        .expect("a matrix row for the cpu load");
    assert!(
        matrix.contains("1450.000") && matrix.contains("(1 missed)"),
        "{matrix}"
    );
    assert!(md.contains("| load | promoted: p99.9 / max µs | other: p99.9 / max µs |"));
    assert!(md.contains("## % of events within x µs of their time (paper 002, tables 4.1/4.2)"));
    assert!(md.contains("## max and avg ± σ (µs, paper 001, table 1)"));
    assert!(md.contains("## idle/promoted"));
    assert!(md.contains("| preemption | rt |"));
}

#[test]
fn within_percentages_count_missed_deadlines_as_outside() {
    let samples: Vec<u64> = (0..1000)
        .map(|i| if i < 900 { 5_000 } else { 70_000 })
        .collect();
    let mut s = series("cpu0", "wakeup_latency", &samples);
    s.stats.missed = 100;
    let within = rtlab_report::report::run_tables::within_percent(&s.stats).unwrap();
    // 900 of 1100 events within 10 µs, 1000 within 100 µs.
    assert!((within[0] - 900.0 / 11.0).abs() < 1e-9, "{within:?}");
    assert!((within[2] - 1000.0 / 11.0).abs() < 1e-9, "{within:?}");
    // The same as the executive's own table for activation lateness.
    let mut activation = s.clone();
    activation.metric = "activation_lateness".into();
    assert_eq!(
        rtlab_report::probe_summary::within_percentages(&[activation]),
        Some(within)
    );
}

#[test]
fn the_html_page_is_self_contained_and_every_chart_draws() {
    let report = build(campaign());
    let html = report.to_html();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("default-src 'none'"),
        "a policy that forbids fetching"
    );
    assert!(!html.contains("<script"), "no script");
    for (at, _) in html.match_indices("://") {
        let at = html[..at].rfind("http").unwrap_or(at);
        let context = &html[at.saturating_sub(7)..(at + 30).min(html.len())];
        assert!(
            context.starts_with("xmlns=\"http://www.w3.org/2000/svg"),
            "only the SVG namespace may be a URL: {context}"
        );
    }
    let series: usize = report.runs.iter().map(|r| r.series.len()).sum();
    // The campaign's picture, three charts per series, two overlays.
    assert_eq!(html.matches("<svg ").count(), 1 + series * 3 + 2);
    assert_eq!(report.named_charts().len(), 1 + series * 3 + 2);
    let names: Vec<String> = report.named_charts().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[0], "campaign-timer-matrix");
    assert!(
        names.contains(&"compare-wakeup_latency-exceedance".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"20261121T193002Z-102-cpu0-timeline".to_string()),
        "{names:?}"
    );
    for (name, chart) in report.named_charts() {
        let bytes = png::render(&name, &chart.plot.to_svg()).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{name}");
    }
    // The overlays compare runs: one curve per run, its CPUs together.
    assert_eq!(
        report.comparison.len(),
        1,
        "one metric, one pair of overlays"
    );
    assert_eq!(report.comparison[0].0, "wakeup_latency");
    let legend: Vec<&str> = report.comparison[0].1[0]
        .plot
        .legend
        .iter()
        .map(|key| key.label.as_str())
        .collect();
    assert_eq!(
        legend,
        ["idle/promoted", "idle/other", "cpu/promoted", "cpu/other"]
    );
    // Each run has its section with its environment.
    for run in &report.runs {
        assert!(
            html.contains(&format!(">{}</h2>", run.label)),
            "{}",
            run.label
        );
    }
    assert!(html.contains("<td>kernel</td><td>6.18.0-rt #1 SMP PREEMPT_RT</td>"));
}

/// Issue 16 item 17: a campaign page opened with four tables of ids and
/// figures. It now opens with `rtlab quick`'s verdict and one picture of
/// the loads × configurations; the tables follow, and a refused estimate
/// is one cell across the estimate columns.
#[test]
fn a_campaign_page_opens_with_the_verdict_and_the_matrix_chart() {
    let report = build(campaign());
    let html = report.to_html();
    let verdict = html
        .find(r#"<h2 id="verdict">Verdict</h2>"#)
        .expect("a verdict");
    let overview = html.find(r#"<h2 id="overview">"#).unwrap();
    let first_table = html.find("<table>").unwrap();
    assert!(verdict < overview && overview < first_table);
    // The verdict is the one `rtlab quick` prints, from the same code.
    let results: Vec<RunResult> = report.runs.iter().map(|r| r.result.clone()).collect();
    let expected = rtlab_report::matrix::Matrix::of(&results).verdict();
    assert!(expected.starts_with("Worst case under each load:\n"));
    assert_eq!(report.campaign.len(), 1);
    assert_eq!(report.campaign[0].verdict, expected);
    let first_line = expected.lines().nth(1).unwrap();
    let shown = html[verdict..overview].to_string();
    assert!(
        shown.contains(first_line.trim()),
        "{first_line} not in {shown}"
    );
    // Then the picture: a bar per cell up to its p99.9, a dot at its max,
    // the loads named on the x axis.
    let chart = &report.campaign[0].chart;
    assert!(shown.contains("<svg ") && shown.contains(&escape(&chart.caption)));
    let bars: usize = chart
        .plot
        .layers
        .iter()
        .map(|l| match l {
            Layer::Bars { bars, .. } => bars.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(bars, 4, "one bar per load × configuration");
    let names: Vec<&str> = chart
        .plot
        .x_categories
        .iter()
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(names, ["idle", "cpu"]);
    // The markdown and the terminal open with it too.
    assert!(report.to_markdown().starts_with(&format!(
        "# rtlab report: campaign quick\n\n## verdict\n\n```text\n{expected}```\n"
    )));
    assert!(report.to_text().starts_with(&format!(
        "rtlab report: campaign quick\n\nverdict\n{expected}\n"
    )));

    // The refused estimate (one of the two series with spikes; the other
    // is answered by declustering): one cell over the three estimate
    // columns, and the method column keeps the method's name.
    assert_eq!(
        html.matches(r#"<td class="span" colspan="3">refused: "#)
            .count(),
        1,
        "{html}"
    );
    let pwcet = report
        .tables
        .iter()
        .find(|t| t.title.starts_with("worst-case estimate"))
        .unwrap();
    assert!(pwcet
        .rows
        .iter()
        .all(|r| r[2] == "GEV on block maxima" || r[2] == "GPD on cluster maxima"));
}

/// Several probe kinds: a verdict and a chart for each, and a matrix
/// table for each, titled with it.
#[test]
fn a_campaign_of_several_probes_has_a_verdict_and_matrix_per_probe() {
    let mut runs = campaign();
    let mut periodic = runs[0].clone();
    periodic.id = "20261121T193010Z-110".into();
    periodic.probe = "periodic".into();
    runs.push(periodic);
    let report = build(runs);
    let probes: Vec<&str> = report.campaign.iter().map(|v| v.probe.as_str()).collect();
    assert_eq!(probes, ["timer", "periodic"]);
    let html = report.to_html();
    assert!(html.contains("<h3>timer probe</h3>") && html.contains("<h3>periodic probe</h3>"));
    let titles: Vec<&str> = report
        .tables
        .iter()
        .filter(|t| t.title.contains("loads × configurations"))
        .map(|t| t.title.as_str())
        .collect();
    assert_eq!(
        titles,
        [
            "timer probe: loads × configurations (worst over series and repeats)",
            "periodic probe: loads × configurations (worst over series and repeats)"
        ]
    );
}

#[test]
fn an_estimate_is_drawn_with_its_fitted_tail_and_a_refusal_says_why() {
    // 60 000 exponential samples: the estimate holds.
    let good = series("cpu0", "wakeup_latency", &latencies(7, 60_000, false));
    // 200 samples: too few blocks for any estimate.
    let few = series("cpu1", "wakeup_latency", &latencies(8, 200, false));
    let report = build(vec![run("20261121T193012Z-1", "timer", vec![good, few])]);
    let [good, few] = &report.runs[0].series[..] else {
        panic!("two series");
    };
    assert!(good.evt.is_estimated(), "{:?}", good.evt.verdict);
    let exceedance = &good.charts[1];
    assert_eq!(exceedance.kind, "exceedance");
    let has_fit = exceedance
        .plot
        .layers
        .iter()
        .any(|l| matches!(l, Layer::Line { dashed: true, points, .. } if points.len() > 10));
    let intervals = exceedance.plot.layers.iter().find_map(|l| match l {
        Layer::Intervals { bars, .. } => Some(bars.len()),
        _ => None,
    });
    assert!(has_fit, "the fitted tail is drawn");
    // It runs to the edge of the axis, or ends before it, never past.
    let fit_end = exceedance.plot.layers.iter().find_map(|l| match l {
        Layer::Line {
            dashed: true,
            points,
            ..
        } => points.last().map(|p| p.0),
        _ => None,
    });
    assert!(fit_end.unwrap() <= exceedance.plot.x.max + 1e-9);
    assert_eq!(intervals, Some(good.evt.pwcet.len()));
    assert!(good.evt.pwcet.len() >= 3);
    // The y axis reaches the smallest probability estimated.
    assert!(exceedance.plot.y.min <= good.evt.pwcet.last().unwrap().exceedance_per_sample);

    assert!(!few.evt.is_estimated());
    assert!(few.charts[1].caption.contains("No worst-case estimate"));
    assert!(!few.charts[1]
        .plot
        .layers
        .iter()
        .any(|l| matches!(l, Layer::Intervals { .. })));
    let table = report.to_text();
    // It says what failed: "refused: enough data" read as the opposite.
    assert!(table.contains("refused: not enough data (n="), "{table}");
    assert!(!table.contains("refused: enough data"), "{table}");
    let html = report.to_html();
    assert!(
        html.contains("No worst-case estimate:</p><ul><li>enough data failed: "),
        "the reasons are listed"
    );
}

fn dots(chart: &charts::Chart) -> (usize, usize) {
    let mut on_time = 0;
    let mut marked = 0;
    for layer in &chart.plot.layers {
        match layer {
            Layer::Dots { points, .. } => on_time += points.len(),
            Layer::Crosses { points, .. } => marked += points.len(),
            _ => {}
        }
    }
    (on_time, marked)
}

#[test]
fn the_time_chart_draws_every_sample_from_a_samples_file_and_marks_missed_deadlines() {
    let latencies = latencies(3, 5000, true);
    let result = run(
        "20261121T193012Z-2",
        "timer",
        vec![series("cpu0", "wakeup_latency", &latencies)],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.csv");
    let mut csv = String::from("cpu,t_ns,latency_ns\n");
    for (i, l) in latencies.iter().enumerate() {
        csv.push_str(&format!("0,{},{l}\n", i as u64 * INTERVAL_NS));
    }
    std::fs::write(&path, csv).unwrap();
    let samples = SampleFile::read(&path, &["cpu0".into()]).unwrap();
    let mut files = BTreeMap::new();
    files.insert(
        result.id.clone(),
        RunSamples {
            path: path.display().to_string(),
            samples,
        },
    );
    let report = build_with(vec![result.clone()], files);
    let timeline = &report.runs[0].series[0].charts[2];
    assert_eq!(timeline.kind, "timeline");
    // Every sample is a point; the one a whole period late is marked.
    assert_eq!(dots(timeline), (4999, 1));
    assert!(
        timeline
            .caption
            .starts_with("One dot per sample (5000 from"),
        "{}",
        timeline.caption
    );
    assert!(timeline
        .plot
        .legend
        .iter()
        .any(|k| k.label == "a period or more late: 1"));

    // Without the file: the block maxima and the largest samples.
    let report = build(vec![result]);
    let timeline = &report.runs[0].series[0].charts[2];
    // Each block's maximum once: the largest samples' blocks at their
    // samples' exact times.
    let blocks = 5000 / 16;
    assert_eq!(dots(timeline).0 + dots(timeline).1, blocks);
    assert_eq!(dots(timeline).1, 1, "the late sample is marked once");
    assert!(
        timeline.caption.contains("One dot per block of 16 samples"),
        "{}",
        timeline.caption
    );
}

#[test]
fn the_net_time_chart_has_one_dot_per_message_and_marks_lost_ones() {
    let responses: Vec<u64> = latencies(5, 300, false).iter().map(|l| l * 20).collect();
    let mut result = run(
        "20261121T193012Z-3",
        "net",
        vec![series("response", "response_time", &responses)],
    );
    let timeline: Vec<TimelineRow> = (0..300u64)
        .map(|i| {
            let lost = i % 100 == 50;
            let response = (!lost).then_some(responses[i as usize]);
            TimelineRow(i, i * 30_000_000, 1_000, response)
        })
        .collect();
    result.net = Some(NetReport {
        target: "10.0.0.2:7700".into(),
        transport: "udp".into(),
        mode: "exchange".into(),
        round_trips: 4,
        payload_bytes: 64,
        interval_ns: 30_000_000,
        timeout_ns: 100_000_000,
        messages: NetMessageCounts {
            planned: 300,
            sent: 300,
            completed: 297,
            lost: 3,
            ..NetMessageCounts::default()
        },
        timeline,
        timeline_complete: true,
        ..NetReport::default()
    });
    let report = build(vec![result]);
    let chart = &report.runs[0].series[0].charts[2];
    assert!(
        chart.caption.starts_with("One dot per message (300)."),
        "{}",
        chart.caption
    );
    let (_, marked) = dots(chart);
    assert_eq!(marked, 3, "three lost messages marked");
    assert!(chart
        .plot
        .legend
        .iter()
        .any(|k| k.label == "lost, drawn at the top (3)"));
    // A response is not a deadline: no period line on a net chart.
    assert!(!chart
        .plot
        .layers
        .iter()
        .any(|l| matches!(l, Layer::HLine { .. })));
}

#[test]
fn the_histogram_overlay_drops_to_the_axis_between_separate_bins() {
    let a = series("cpu0", "wakeup_latency", &[5_000, 5_500, 900_000]);
    let b = series("cpu1", "wakeup_latency", &[6_000]);
    let chart = charts::overlay_histogram(
        "wakeup_latency",
        &[("a".into(), &a.stats), ("b".into(), &b.stats)],
    );
    let Layer::Line { points, .. } = &chart.plot.layers[0] else {
        panic!("a line per series");
    };
    // Bin 5 (two samples), down to the axis, a break (NaN), then bin 900
    // alone: nothing is drawn along the axis in between.
    let floor = 1e-9;
    let shown: Vec<String> = points.iter().map(|(x, y)| format!("{x}:{y}")).collect();
    assert_eq!(
        shown,
        [
            format!("5:{floor}"),
            "5:2".into(),
            "6:2".into(),
            format!("6:{floor}"),
            "NaN:NaN".into(),
            format!("900:{floor}"),
            "900:1".into(),
            "901:1".into(),
            format!("901:{floor}"),
        ]
    );
    // Drawn as two strokes.
    let svg = chart.plot.to_svg();
    let first_line = svg.split("<path d=\"").nth(1).unwrap();
    let d = first_line.split('"').next().unwrap();
    assert_eq!(d.matches('M').count(), 2, "{d}");
}

#[test]
fn json_carries_the_tables_and_every_estimate() {
    let report = build(campaign());
    let doc = report.to_json();
    assert_eq!(doc["schema"], "rtlab.report/1");
    let tables = doc["tables"].as_array().unwrap();
    assert!(tables
        .iter()
        .any(|t| t["title"] == "latency percentiles (µs)"));
    assert_eq!(doc["series"].as_array().unwrap().len(), 8);
    assert!(doc["series"][0]["estimate"]["verdict"]["status"].is_string());
}

#[test]
fn run_labels_are_unique_and_titles_escape_markup() {
    // A run given twice (or two executions of one campaign): numbered,
    // not labelled with its id.
    let mut runs = campaign();
    runs.truncate(2);
    let mut twin = runs[0].clone();
    twin.id = "20261121T193099Z-7".into();
    runs.push(twin);
    runs[1].series[0].name = "<b>&cpu".into();
    let report = build(runs);
    let labels: Vec<&str> = report.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        ["idle/promoted (1)", "idle/other", "idle/promoted (2)"]
    );
    let html = report.to_html();
    assert!(!html.contains("<b>&cpu"));
    assert!(html.contains("&lt;b&gt;&amp;cpu"));

    // A campaign's title only when every run is of it.
    let mut runs = campaign();
    runs.truncate(1);
    assert_eq!(build(runs.clone()).title, "rtlab report: campaign quick");
    runs.push(run("20261121T193012Z-8", "timer", Vec::new()));
    assert_eq!(build(runs).title, "rtlab report: 2 runs");
}

/// Issue 16 item 17: in a campaign of several probes the labels collided
/// (`idle/promoted` for the timer and the periodic run) and got run ids
/// appended. The probe now tells them apart; repeats are numbered by
/// their repeat; a run outside any campaign keeps its id; two campaigns
/// are told apart by name.
#[test]
fn labels_tell_probes_loads_configurations_and_repeats_apart_without_ids() {
    let mut runs = campaign();
    runs.truncate(2);
    let mut periodic = runs[0].clone();
    periodic.id = "20261121T193010Z-110".into();
    periodic.probe = "periodic".into();
    runs.push(periodic);
    let labels = |runs: Vec<RunResult>| -> Vec<String> {
        build(runs).runs.into_iter().map(|r| r.label).collect()
    };
    assert_eq!(
        labels(runs.clone()),
        [
            "timer/idle/promoted",
            "timer/idle/other",
            "periodic/idle/promoted"
        ]
    );

    // Repeats: `#N`; a run of no campaign: its id.
    let mut repeated = runs.clone();
    let mut second = repeated[0].clone();
    second.id = "20261121T193011Z-111".into();
    second.campaign.as_mut().unwrap().repeat = 2;
    repeated.push(second);
    repeated.push(run("20261121T193012Z-112", "timer", Vec::new()));
    assert_eq!(
        labels(repeated),
        [
            "timer/idle/promoted #1",
            "timer/idle/other #1",
            "periodic/idle/promoted #1",
            "timer/idle/promoted #2",
            "20261121T193012Z-112"
        ]
    );

    // Two campaigns: their names first.
    let mut two = campaign();
    two.truncate(1);
    let mut other = two[0].clone();
    other.id = "20261121T193013Z-113".into();
    other.campaign.as_mut().unwrap().name = "romero".into();
    two.push(other);
    assert_eq!(
        labels(two),
        ["quick: idle/promoted", "romero: idle/promoted"]
    );
}

#[test]
fn the_time_chart_places_blocks_only_where_samples_come_one_per_interval() {
    // 2000 samples of a 1 ms interval in a run of 20 s: the series ran for
    // a tenth of it (switch --all runs its mechanisms in turn).
    let mut result = run(
        "20261121T193012Z-4",
        "switch",
        vec![series(
            "futex.switch",
            "switch_latency",
            &latencies(9, 2000, false),
        )],
    );
    result.elapsed_ns = 20_000_000_000;
    let report = build(vec![result]);
    let chart = &report.runs[0].series[0].charts[2];
    let top = report.runs[0].series[0].stats.top.len();
    assert_eq!(dots(chart).0 + dots(chart).1, top, "only the exact spikes");
    assert!(
        chart.caption.contains("do not come one per interval"),
        "{}",
        chart.caption
    );
    // Not a periodic metric: no period line.
    assert!(!chart
        .plot
        .layers
        .iter()
        .any(|l| matches!(l, Layer::HLine { .. })));
}

#[test]
fn overlays_compare_one_metric_at_a_time() {
    let mut a = run(
        "20261121T193012Z-5",
        "periodic",
        vec![
            series(
                "t1.lateness",
                "activation_lateness",
                &latencies(11, 1000, false),
            ),
            series("t1.response", "response_time", &latencies(12, 1000, false)),
        ],
    );
    let mut b = a.clone();
    b.id = "20261121T193012Z-6".into();
    a.series[0].stats.missed = 0;
    let report = build(vec![a, b]);
    let metrics: Vec<&str> = report.comparison.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(metrics, ["activation_lateness", "response_time"]);
    for (_, charts) in &report.comparison {
        assert_eq!(charts[0].plot.legend.len(), 2, "one curve per run");
    }
    let names: Vec<String> = report.named_charts().into_iter().map(|(n, _)| n).collect();
    assert!(
        names.contains(&"compare-response_time-histogram".to_string()),
        "{names:?}"
    );
}

#[test]
fn exceedance_shows_missed_events_and_keeps_extrapolation_off_the_data() {
    let mut s = series("cpu0", "wakeup_latency", &latencies(13, 60_000, false));
    s.stats.missed = 600;
    let report = build(vec![run("20261121T193012Z-7", "timer", vec![s])]);
    let view = &report.runs[0].series[0];
    let chart = &view.charts[1];
    let floor = chart.plot.layers.iter().find_map(|l| match l {
        Layer::HLine { y, .. } => Some(*y),
        _ => None,
    });
    let y = floor.expect("a line for the missed events");
    assert!((y - 600.0 / 60_600.0).abs() < 1e-12, "{y}");
    assert!(chart
        .plot
        .legend
        .iter()
        .any(|k| k.label == "missed or lost: 600 of 60600"));
    // The axis ends within a few times the observed maximum.
    assert!(chart.plot.x.max <= 4.0 * 1.08 * view.stats.max_ns as f64 / 1000.0 + 1e-9);
}

#[test]
fn imported_cyclictest_bins_count_at_their_top() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cyclictest-2.40-H40.hist");
    let imported = rtlab_report::import::import_file(&path).unwrap();
    let expected: Vec<f64> = imported
        .series
        .iter()
        .map(|s| {
            // Truncated µs: bin b holds b.000-b.999 µs, within 10 µs below bin 10.
            let within: u64 = s
                .stats
                .histogram_us
                .iter()
                .filter(|b| b[0] < 10)
                .map(|b| b[1])
                .sum();
            100.0 * within as f64 / (s.stats.samples + s.stats.missed) as f64
        })
        .collect();
    let report = build(vec![imported]);
    let table = report
        .tables
        .iter()
        .find(|t| t.title.starts_with("% of events within"))
        .expect("the within table");
    for (row, expected) in table.rows.iter().zip(expected) {
        assert_eq!(row[2], format!("{expected:.2}%"), "{row:?}");
    }
}

/// A result file can name its load anything: the verdict cannot close its
/// Markdown code block early nor drive the terminal.
#[test]
fn the_verdict_is_inert_in_markdown_and_the_terminal() {
    let mut runs = campaign();
    runs.truncate(1);
    runs[0].campaign.as_mut().unwrap().load = "x\n```\n<img src=x>\u{1b}[31m".into();
    let report = build(runs);
    let md = report.to_markdown();
    let block: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .take_while(|l| !l.starts_with("## runs"))
        .collect();
    assert_eq!(block[0], "````text", "{md}");
    let closing: Vec<&&str> = block.iter().filter(|l| l.starts_with("````")).collect();
    assert_eq!(closing.len(), 2, "the fence closes only at its end: {md}");
    assert!(!report.to_text().contains('\u{1b}'));
    assert!(!report.to_html().contains("<img src=x>"));
}

/// Issue 16 item 17: the environment says where the preemption model was
/// read, e.g. a PREEMPT_DYNAMIC kernel's build configuration.
#[test]
fn the_environment_says_where_the_preemption_model_was_read() {
    let mut result = campaign().remove(0);
    result.environment.preempt_model = "dynamic-voluntary".into();
    result.environment.preempt_sources = vec![
        "uname -v: PREEMPT_DYNAMIC".into(),
        "/boot/config-6.12.0: CONFIG_PREEMPT_VOLUNTARY=y, the boot default of CONFIG_PREEMPT_DYNAMIC (no preempt= on the command line)".into(),
    ];
    let table = rtlab_report::report::run_tables::environment_table(&result);
    let row = table.rows.iter().find(|r| r[0] == "preemption").unwrap();
    assert_eq!(
        row[1],
        "dynamic-voluntary (from uname -v: PREEMPT_DYNAMIC; /boot/config-6.12.0: CONFIG_PREEMPT_VOLUNTARY=y, the boot default of CONFIG_PREEMPT_DYNAMIC (no preempt= on the command line))"
    );
}

#[test]
fn a_cell_whose_run_measured_nothing_says_no_samples_not_zero() {
    // A campaign cell refused before it measured (a --sysctl another rtlab
    // held) read `0.000 / 0.000 [failed]` in the report's matrix: a
    // perfect result at a glance.
    let mut results = campaign();
    results[0].status = RunStatus::Failed;
    results[0].series.clear();
    let matrix = rtlab_report::matrix::Matrix::of(&results);
    let text = matrix.table();
    let idle = text.lines().find(|l| l.starts_with("idle")).unwrap();
    assert!(idle.contains("no samples [failed]"), "{text}");
    // The verdict names it too: the worst case of the other cell alone
    // read as the load's.
    let verdict = matrix.verdict();
    let idle = verdict
        .lines()
        .find(|l| l.trim_start().starts_with("idle"))
        .unwrap();
    assert!(
        idle.contains("(other)") && idle.ends_with("; nothing measured under promoted"),
        "{verdict}"
    );
    let md = build(results).to_markdown();
    let idle = md.lines().find(|l| l.starts_with("| idle |")).unwrap();
    assert!(idle.contains("| no samples [failed] |"), "{idle}");
    assert!(!idle.contains("0.000 / 0.000"), "{idle}");
}

#[test]
fn the_page_shows_bidi_and_zero_width_characters_escaped() {
    // A stored hostname `vm<U+202E>gnp.exe` was written raw into the page,
    // where it reads `vmexe.png`; the terminal already showed `\u202e`.
    assert_eq!(escape("vm\u{202e}gnp.exe"), "vm\\u202egnp.exe");
    assert_eq!(escape("a\u{200b}b<"), "a\\u200bb&lt;");
    let mut results = campaign();
    results[0].environment.hostname = Some("vm\u{202e}gnp.exe".into());
    let report = build(results);
    let html = report.to_html();
    assert!(
        !html.contains('\u{202e}'),
        "a raw bidi override in the page"
    );
    assert!(html.contains("vm\\u202egnp.exe"));
    // And in the Markdown, which GitHub renders.
    let md = report.to_markdown();
    assert!(
        !md.contains('\u{202e}'),
        "a raw bidi override in the Markdown"
    );
    assert!(md.contains("vm\\u202egnp.exe"), "{md}");
}
