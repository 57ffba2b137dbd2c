//! Computing a comparison: series paired across runs, merged, their
//! figures and each run's difference from the baseline.

use super::merged::{Cell, Merged};
use super::model::{
    CompareOptions, Comparison, Matching, Ratios, RunHeader, RunSeries, SeriesComparison, Versus,
    COMPARE_SCHEMA, MAX_RESAMPLES,
};
use super::versus::versus;
use rtlab_core::result::{RunResult, SeriesStats};
use rtlab_stats::bootstrap::Rng;
use std::fmt::Write;

/// Compares `runs` (the first is the baseline), pairing series with
/// [`Matching::Auto`].
pub fn compare(runs: &[RunResult], opts: &CompareOptions) -> Comparison {
    compare_matching(runs, opts, Matching::Auto)
}

/// Compares `runs` (the first is the baseline), pairing series as asked.
pub fn compare_matching(
    runs: &[RunResult],
    opts: &CompareOptions,
    matching: Matching,
) -> Comparison {
    let mut notes = Vec::new();
    let opts = usable_options(opts, &mut notes);
    let headers: Vec<RunHeader> = runs.iter().enumerate().map(|(i, r)| header(i, r)).collect();
    let matching = resolve_matching(runs, matching, &mut notes);
    let series = paired_rows(runs, matching, &mut notes)
        .into_iter()
        .map(|(name, per_run)| compare_row(name, &per_run, runs, &headers, &opts, &mut notes))
        .collect();
    resolution_notes(&headers, &mut notes);
    host_note(&headers, &mut notes);

    Comparison {
        schema: COMPARE_SCHEMA.to_string(),
        baseline: runs.first().map(|r| r.id.clone()).unwrap_or_default(),
        confidence: opts.confidence,
        resamples: opts.resamples,
        seed: opts.seed,
        matching,
        runs: headers,
        series,
        notes,
    }
}

/// `opts`, or where they make no sense the nearest that do, with a note
/// saying what was used instead.
fn usable_options(opts: &CompareOptions, notes: &mut Vec<String>) -> CompareOptions {
    let mut opts = *opts;
    if let Err(e) = opts.validate() {
        if !(opts.confidence > 0.0 && opts.confidence < 1.0) {
            opts.confidence = CompareOptions::default().confidence;
        }
        opts.resamples = opts.resamples.min(MAX_RESAMPLES);
        notes.push(format!(
            "{e}: used confidence {} and {} resamples",
            opts.confidence, opts.resamples
        ));
    }
    opts
}

/// [`Matching::Auto`] resolved to `by_name` or `all`, with a note where
/// the pairing is not the obvious one.
pub(super) fn resolve_matching(
    runs: &[RunResult],
    matching: Matching,
    notes: &mut Vec<String>,
) -> Matching {
    match matching {
        Matching::Auto => {
            let singles = runs.len() >= 2 && runs.iter().all(|r| r.series.len() == 1);
            let first = runs.first().and_then(|r| r.series.first()).map(|s| &s.name);
            if singles && runs.iter().any(|r| Some(&r.series[0].name) != first) {
                let names: Vec<String> = runs.iter().map(|r| r.series[0].name.clone()).collect();
                notes.push(format!(
                    "each run has a single series, named differently ({}): they are compared \
                     with each other, as 'all'",
                    names.join(", ")
                ));
                Matching::All
            } else {
                Matching::ByName
            }
        }
        m => {
            if m == Matching::All && runs.iter().any(|r| r.series.len() > 1) {
                notes.push(
                    "'all': each run's series are merged into one distribution (counts and \
                     histograms added; min, max and percentiles over all of them)"
                        .to_string(),
                );
            }
            m
        }
    }
}

/// A row of the comparison: the series' name and, per run, its entry
/// (None where the run lacks the series).
pub(super) type Row = (String, Vec<Option<Cell>>);

/// The rows, series paired across runs as `matching` (resolved) says.
pub(super) fn paired_rows(
    runs: &[RunResult],
    matching: Matching,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    if matching == Matching::All {
        let per_run = runs
            .iter()
            .map(|r| {
                let stats: Vec<&SeriesStats> = r.series.iter().map(|s| &s.stats).collect();
                (!stats.is_empty()).then(|| {
                    (
                        r.series.iter().map(|s| s.name.clone()).collect(),
                        Merged::of(&stats),
                    )
                })
            })
            .collect();
        return vec![("all".to_string(), per_run)];
    }
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for s in &r.series {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
    }
    let shared = names
        .iter()
        .filter(|n| runs.iter().all(|r| r.series.iter().any(|s| s.name == **n)))
        .count();
    if runs.len() >= 2 && shared == 0 && !names.is_empty() {
        notes.push(
            "no series name is in every run, so nothing is compared with anything: \
             match 'all' to merge each run's series into one"
                .to_string(),
        );
    }
    names
        .into_iter()
        .map(|name| {
            let per_run = runs
                .iter()
                .map(|r| {
                    r.series
                        .iter()
                        .find(|s| s.name == name)
                        .map(|s| (vec![s.name.clone()], Merged::of(&[&s.stats])))
                })
                .collect();
            (name.to_string(), per_run)
        })
        .collect()
}

/// One row compared: each run's figures and, but for the baseline, how it
/// differs from the baseline's.
fn compare_row(
    name: String,
    per_run: &[Option<Cell>],
    runs: &[RunResult],
    headers: &[RunHeader],
    opts: &CompareOptions,
    notes: &mut Vec<String>,
) -> SeriesComparison {
    metrics_note(&name, per_run, runs, notes);
    let draws: Vec<Option<Vec<u64>>> = per_run
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let (_, merged) = entry.as_ref()?;
            let mut rng = Rng::for_series(opts.seed, &name, i);
            merged.distribution.resampled_p99(&mut rng, opts.resamples)
        })
        .collect();
    let base = per_run.first().and_then(|e| e.as_ref());
    let mut entries = Vec::with_capacity(per_run.len());
    for (i, entry) in per_run.iter().enumerate() {
        let run_id = runs[i].id.clone();
        let Some((names, merged)) = entry else {
            entries.push(RunSeries {
                run: run_id,
                series: Vec::new(),
                figures: None,
                versus_baseline: None,
            });
            continue;
        };
        let figures = merged.figures.clone();
        let versus = if i == 0 {
            None
        } else {
            Some(match base {
                None => Versus {
                    ratios: Ratios::default(),
                    p99_diff_ns: None,
                    p99_diff_ci_ns: None,
                    significant: false,
                    verdict: "missing in the baseline".to_string(),
                },
                Some((_, b)) => versus(
                    &b.figures,
                    &figures,
                    draws[0].as_deref(),
                    draws[i].as_deref(),
                    opts,
                    &headers[0].tag,
                    &headers[i].tag,
                ),
            })
        };
        entries.push(RunSeries {
            run: run_id,
            series: names.clone(),
            figures: Some(figures),
            versus_baseline: versus,
        });
    }
    SeriesComparison {
        name,
        runs: entries,
    }
}

/// A note when a row pairs series of different metrics (they should agree
/// within a row).
fn metrics_note(name: &str, per_run: &[Option<Cell>], runs: &[RunResult], notes: &mut Vec<String>) {
    let metrics: Vec<&str> = per_run
        .iter()
        .zip(runs)
        .filter_map(|(entry, run)| {
            let (names, _) = entry.as_ref()?;
            run.series
                .iter()
                .find(|s| names.contains(&s.name))
                .map(|s| s.metric.as_str())
        })
        .collect();
    if metrics.windows(2).any(|w| w[0] != w[1]) {
        let mut distinct = metrics.clone();
        distinct.dedup();
        notes.push(format!(
            "series {name} compares different metrics ({})",
            distinct.join(", ")
        ));
    }
}

/// Notes on what makes figures less comparable than they look: resolutions
/// that differ make small differences meaningless, and cyclictest does not
/// count missed deadlines.
fn resolution_notes(headers: &[RunHeader], notes: &mut Vec<String>) {
    let finest = headers.iter().map(|h| h.resolution_ns).min().unwrap_or(1);
    for h in headers {
        if h.resolution_ns > finest {
            notes.push(format!(
                "{} has {} resolution ({}): its latencies are truncated, so they read up to \
                 that much lower than the same latencies measured at {}; smaller differences \
                 against it mean nothing",
                h.tag,
                resolution_text(h.resolution_ns),
                h.probe,
                resolution_text(finest)
            ));
        }
    }
    if headers.iter().any(|h| h.probe == "cyclictest")
        && headers.iter().any(|h| h.probe != "cyclictest")
    {
        notes.push(
            "cyclictest does not count missed deadlines: its missed = 0 means unknown, and a \
             wake-up that skipped periods is one sample there"
                .to_string(),
        );
    }
}

/// A note when the runs come from more than one host (a fleet in one
/// store): each run's host, since hardware, kernel and tuning may differ
/// as well as what the comparison is about.
fn host_note(headers: &[RunHeader], notes: &mut Vec<String>) {
    let host = |h: &RunHeader| h.host.clone().unwrap_or_else(|| "unknown".into());
    let first = headers.first().map(host);
    if headers.iter().all(|h| Some(host(h)) == first) {
        return;
    }
    let each: Vec<String> = headers
        .iter()
        .map(|h| format!("{} {}", h.tag, host(h)))
        .collect();
    notes.push(format!(
        "the runs were measured on different hosts ({}): hardware, kernel and tuning may \
         differ as well",
        each.join(", ")
    ));
}

fn resolution_text(ns: u64) -> String {
    match ns {
        1 => "1 ns".to_string(),
        n if n % 1000 == 0 => format!("{} µs", n / 1000),
        n => format!("{n} ns"),
    }
}

/// `A`, `B`, ..., `Z`, then `R27`, `R28`, ...
pub(super) fn tag(index: usize) -> String {
    if index < 26 {
        char::from(b'A' + index as u8).to_string()
    } else {
        format!("R{}", index + 1)
    }
}

fn header(index: usize, run: &RunResult) -> RunHeader {
    let label = if let Some(c) = &run.campaign {
        let mut label = format!("{} / {}", c.configuration, c.load);
        if c.repeat > 1 {
            let _ = write!(label, " #{}", c.repeat);
        }
        label
    } else if let Some(from) = run.config.get("imported_from").and_then(|v| v.as_str()) {
        format!("imported from {from}")
    } else if !run.command.is_empty() {
        let mut words = run.command.clone();
        if let Some(program) = words.first_mut() {
            if let Some(base) = program.rsplit('/').next() {
                *program = base.to_string();
            }
        }
        words.join(" ")
    } else {
        run.probe.clone()
    };
    RunHeader {
        tag: tag(index),
        id: run.id.clone(),
        probe: run.probe.clone(),
        status: run.status,
        label,
        started_at: run.started_at.clone(),
        host: run.environment.hostname.clone(),
        resolution_ns: run
            .config
            .get("resolution_ns")
            .and_then(|v| v.as_u64())
            .filter(|r| *r > 0)
            .unwrap_or(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_runs_resample_as_fast_and_identical_runs_do_not_differ() {
        // 10^12 samples: the Beta draw does not care.
        let stats = SeriesStats {
            samples: 1_000_000_000_000,
            min_ns: 1_000,
            max_ns: 2_000,
            histogram_ns: vec![[1_000, 989_000_000_000], [2_000, 11_000_000_000]],
            percentiles_ns: rtlab_core::result::Percentiles {
                p99: 2_000,
                ..Default::default()
            },
            ..SeriesStats::default()
        };
        let draws = Merged::of(&[&stats])
            .distribution
            .resampled_p99(&mut Rng::new(1), 2000)
            .unwrap();
        assert!(draws.iter().all(|d| *d == 2_000));
        let run = RunResult {
            series: vec![rtlab_core::result::Series {
                name: "cpu0".into(),
                metric: "wakeup_latency".into(),
                cpu: Some(0),
                interval_ns: 1_000_000,
                thread: rtlab_core::result::ThreadSettings {
                    tid: 1,
                    pinned_cpu: Some(0),
                    requested: crate::import::run::unknown_sched(),
                    actual: None,
                    timer_slack_ns: None,
                },
                stats,
            }],
            ..crate::import::run::imported_run(
                crate::import::Format::CyclictestHistfile,
                "x",
                "2026-11-21T19:30:12.000000Z".into(),
                crate::import::run::unknown_environment("2026-11-21T19:30:12.000000Z"),
                Vec::new(),
                Vec::new(),
            )
        };
        let c = compare(&[run.clone(), run], &CompareOptions::default());
        let v = c.series[0].runs[1].versus_baseline.as_ref().unwrap();
        assert_eq!(v.p99_diff_ci_ns, Some([0, 0]));
        assert_eq!(v.verdict, "p99 equal (95% CI 0.0…0.0 µs): not significant");
    }

    #[test]
    fn runs_are_tagged_by_letter() {
        assert_eq!(tag(0), "A");
        assert_eq!(tag(26), "R27");
    }
}
