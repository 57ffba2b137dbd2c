//! A comparison against a baseline, the gate of a CI farm: each series of
//! each candidate (a run, or a campaign execution's cells) paired with the
//! baseline's, the figures and the bootstrap of `rtlab compare` (the same
//! merged distributions, the same resampling and seeds), and per metric a
//! verdict: regressed when the figure is worse than the baseline's by more
//! than the threshold and, for the p99, the bootstrap interval says the
//! difference is real, so a noisy host's chance alone does not fail CI.

use super::baseline_model::{
    BaselineComparison, BaselineError, BaselineOptions, Check, Pair, Subject, SubjectHeader,
    BASELINE_SCHEMA,
};
use super::compute::{paired_rows, resolve_matching, tag, Row};
use super::merged::{Cell, Merged};
use super::model::{Figures, Matching, Versus};
use super::versus::{percent, versus};
use crate::budget::Metric;
use crate::text::{status_text, us1};
use rtlab_core::result::{RunResult, RunStatus, SeriesStats};
use rtlab_stats::bootstrap::Rng;

/// The most unpaired series an error names (then "and N more").
const MAX_NAMED: usize = 8;

/// One pairing row: the cell and series, and each subject's entry (None
/// where the subject lacks it).
struct Keyed {
    /// The campaign cell (None for single runs).
    cell: Option<(String, String)>,
    series: String,
    /// Per subject: its series in the row (runs) or the runs folded into
    /// it (executions), and the merged distribution.
    entries: Vec<Option<Cell>>,
}

impl Keyed {
    fn name(&self) -> String {
        match &self.cell {
            Some((configuration, load)) => format!("{configuration} / {load} / {}", self.series),
            None => self.series.clone(),
        }
    }
}

/// Compares each candidate with the baseline (see the module's doc).
/// Every series must pair: one missing on either side is bad input, named.
pub fn against_baseline(
    baseline: &Subject,
    candidates: &[Subject],
    opts: &BaselineOptions,
) -> Result<BaselineComparison, BaselineError> {
    opts.validate().map_err(BaselineError::Options)?;
    check_subjects(baseline, candidates)?;
    let subjects: Vec<&Subject> = std::iter::once(baseline).chain(candidates).collect();
    let headers: Vec<SubjectHeader> = subjects
        .iter()
        .enumerate()
        .map(|(i, s)| header(i, s, &subjects[0].runs))
        .collect();
    let mut notes = Vec::new();
    let (rows, matching) = match baseline.execution {
        Some(_) => (cell_rows(&subjects), "campaign_cells".to_string()),
        None => {
            let runs: Vec<RunResult> = subjects.iter().map(|s| s.runs[0].clone()).collect();
            let matching = resolve_matching(&runs, opts.matching, &mut notes);
            let rows = paired_rows(&runs, matching, &mut notes);
            (run_rows(rows), matching_name(matching).to_string())
        }
    };
    check_paired(&rows, &subjects, &headers)?;
    let mut pairs = Vec::new();
    for row in &rows {
        pairs.extend(judge_row(row, &subjects, &headers, opts)?);
    }
    notes.extend(subject_notes(&subjects, &headers));
    let regressed = pairs.iter().filter(|p| p.regressed).count();
    let metrics: Vec<&'static str> = opts.metrics.iter().map(|m| m.name()).collect();
    let beyond = format!("{}% ({})", opts.threshold_percent, metrics.join(", "));
    let verdict = match regressed {
        0 => format!(
            "no pair regressed beyond {beyond}: {} pair{} compared",
            pairs.len(),
            if pairs.len() == 1 { "" } else { "s" }
        ),
        n => format!("{n} of {} pairs regressed beyond {beyond}", pairs.len()),
    };
    let mut headers = headers.into_iter();
    Ok(BaselineComparison {
        schema: BASELINE_SCHEMA.to_string(),
        metrics,
        threshold_percent: opts.threshold_percent,
        confidence: opts.compare.confidence,
        resamples: opts.compare.resamples,
        seed: opts.compare.seed,
        matching,
        baseline: headers.next().expect("the baseline's header"),
        candidates: headers.collect(),
        pairs,
        regressed,
        verdict,
        notes,
    })
}

fn matching_name(matching: Matching) -> &'static str {
    match matching {
        Matching::Auto => "auto",
        Matching::ByName => "by_name",
        Matching::All => "all",
    }
}

fn kind(subject: &Subject) -> &'static str {
    match subject.execution {
        Some(_) => "a campaign execution",
        None => "a run",
    }
}

/// Candidates of the baseline's kind, none of them the baseline itself.
fn check_subjects(baseline: &Subject, candidates: &[Subject]) -> Result<(), BaselineError> {
    if candidates.is_empty() {
        return Err(BaselineError::NoCandidate);
    }
    for subject in std::iter::once(baseline).chain(candidates) {
        if subject.runs.is_empty() || (subject.execution.is_none() && subject.runs.len() != 1) {
            return Err(BaselineError::Options(format!(
                "{}: {} runs for {}",
                subject.reference,
                subject.runs.len(),
                kind(subject)
            )));
        }
    }
    for candidate in candidates {
        if candidate.execution.is_some() != baseline.execution.is_some() {
            return Err(BaselineError::Kinds {
                baseline: baseline.reference.clone(),
                baseline_kind: kind(baseline),
                candidate: candidate.reference.clone(),
                candidate_kind: kind(candidate),
            });
        }
        let same = match (&candidate.execution, &baseline.execution) {
            (Some(c), Some(b)) => (c == b).then(|| format!("execution {c}")),
            _ => (candidate.runs[0].id == baseline.runs[0].id)
                .then(|| format!("run {}", candidate.runs[0].id)),
        };
        if let Some(id) = same {
            return Err(BaselineError::SameAsBaseline {
                candidate: candidate.reference.clone(),
                id,
            });
        }
    }
    Ok(())
}

/// The rows of single runs, as `rtlab compare` pairs their series.
fn run_rows(rows: Vec<Row>) -> Vec<Keyed> {
    rows.into_iter()
        .map(|(series, entries)| Keyed {
            cell: None,
            series,
            entries,
        })
        .collect()
}

fn cell_of(run: &RunResult) -> (String, String) {
    run.campaign.as_ref().map_or_else(
        || ("-".to_string(), "-".to_string()),
        |c| (c.configuration.clone(), c.load.clone()),
    )
}

/// The rows of campaign executions: one per configuration × load × series
/// name, in the order they first appear (the baseline's first), each
/// subject's repeats of the cell merged into one distribution.
fn cell_rows(subjects: &[&Subject]) -> Vec<Keyed> {
    let mut keys: Vec<((String, String), String)> = Vec::new();
    for subject in subjects {
        for run in &subject.runs {
            let cell = cell_of(run);
            for series in &run.series {
                let key = (cell.clone(), series.name.clone());
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
    }
    keys.into_iter()
        .map(|(cell, series)| {
            let entries = subjects
                .iter()
                .map(|subject| {
                    let mut ids = Vec::new();
                    let mut stats: Vec<&SeriesStats> = Vec::new();
                    for run in subject.runs.iter().filter(|r| cell_of(r) == cell) {
                        if let Some(s) = run.series.iter().find(|s| s.name == series) {
                            ids.push(run.id.clone());
                            stats.push(&s.stats);
                        }
                    }
                    (!stats.is_empty()).then(|| (ids, Merged::of(&stats)))
                })
                .collect();
            Keyed {
                cell: Some(cell),
                series,
                entries,
            }
        })
        .collect()
}

/// `B (last)`, or `B` when the reference is what the header shows anyway.
fn side(header: &SubjectHeader) -> String {
    let shown = header.execution.as_ref().or(header.runs.first());
    match shown == Some(&header.reference) {
        true => header.tag.clone(),
        false => format!("{} ({})", header.tag, header.reference),
    }
}

/// Every row must have the baseline and every candidate: a series missing
/// on either side is bad input that names them all (up to [`MAX_NAMED`]).
fn check_paired(
    rows: &[Keyed],
    subjects: &[&Subject],
    headers: &[SubjectHeader],
) -> Result<(), BaselineError> {
    let mut missing = Vec::new();
    for row in rows {
        if row.entries[0].is_none() {
            let having: Vec<String> = (1..subjects.len())
                .filter(|&i| row.entries[i].is_some())
                .map(|i| side(&headers[i]))
                .collect();
            missing.push(format!(
                "{} of {} is not in the baseline {}",
                row.name(),
                having.join(", "),
                side(&headers[0])
            ));
            continue;
        }
        for i in (1..subjects.len()).filter(|&i| row.entries[i].is_none()) {
            missing.push(format!(
                "{} of the baseline {} is missing in {}",
                row.name(),
                side(&headers[0]),
                side(&headers[i])
            ));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let total = missing.len();
    let mut text = missing
        .into_iter()
        .take(MAX_NAMED)
        .collect::<Vec<_>>()
        .join("; ");
    if total > MAX_NAMED {
        text.push_str(&format!("; and {} more", total - MAX_NAMED));
    }
    let hint = match subjects[0].execution {
        Some(_) => "compare executions of the same campaign plan",
        None => "compare runs with the same series, or merge each run's series with --match all",
    };
    Err(BaselineError::Unpaired(format!(
        "unpaired series: {text}: {hint}"
    )))
}

/// The pairs of one row: each candidate against the baseline.
fn judge_row(
    row: &Keyed,
    subjects: &[&Subject],
    headers: &[SubjectHeader],
    opts: &BaselineOptions,
) -> Result<Vec<Pair>, BaselineError> {
    let name = row.name();
    // Drawn as `rtlab compare` draws them: the same seed, name and
    // position give the same interval.
    let draws: Vec<Option<Vec<u64>>> = row
        .entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let (_, merged) = entry.as_ref()?;
            let mut rng = Rng::for_series(opts.compare.seed, &name, i);
            merged
                .distribution
                .resampled_p99(&mut rng, opts.compare.resamples)
        })
        .collect();
    let (base_ids, base) = row.entries[0].as_ref().expect("checked paired");
    let folded = |ids: &[String]| match row.cell {
        Some(_) => ids.len(),
        None => 1,
    };
    let mut pairs = Vec::new();
    for i in 1..subjects.len() {
        let (ids, candidate) = row.entries[i].as_ref().expect("checked paired");
        let versus = versus(
            &base.figures,
            &candidate.figures,
            draws[0].as_deref(),
            draws[i].as_deref(),
            &opts.compare,
            &headers[0].tag,
            &headers[i].tag,
        );
        let sides = [
            format!("the baseline {}", side(&headers[0])),
            side(&headers[i]),
        ];
        let checks = opts
            .metrics
            .iter()
            .map(|m| {
                check(
                    *m,
                    &name,
                    &base.figures,
                    &candidate.figures,
                    &versus,
                    opts,
                    &sides,
                )
            })
            .collect::<Result<Vec<Check>, BaselineError>>()?;
        pairs.push(Pair {
            candidate: headers[i].tag.clone(),
            name: name.clone(),
            configuration: row.cell.as_ref().map(|c| c.0.clone()),
            load: row.cell.as_ref().map(|c| c.1.clone()),
            series: row.series.clone(),
            baseline_runs: folded(base_ids),
            candidate_runs: folded(ids),
            baseline_figures: base.figures.clone(),
            candidate_figures: candidate.figures.clone(),
            regressed: checks.iter().any(|c| c.regressed),
            versus,
            checks,
        });
    }
    Ok(pairs)
}

/// The value of `metric` in `f`: ns for latencies, missed deadlines per
/// million planned wake-ups for `missed`; None when unknown.
fn value(metric: Metric, f: &Figures) -> Option<f64> {
    let ns = match metric {
        Metric::P50 => f.p50_ns,
        Metric::P90 => f.p90_ns,
        Metric::P99 => f.p99_ns,
        Metric::P99_9 => f.p99_9_ns,
        Metric::P99_99 => f.p99_99_ns,
        Metric::Max => f.max_ns,
        Metric::Missed => {
            let planned = f.samples.saturating_add(f.missed);
            return (planned > 0).then(|| f.missed as f64 * 1e6 / planned as f64);
        }
        _ => None,
    };
    ns.map(|ns| ns as f64)
}

fn value_text(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Missed => format!("{value:.1}/M"),
        _ => format!("{} µs", us1(value)),
    }
}

/// One metric of one pair judged (see the module's doc).
fn check(
    metric: Metric,
    name: &str,
    base: &Figures,
    candidate: &Figures,
    versus: &Versus,
    opts: &BaselineOptions,
    sides: &[String; 2],
) -> Result<Check, BaselineError> {
    let unit = match metric {
        Metric::Missed => "per_million",
        _ => "ns",
    };
    let unknown = |side: &str, figures: &Figures| BaselineError::Unknown {
        metric: metric.name(),
        cell: name.to_string(),
        side: side.to_string(),
        why: match figures.samples {
            0 => "it has no samples".to_string(),
            _ => "it has no histogram (a cyclictest JSON written without -h)".to_string(),
        },
    };
    let b = value(metric, base).ok_or_else(|| unknown(&sides[0], base))?;
    if candidate.samples == 0 {
        // A candidate that measured nothing (a failed run) never passes.
        return Ok(Check {
            metric: metric.name(),
            unit,
            baseline: b,
            candidate: 0.0,
            change_percent: None,
            significant: None,
            regressed: true,
            reason: format!("no samples in {}: nothing was measured", sides[1]),
            verdict: format!(
                "regressed: no samples in {}: nothing was measured",
                sides[1]
            ),
        });
    }
    let c = value(metric, candidate).ok_or_else(|| unknown(&sides[1], candidate))?;
    let change = match (b, c) {
        (b, c) if b > 0.0 => Some((c - b) / b * 100.0),
        (_, c) if c > 0.0 => None,
        _ => Some(0.0),
    };
    let beyond = change.is_none_or(|p| p > opts.threshold_percent);
    let threshold = format!("{}%", opts.threshold_percent);
    let interval = match (metric, versus.p99_diff_ci_ns) {
        (Metric::P99, Some([lo, hi])) => Some((lo, hi)),
        _ => None,
    };
    let ci_text = |lo: i64, hi: i64| {
        format!(
            "{} CI {}…{} µs",
            percent(opts.compare.confidence),
            us1(lo as f64),
            us1(hi as f64)
        )
    };
    let (regressed, reason) = match (beyond, interval) {
        (false, _) if change.is_some_and(|p| p < 0.0) => (false, "lower".to_string()),
        (false, _) => (false, format!("within {threshold}")),
        (true, Some((lo, hi))) if lo > 0 => (
            true,
            format!("beyond {threshold}, significant ({})", ci_text(lo, hi)),
        ),
        (true, Some((lo, hi))) => (
            false,
            format!(
                "beyond {threshold} but not significant ({})",
                ci_text(lo, hi)
            ),
        ),
        (true, None) if change.is_none() => (true, "from 0 (not tested)".to_string()),
        (true, None) => (true, format!("beyond {threshold} (not tested)")),
    };
    let change_text = change.map_or_else(String::new, |p| format!(" ({p:+.1}%)"));
    Ok(Check {
        metric: metric.name(),
        unit,
        baseline: b,
        candidate: c,
        change_percent: change,
        significant: interval.map(|(lo, hi)| lo > 0 || hi < 0),
        regressed,
        verdict: format!(
            "{}: {} {} → {}{change_text}, {reason}",
            if regressed { "regressed" } else { "ok" },
            metric.name(),
            value_text(metric, b),
            value_text(metric, c)
        ),
        reason,
    })
}

/// Each host once, in the order of the runs; `unknown` for a run without
/// a hostname.
fn hosts(runs: &[RunResult]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for run in runs {
        let host = run.environment.hostname.as_deref().unwrap_or("unknown");
        if !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_string());
        }
    }
    hosts
}

fn header(index: usize, subject: &Subject, baseline_runs: &[RunResult]) -> SubjectHeader {
    let mut own = hosts(&subject.runs);
    let mut base = hosts(baseline_runs);
    let shown = own.clone();
    own.sort();
    base.sort();
    SubjectHeader {
        tag: tag(index),
        reference: subject.reference.clone(),
        kind: match subject.execution {
            Some(_) => "execution",
            None => "run",
        },
        campaign: subject
            .runs
            .iter()
            .find_map(|r| r.campaign.as_ref().map(|c| c.name.clone())),
        execution: subject.execution.clone(),
        runs: subject.runs.iter().map(|r| r.id.clone()).collect(),
        hosts: shown,
        other_host: index > 0 && own != base,
    }
}

/// Notes on the subjects: candidates from other hosts, runs that did not
/// complete.
fn subject_notes(subjects: &[&Subject], headers: &[SubjectHeader]) -> Vec<String> {
    let mut notes = Vec::new();
    for h in headers.iter().filter(|h| h.other_host) {
        notes.push(format!(
            "{} was measured on {}, the baseline {} on {}: other hosts, so hardware, kernel and \
             tuning may differ as well as what changed",
            side(h),
            h.hosts.join(", "),
            side(&headers[0]),
            headers[0].hosts.join(", ")
        ));
    }
    for (subject, h) in subjects.iter().zip(headers) {
        for run in subject
            .runs
            .iter()
            .filter(|r| r.status != RunStatus::Complete)
        {
            notes.push(format!(
                "{}: run {} is {}: its figures cover what it measured",
                side(h),
                run.id,
                status_text(run.status)
            ));
        }
    }
    notes
}
