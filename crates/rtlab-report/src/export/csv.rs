//! One CSV row per series, for spreadsheets and scripts: all figures in ns,
//! a header row first, fields quoted as RFC 4180 says (only when they hold
//! a comma, a double quote or a line break; quotes doubled). Lines end
//! with LF. An empty field means unknown: the percentiles of a series
//! without a histogram, every statistic of a series without samples, the
//! cpu of a floating thread, the time of a max nobody recorded.

use super::exporter::Exporter;
use rtlab_core::result::{RunResult, Series};
use rtlab_stats::quantile::percentiles_known;
use std::io::{self, Write};

pub struct CsvExporter;

impl CsvExporter {
    /// The header row's columns.
    pub const COLUMNS: [&'static str; 17] = [
        "run_id",
        "series",
        "metric",
        "cpu",
        "samples",
        "missed",
        "dropped",
        "min_ns",
        "mean_ns",
        "stdev_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p99_9_ns",
        "p99_99_ns",
        "max_ns",
        "max_at_ns",
    ];

    /// Writes the rows of `result` without the header, so several runs can
    /// share one file.
    pub fn write_rows(result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        for series in &result.series {
            let fields = row(result, series);
            let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
            writeln!(out, "{}", quoted.join(","))?;
        }
        Ok(())
    }

    /// The header row.
    pub fn write_header(out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", Self::COLUMNS.join(","))
    }
}

impl Exporter for CsvExporter {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        Self::write_header(out)?;
        Self::write_rows(result, out)
    }
}

fn row(result: &RunResult, series: &Series) -> Vec<String> {
    let s = &series.stats;
    let has = s.samples > 0;
    let known = percentiles_known(s);
    let int = |v: u64, shown: bool| if shown { v.to_string() } else { String::new() };
    let float = |v: f64, shown: bool| {
        if shown && v.is_finite() {
            format!("{v:.3}")
        } else {
            String::new()
        }
    };
    let p = &s.percentiles_ns;
    vec![
        result.id.clone(),
        series.name.clone(),
        series.metric.clone(),
        series.cpu.map(|c| c.to_string()).unwrap_or_default(),
        s.samples.to_string(),
        s.missed.to_string(),
        s.dropped.to_string(),
        int(s.min_ns, has),
        float(s.mean_ns, has),
        float(s.stdev_ns, known),
        int(p.p50, known),
        int(p.p90, known),
        int(p.p99, known),
        int(p.p99_9, known),
        int(p.p99_99, known),
        int(s.max_ns, has),
        s.max_at.map(|m| m.at_ns.to_string()).unwrap_or_default(),
    ]
}

/// RFC 4180: a field with a comma, a double quote or a line break is
/// enclosed in double quotes, and its double quotes are doubled.
pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_like_rfc_4180() {
        assert_eq!(quote("cpu0"), "cpu0");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(quote(""), "");
    }
}
