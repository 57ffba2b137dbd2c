//! The end-of-run table: one row per series, latencies in µs with ns
//! precision, units in the header.

use crate::text::align;
use rtlab_core::result::RunResult;
use rtlab_core::units::{human_duration, Micros};

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
        // A series without a sample has no latencies: `-`, as the report
        // shows, not 0.000 (which reads as a measurement).
        let us = |ns: u64| match s.samples {
            0 => "-".to_string(),
            _ => Micros(ns).to_string(),
        };
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
    align(&rows, |col, _| col == 0, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(samples: u64) -> RunResult {
        let text = include_str!("../tests/golden/cyclictest-2.40-H40.json");
        let mut run = crate::import::import_text(text, "golden", None).unwrap();
        run.series.truncate(1);
        run.series[0].name = "cpu0".into();
        run.series[0].stats = rtlab_core::result::SeriesStats {
            samples,
            missed: 3,
            max_ns: 1_500,
            ..Default::default()
        };
        run
    }

    /// The terminal showed 0.000 µs for a series with no sample where the
    /// report shows `-`.
    #[test]
    fn a_series_without_samples_shows_dashes() {
        let table = summary_table(&run(0));
        let row = table.lines().nth(2).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[..3], ["cpu0", "0", "3"], "{table}");
        assert!(cells[3..].iter().all(|c| *c == "-"), "{table}");
        assert!(!table.contains("0.000"), "{table}");

        let table = summary_table(&run(10));
        assert!(table.lines().nth(2).unwrap().contains("1.500"), "{table}");
    }
}
