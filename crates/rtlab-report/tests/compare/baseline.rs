//! Against a baseline: a clear regression regresses, a difference within
//! the threshold does not, chance alone (a difference beyond the threshold
//! that the bootstrap calls not significant) does not; campaign executions
//! pair by their cells, repeats folded; what cannot pair is named.

use super::{run, series, stats_of, Data};
use rtlab_core::result::{CampaignRef, RunResult, RunStatus, SeriesStats};
use rtlab_report::budget::Metric;
use rtlab_report::compare::{
    against_baseline, baseline_markdown, baseline_table, parse_metrics, parse_threshold,
    BaselineError, BaselineOptions, CompareOptions, Subject,
};

fn single(id: &str, stats: SeriesStats) -> Subject {
    Subject::run(id, run(id, vec![series("cpu0", stats)]))
}

fn with_metrics(metrics: &[Metric]) -> BaselineOptions {
    BaselineOptions {
        metrics: metrics.to_vec(),
        ..BaselineOptions::default()
    }
}

#[test]
fn a_clear_regression_regresses() {
    let mut data = Data(21);
    let a = single("A", stats_of(&data.latencies(20_000, 0)));
    let b = single("B", stats_of(&data.latencies(20_000, 10_000)));
    let c = against_baseline(&a, std::slice::from_ref(&b), &BaselineOptions::default()).unwrap();
    assert_eq!(c.regressed, 1);
    let check = &c.pairs[0].checks[0];
    assert!(check.regressed);
    assert_eq!(check.significant, Some(true));
    assert!(check.change_percent.unwrap() > 10.0, "{check:?}");
    assert!(
        check.verdict.starts_with("regressed: p99 ") && check.verdict.contains("significant"),
        "{}",
        check.verdict
    );
    assert_eq!(c.verdict, "1 of 1 pairs regressed beyond 10% (p99)");
    assert!(baseline_table(&c).contains("REGRESSED beyond 10%, significant"));
    assert!(baseline_markdown(&c).contains("REGRESSED"));
    // The other way round it is better, and passes.
    let c = against_baseline(&b, &[a], &BaselineOptions::default()).unwrap();
    assert_eq!(c.regressed, 0);
    assert!(
        c.pairs[0].checks[0].verdict.ends_with(", lower"),
        "{:?}",
        c.pairs[0].checks
    );
}

#[test]
fn a_significant_difference_within_the_threshold_passes() {
    let mut data = Data(22);
    let base = stats_of(&data.latencies(20_000, 0));
    // About +2 µs on a p99 of about 34 µs: real, but under 10%.
    let shifted = stats_of(&data.latencies(20_000, 2_000));
    let (a, b) = (single("A", base), single("B", shifted));
    let c = against_baseline(&a, std::slice::from_ref(&b), &BaselineOptions::default()).unwrap();
    let check = &c.pairs[0].checks[0];
    assert_eq!(check.significant, Some(true), "{check:?}");
    assert!(!check.regressed, "{check:?}");
    assert!(check.verdict.ends_with("within 10%"), "{}", check.verdict);
    // The same pair fails a 1% gate.
    let strict = BaselineOptions {
        threshold_percent: 1.0,
        ..BaselineOptions::default()
    };
    assert_eq!(against_baseline(&a, &[b], &strict).unwrap().regressed, 1);
}

/// Two runs of 100 samples whose p99s (the second largest) differ by 20%
/// by chance: beyond the threshold, but the interval holds 0.
#[test]
fn noise_beyond_the_threshold_that_is_not_significant_passes() {
    let few = |second: u64| {
        let mut values = vec![20_000; 98];
        values.extend([second, 40_000]);
        stats_of(&values)
    };
    let a = single("A", few(30_000));
    let b = single("B", few(36_000));
    let c = against_baseline(&a, std::slice::from_ref(&b), &BaselineOptions::default()).unwrap();
    let check = &c.pairs[0].checks[0];
    // 20%, within the HDR histogram's 3 significant digits.
    let change = check.change_percent.unwrap();
    assert!((19.5..20.5).contains(&change), "{change}");
    assert_eq!(check.significant, Some(false), "{check:?}");
    assert!(!check.regressed);
    assert!(
        check.verdict.contains("beyond 10% but not significant"),
        "{}",
        check.verdict
    );
    assert_eq!(c.regressed, 0);
    // Untested (no resamples), the same difference is a regression.
    let untested = BaselineOptions {
        compare: CompareOptions {
            resamples: 0,
            ..CompareOptions::default()
        },
        ..BaselineOptions::default()
    };
    let c = against_baseline(&a, &[b], &untested).unwrap();
    assert!(c.pairs[0].checks[0]
        .verdict
        .ends_with("beyond 10% (not tested)"));
    assert_eq!(c.regressed, 1);
}

#[test]
fn same_distribution_pairs_rarely_fail_even_a_zero_threshold() {
    let mut data = Data(2026);
    let opts = BaselineOptions {
        threshold_percent: 0.0,
        compare: CompareOptions {
            resamples: 1000,
            ..CompareOptions::default()
        },
        ..BaselineOptions::default()
    };
    let (mut higher, mut failed) = (0, 0);
    for _ in 0..60 {
        let a = single("A", stats_of(&data.latencies(4_000, 0)));
        let b = single("B", stats_of(&data.latencies(4_000, 0)));
        let c = against_baseline(&a, &[b], &opts).unwrap();
        higher += usize::from(c.pairs[0].checks[0].change_percent.unwrap() > 0.0);
        failed += c.regressed;
    }
    // About half are higher by chance; a 95% interval lets about 1 in 40
    // of all pairs through as significantly higher.
    assert!(higher >= 15, "{higher} of 60 higher");
    assert!(failed <= 6, "{failed} of 60 same-distribution pairs failed");
}

#[test]
fn missed_deadlines_from_zero_regress_and_max_is_judged_untested() {
    let mut data = Data(23);
    let values = data.latencies(10_000, 0);
    let a = single("A", stats_of(&values));
    let mut worse = stats_of(&values);
    worse.missed = 3;
    worse.max_ns *= 2;
    let b = single("B", worse);
    let opts = with_metrics(&[Metric::P99, Metric::Max, Metric::Missed]);
    let c = against_baseline(&a, &[b], &opts).unwrap();
    let checks = &c.pairs[0].checks;
    assert_eq!(
        checks.iter().map(|c| c.metric).collect::<Vec<_>>(),
        ["p99", "max", "missed"]
    );
    assert!(!checks[0].regressed, "{:?}", checks[0]);
    assert!(checks[1].regressed && checks[1].significant.is_none());
    assert_eq!(checks[1].change_percent, Some(100.0));
    assert!(checks[2].regressed && checks[2].change_percent.is_none());
    assert_eq!(checks[2].unit, "per_million");
    assert!(
        checks[2]
            .verdict
            .starts_with("regressed: missed 0.0/M → 299.9/M, from 0 (not tested)"),
        "{}",
        checks[2].verdict
    );
    assert!(c.pairs[0].regressed);
    assert_eq!(c.regressed, 1);
}

#[test]
fn a_candidate_that_measured_nothing_regresses() {
    let mut data = Data(24);
    let a = single("A", stats_of(&data.latencies(1_000, 0)));
    let mut failed = run("B", vec![series("cpu0", SeriesStats::default())]);
    failed.status = RunStatus::Failed;
    let b = Subject::run("last", failed);
    let c = against_baseline(&a, &[b], &BaselineOptions::default()).unwrap();
    assert_eq!(c.regressed, 1);
    assert!(c.pairs[0].checks[0]
        .verdict
        .contains("no samples in B (last)"));
    assert!(
        c.notes.iter().any(|n| n.contains("run B is failed")),
        "{:?}",
        c.notes
    );
}

/// A campaign run: `configuration / load`, repeat `repeat`.
fn cell_run(id: &str, execution: &str, cell: (&str, &str, u32), stats: SeriesStats) -> RunResult {
    let mut r = run(id, vec![series("cpu0", stats)]);
    r.campaign = Some(CampaignRef {
        name: "fleet".into(),
        execution: execution.into(),
        index: 1,
        total: 4,
        configuration: cell.0.into(),
        load: cell.1.into(),
        repeat: cell.2,
    });
    r
}

#[test]
fn executions_pair_by_cell_with_repeats_folded() {
    let mut data = Data(25);
    let mut execution = |name: &str, loaded_shift: u64| {
        let runs = (1..=2)
            .flat_map(|repeat| {
                [
                    cell_run(
                        &format!("{name}-idle-{repeat}"),
                        name,
                        ("promoted", "idle", repeat),
                        stats_of(&data.latencies(5_000, 0)),
                    ),
                    cell_run(
                        &format!("{name}-io-{repeat}"),
                        name,
                        ("promoted", "io", repeat),
                        stats_of(&data.latencies(5_000, loaded_shift)),
                    ),
                ]
            })
            .collect();
        Subject::execution(name, name, runs)
    };
    let a = execution("EA", 0);
    let b = execution("EB", 20_000);
    let c = against_baseline(&a, &[b], &BaselineOptions::default()).unwrap();
    assert_eq!(c.matching, "campaign_cells");
    let names: Vec<&str> = c.pairs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["promoted / idle / cpu0", "promoted / io / cpu0"]);
    assert!(c
        .pairs
        .iter()
        .all(|p| p.baseline_runs == 2 && p.candidate_runs == 2));
    assert_eq!(c.pairs[0].baseline_figures.samples, 10_000);
    assert!(!c.pairs[0].regressed, "{:?}", c.pairs[0].checks);
    assert!(c.pairs[1].regressed, "{:?}", c.pairs[1].checks);
    assert_eq!(c.regressed, 1);
}

#[test]
fn what_cannot_pair_is_bad_input_named() {
    let mut data = Data(26);
    let runs = |execution: &str, loads: &[&str], data: &mut Data| {
        loads
            .iter()
            .map(|load| {
                cell_run(
                    &format!("{execution}-{load}"),
                    execution,
                    ("promoted", load, 1),
                    stats_of(&data.latencies(500, 0)),
                )
            })
            .collect::<Vec<_>>()
    };
    let a = Subject::execution("EA", "EA", runs("EA", &["idle", "io"], &mut data));
    let b = Subject::execution("fleet", "EB", runs("EB", &["idle", "net"], &mut data));
    let err = against_baseline(&a, &[b], &BaselineOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, BaselineError::Unpaired(_)));
    assert!(
        text.contains("promoted / io / cpu0 of the baseline A is missing in B (fleet)"),
        "{text}"
    );
    assert!(
        text.contains("promoted / net / cpu0 of B (fleet) is not in the baseline A"),
        "{text}"
    );

    let one = single("R1", stats_of(&data.latencies(500, 0)));
    let a = Subject::execution("EA", "EA", runs("EA", &["idle"], &mut data));
    let err =
        against_baseline(&a, std::slice::from_ref(&one), &BaselineOptions::default()).unwrap_err();
    assert!(matches!(err, BaselineError::Kinds { .. }), "{err}");
    let err = against_baseline(
        &one,
        std::slice::from_ref(&one),
        &BaselineOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "R1 is the baseline itself (run R1): give another run or execution"
    );
    let err = against_baseline(&one, &[], &BaselineOptions::default()).unwrap_err();
    assert_eq!(err, BaselineError::NoCandidate);

    let two = Subject::run("R2", run("R2", vec![series("cpu1", stats_of(&[1, 2]))]));
    let opts = BaselineOptions {
        matching: rtlab_report::compare::Matching::ByName,
        ..BaselineOptions::default()
    };
    let err = against_baseline(&one, &[two], &opts).unwrap_err();
    assert!(
        err.to_string()
            .contains("cpu0 of the baseline A is missing in B; cpu1 of B is not in the baseline A"),
        "{err}"
    );
}

#[test]
fn another_host_is_allowed_and_said() {
    let mut data = Data(27);
    let mut a = run(
        "A",
        vec![series("cpu0", stats_of(&data.latencies(2_000, 0)))],
    );
    a.environment.hostname = Some("fleet-a".into());
    let mut b = run(
        "B",
        vec![series("cpu0", stats_of(&data.latencies(2_000, 0)))],
    );
    b.environment.hostname = Some("fleet-b".into());
    // Plain compare says it too.
    let plain = rtlab_report::compare::compare(&[a.clone(), b.clone()], &CompareOptions::default());
    assert!(
        plain
            .notes
            .iter()
            .any(|n| n
                .starts_with("the runs were measured on different hosts (A fleet-a, B fleet-b)")),
        "{:?}",
        plain.notes
    );
    let c = against_baseline(
        &Subject::run("A", a),
        &[Subject::run("B", b)],
        &BaselineOptions::default(),
    )
    .unwrap();
    assert!(c.candidates[0].other_host && !c.baseline.other_host);
    assert!(
        c.notes[0].starts_with("B was measured on fleet-b, the baseline A on fleet-a"),
        "{:?}",
        c.notes
    );
    assert!(baseline_table(&c).contains("host fleet-b  (another host than the baseline)"));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["schema"], "rtlab.baseline/1");
    assert_eq!(
        json["candidates"][0]["hosts"],
        serde_json::json!(["fleet-b"])
    );
    assert!(json["pairs"][0]["checks"][0].get("reason").is_none());
}

#[test]
fn thresholds_and_metrics_parse_or_say_why() {
    assert_eq!(parse_threshold("10"), Ok(10.0));
    assert_eq!(parse_threshold("2.5 %"), Ok(2.5));
    assert!(parse_threshold("-1")
        .unwrap_err()
        .contains("between 0% and"));
    assert!(parse_threshold("ten")
        .unwrap_err()
        .contains("not a percentage"));
    assert!(parse_threshold("NaN%").is_err());
    assert_eq!(
        parse_metrics("p99.9,max,missed"),
        Ok(vec![Metric::P99_9, Metric::Max, Metric::Missed])
    );
    assert!(parse_metrics("p99,p99").unwrap_err().contains("twice"));
    assert!(parse_metrics("mean")
        .unwrap_err()
        .contains("expected one or more of p50, p90, p99, p99.9, p99.99, max, missed"));
}
