//! cyclictest's histogram file (`--histfile`), byte for byte, so the
//! scripts and plotters written for cyclictest (OSADL's among them) read
//! rtlab's results unchanged. Values are µs, truncated as cyclictest does.

use super::exporter::Exporter;
use rtlab_core::result::{RunResult, Series};
use std::io::{self, Write};

/// The widest histfile rtlab writes: 10 s of 1 µs bins (80 MB of counters
/// per series). `measure timer --hist-max` and `export --hist-max` are
/// held to it, and so is a range read from a stored or imported run.
pub const MAX_RANGE_US: u64 = 10_000_000;

pub struct HistfileExporter {
    /// Number of 1 µs bins (cyclictest's `-h`/`-H` argument).
    pub hist_max_us: u64,
    /// Add cyclictest `-H`'s summary column over all threads.
    pub all_threads_column: bool,
}

struct Column<'a> {
    series: &'a Series,
    bins: Vec<u64>,
    in_range: u64,
    overflows: u64,
}

impl<'a> Column<'a> {
    fn new(series: &'a Series, hist_max: u64) -> Column<'a> {
        let mut bins = vec![0u64; hist_max.min(MAX_RANGE_US) as usize];
        let mut overflows = 0;
        for &[bin, count] in &series.stats.histogram_us {
            match bins.get_mut(bin as usize) {
                // Saturating: counts come from imported files, and a
                // crafted one may sum past u64.
                Some(slot) => *slot = slot.saturating_add(count),
                None => overflows = u64::saturating_add(overflows, count),
            }
        }
        let in_range = bins.iter().fold(0u64, |sum, n| sum.saturating_add(*n));
        Column {
            series,
            bins,
            in_range,
            overflows,
        }
    }

    /// cyclictest's average: the mean of µs-truncated samples, truncated.
    fn avg_us(&self) -> u64 {
        let stats = &self.series.stats;
        if stats.samples == 0 {
            return 0;
        }
        let sum: u128 = stats
            .histogram_us
            .iter()
            .map(|[bin, n]| u128::from(*bin) * u128::from(*n))
            .sum();
        u64::try_from(sum / u128::from(stats.samples)).unwrap_or(u64::MAX)
    }
}

impl Exporter for HistfileExporter {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let columns: Vec<Column> = result
            .series
            .iter()
            .map(|s| Column::new(s, self.hist_max_us))
            .collect();
        let all = self.all_threads_column && columns.len() > 1;

        writeln!(out, "# Histogram")?;
        for bin in 0..self.hist_max_us as usize {
            write!(out, "{bin:06} ")?;
            let counts: Vec<String> = columns
                .iter()
                .map(|c| format!("{:06}", c.bins[bin]))
                .collect();
            write!(out, "{}", counts.join("\t"))?;
            if all {
                let total: u64 = columns.iter().map(|c| c.bins[bin]).sum();
                write!(out, "\t{total:06}")?;
            }
            writeln!(out)?;
        }

        let per_column = |f: &dyn Fn(&Column) -> u64| columns.iter().map(f).collect::<Vec<u64>>();
        let in_range = per_column(&|c| c.in_range);
        let max_us = per_column(&|c| c.series.stats.max_ns / 1000);
        let overflows = per_column(&|c| c.overflows);
        // cyclictest's -H adds a summary to these three lines only.
        let summary = |values: &[u64], combine: fn(&[u64]) -> u64| all.then(|| combine(values));
        let sum: fn(&[u64]) -> u64 = |v| v.iter().sum();
        let max: fn(&[u64]) -> u64 = |v| v.iter().copied().max().unwrap_or(0);
        trailer_line(out, "Total", &in_range, summary(&in_range, sum), 9)?;
        trailer_line(
            out,
            "Min Latencies",
            &per_column(&|c| c.series.stats.min_ns / 1000),
            None,
            5,
        )?;
        trailer_line(out, "Avg Latencies", &per_column(&|c| c.avg_us()), None, 5)?;
        trailer_line(out, "Max Latencies", &max_us, summary(&max_us, max), 5)?;
        trailer_line(
            out,
            "Histogram Overflows",
            &overflows,
            summary(&overflows, sum),
            5,
        )?;

        writeln!(out, "# Histogram Overflow at cycle number:")?;
        for (i, c) in columns.iter().enumerate() {
            write!(out, "# Thread {i}:")?;
            // Only a list recorded for this very limit can be trusted.
            let listed: &[u64] = match &c.series.stats.overflows {
                Some(o) if o.limit_us == self.hist_max_us => &o.first_samples,
                _ => &[],
            };
            let listed = &listed[..listed.len().min(self.hist_max_us as usize)];
            for sample in listed {
                write!(out, " {sample:05}")?;
            }
            if (listed.len() as u64) < c.overflows {
                write!(out, " # {:05} others", c.overflows - listed.len() as u64)?;
            }
            writeln!(out)?;
        }
        writeln!(out)
    }
}

/// `# LABEL: 00012 00034 [summary]`, zero-padded to `width` as cyclictest prints it.
fn trailer_line(
    out: &mut dyn Write,
    label: &str,
    values: &[u64],
    summary: Option<u64>,
    width: usize,
) -> io::Result<()> {
    write!(out, "# {label}:")?;
    for value in values.iter().chain(summary.iter()) {
        write!(out, " {value:0width$}")?;
    }
    writeln!(out)
}
