//! The report's tables as data, so the terminal, Markdown and HTML show the
//! same figures: percentiles, the worst-case estimate, the campaign
//! matrix, paper 002's "% within x µs", paper 001's "max / avg ± σ", and
//! the environment.

use super::model::RunView;
pub use super::table::Table;
use crate::evt::{method_name, CheckStatus, EvtReport, Verdict};
use crate::matrix::Matrix;
use crate::text::status_text;
use rtlab_core::result::{RunResult, SeriesStats};
use rtlab_core::units::Micros;
use rtlab_stats::quantile::{percentiles_known, within_counts};
use std::fmt::Write;

fn us(ns: u64) -> String {
    Micros(ns).to_string()
}

fn us_f(ns: f64) -> String {
    if ns.is_finite() {
        us(ns.max(0.0).round() as u64)
    } else {
        "∞".into()
    }
}

/// One row per run: what it was and where it ran.
pub fn runs_table(runs: &[RunView]) -> Table {
    let mut t = Table::new(
        "runs",
        &[
            "run", "id", "probe", "status", "started", "host", "kernel", "preempt", "seconds",
        ],
        8,
    );
    for view in runs {
        let r = &view.result;
        t.rows.push(vec![
            view.label.clone(),
            r.id.clone(),
            r.probe.clone(),
            status_name(r),
            r.started_at.chars().take(19).collect(),
            r.environment.hostname.clone().unwrap_or_else(|| "-".into()),
            r.environment
                .kernel_release
                .clone()
                .unwrap_or_else(|| "-".into()),
            r.environment.preempt_model.clone(),
            format!("{:.1}", r.elapsed_ns as f64 / 1e9),
        ]);
    }
    t
}

pub fn status_name(result: &RunResult) -> String {
    status_text(result.status).to_string()
}

/// Every series of every run with its percentiles, in µs.
pub fn percentile_table(runs: &[RunView]) -> Table {
    let mut t = Table::new(
        "latency percentiles (µs)",
        &[
            "run", "series", "samples", "missed", "min", "avg", "stdev", "p50", "p90", "p99",
            "p99.9", "p99.99", "max",
        ],
        2,
    )
    .with_note("missed: deadlines that passed without a sample of their own (net: lost messages); percentiles within 0.1 %.");
    for view in runs {
        for series in &view.result.series {
            let s = &series.stats;
            let p = &s.percentiles_ns;
            let mut row = vec![
                view.label.clone(),
                series.name.clone(),
                s.samples.to_string(),
                s.missed.to_string(),
            ];
            if s.samples == 0 {
                // Nothing measured is not 0 µs.
                row.extend(std::iter::repeat_n("-".to_string(), 9));
            } else if !percentiles_known(s) {
                // Imported without a histogram: min, avg and max only.
                row.extend([us(s.min_ns), us_f(s.mean_ns), "-".into()]);
                row.extend(std::iter::repeat_n("-".to_string(), 5));
                row.push(us(s.max_ns));
            } else {
                row.extend([
                    us(s.min_ns),
                    us_f(s.mean_ns),
                    us_f(s.stdev_ns),
                    us(p.p50),
                    us(p.p90),
                    us(p.p99),
                    us(p.p99_9),
                    us(p.p99_99),
                    us(s.max_ns),
                ]);
            }
            t.rows.push(row);
        }
    }
    t
}

/// The exceedance probabilities in the overview (all of them are in each
/// series' own table).
const OVERVIEW_PROBABILITIES: [f64; 3] = [1e-3, 1e-6, 1e-9];

fn estimate_cell(report: &EvtReport, probability: f64) -> String {
    report
        .pwcet
        .iter()
        .find(|e| (e.exceedance_per_sample / probability - 1.0).abs() < 1e-6)
        .map_or_else(
            || "-".into(),
            |e| {
                format!(
                    "{} [{}, {}]",
                    us_f(e.value_ns),
                    us_f(e.ci_low_ns),
                    us_f(e.ci_high_ns)
                )
            },
        )
}

/// The worst-case estimate of every series: the pWCET at 1e-3, 1e-6 and
/// 1e-9 per sample with its interval, or why there is none.
pub fn pwcet_table(runs: &[RunView]) -> Table {
    let mut t = Table::new(
        "worst-case estimate (pWCET, µs, [95 % interval])",
        &[
            "run", "series", "method", "observed max", "1e-3", "1e-6", "1e-9",
        ],
        3,
    )
    .with_note("pWCET at p: the latency one sample exceeds with probability p, by extreme value theory; refused, naming the failed checks, when the data break its assumptions. Every probability and check: `rtlab show RUN --pwcet` or the HTML report; docs/pwcet.md.");
    for view in runs {
        for series in &view.series {
            let report = &series.evt;
            let mut row = vec![
                view.label.clone(),
                series.name.clone(),
                method_name(report).to_string(),
                if series.stats.samples == 0 {
                    "-".to_string()
                } else {
                    us(series.stats.max_ns)
                },
            ];
            match &report.verdict {
                Verdict::Estimated => row.extend(
                    OVERVIEW_PROBABILITIES
                        .iter()
                        .map(|p| estimate_cell(report, *p)),
                ),
                Verdict::Refused { reasons } => {
                    // The failed checks, each as a failure ("not enough
                    // data (n=40 < 500)"); without one (no data to fit),
                    // the first reason whole.
                    let mut failed: Vec<String> = report
                        .checks
                        .iter()
                        .filter(|c| c.status == CheckStatus::Failed)
                        .map(|c| c.failure_summary())
                        .collect();
                    if failed.is_empty() {
                        failed.extend(reasons.first().cloned());
                    }
                    // One cell across the estimate columns (in HTML), so
                    // that the method column stays as narrow as a method.
                    t.spans
                        .push((t.rows.len(), row.len(), OVERVIEW_PROBABILITIES.len()));
                    row.push(format!("refused: {}", failed.join(", ")));
                    row.extend(OVERVIEW_PROBABILITIES[1..].iter().map(|_| "-".to_string()));
                }
            }
            t.rows.push(row);
        }
    }
    t
}

/// One series' pWCET at every probability, with the fit and the checks.
pub fn series_pwcet_table(report: &EvtReport) -> Table {
    let mut t = Table::new(
        "worst-case estimate",
        &["exceedance per sample", "pWCET µs", "95 % interval µs"],
        1,
    );
    for e in &report.pwcet {
        t.rows.push(vec![
            format!("{:e}", e.exceedance_per_sample),
            us_f(e.value_ns),
            format!("{} … {}", us_f(e.ci_low_ns), us_f(e.ci_high_ns)),
        ]);
    }
    t
}

/// The loads × configurations matrix of campaign runs, worst p99.9 and
/// max; one per probe kind (titled with it) when the campaign runs have
/// several.
pub fn matrix_tables(runs: &[RunView]) -> Vec<Table> {
    let results: Vec<RunResult> = runs
        .iter()
        .filter(|v| v.result.campaign.is_some())
        .map(|v| v.result.clone())
        .collect();
    let matrices = crate::matrix::per_probe(&results);
    let several = matrices.len() > 1;
    matrices
        .iter()
        .map(|(probe, matrix)| matrix_table(matrix, several.then_some(probe.as_str())))
        .collect()
}

fn matrix_table(matrix: &Matrix, probe: Option<&str>) -> Table {
    let mut header = vec!["load".to_string()];
    header.extend(
        matrix
            .configurations
            .iter()
            .map(|c| format!("{c}: p99.9 / max µs")),
    );
    let title = "loads × configurations (worst over series and repeats)";
    let mut t = Table {
        title: match probe {
            Some(probe) => format!("{probe} probe: {title}"),
            None => title.to_string(),
        },
        note: Some(
            "A cell with missed deadlines says how many; an incomplete run is named.".into(),
        ),
        header,
        rows: Vec::new(),
        text_columns: 1,
        spans: Vec::new(),
        label_columns: 0,
    };
    for load in &matrix.loads {
        let mut row = vec![load.clone()];
        for configuration in &matrix.configurations {
            row.push(matrix.cell(load, configuration).map_or_else(
                || "-".into(),
                |c| {
                    // A cell whose runs measured nothing (a refused
                    // sysctl, a failed start) has no figures: 0.000 / 0.000
                    // read as a perfect result.
                    let mut text = match c.samples {
                        0 => "no samples".to_string(),
                        _ => format!("{} / {}", us(c.p99_9_ns), us(c.max_ns)),
                    };
                    if c.missed > 0 {
                        let _ = write!(text, " ({} missed)", c.missed);
                    }
                    for status in &c.incomplete {
                        let _ = write!(text, " [{status}]");
                    }
                    text
                },
            ));
        }
        t.rows.push(row);
    }
    t
}

/// Paper 002's bounds: % of events within this many µs of their time.
pub const WITHIN_US: [u64; 5] = rtlab_stats::quantile::WITHIN_US;

/// Metrics that are lateness against an expected instant, which is what
/// paper 002's table counts.
fn is_lateness(metric: &str) -> bool {
    matches!(
        metric,
        "wakeup_latency"
            | "activation_lateness"
            | "dispatch_error"
            | "interrupt_latency"
            | "departure_error"
    )
}

/// % of a series' events within each bound (see
/// [`within_counts`]); missed events count as outside.
pub fn within_percent(stats: &SeriesStats) -> Option<[f64; 5]> {
    let events = stats.samples + stats.missed;
    (events > 0 && !stats.histogram_ns.is_empty())
        .then(|| within_counts(stats).map(|count| 100.0 * count as f64 / events as f64))
}

/// Paper 002's Tables 4.1/4.2 for every series that measures lateness
/// against an expected time (timer wake-ups, periodic activations, plan
/// dispatch).
pub fn within_table(runs: &[RunView]) -> Option<Table> {
    let mut t = Table::new(
        "% of events within x µs of their time (paper 002, tables 4.1/4.2)",
        &[
            "run", "series", "10 µs", "50 µs", "100 µs", "500 µs", "1000 µs",
        ],
        2,
    )
    .with_note("missed deadlines count as outside.");
    for view in runs {
        for series in view.result.series.iter().filter(|s| is_lateness(&s.metric)) {
            if let Some(values) = within_percent(&series.stats) {
                let mut row = vec![view.label.clone(), series.name.clone()];
                row.extend(values.iter().map(|v| format!("{v:.2}%")));
                t.rows.push(row);
            }
        }
    }
    (!t.is_empty()).then_some(t)
}

/// Paper 001's Table 1: max and avg ± σ for the timer and switch probes
/// (interrupt latency and context switch).
pub fn max_avg_table(runs: &[RunView]) -> Option<Table> {
    let mut t = Table::new(
        "max and avg ± σ (µs, paper 001, table 1)",
        &["run", "series", "max", "avg ± σ"],
        2,
    );
    for view in runs {
        if !matches!(
            view.result.probe.as_str(),
            "timer" | "switch" | "cyclictest"
        ) {
            continue;
        }
        for series in &view.result.series {
            let s = &series.stats;
            if s.samples == 0 {
                continue;
            }
            t.rows.push(vec![
                view.label.clone(),
                series.name.clone(),
                us(s.max_ns),
                format!("{} ± {}", us_f(s.mean_ns), us_f(s.stdev_ns)),
            ]);
        }
    }
    (!t.is_empty()).then_some(t)
}

/// What a reader needs to repeat the run: the machine, the kernel and
/// the settings in effect.
pub fn environment_table(result: &RunResult) -> Table {
    let mut t = Table::new("environment", &["what", "value"], 2);
    let e = &result.environment;
    let mut add = |what: &str, value: Option<String>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            t.rows.push(vec![what.to_string(), v]);
        }
    };
    add("command", Some(result.command.join(" ")));
    add("host", e.hostname.clone());
    add(
        "kernel",
        e.kernel_release
            .as_ref()
            .map(|r| format!("{r} {}", e.kernel_version.clone().unwrap_or_default())),
    );
    // With where it was read (a PREEMPT_DYNAMIC kernel without debugfs:
    // preempt= or the build configuration's default).
    add(
        "preemption",
        Some(if e.preempt_sources.is_empty() {
            e.preempt_model.clone()
        } else {
            format!(
                "{} (from {})",
                e.preempt_model,
                e.preempt_sources.join("; ")
            )
        }),
    );
    add("kernel command line", e.cmdline.clone());
    add(
        "cpu",
        e.cpu_model
            .as_ref()
            .map(|m| format!("{m} × {}", e.cpu_count.unwrap_or(0))),
    );
    add("isolated cpus", e.isolated_cpus.clone());
    add("nohz_full", e.nohz_full.clone());
    add("clocksource", e.clocksource.clone());
    if !e.governors.is_empty() {
        let mut governors: Vec<&String> = e.governors.values().collect();
        governors.sort();
        governors.dedup();
        add(
            "cpufreq governor",
            Some(
                governors
                    .iter()
                    .map(|g| g.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        );
    }
    add("cpuidle", e.cpuidle_driver.clone());
    add(
        "rt runtime",
        e.sched_rt_runtime_us.map(|v| format!("{v} µs per period")),
    );
    let eff = &result.effective;
    add("mlockall", Some(eff.mlockall.to_string()));
    add(
        "cpu_dma_latency",
        Some(
            eff.dma_latency_us
                .map_or("not held".into(), |v| format!("{v} µs")),
        ),
    );
    // Every distinct setting of the probe's threads (a periodic run's
    // tasks may differ).
    let mut threads: Vec<String> = Vec::new();
    for series in &result.series {
        let thread = &series.thread;
        let text = format!(
            "asked {}, got {}",
            thread.requested,
            thread
                .actual
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |a| a.to_string())
        );
        if !threads.contains(&text) {
            threads.push(text);
        }
    }
    if !threads.is_empty() {
        add("probe threads", Some(threads.join("; ")));
    }
    if !result.loads.is_empty() {
        add(
            "loads",
            Some(
                result
                    .loads
                    .iter()
                    .map(|l| l.spec.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        );
    }
    if let Some(c) = &result.campaign {
        add(
            "campaign",
            Some(format!(
                "{} ({}), run {}/{}: load {}, configuration {}, repeat {}",
                c.name, c.execution, c.index, c.total, c.load, c.configuration, c.repeat
            )),
        );
    }
    t
}

/// Every check of a budget on every run: what was observed against what
/// limit, and whether it held.
pub fn budget_table(runs: &[RunView], evaluations: &[crate::budget::Evaluation]) -> Table {
    let spec = evaluations.first().map_or("", |e| e.spec.as_str());
    let failed: usize = evaluations.iter().map(|e| e.failures()).sum();
    let mut t = Table::new(
        &format!(
            "budget \"{spec}\": {}",
            if failed == 0 {
                "kept".to_string()
            } else {
                format!("NOT kept, {failed} check(s) failed")
            }
        ),
        &[
            "run", "series", "clause", "result", "note", "observed", "limit",
        ],
        5,
    );
    for evaluation in evaluations {
        let label = runs
            .iter()
            .find(|r| r.result.id == evaluation.run_id)
            .map_or(evaluation.run_id.as_str(), |r| r.label.as_str());
        for c in &evaluation.checks {
            t.rows.push(vec![
                label.to_string(),
                c.series_label().to_string(),
                c.text.clone(),
                c.outcome.label().to_string(),
                c.note.clone().unwrap_or_default(),
                c.observed_text(),
                c.limit_text(),
            ]);
        }
    }
    if t.rows.iter().all(|row| row[4].is_empty()) {
        t.header.remove(4);
        t.text_columns -= 1;
        for row in &mut t.rows {
            row.remove(4);
        }
    }
    t
}
