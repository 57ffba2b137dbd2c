//! cyclictest's histogram file (`--histfile`), byte for byte, so the
//! scripts and plotters written for cyclictest (OSADL's among them) read
//! rtlab's results unchanged. Values are µs, truncated as cyclictest does.

use super::Exporter;
use rtlab_core::result::{RunResult, Series};
use std::io::{self, Write};

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
        let mut bins = vec![0u64; hist_max as usize];
        let mut overflows = 0;
        for &[bin, count] in &series.stats.histogram_us {
            match bins.get_mut(bin as usize) {
                Some(slot) => *slot += count,
                None => overflows += count,
            }
        }
        let in_range = bins.iter().sum();
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
        let sum: u64 = stats.histogram_us.iter().map(|[bin, n]| bin * n).sum();
        sum / stats.samples
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

        write!(out, "# Total:")?;
        for c in &columns {
            write!(out, " {:09}", c.in_range)?;
        }
        if all {
            write!(
                out,
                " {:09}",
                columns.iter().map(|c| c.in_range).sum::<u64>()
            )?;
        }
        writeln!(out)?;

        write!(out, "# Min Latencies:")?;
        for c in &columns {
            write!(out, " {:05}", c.series.stats.min_ns / 1000)?;
        }
        writeln!(out)?;
        write!(out, "# Avg Latencies:")?;
        for c in &columns {
            write!(out, " {:05}", c.avg_us())?;
        }
        writeln!(out)?;
        write!(out, "# Max Latencies:")?;
        for c in &columns {
            write!(out, " {:05}", c.series.stats.max_ns / 1000)?;
        }
        if all {
            let max = columns
                .iter()
                .map(|c| c.series.stats.max_ns / 1000)
                .max()
                .unwrap_or(0);
            write!(out, " {max:05}")?;
        }
        writeln!(out)?;
        write!(out, "# Histogram Overflows:")?;
        for c in &columns {
            write!(out, " {:05}", c.overflows)?;
        }
        if all {
            write!(
                out,
                " {:05}",
                columns.iter().map(|c| c.overflows).sum::<u64>()
            )?;
        }
        writeln!(out)?;

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
