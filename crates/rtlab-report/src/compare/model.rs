//! What a comparison is asked and what it holds (serialized as
//! `rtlab.compare/1`).

use rtlab_core::result::RunStatus;
use serde::Serialize;
use std::str::FromStr;

/// Versioned name of the comparison's JSON.
pub const COMPARE_SCHEMA: &str = "rtlab.compare/1";

/// The most resamples [`CompareOptions::validate`] accepts.
pub const MAX_RESAMPLES: usize = 10_000_000;

/// How a comparison is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Bootstrap resamples for the p99 difference's interval (0: no test).
    pub resamples: usize,
    /// Confidence of the interval, in (0, 1).
    pub confidence: f64,
    /// Seed of the resampling: the same seed gives the same intervals.
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            resamples: 2000,
            confidence: 0.95,
            seed: 1,
        }
    }
}

impl CompareOptions {
    /// Rejects options that make no sense, saying what is expected.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(format!(
                "confidence {} is not between 0 and 1 (e.g. 0.95)",
                self.confidence
            ));
        }
        if self.resamples > MAX_RESAMPLES {
            return Err(format!(
                "{} resamples is more than {MAX_RESAMPLES} (2000 is plenty for a 95% interval)",
                self.resamples
            ));
        }
        Ok(())
    }
}

/// How series are paired across runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// `all` when every run has exactly one series and their names differ
    /// (an imported `thread0` against rtlab's `cpu1`), else `by_name`.
    #[default]
    Auto,
    /// Series with the same name (`cpu0` with `cpu0`); a series missing
    /// from some run is shown as missing.
    ByName,
    /// Each run's series merged into one distribution, named `all`.
    All,
}

impl FromStr for Matching {
    type Err = String;
    fn from_str(s: &str) -> Result<Matching, String> {
        match s {
            "auto" => Ok(Matching::Auto),
            "name" | "by-name" | "by_name" => Ok(Matching::ByName),
            "all" => Ok(Matching::All),
            _ => Err(format!(
                "unknown series matching '{s}' (expected auto, name or all)"
            )),
        }
    }
}

/// The comparison of runs, first run = baseline. Serialized as
/// `rtlab.compare/1`.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema: String,
    /// Id of the baseline run (the first).
    pub baseline: String,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    /// How series were paired (`auto` resolved to `by_name` or `all`).
    pub matching: Matching,
    pub runs: Vec<RunHeader>,
    pub series: Vec<SeriesComparison>,
    /// What a reader must know to read the figures (resolutions that
    /// differ, how series were paired, ...).
    pub notes: Vec<String>,
}

/// One compared run.
#[derive(Debug, Clone, Serialize)]
pub struct RunHeader {
    /// Short name in tables: `A` (the baseline), `B`, ...
    pub tag: String,
    pub id: String,
    pub probe: String,
    pub status: RunStatus,
    /// The campaign's configuration and load, else the command line, else
    /// where it was imported from.
    pub label: String,
    pub started_at: String,
    pub host: Option<String>,
    /// Resolution of the latencies: 1 ns for rtlab, 1000 for cyclictest.
    pub resolution_ns: u64,
}

/// One series across all runs.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesComparison {
    /// `cpu0`, ..., or `all`.
    pub name: String,
    /// One entry per run, in the order of [`Comparison::runs`].
    pub runs: Vec<RunSeries>,
}

/// A series in one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunSeries {
    /// Id of the run.
    pub run: String,
    /// The run's series in this row (more than one when merged as `all`);
    /// empty when the series is missing from the run.
    pub series: Vec<String>,
    /// None when the series is missing from the run.
    pub figures: Option<Figures>,
    /// None for the baseline, and when the series is missing on either side.
    pub versus_baseline: Option<Versus>,
}

/// A series' figures, ns. Unknown values are None: all but the counts
/// without samples, the percentiles without a histogram (cyclictest JSON
/// written without -h).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub samples: u64,
    pub missed: u64,
    pub min_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p99_9_ns: Option<u64>,
    pub p99_99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub mean_ns: Option<f64>,
}

/// A series against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Versus {
    /// run / baseline; None when either is unknown or the baseline's is 0.
    pub ratios: Ratios,
    /// run − baseline p99, ns.
    pub p99_diff_ns: Option<i64>,
    /// Bootstrap interval of the p99 difference `[lo, hi]`, ns, at the
    /// comparison's confidence; None when it could not be computed.
    pub p99_diff_ci_ns: Option<[i64; 2]>,
    /// The interval excludes 0.
    pub significant: bool,
    /// e.g. `p99 12.3 µs higher (95% CI 8.1…16.0 µs): significant`.
    pub verdict: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Ratios {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p99_9: Option<f64>,
    pub p99_99: Option<f64>,
    pub max: Option<f64>,
}
