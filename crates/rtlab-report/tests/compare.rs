//! Comparing runs: the bootstrap interval on the p99 difference must call
//! same-distribution runs "not significant" (about as often as its
//! confidence promises) and a +5 µs shift "significant" with 5 µs inside
//! the interval; ratios, missing series, series matching, determinism,
//! imported cyclictest runs, and the table and Markdown against golden
//! files.

use rtlab_core::env::Environment;
use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{
    CampaignRef, Effective, Percentiles, RunResult, RunStatus, Series, SeriesStats, ThreadSettings,
    RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::compare::{
    compare, compare_matching, comparison_markdown, comparison_table, CompareOptions, Matching,
    Ratios,
};
use rtlab_report::import::import_file;
use std::path::PathBuf;

#[path = "compare/baseline.rs"]
mod baseline;

/// xorshift64*: test data only (the bootstrap has its own generator).
struct Data(u64);

impl Data {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Wake-up-latency-like: 20 µs floor plus an exponential tail (mean
    /// 3 µs), plus `shift_ns`.
    fn latencies(&mut self, n: usize, shift_ns: u64) -> Vec<u64> {
        (0..n)
            .map(|_| 20_000 + (-3_000.0 * self.uniform().ln()) as u64 + shift_ns)
            .collect()
    }
}

fn stats_of(values: &[u64]) -> SeriesStats {
    let mut rec = SeriesRecorder::new(None);
    for (i, v) in values.iter().enumerate() {
        rec.record(*v, i as u64 * 1_000_000, 0);
    }
    rec.stats()
}

fn series(name: &str, stats: SeriesStats) -> Series {
    let sched = SchedParams {
        policy: Policy::Fifo,
        priority: 90,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: "wakeup_latency".into(),
        cpu: name.strip_prefix("cpu").and_then(|c| c.parse().ok()),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 1,
            pinned_cpu: None,
            requested: sched,
            actual: Some(sched),
            timer_slack_ns: Some(1),
        },
        stats,
    }
}

fn run(id: &str, series: Vec<Series>) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: id.into(),
        probe: "timer".into(),
        status: RunStatus::Complete,
        started_at: "2026-11-21T19:30:12.000000Z".into(),
        ended_at: Some("2026-11-21T19:30:22.000000Z".into()),
        elapsed_ns: 10_000_000_000,
        command: vec!["/usr/bin/rtlab".into(), "measure".into(), "timer".into()],
        config: serde_json::json!({}),
        effective: Effective::default(),
        environment: Environment::default(),
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings: vec![],
    }
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn same_distribution_is_not_significant() {
    let mut data = Data(11);
    let a = run(
        "A",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 0)))],
    );
    let b = run(
        "B",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 0)))],
    );
    let c = compare(&[a, b], &CompareOptions::default());
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    let [lo, hi] = v.p99_diff_ci_ns.unwrap();
    assert!(lo <= 0 && hi >= 0, "{lo}…{hi}");
    assert!(!v.significant);
    assert!(v.verdict.ends_with("not significant"), "{}", v.verdict);
    assert!(v.verdict.contains("(95% CI "), "{}", v.verdict);
}

/// Over many pairs from one distribution, a 95% interval should exclude
/// 0 about 5% of the time: a broken bootstrap (too narrow) fails this.
#[test]
fn false_alarms_are_about_as_rare_as_the_confidence_says() {
    let mut data = Data(2024);
    let opts = CompareOptions {
        resamples: 1000,
        ..CompareOptions::default()
    };
    let pairs = 60;
    let alarms = (0..pairs)
        .filter(|i| {
            let a = run(
                "A",
                vec![series("cpu0", stats_of(&data.latencies(4_000, 0)))],
            );
            let b = run(
                "B",
                vec![series("cpu0", stats_of(&data.latencies(4_000, 0)))],
            );
            let opts = CompareOptions {
                seed: *i as u64,
                ..opts
            };
            compare(&[a, b], &opts).series[0].runs[1]
                .versus_baseline
                .as_ref()
                .unwrap()
                .significant
        })
        .count();
    // Expected 3 of 60; 10 would be a badly miscalibrated interval.
    assert!(
        alarms <= 9,
        "{alarms} of {pairs} same-distribution pairs called significant"
    );
}

#[test]
fn a_shift_of_5us_is_significant_and_inside_the_interval() {
    let mut data = Data(5);
    let a = run(
        "A",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 0)))],
    );
    let b = run(
        "B",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 5_000)))],
    );
    let c = compare(&[a, b], &CompareOptions::default());
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    let [lo, hi] = v.p99_diff_ci_ns.unwrap();
    assert!(lo <= 5_000 && 5_000 <= hi, "{lo}…{hi}");
    assert!(lo > 0 && v.significant);
    let diff = v.p99_diff_ns.unwrap();
    assert!((3_500..=6_500).contains(&diff), "{diff}");
    assert!(v.verdict.starts_with("p99 "), "{}", v.verdict);
    assert!(v.verdict.contains(" µs higher (95% CI "), "{}", v.verdict);
    assert!(v.verdict.ends_with("): significant"), "{}", v.verdict);
}

#[test]
fn a_lower_p99_is_reported_as_lower() {
    let mut data = Data(6);
    let slow = run(
        "A",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 5_000)))],
    );
    let fast = run(
        "B",
        vec![series("cpu0", stats_of(&data.latencies(20_000, 0)))],
    );
    let c = compare(&[slow, fast], &CompareOptions::default());
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    let [lo, hi] = v.p99_diff_ci_ns.unwrap();
    assert!(hi < 0 && lo <= -5_000 && -5_000 <= hi, "{lo}…{hi}");
    assert!(v.verdict.contains(" µs lower (95% CI -"), "{}", v.verdict);
    assert!(v.significant);
}

#[test]
fn same_seed_same_result_and_the_seed_matters() {
    let mut data = Data(7);
    let runs = [
        run(
            "A",
            vec![series("cpu0", stats_of(&data.latencies(5_000, 0)))],
        ),
        run(
            "B",
            vec![series("cpu0", stats_of(&data.latencies(5_000, 800)))],
        ),
    ];
    let opts = CompareOptions::default();
    let one = serde_json::to_string(&compare(&runs, &opts)).unwrap();
    let two = serde_json::to_string(&compare(&runs, &opts)).unwrap();
    assert_eq!(one, two);
    let other_seeds: Vec<String> = (2..6)
        .map(|seed| {
            let c = compare(&runs, &CompareOptions { seed, ..opts });
            format!(
                "{:?}",
                c.series[0].runs[1]
                    .versus_baseline
                    .as_ref()
                    .unwrap()
                    .p99_diff_ci_ns
            )
        })
        .collect();
    let first = format!(
        "{:?}",
        compare(&runs, &opts).series[0].runs[1]
            .versus_baseline
            .as_ref()
            .unwrap()
            .p99_diff_ci_ns
    );
    assert!(
        other_seeds.iter().any(|s| *s != first),
        "{first} {other_seeds:?}"
    );
}

/// Hand-made statistics with round percentiles.
fn fixed(p: [u64; 5], max: u64) -> SeriesStats {
    SeriesStats {
        samples: 1000,
        min_ns: 1_000,
        max_ns: max,
        mean_ns: p[0] as f64,
        percentiles_ns: Percentiles {
            p50: p[0],
            p90: p[1],
            p99: p[2],
            p99_9: p[3],
            p99_99: p[4],
        },
        histogram_ns: vec![[p[0], 500], [p[1], 400], [p[2], 90], [max, 10]],
        ..SeriesStats::default()
    }
}

#[test]
fn ratios_are_run_over_baseline() {
    let a = run(
        "A",
        vec![series(
            "cpu0",
            fixed([10_000, 20_000, 40_000, 80_000, 100_000], 200_000),
        )],
    );
    let b = run(
        "B",
        vec![series(
            "cpu0",
            fixed([15_000, 20_000, 30_000, 80_000, 250_000], 100_000),
        )],
    );
    let c = compare(&[a, b], &CompareOptions::default());
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert_eq!(
        v.ratios,
        Ratios {
            p50: Some(1.5),
            p90: Some(1.0),
            p99: Some(0.75),
            p99_9: Some(1.0),
            p99_99: Some(2.5),
            max: Some(0.5),
        }
    );
    assert_eq!(v.p99_diff_ns, Some(-10_000));
    let table = comparison_table(&c);
    assert!(table.contains("1.50×") && table.contains("0.75×") && table.contains("2.50×"));
    assert!(table.contains("B/A"), "{table}");
}

#[test]
fn a_zero_baseline_has_no_ratio() {
    let mut zero = fixed([0, 0, 0, 0, 0], 0);
    zero.min_ns = 0;
    zero.histogram_ns = vec![[0, 1000]];
    let a = run("A", vec![series("cpu0", zero)]);
    let b = run("B", vec![series("cpu0", fixed([10, 20, 30, 40, 50], 60))]);
    let c = compare(&[a, b], &CompareOptions::default());
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert_eq!(v.ratios, Ratios::default());
}

#[test]
fn missing_series_are_reported_not_dropped() {
    let mut data = Data(8);
    let mut s = |name: &str| series(name, stats_of(&data.latencies(2_000, 0)));
    let a = run("A", vec![s("cpu0"), s("cpu1")]);
    let b = run("B", vec![s("cpu0")]);
    let c_run = run("C", vec![s("cpu0"), s("cpu2")]);
    let c = compare(&[a, b, c_run], &CompareOptions::default());
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cpu0", "cpu1", "cpu2"]);
    assert_eq!(c.matching, Matching::ByName);

    let cpu1 = &c.series[1];
    assert!(cpu1.runs[0].figures.is_some());
    assert!(cpu1.runs[1].figures.is_none() && cpu1.runs[1].series.is_empty());
    assert!(cpu1.runs[1].versus_baseline.is_none());

    let cpu2 = &c.series[2];
    assert!(cpu2.runs[0].figures.is_none());
    let v = cpu2.runs[2].versus_baseline.as_ref().unwrap();
    assert_eq!(v.verdict, "missing in the baseline");

    let table = comparison_table(&c);
    assert!(table.contains("missing in this run"), "{table}");
    assert!(table.contains("baseline: missing"), "{table}");
}

#[test]
fn single_series_with_different_names_are_paired_as_all() {
    let mut data = Data(9);
    let a = run(
        "A",
        vec![series("cpu1", stats_of(&data.latencies(2_000, 0)))],
    );
    let b = run(
        "B",
        vec![series("thread0", stats_of(&data.latencies(2_000, 0)))],
    );
    let c = compare(&[a.clone(), b.clone()], &CompareOptions::default());
    assert_eq!(c.matching, Matching::All);
    assert_eq!(c.series.len(), 1);
    assert_eq!(c.series[0].name, "all");
    assert_eq!(c.series[0].runs[1].series, ["thread0"]);
    assert!(c.notes.iter().any(|n| n.contains("single series")));
    // The figures are the series' own.
    let f = c.series[0].runs[0].figures.as_ref().unwrap();
    assert_eq!(f.p99_ns, Some(a.series[0].stats.percentiles_ns.p99));

    // Asked by name, they stay apart.
    let c = compare_matching(&[a, b], &CompareOptions::default(), Matching::ByName);
    assert_eq!(c.series.len(), 2);
}

#[test]
fn all_merges_every_series_of_a_run() {
    let mut data = Data(10);
    let low = data.latencies(3_000, 0);
    let high = data.latencies(1_000, 50_000);
    let a = run(
        "A",
        vec![
            series("cpu0", stats_of(&low)),
            series("cpu1", stats_of(&high)),
        ],
    );
    let mut everything = low.clone();
    everything.extend(&high);
    let b = run("B", vec![series("cpu0", stats_of(&everything))]);
    let c = compare_matching(&[a, b], &CompareOptions::default(), Matching::All);
    let merged = c.series[0].runs[0].figures.as_ref().unwrap();
    let single = c.series[0].runs[1].figures.as_ref().unwrap();
    // The same samples, merged from two histograms or recorded in one.
    assert_eq!(merged.samples, 4_000);
    assert_eq!(
        (merged.min_ns, merged.max_ns),
        (single.min_ns, single.max_ns)
    );
    for (m, s) in [
        (merged.p50_ns, single.p50_ns),
        (merged.p90_ns, single.p90_ns),
        (merged.p99_ns, single.p99_ns),
        (merged.p99_9_ns, single.p99_9_ns),
    ] {
        assert_eq!(m, s);
    }
    assert!((merged.mean_ns.unwrap() - single.mean_ns.unwrap()).abs() < 1e-6);
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert!(!v.significant, "{}", v.verdict);
}

#[test]
fn imported_cyclictest_compares_with_rtlab() {
    let cyclictest = import_file(&golden("cyclictest-2.40-stdout-h60.txt")).unwrap();
    let mut data = Data(12);
    let rtlab = run(
        "R",
        vec![series("cpu0", stats_of(&data.latencies(3_000, 0)))],
    );
    let c = compare(&[cyclictest, rtlab], &CompareOptions::default());
    assert_eq!(c.matching, Matching::All);
    assert_eq!(c.runs[0].resolution_ns, 1_000);
    assert_eq!(c.runs[1].resolution_ns, 1);
    assert!(c.runs[0].label.starts_with("imported from "));
    assert!(c.notes.iter().any(|n| n.contains("A has 1 µs resolution")));
    assert!(c.notes.iter().any(|n| n.contains("missed deadlines")));
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert!(v.p99_diff_ci_ns.is_some());
}

#[test]
fn no_histogram_means_no_test() {
    let cyclictest = import_file(&golden("cyclictest-2.40-no-hist.json")).unwrap();
    let mut data = Data(13);
    let rtlab = run(
        "R",
        vec![series("cpu0", stats_of(&data.latencies(1_000, 0)))],
    );
    let c = compare(&[cyclictest, rtlab], &CompareOptions::default());
    assert_eq!(c.matching, Matching::ByName);
    let base = c.series[0].runs[0].figures.as_ref().unwrap();
    assert_eq!((base.p99_ns, base.max_ns), (None, Some(329_000)));
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert_eq!(v.verdict, "p99 unknown: no histogram in A");
    assert!(v.p99_diff_ci_ns.is_none() && !v.significant);
    assert!(v.ratios.max.is_some() && v.ratios.p99.is_none());
}

#[test]
fn zero_resamples_and_bad_confidence_do_not_panic() {
    let mut data = Data(14);
    let runs = [
        run("A", vec![series("cpu0", stats_of(&data.latencies(500, 0)))]),
        run("B", vec![series("cpu0", stats_of(&data.latencies(500, 0)))]),
    ];
    let c = compare(
        &runs,
        &CompareOptions {
            resamples: 0,
            ..CompareOptions::default()
        },
    );
    let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert!(
        v.verdict.ends_with("(not tested: no resamples)"),
        "{}",
        v.verdict
    );

    let bad = CompareOptions {
        confidence: 95.0,
        ..CompareOptions::default()
    };
    assert!(bad.validate().unwrap_err().contains("between 0 and 1"));
    let c = compare(&runs, &bad);
    assert_eq!(c.confidence, 0.95);
    assert!(c.notes[0].contains("confidence 95"), "{:?}", c.notes);

    assert!(compare(&[], &CompareOptions::default()).series.is_empty());
    assert_eq!(
        comparison_table(&compare(&[], &bad)),
        "no runs to compare\n"
    );
    let one = compare(&runs[..1], &CompareOptions::default());
    assert!(one.series[0].runs[0].versus_baseline.is_none());
}

/// Two runs of a campaign, two series each: the terminal table and the
/// Markdown, byte for byte.
fn golden_comparison() -> rtlab_report::compare::Comparison {
    let mut data = Data(42);
    let place = |configuration: &str, load: &str, index: usize| CampaignRef {
        name: "quick".into(),
        execution: "20261121T193000Z-1".into(),
        index,
        total: 2,
        configuration: configuration.into(),
        load: load.into(),
        repeat: 1,
    };
    let mut a = run(
        "20261121T193012Z-4242",
        vec![
            series("cpu0", stats_of(&data.latencies(10_000, 0))),
            series("cpu1", stats_of(&data.latencies(10_000, 0))),
        ],
    );
    a.campaign = Some(place("promoted", "idle", 1));
    let mut b = run(
        "20261121T193530Z-4242-2",
        vec![
            series("cpu0", stats_of(&data.latencies(10_000, 5_000))),
            series("cpu1", stats_of(&data.latencies(10_000, 0))),
        ],
    );
    b.campaign = Some(place("promoted", "vm+io", 2));
    compare(&[a, b], &CompareOptions::default())
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

#[test]
fn golden_comparison_table() {
    check_golden(
        "compare_two_runs.txt",
        &comparison_table(&golden_comparison()),
    );
}

#[test]
fn golden_comparison_markdown() {
    check_golden(
        "compare_two_runs.md",
        &comparison_markdown(&golden_comparison()),
    );
}

#[test]
fn comparison_json_shape() {
    let c = golden_comparison();
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["schema"], "rtlab.compare/1");
    assert_eq!(v["baseline"], "20261121T193012Z-4242");
    assert_eq!(v["matching"], "by_name");
    assert_eq!(v["runs"][1]["label"], "promoted / vm+io");
    let b = &v["series"][0]["runs"][1];
    assert_eq!(b["series"][0], "cpu0");
    assert!(b["figures"]["p99_ns"].is_u64());
    assert!(b["versus_baseline"]["p99_diff_ci_ns"].is_array());
    assert!(b["versus_baseline"]["ratios"]["p99"].is_f64());
    assert_eq!(b["versus_baseline"]["significant"], true);
    assert!(v["series"][0]["runs"][0]["versus_baseline"].is_null());
}

#[test]
fn real_cyclictest_histfile_and_json_of_one_run_do_not_differ() {
    // The same cyclictest run, as histfile (thread0, thread1) and as JSON
    // (cpu0, cpu1): by name nothing pairs up, and the comparison says so.
    let hist = import_file(&golden("cyclictest-2.40-H40.hist")).unwrap();
    let json = import_file(&golden("cyclictest-2.40-H40.json")).unwrap();
    let runs = [hist, json];
    let by_name = compare(&runs, &CompareOptions::default());
    assert_eq!(by_name.series.len(), 4);
    assert!(by_name.notes.iter().any(|n| n.contains("match 'all'")));

    let all = compare_matching(&runs, &CompareOptions::default(), Matching::All);
    assert_eq!(all.series.len(), 1);
    assert_eq!(all.series[0].runs[0].series, ["thread0", "thread1"]);
    let (a, b) = (
        all.series[0].runs[0].figures.as_ref().unwrap(),
        all.series[0].runs[1].figures.as_ref().unwrap(),
    );
    assert_eq!(a.samples, 6_000);
    assert_eq!(
        (a.p50_ns, a.p99_ns, a.max_ns),
        (b.p50_ns, b.p99_ns, b.max_ns)
    );
    let v = all.series[0].runs[1].versus_baseline.as_ref().unwrap();
    assert_eq!(v.p99_diff_ns, Some(0));
    assert!(!v.significant, "{}", v.verdict);
}
