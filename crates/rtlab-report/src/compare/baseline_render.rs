//! A baseline comparison as a terminal table and as Markdown: the sides,
//! one row per pair and metric with regressions marked, the verdict.

use super::baseline_model::{BaselineComparison, Check, SubjectHeader};
use super::versus::percent;
use crate::text::{align, md_cell, us1};
use std::fmt::Write;

const HEADERS: [&str; 7] = [
    "series",
    "run",
    "metric",
    "baseline",
    "candidate",
    "change",
    "verdict",
];

/// `run 2026…-4242` or `execution 2026…-77 of campaign fleet (4 runs)`,
/// the reference when it is not the id, the hosts.
fn subject_line(h: &SubjectHeader, baseline: bool) -> String {
    let mut line = match &h.execution {
        Some(execution) => format!(
            "execution {execution} of campaign {} ({} run{})",
            h.campaign.as_deref().unwrap_or("?"),
            h.runs.len(),
            if h.runs.len() == 1 { "" } else { "s" }
        ),
        None => format!("run {}", h.runs.first().map_or("?", String::as_str)),
    };
    let shown = h.execution.as_ref().or(h.runs.first());
    if shown != Some(&h.reference) {
        let _ = write!(line, " = {}", h.reference);
    }
    let _ = write!(line, ", host {}", h.hosts.join(", "));
    if baseline {
        line.push_str("  (baseline)");
    } else if h.other_host {
        line.push_str("  (another host than the baseline)");
    }
    line
}

/// A check's value with its unit: µs with one decimal, missed per million.
fn value_cell(check: &Check, value: f64) -> String {
    match check.unit {
        "per_million" => format!("{value:.1}/M"),
        _ => us1(value),
    }
}

/// The rows: `[series, run, metric, baseline, candidate, change, verdict]`,
/// the series named on its first row only.
fn rows(c: &BaselineComparison) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut last_name = None;
    for pair in &c.pairs {
        for check in &pair.checks {
            let name = match last_name == Some(&pair.name) {
                true => String::new(),
                false => pair.name.clone(),
            };
            last_name = Some(&pair.name);
            let mark = if check.regressed { "REGRESSED" } else { "ok" };
            let no_samples = pair.candidate_figures.samples == 0;
            rows.push(vec![
                name,
                pair.candidate.clone(),
                check.metric.to_string(),
                value_cell(check, check.baseline),
                match no_samples {
                    true => "-".to_string(),
                    false => value_cell(check, check.candidate),
                },
                match (check.change_percent, no_samples) {
                    (Some(p), _) => format!("{p:+.1}%"),
                    (None, false) => "from 0".to_string(),
                    (None, true) => "-".to_string(),
                },
                format!("{mark} {}", check.reason),
            ]);
        }
    }
    rows
}

fn footer(c: &BaselineComparison) -> Vec<String> {
    let mut lines = vec![
        c.verdict.clone(),
        format!(
            "latencies in µs, missed deadlines per million planned wake-ups; regressed = worse by \
             more than {}% and, for the p99, significantly higher by a {} bootstrap interval \
             ({} resamples, seed {}); see docs/compare.md",
            c.threshold_percent,
            percent(c.confidence),
            c.resamples,
            c.seed
        ),
    ];
    lines.extend(c.notes.iter().map(|n| format!("note: {n}")));
    lines
}

/// The baseline comparison as a terminal table.
pub fn baseline_table(c: &BaselineComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  {}  {}",
        c.baseline.tag,
        subject_line(&c.baseline, true)
    );
    for h in &c.candidates {
        let _ = writeln!(out, "  {}  {}", h.tag, subject_line(h, false));
    }
    let _ = writeln!(out);
    let mut table = vec![HEADERS.iter().map(|h| h.to_string()).collect()];
    table.extend(rows(c));
    // Names, tags, metrics and verdicts left; the figures right.
    out.push_str(&align(&table, |col, _| col < 3 || col == 6, true));
    for line in footer(c) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The baseline comparison as Markdown: the sides, one table, the verdict.
pub fn baseline_markdown(c: &BaselineComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Comparison with a baseline\n");
    let _ = writeln!(
        out,
        "- **{}**: {}",
        c.baseline.tag,
        md_cell(&subject_line(&c.baseline, true))
    );
    for h in &c.candidates {
        let _ = writeln!(out, "- **{}**: {}", h.tag, md_cell(&subject_line(h, false)));
    }
    let _ = writeln!(out, "\n| {} |", HEADERS.join(" | "));
    let _ = writeln!(out, "|---|---|---|--:|--:|--:|---|");
    for row in rows(c) {
        let cells: Vec<String> = row.iter().map(|cell| md_cell(cell)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    let _ = writeln!(out);
    for line in footer(c) {
        let _ = writeln!(out, "{}  ", md_cell(&line));
    }
    out
}
