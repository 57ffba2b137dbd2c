//! Comparing runs: side-by-side percentiles, ratios against a baseline (the
//! first run), and whether the p99 differs beyond chance, by a bootstrap
//! confidence interval on the p99 difference.
//!
//! # The bootstrap
//!
//! A stored run keeps no raw samples, but its HDR histogram (`histogram_ns`:
//! every sample in a bucket of 3 significant digits) is the empirical
//! distribution to resample from. The p99 of a resample of n draws (with
//! replacement) is its k-th smallest value, k = max(1, ⌈0.99·n⌉), the rule
//! rtlab's HDR histograms use. That order statistic is drawn *exactly*,
//! without drawing the n values: for n iid uniforms the k-th smallest is
//! Beta(k, n−k+1)-distributed, and the inverse CDF of the empirical
//! distribution maps it to the k-th smallest of n iid draws from the
//! histogram. So one resample costs two Gamma variates and a binary search,
//! whatever n is: no cap on the draws, no approximation of the resample size.
//!
//! Each resample draws the baseline's and the run's p99 independently; the
//! interval is the percentile interval of the B differences (run − baseline)
//! at the asked confidence, and the difference is called significant when
//! the interval excludes 0. The generator is a hand-written xoshiro256**
//! seeded by splitmix64 from the seed and the series' name, so a comparison
//! is reproducible and a series' interval does not depend on which other
//! series are compared.
//!
//! Limit: the bootstrap treats samples as independent. Latency spikes come
//! in bursts (a load phase, a host hiccup), so the interval is optimistic
//! for a single pair of runs; repeated runs are the stronger evidence.

use crate::import::quantile_of;
use rtlab_core::result::{RunResult, RunStatus, SeriesStats};
use rtlab_core::text::{pad, Align};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
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

/// Whether a series' percentiles were measured: it has samples and a
/// histogram (a cyclictest JSON written without -h has neither
/// histogram nor percentiles, and its zeros mean "unknown").
pub fn percentiles_known(stats: &SeriesStats) -> bool {
    stats.samples > 0 && (!stats.histogram_ns.is_empty() || !stats.histogram_us.is_empty())
}

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

    let headers: Vec<RunHeader> = runs.iter().enumerate().map(|(i, r)| header(i, r)).collect();
    let matching = match matching {
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
    };

    // Rows: (name, per run: the merged stats and the names merged).
    let mut rows: Vec<(String, Vec<Option<Cell>>)> = Vec::new();
    match matching {
        Matching::All => {
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
            rows.push(("all".to_string(), per_run));
        }
        _ => {
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
            for name in names {
                let per_run = runs
                    .iter()
                    .map(|r| {
                        r.series
                            .iter()
                            .find(|s| s.name == name)
                            .map(|s| (vec![s.name.clone()], Merged::of(&[&s.stats])))
                    })
                    .collect();
                rows.push((name.to_string(), per_run));
            }
        }
    }

    let mut series = Vec::with_capacity(rows.len());
    for (name, per_run) in rows {
        // Metrics should agree within a row.
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

        let stream = fnv1a(name.as_bytes());
        let draws: Vec<Option<Vec<u64>>> = per_run
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let (_, merged) = entry.as_ref()?;
                let mut rng = Rng::new(opts.seed ^ stream.rotate_left(17) ^ (i as u64 + 1));
                merged.resampled_p99(&mut rng, opts.resamples)
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
                        &opts,
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
        series.push(SeriesComparison {
            name,
            runs: entries,
        });
    }

    // Resolutions that differ make small differences meaningless.
    let finest = headers.iter().map(|h| h.resolution_ns).min().unwrap_or(1);
    for h in &headers {
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

fn resolution_text(ns: u64) -> String {
    match ns {
        1 => "1 ns".to_string(),
        n if n % 1000 == 0 => format!("{} µs", n / 1000),
        n => format!("{n} ns"),
    }
}

/// `A`, `B`, ..., `Z`, then `R27`, `R28`, ...
fn tag(index: usize) -> String {
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

/// A row's entry for one run: the run's series in it, merged.
type Cell = (Vec<String>, Merged);

/// A series (or several merged) ready to compare: its figures and the
/// empirical distribution to resample.
struct Merged {
    figures: Figures,
    /// `[value_ns, cumulative count]`, increasing.
    cumulative: Vec<[u64; 2]>,
    min_ns: u64,
    max_ns: u64,
}

impl Merged {
    fn of(stats: &[&SeriesStats]) -> Merged {
        let with_samples: Vec<&&SeriesStats> = stats.iter().filter(|s| s.samples > 0).collect();
        let samples: u64 = stats.iter().map(|s| s.samples).sum();
        let missed: u64 = stats.iter().map(|s| s.missed).sum();
        // The distribution: HDR buckets, or the µs bins of an import that
        // has no HDR histogram.
        let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
        for s in &with_samples {
            if !s.histogram_ns.is_empty() {
                for &[v, c] in &s.histogram_ns {
                    *buckets.entry(v).or_default() += c;
                }
            } else {
                for &[bin, c] in &s.histogram_us {
                    *buckets.entry(bin.saturating_mul(1000)).or_default() += c;
                }
            }
        }
        let known = !with_samples.is_empty() && with_samples.iter().all(|s| percentiles_known(s));
        let min_ns = with_samples.iter().map(|s| s.min_ns).min().unwrap_or(0);
        let max_ns = with_samples.iter().map(|s| s.max_ns).max().unwrap_or(0);
        let mut cumulative = Vec::with_capacity(buckets.len());
        let mut total = 0u64;
        for (v, c) in buckets {
            total = total.saturating_add(c);
            cumulative.push([v, total]);
        }
        let percentiles = if !known {
            None
        } else if let [single] = with_samples[..] {
            let p = single.percentiles_ns;
            Some([p.p50, p.p90, p.p99, p.p99_9, p.p99_99])
        } else {
            let histogram: Vec<[u64; 2]> = cumulative
                .iter()
                .scan(0u64, |prev, &[v, cum]| {
                    let count = cum - *prev;
                    *prev = cum;
                    Some([v, count])
                })
                .collect();
            let q = |quantile| quantile_of(&histogram, total, quantile).clamp(min_ns, max_ns);
            Some([q(0.50), q(0.90), q(0.99), q(0.999), q(0.9999)])
        };
        let mean_ns = (samples > 0).then(|| {
            with_samples
                .iter()
                .map(|s| s.mean_ns * s.samples as f64)
                .sum::<f64>()
                / samples as f64
        });
        let has = samples > 0;
        Merged {
            figures: Figures {
                samples,
                missed,
                min_ns: has.then_some(min_ns),
                p50_ns: percentiles.map(|p| p[0]),
                p90_ns: percentiles.map(|p| p[1]),
                p99_ns: percentiles.map(|p| p[2]),
                p99_9_ns: percentiles.map(|p| p[3]),
                p99_99_ns: percentiles.map(|p| p[4]),
                max_ns: has.then_some(max_ns),
                mean_ns,
            },
            cumulative: if known { cumulative } else { Vec::new() },
            min_ns,
            max_ns,
        }
    }

    /// The p99 of `resamples` bootstrap resamples (see the module's doc);
    /// None without a distribution to resample.
    fn resampled_p99(&self, rng: &mut Rng, resamples: usize) -> Option<Vec<u64>> {
        let n = self.cumulative.last()?[1];
        if n == 0 || resamples == 0 {
            return None;
        }
        let k = ((0.99 * n as f64).ceil() as u64).clamp(1, n);
        let (a, b) = (k as f64, (n - k + 1) as f64);
        let total = n as f64;
        Some(
            (0..resamples)
                .map(|_| {
                    let u = rng.beta(a, b);
                    // The empirical inverse CDF: the first bucket whose
                    // cumulative share reaches u.
                    let target = u * total;
                    let i = self
                        .cumulative
                        .partition_point(|&[_, cum]| (cum as f64) < target)
                        .min(self.cumulative.len() - 1);
                    self.cumulative[i][0].clamp(self.min_ns, self.max_ns.max(self.min_ns))
                })
                .collect(),
        )
    }
}

fn ratio(run: Option<u64>, base: Option<u64>) -> Option<f64> {
    match (run, base) {
        (Some(r), Some(b)) if b > 0 => Some(r as f64 / b as f64),
        _ => None,
    }
}

/// `0.95` → `95%`, `0.975` → `97.5%`.
fn percent(confidence: f64) -> String {
    let text = format!("{:.3}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// ns as µs with one decimal, sign kept.
fn us1(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn versus(
    base: &Figures,
    run: &Figures,
    base_draws: Option<&[u64]>,
    run_draws: Option<&[u64]>,
    opts: &CompareOptions,
    base_tag: &str,
    run_tag: &str,
) -> Versus {
    let ratios = Ratios {
        p50: ratio(run.p50_ns, base.p50_ns),
        p90: ratio(run.p90_ns, base.p90_ns),
        p99: ratio(run.p99_ns, base.p99_ns),
        p99_9: ratio(run.p99_9_ns, base.p99_9_ns),
        p99_99: ratio(run.p99_99_ns, base.p99_99_ns),
        max: ratio(run.max_ns, base.max_ns),
    };
    let diff = match (run.p99_ns, base.p99_ns) {
        (Some(r), Some(b)) => Some(r as i64 - b as i64),
        _ => None,
    };
    let ci = match (base_draws, run_draws) {
        (Some(b), Some(r)) => {
            let mut d: Vec<i64> = r
                .iter()
                .zip(b)
                .map(|(r, b)| *r as i64 - *b as i64)
                .collect();
            d.sort_unstable();
            let alpha = 1.0 - opts.confidence;
            let at = |q: f64| {
                let i = ((q * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1;
                d[i]
            };
            Some([at(alpha / 2.0), at(1.0 - alpha / 2.0)])
        }
        _ => None,
    };
    let significant = ci.is_some_and(|[lo, hi]| lo > 0 || hi < 0);
    let verdict = match (diff, ci) {
        _ if run.samples == 0 => format!("no samples in {run_tag}"),
        _ if base.samples == 0 => format!("no samples in {base_tag}"),
        (None, _) => {
            let which = if run.p99_ns.is_none() {
                run_tag
            } else {
                base_tag
            };
            format!("p99 unknown: no histogram in {which}")
        }
        (Some(d), ci) => {
            let size = if d == 0 {
                "p99 equal".to_string()
            } else {
                format!(
                    "p99 {} µs {}",
                    us1(d.abs()),
                    if d > 0 { "higher" } else { "lower" }
                )
            };
            match ci {
                Some([lo, hi]) => format!(
                    "{size} ({} CI {}…{} µs): {}",
                    percent(opts.confidence),
                    us1(lo),
                    us1(hi),
                    if significant {
                        "significant"
                    } else {
                        "not significant"
                    }
                ),
                None => format!("{size} (not tested: no resamples)"),
            }
        }
    };
    Versus {
        ratios,
        p99_diff_ns: diff,
        p99_diff_ci_ns: ci,
        significant,
        verdict,
    }
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

const FIGURE_HEADERS: [&str; 10] = [
    "samples", "missed", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean",
];

/// µs with one decimal, `-` when unknown.
fn cell_us(ns: Option<u64>) -> String {
    ns.map_or_else(
        || "-".to_string(),
        |ns| format!("{:.1}", ns as f64 / 1000.0),
    )
}

fn cell_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.2}×"))
}

fn figure_cells(f: &Figures) -> Vec<String> {
    vec![
        f.samples.to_string(),
        f.missed.to_string(),
        cell_us(f.min_ns),
        cell_us(f.p50_ns),
        cell_us(f.p90_ns),
        cell_us(f.p99_ns),
        cell_us(f.p99_9_ns),
        cell_us(f.p99_99_ns),
        cell_us(f.max_ns),
        cell_us(f.mean_ns.map(|m| m.round() as u64)),
    ]
}

/// The ratio row's cells under [`FIGURE_HEADERS`]: empty under the counts
/// and the min and mean, `1.23×` under the percentiles and max.
fn ratio_cells(r: &Ratios) -> Vec<String> {
    vec![
        String::new(),
        String::new(),
        String::new(),
        cell_ratio(r.p50),
        cell_ratio(r.p90),
        cell_ratio(r.p99),
        cell_ratio(r.p99_9),
        cell_ratio(r.p99_99),
        cell_ratio(r.max),
        String::new(),
    ]
}

/// Rows of the per-series table: `[series, run, figures…, verdict]`.
fn table_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let base_tag = c.runs.first().map_or("A", |h| h.tag.as_str());
    for s in &c.series {
        for (i, entry) in s.runs.iter().enumerate() {
            let tag = &c.runs[i].tag;
            let name = if i == 0 {
                s.name.clone()
            } else {
                String::new()
            };
            let mut row = vec![name, tag.clone()];
            match &entry.figures {
                None => {
                    row.push("missing".to_string());
                    row.extend(std::iter::repeat_n(String::new(), FIGURE_HEADERS.len() - 1));
                    row.push(if i == 0 {
                        "baseline: missing".to_string()
                    } else {
                        "missing in this run".to_string()
                    });
                    rows.push(row);
                    continue;
                }
                Some(f) => row.extend(figure_cells(f)),
            }
            match &entry.versus_baseline {
                None => {
                    row.push(if i == 0 {
                        "baseline".into()
                    } else {
                        String::new()
                    });
                    rows.push(row);
                }
                Some(v) => {
                    row.push(v.verdict.clone());
                    rows.push(row);
                    if v.ratios != Ratios::default() {
                        let mut ratio_row = vec![String::new(), format!("{tag}/{base_tag}")];
                        ratio_row.extend(ratio_cells(&v.ratios));
                        ratio_row.push(String::new());
                        rows.push(ratio_row);
                    }
                }
            }
        }
    }
    rows
}

fn footer(c: &Comparison) -> Vec<String> {
    let base_tag = c.runs.first().map_or("A", |h| h.tag.as_str());
    let mut lines = vec![format!(
        "latencies in µs; ratio = run / baseline ({base_tag}); p99 difference: {} bootstrap \
         interval, {} resamples, seed {} (see docs/compare.md)",
        percent(c.confidence),
        c.resamples,
        c.seed
    )];
    lines.extend(c.notes.iter().map(|n| format!("note: {n}")));
    lines
}

/// The comparison as a terminal table: the runs, then one block of rows
/// per series (each run's figures, its ratios to the baseline and the
/// verdict on the p99 difference). µs with one decimal.
pub fn comparison_table(c: &Comparison) -> String {
    let mut out = String::new();
    if c.runs.is_empty() {
        let _ = writeln!(out, "no runs to compare");
        return out;
    }
    let _ = writeln!(out, "runs:");
    let id_width = c.runs.iter().map(|h| h.id.chars().count()).max();
    let probe_width = c.runs.iter().map(|h| h.probe.chars().count()).max();
    for (i, h) in c.runs.iter().enumerate() {
        // Padded by hand: `{:<width$}` panics for a width of 65,536 or more.
        let line = format!(
            "  {}  {}  {}  {:<8}  {}{}",
            h.tag,
            pad(&h.id, id_width.unwrap_or(0), Align::Left),
            pad(&h.probe, probe_width.unwrap_or(0), Align::Left),
            status_text(h.status),
            h.label,
            if i == 0 { "  (baseline)" } else { "" }
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out);

    let mut header: Vec<String> = vec!["series".into(), "run".into()];
    header.extend(FIGURE_HEADERS.iter().map(|h| h.to_string()));
    header.push(format!("p99 vs {}", c.runs[0].tag));
    let mut rows = vec![header];
    rows.extend(table_rows(c));
    let columns = rows[0].len();
    // Text columns left, numbers right; "missing" stays left.
    out.push_str(&crate::table::align(
        &rows,
        |col, cell| col < 2 || col == columns - 1 || cell == "missing",
        true,
    ));
    for line in footer(c) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// A run status as the JSON and the tables spell it.
pub(crate) fn status_text(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Break => "break",
        RunStatus::Failed => "failed",
    }
}

/// Escapes text for a Markdown table cell: the pipe, and markup that a
/// renderer would otherwise act on (`<script>`, or `![x](http://…)` that
/// a viewer would fetch, in a series name); control characters become `?`.
pub(crate) fn md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '|' | '&' | '<' | '>' | '*' | '`' => {
                out.push('\\');
                out.push(c);
            }
            // `[text](url)` is a link, `![alt](url)` an image to fetch.
            '(' if out.ends_with(']') => out.push_str("\\("),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            // A bidirectional override would reorder the rendered cell.
            c if rtlab_core::result::is_invisible(c) => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Text as a Markdown code span in a table cell: backslashes are literal
/// there, so only the pipe is escaped (GFM splits cells on it first), and
/// the fence is longer than any run of backticks inside.
pub(crate) fn md_code(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '?',
            c => c,
        })
        .collect::<String>()
        .replace('|', "\\|");
    let longest = clean.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if clean.starts_with('`') || clean.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{clean}{pad}{fence}")
}

/// The comparison as Markdown: a table of the runs, then one table per
/// series with the same rows as [`comparison_table`].
pub fn comparison_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Comparison of {} runs\n", c.runs.len());
    if c.runs.is_empty() {
        let _ = writeln!(out, "No runs to compare.");
        return out;
    }
    let _ = writeln!(out, "| | run | probe | status | label |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for (i, h) in c.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {} | {} |",
            h.tag,
            if i == 0 { " (baseline)" } else { "" },
            md_code(&h.id),
            md_cell(&h.probe),
            status_text(h.status),
            md_cell(&h.label)
        );
    }
    let all_rows = table_rows(c);
    let mut rows = all_rows.iter().peekable();
    for s in &c.series {
        let _ = writeln!(out, "\n## {}\n", md_cell(&s.name));
        let _ = write!(out, "| run |");
        for h in FIGURE_HEADERS {
            let _ = write!(out, " {h} |");
        }
        let _ = writeln!(out, " p99 vs {} |", c.runs[0].tag);
        let _ = write!(out, "|---|");
        for _ in FIGURE_HEADERS {
            let _ = write!(out, "--:|");
        }
        let _ = writeln!(out, "---|");
        // This series' rows: up to the next row that names a series.
        let mut first = true;
        while let Some(row) = rows.peek() {
            if !first && !row[0].is_empty() {
                break;
            }
            first = false;
            let row = rows.next().expect("peeked");
            let cells: Vec<String> = row[1..].iter().map(|c| md_cell(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    let _ = writeln!(out);
    for line in footer(c) {
        let _ = writeln!(out, "{}  ", md_cell(&line));
    }
    out
}

// ---------------------------------------------------------------------------
// Random numbers: small, seeded, reproducible
// ---------------------------------------------------------------------------

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut state = seed;
        Rng {
            s: std::array::from_fn(|_| splitmix64(&mut state)),
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in the open interval (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma(shape, 1) by Marsaglia & Tsang (2000).
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform();
            if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }

    /// Beta(a, b) as Gamma(a) / (Gamma(a) + Gamma(b)).
    fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn markdown_cells_and_code_spans_are_inert() {
        assert_eq!(
            md_cell("a|b <script> ![x](http://h/a.png) *c* `d`\u{1b}"),
            "a\\|b \\<script\\> ![x]\\(http://h/a.png) \\*c\\* \\`d\\`?"
        );
        assert_eq!(md_cell("[45.861, 53.344]"), "[45.861, 53.344]");
        // Backslashes are literal in a code span: only the pipe is escaped.
        assert_eq!(
            md_code("rtlab --budget 'p99<1ms|x'"),
            "`rtlab --budget 'p99<1ms\\|x'`"
        );
        assert_eq!(md_code("a `b` c"), "``a `b` c``");
        assert_eq!(md_code("`x"), "`` `x ``");
    }

    use super::*;

    #[test]
    fn xoshiro_matches_the_reference() {
        // Reference: xoshiro256** with state {1, 2, 3, 4}.
        let mut rng = Rng { s: [1, 2, 3, 4] };
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, vec![11520, 0, 1509978240]);
    }

    #[test]
    fn gamma_and_beta_have_the_right_moments() {
        let mut rng = Rng::new(7);
        for shape in [0.5, 1.0, 3.0, 1e6] {
            let n = 20_000;
            let draws: Vec<f64> = (0..n).map(|_| rng.gamma(shape)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            // Mean and variance of Gamma(k, 1) are both k.
            assert!(
                (mean - shape).abs() < 5.0 * (shape / n as f64).sqrt(),
                "{shape}: {mean}"
            );
            assert!((var / shape - 1.0).abs() < 0.1, "{shape}: {var}");
        }
        // Beta(k, n-k+1) centres on k/(n+1).
        let (a, b) = (990.0, 11.0);
        let mean = (0..10_000).map(|_| rng.beta(a, b)).sum::<f64>() / 10_000.0;
        assert!((mean - a / (a + b)).abs() < 1e-3, "{mean}");
    }

    #[test]
    fn resampled_p99_centres_on_the_p99() {
        // 1000 samples: 1..=1000 µs, one each. The p99 is 990 µs.
        let histogram: Vec<[u64; 2]> = (1..=1000).map(|v| [v * 1000, 1]).collect();
        let stats = SeriesStats {
            samples: 1000,
            min_ns: 1000,
            max_ns: 1_000_000,
            histogram_ns: histogram,
            ..SeriesStats::default()
        };
        let merged = Merged::of(&[&stats]);
        let draws = merged.resampled_p99(&mut Rng::new(3), 4000).unwrap();
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 990_000.0).abs() < 1500.0, "{mean}");
        // Every draw is a value of the distribution.
        assert!(draws.iter().all(|d| d % 1000 == 0 && *d <= 1_000_000));
    }

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
                    requested: crate::import::unknown_sched(),
                    actual: None,
                    timer_slack_ns: None,
                },
                stats,
            }],
            ..crate::import::imported_run(
                crate::import::Format::CyclictestHistfile,
                "x",
                "2026-11-21T19:30:12.000000Z".into(),
                crate::import::unknown_environment("2026-11-21T19:30:12.000000Z"),
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
    fn confidence_prints_as_percent() {
        assert_eq!(percent(0.95), "95%");
        assert_eq!(percent(0.975), "97.5%");
        assert_eq!(tag(0), "A");
        assert_eq!(tag(26), "R27");
    }
}
