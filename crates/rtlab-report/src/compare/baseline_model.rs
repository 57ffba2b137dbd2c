//! What a baseline comparison is asked and what it holds (serialized as
//! `rtlab.baseline/1`): the gate of a CI farm, one verdict per pair of
//! series and metric, and whether any pair regressed beyond a threshold.

use super::model::{CompareOptions, Figures, Matching, Versus};
use crate::budget::Metric;
use rtlab_core::result::RunResult;
use serde::Serialize;

/// Versioned name of the baseline comparison's JSON.
pub const BASELINE_SCHEMA: &str = "rtlab.baseline/1";

/// How much worse than the baseline a figure may be before it counts as a
/// regression, in percent: 10 %, above the run-to-run spread of a quiet
/// host's p99, well below what a lost tuning or a new load does.
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 10.0;

/// The metric judged unless asked otherwise: the p99, stable enough to
/// gate on and the one the bootstrap tests.
pub const DEFAULT_METRIC: Metric = Metric::P99;

/// The largest threshold accepted (10⁶ %: 10 000×, "never" in practice).
pub const MAX_THRESHOLD_PERCENT: f64 = 1_000_000.0;

/// The metrics a baseline comparison judges: those [`Figures`] holds.
/// p99 is the default and the only one with a significance test (the
/// bootstrap of `rtlab compare`); the others are single values.
pub const COMPARED_METRICS: [Metric; 7] = [
    Metric::P50,
    Metric::P90,
    Metric::P99,
    Metric::P99_9,
    Metric::P99_99,
    Metric::Max,
    Metric::Missed,
];

fn compared_names() -> String {
    COMPARED_METRICS
        .iter()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `p99` or `p99,max,missed`: the metrics to judge, each once.
pub fn parse_metrics(text: &str) -> Result<Vec<Metric>, String> {
    let mut metrics = Vec::new();
    for name in text.split(',').map(str::trim) {
        let metric = Metric::lookup(name)
            .filter(|m| COMPARED_METRICS.contains(m))
            .ok_or_else(|| {
                format!(
                    "unknown metric '{name}' (expected one or more of {}, comma-separated)",
                    compared_names()
                )
            })?;
        if metrics.contains(&metric) {
            return Err(format!("metric '{name}' is given twice"));
        }
        metrics.push(metric);
    }
    Ok(metrics)
}

/// `10`, `10%` or `2.5 %`: a threshold in percent.
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim_end();
    let value: f64 = number.parse().map_err(|_| {
        format!("'{text}' is not a percentage (e.g. 10 or 10%: how much worse a figure may be)")
    })?;
    check_threshold(value)?;
    Ok(value)
}

fn check_threshold(value: f64) -> Result<(), String> {
    if !(0.0..=MAX_THRESHOLD_PERCENT).contains(&value) {
        return Err(format!(
            "{value}% is not between 0% and {MAX_THRESHOLD_PERCENT}% (e.g. 10%)"
        ));
    }
    Ok(())
}

/// How a baseline comparison is computed.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineOptions {
    /// What is judged, each pair against each metric.
    pub metrics: Vec<Metric>,
    /// A figure more than this much worse than the baseline's (and, for the
    /// p99, significantly higher) is a regression.
    pub threshold_percent: f64,
    /// The bootstrap's resamples, confidence and seed.
    pub compare: CompareOptions,
    /// How the series of single runs pair (campaign executions pair by
    /// their cells and series names).
    pub matching: Matching,
}

impl Default for BaselineOptions {
    fn default() -> BaselineOptions {
        BaselineOptions {
            metrics: vec![DEFAULT_METRIC],
            threshold_percent: DEFAULT_THRESHOLD_PERCENT,
            compare: CompareOptions::default(),
            matching: Matching::Auto,
        }
    }
}

impl BaselineOptions {
    /// Rejects options that make no sense, saying what is expected.
    pub fn validate(&self) -> Result<(), String> {
        self.compare.validate()?;
        check_threshold(self.threshold_percent).map_err(|e| format!("threshold {e}"))?;
        if self.metrics.is_empty() {
            return Err(format!(
                "no metric to judge (one or more of {})",
                compared_names()
            ));
        }
        if let Some(m) = self.metrics.iter().find(|m| !COMPARED_METRICS.contains(m)) {
            return Err(format!(
                "metric {m} is not judged against a baseline (one or more of {})",
                compared_names()
            ));
        }
        Ok(())
    }
}

/// One side of a baseline comparison: a single run, or every run of a
/// campaign execution.
#[derive(Debug, Clone)]
pub struct Subject {
    /// What the user wrote for it (a run id, `last`, a file, a campaign).
    pub reference: String,
    /// The execution id when it is a campaign execution.
    pub execution: Option<String>,
    pub runs: Vec<RunResult>,
}

impl Subject {
    pub fn run(reference: &str, run: RunResult) -> Subject {
        Subject {
            reference: reference.to_string(),
            execution: None,
            runs: vec![run],
        }
    }

    pub fn execution(reference: &str, execution: &str, runs: Vec<RunResult>) -> Subject {
        Subject {
            reference: reference.to_string(),
            execution: Some(execution.to_string()),
            runs,
        }
    }
}

/// Why a baseline comparison cannot be made: bad input, naming what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BaselineError {
    #[error("{0}")]
    Options(String),
    #[error(
        "no candidate to compare with the baseline: give one or more runs or campaign executions"
    )]
    NoCandidate,
    #[error(
        "{candidate} is {candidate_kind} and the baseline {baseline} is {baseline_kind}: compare \
         a run with a run, a campaign execution with a campaign execution"
    )]
    Kinds {
        baseline: String,
        baseline_kind: &'static str,
        candidate: String,
        candidate_kind: &'static str,
    },
    #[error("{candidate} is the baseline itself ({id}): give another run or execution")]
    SameAsBaseline { candidate: String, id: String },
    #[error("{0}")]
    Unpaired(String),
    #[error("{metric} of {cell} is unknown in {side}: {why}; judge another metric (--metric max)")]
    Unknown {
        metric: &'static str,
        cell: String,
        side: String,
        why: String,
    },
}

/// One side as the comparison shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SubjectHeader {
    /// `A` for the baseline, `B`, `C`, ... for the candidates.
    pub tag: String,
    /// What the user wrote for it.
    pub reference: String,
    /// `run` or `execution`.
    pub kind: &'static str,
    /// The campaign's name (every run of an execution has it).
    pub campaign: Option<String>,
    pub execution: Option<String>,
    /// Ids of its runs.
    pub runs: Vec<String>,
    /// The hosts its runs were measured on (`unknown` for a run without a
    /// hostname), each once.
    pub hosts: Vec<String>,
    /// A candidate measured on other hosts than the baseline: allowed (a
    /// fleet against one golden host), and said.
    pub other_host: bool,
}

/// One series (of one campaign cell) of one candidate against the
/// baseline's.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// The candidate's tag.
    pub candidate: String,
    /// `cpu0`, or `promoted / idle / cpu0` for a campaign cell.
    pub name: String,
    /// The campaign cell's configuration and load (None for single runs).
    pub configuration: Option<String>,
    pub load: Option<String>,
    pub series: String,
    /// The runs folded into each side (a cell's repeats).
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    pub baseline_figures: Figures,
    pub candidate_figures: Figures,
    /// What `rtlab compare` says of the pair: ratios, the p99 difference
    /// and its bootstrap interval.
    pub versus: Versus,
    /// One per metric asked.
    pub checks: Vec<Check>,
    /// Any check regressed.
    pub regressed: bool,
}

/// One metric of one pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// `p99`, `max`, `missed`, ...
    pub metric: &'static str,
    /// `ns` for latencies; `per_million` for missed (missed deadlines per
    /// million planned wake-ups: runs of different lengths compare).
    pub unit: &'static str,
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate − baseline) / baseline in percent; None when the
    /// baseline's is 0 and the candidate's is not (worse without bound).
    pub change_percent: Option<f64>,
    /// Whether the difference is significant by the bootstrap interval;
    /// None when it was not tested (only the p99 is, and not with
    /// `--resamples 0`).
    pub significant: Option<bool>,
    pub regressed: bool,
    /// The verdict's words after the figures, as the table shows them:
    /// `beyond 10%, significant (95% CI 8.1…16.0 µs)`.
    #[serde(skip)]
    pub reason: String,
    /// e.g. `regressed: p99 33.9 → 45.0 µs, +32.8% > 10%, significant (95% CI 8.1…16.0 µs)`.
    pub verdict: String,
}

/// A baseline comparison. Serialized as `rtlab.baseline/1`.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineComparison {
    pub schema: String,
    pub metrics: Vec<&'static str>,
    pub threshold_percent: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    /// How the series of single runs paired (`campaign_cells` for
    /// executions).
    pub matching: String,
    pub baseline: SubjectHeader,
    pub candidates: Vec<SubjectHeader>,
    pub pairs: Vec<Pair>,
    /// How many pairs regressed: the exit code is 1 when any did.
    pub regressed: usize,
    /// e.g. `1 of 4 pairs regressed beyond +10% (p99)`.
    pub verdict: String,
    /// What a reader must know: other hosts, runs that did not complete,
    /// how series were paired.
    pub notes: Vec<String>,
}
