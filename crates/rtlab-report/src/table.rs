//! The end-of-run table: one row per series, latencies in µs with ns
//! precision, units in the header.

use rtlab_core::result::RunResult;
use rtlab_core::units::{human_duration, Micros};
use std::fmt::Write;

const HEADERS: [&str; 13] = [
    "series", "samples", "missed", "min", "avg", "stdev", "p50", "p90", "p99", "p99.9", "p99.99",
    "max", "max at",
];

/// The per-series summary table of a run.
pub fn summary_table(result: &RunResult) -> String {
    let mut rows: Vec<Vec<String>> = vec![HEADERS.iter().map(|h| h.to_string()).collect()];
    for series in &result.series {
        let s = &series.stats;
        let p = &s.percentiles_ns;
        let us = |ns: u64| Micros(ns).to_string();
        rows.push(vec![
            series.name.clone(),
            s.samples.to_string(),
            s.missed.to_string(),
            us(s.min_ns),
            us(s.mean_ns.round() as u64),
            us(s.stdev_ns.round() as u64),
            us(p.p50),
            us(p.p90),
            us(p.p99),
            us(p.p99_9),
            us(p.p99_99),
            us(s.max_ns),
            s.max_at
                .map_or_else(|| "-".into(), |spike| human_duration(spike.at_ns)),
        ]);
    }
    let widths: Vec<usize> = (0..HEADERS.len())
        .map(|col| {
            rows.iter()
                .map(|r| r[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(col, (cell, w))| {
                if col == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
            );
        }
    }
    let _ = writeln!(
        out,
        "latencies in µs (ns precision); missed = deadlines that passed without their own wake-up"
    );
    out
}
