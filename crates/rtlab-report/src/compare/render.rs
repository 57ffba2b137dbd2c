//! A comparison as a terminal table and as Markdown: the same rows, laid
//! out twice.

use super::model::{Comparison, Figures, Ratios};
use super::versus::percent;
use crate::text::{align, md_cell, md_code, status_text};
use rtlab_core::text::{pad, Align};
use std::fmt::Write;

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
    out.push_str(&align(
        &rows,
        |col, cell| col < 2 || col == columns - 1 || cell == "missing",
        true,
    ));
    for line in footer(c) {
        let _ = writeln!(out, "{line}");
    }
    out
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
