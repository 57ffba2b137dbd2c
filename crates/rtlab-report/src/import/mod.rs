//! Reading results written by other tools (and by rtlab itself) into a
//! [`RunResult`], so that old cyclictest measurements can be stored,
//! exported and compared beside rtlab's.
//!
//! Formats accepted, detected by content (never by file name):
//!
//! - cyclictest's histogram (`--histfile=FILE`, or `-h`/`-H` output captured
//!   from stdout): see [`cyclictest_histfile`];
//! - cyclictest's `--json=FILE` (rt-tests 2.x): see [`cyclictest_json`];
//! - rtlab's own JSON (`"schema": "rtlab.run/1"`), taken as it is.
//!
//! Nothing here panics on input: every defect is an [`ImportError`] naming
//! the file and the line (text formats) or the JSON path, and what was
//! expected there.

mod cyclictest_cmdline;
pub mod cyclictest_histfile;
pub mod cyclictest_json;

use rtlab_core::env::Environment;
use rtlab_core::result::{
    Effective, Overflows, Percentiles, RunResult, RunStatus, Series, SeriesStats, ThreadSettings,
    RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_stats::quantile::quantile_of;
use std::path::Path;
use std::time::SystemTime;

/// The formats [`import_file`] accepts, as listed in its error messages.
pub const ACCEPTED_FORMATS: &str = "a cyclictest histogram (--histfile, or -h/-H output \
     starting at a '# Histogram' line), cyclictest JSON (--json, rt-tests 2.x) or an rtlab \
     result (JSON with \"schema\": \"rtlab.run/1\")";

/// Why a file could not be imported. The message names the file, then the
/// line (text formats) or JSON path, then what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A cyclictest histogram file that does not read as one.
    #[error("{path}:{line}: {message}")]
    Histfile {
        path: String,
        /// 1-based line number.
        line: usize,
        message: String,
    },
    /// A JSON document that is not what its format requires.
    #[error("{path}: {at}: {message}")]
    Json {
        path: String,
        /// JSON path, e.g. `$.thread["0"].cycles`, or `line L column C`
        /// for a syntax error.
        at: String,
        message: String,
    },
    /// Neither of the formats accepted.
    #[error("{path}: {message}")]
    UnknownFormat { path: String, message: String },
    /// Counts no measurement reaches (see [`MAX_IMPORTED_EVENTS`]).
    #[error("{path}: {message}")]
    Counts { path: String, message: String },
}

/// The largest file [`import_file`] reads: a cyclictest histogram of
/// 10⁶ µs bins is about 10 MiB, an rtlab result a few MiB.
pub const MAX_IMPORT_BYTES: u64 = 64 << 20;

/// A format [`import_file`] can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    CyclictestHistfile,
    CyclictestJson,
    RtlabJson,
}

impl Format {
    /// The name recorded as `config.format` of an imported run.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestHistfile => "cyclictest-histfile",
            Format::CyclictestJson => "cyclictest-json",
            Format::RtlabJson => "rtlab-json",
        }
    }
}

/// Decides the format from the content: a JSON object is rtlab's when it
/// has a top-level `"schema"` key and cyclictest's when it has a
/// `"thread"` key; text is a histfile when it has a `# Histogram` line or its first
/// line that is not a comment is a row of decimal numbers.
pub fn detect(text: &str) -> Option<Format> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        return match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(value) if value.get("schema").is_some() => Some(Format::RtlabJson),
            Ok(value) if value.get("thread").is_some() => Some(Format::CyclictestJson),
            Ok(_) => None,
            // Broken JSON: guess from the keys, so that the error comes
            // from the parser of the format it was meant to be.
            Err(_) if trimmed.contains("\"rtlab.run/") => Some(Format::RtlabJson),
            Err(_) if trimmed.contains("\"thread\"") => Some(Format::CyclictestJson),
            Err(_) => None,
        };
    }
    for line in text.lines() {
        let line = line.trim();
        if line == "# Histogram" {
            return Some(Format::CyclictestHistfile);
        }
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let mut fields = first.split_whitespace();
    let all_numeric = first
        .split_whitespace()
        .all(|f| f.bytes().all(|b| b.is_ascii_digit()));
    (fields.next().is_some() && fields.next().is_some() && all_numeric)
        .then_some(Format::CyclictestHistfile)
}

/// Reads `path`, detects its format by content and converts it. The run
/// gets a new id (except an rtlab result, which keeps its own), probe
/// `cyclictest`, and `config.imported_from = path`.
pub fn import_file(path: &Path) -> Result<RunResult, ImportError> {
    use std::io::Read;
    let origin = path.display().to_string();
    let io = |source| ImportError::Io {
        path: origin.clone(),
        source,
    };
    // Read at most one byte past the limit: `/dev/zero` or a huge file is
    // refused, not read until memory runs out.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_IMPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(ImportError::UnknownFormat {
            path: origin,
            message: format!(
                "larger than {} MiB: not a result rtlab imports (cyclictest's files and \
                 rtlab's results are far smaller)",
                MAX_IMPORT_BYTES >> 20
            ),
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    import_text(&text, &origin, modified)
}

/// Like [`import_file`] for text already read; `origin` names it in errors
/// and in `config.imported_from`; `modified` (the file's modification
/// time) dates a histfile, which records no time of its own.
pub fn import_text(
    text: &str,
    origin: &str,
    modified: Option<SystemTime>,
) -> Result<RunResult, ImportError> {
    match detect(text) {
        Some(Format::CyclictestHistfile) => cyclictest_histfile::parse(text, origin, modified),
        Some(Format::CyclictestJson) => cyclictest_json::parse(text, origin),
        Some(Format::RtlabJson) => parse_rtlab_json(text, origin),
        None => Err(ImportError::UnknownFormat {
            path: origin.to_string(),
            message: if text.trim().is_empty() {
                format!("the file is empty; expected {ACCEPTED_FORMATS}")
            } else if text.trim_start().starts_with('{') {
                format!(
                    "a JSON document, but neither cyclictest's (no \"thread\" object) nor \
                     rtlab's (no \"schema\" key); expected {ACCEPTED_FORMATS}"
                )
            } else {
                format!("not a format rtlab can import; expected {ACCEPTED_FORMATS}")
            },
        }),
    }
}

fn parse_rtlab_json(text: &str, origin: &str) -> Result<RunResult, ImportError> {
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| json_syntax_error(origin, &e))?;
    let schema = value.get("schema").and_then(|s| s.as_str());
    if schema != Some(RUN_SCHEMA) {
        return Err(ImportError::Json {
            path: origin.to_string(),
            at: "$.schema".into(),
            message: format!(
                "expected \"{RUN_SCHEMA}\", found {}",
                value
                    .get("schema")
                    .map_or("nothing".into(), |s| s.to_string())
            ),
        });
    }
    check_text(&value, "$", origin)?;
    // Read again from the text, so that an error names the value's JSON
    // path and its line and column (a Value keeps no positions).
    let text = text.trim_start_matches('\u{feff}');
    let run = rtlab_core::result::parse_run_json(text).map_err(|e| ImportError::Json {
        path: origin.to_string(),
        at: format!("{} (line {} column {})", e.path, e.line, e.column),
        message: e.message,
    })?;
    // The id is kept: it is what `show`, `compare` and the tables print.
    rtlab_core::result::check_run_id(&run.id).map_err(|message| ImportError::Json {
        path: origin.to_string(),
        at: "$.id".into(),
        message,
    })?;
    check_labels(&run, origin)?;
    check_counts(&run, origin)?;
    Ok(run)
}

/// Refuses a label longer than rtlab takes at its own input
/// ([`rtlab_core::text::MAX_LABEL_CHARS`]: `--load`, campaign names and load
/// specs), naming its JSON path: an imported run is input too, and a
/// 70,000-character load or campaign name was stored and printed whole.
fn check_labels(run: &RunResult, origin: &str) -> Result<(), ImportError> {
    let mut labels = vec![("$.probe".to_string(), run.probe.as_str())];
    if let Some(campaign) = &run.campaign {
        labels.push(("$.campaign.name".to_string(), campaign.name.as_str()));
        labels.push(("$.campaign.execution".to_string(), &campaign.execution));
        labels.push((
            "$.campaign.configuration".to_string(),
            &campaign.configuration,
        ));
        labels.push(("$.campaign.load".to_string(), &campaign.load));
    }
    for (i, load) in run.loads.iter().enumerate() {
        labels.push((format!("$.loads[{i}].name"), load.name.as_str()));
        labels.push((format!("$.loads[{i}].spec"), &load.spec));
    }
    for (at, label) in labels {
        rtlab_core::text::check_label("the label", label).map_err(|e| ImportError::Json {
            path: origin.to_string(),
            at: at.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// The most events (samples, missed and dropped, or histogram counts) an
/// imported run may hold over all its series: 2^53, 285 years of one event
/// a microsecond, and the largest count a report's floating-point figures
/// hold exactly. Larger counts are no measurement, and their sums
/// overflowed wherever a run's series are added up (the import's summary,
/// the report's exceedance chart, compare, the campaign matrix).
pub const MAX_IMPORTED_EVENTS: u64 = 1 << 53;

/// Refuses a run whose counts add up past [`MAX_IMPORTED_EVENTS`], naming
/// the series where the total crosses it. Every importer calls it last, so
/// that what one format's parser accepts, its rtlab JSON export imports.
pub(crate) fn check_counts(run: &RunResult, origin: &str) -> Result<(), ImportError> {
    let limit = u128::from(MAX_IMPORTED_EVENTS);
    let (mut events, mut binned) = (0u128, 0u128);
    for series in &run.series {
        let stats = &series.stats;
        events += u128::from(stats.samples) + u128::from(stats.missed) + u128::from(stats.dropped);
        binned += stats
            .histogram_ns
            .iter()
            .map(|bin| u128::from(bin[1]))
            .sum::<u128>();
        let (what, total) = match events > limit {
            true => ("samples, missed and dropped", events),
            false => ("histogram counts", binned),
        };
        if total > limit {
            return Err(ImportError::Counts {
                path: origin.to_string(),
                message: format!(
                    "series `{}`: the run's {what} add up to {total} with this series, more \
                     than the {limit} (2^53) a run can hold; refused",
                    rtlab_core::result::printable(&series.name, 80)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a control character (other than tab and newline) in any key or
/// string of an imported document: those strings end up in tables and
/// messages on a terminal, where an escape sequence would be obeyed.
pub(crate) fn check_text(
    value: &serde_json::Value,
    at: &str,
    origin: &str,
) -> Result<(), ImportError> {
    use serde_json::Value;
    let bad = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    };
    let refuse = |at: String, text: &str| ImportError::Json {
        path: origin.to_string(),
        at,
        message: format!(
            "the text `{}` holds control characters (shown escaped): refused, since it would \
             be printed on a terminal",
            rtlab_core::result::printable(text, 80)
        ),
    };
    match value {
        Value::String(text) if bad(text) => Err(refuse(at.to_string(), text)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_text(item, &format!("{at}[{i}]"), origin)),
        Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let here = format!("{at}[\"{}\"]", rtlab_core::result::printable(key, 80));
            if bad(key) {
                return Err(refuse(here, key));
            }
            check_text(item, &here, origin)
        }),
        _ => Ok(()),
    }
}

pub(crate) fn json_syntax_error(origin: &str, e: &serde_json::Error) -> ImportError {
    ImportError::Json {
        path: origin.to_string(),
        at: format!("line {} column {}", e.line(), e.column()),
        message: if e.is_eof() {
            "the JSON ends early (truncated file?)".to_string()
        } else {
            format!("invalid JSON: {e}")
        },
    }
}

// ---------------------------------------------------------------------------
// Shared by both cyclictest importers
// ---------------------------------------------------------------------------

/// One cyclictest thread as its output describes it: a histogram with a
/// fixed bin width and a limit, the samples beyond the limit counted but
/// not placed, and the exact min/avg/max when the output has them.
#[derive(Debug, Clone, Default)]
pub(crate) struct BinnedThread {
    /// `[bin, count]`, bins in units of `unit_ns`, increasing, counts > 0.
    pub bins: Vec<[u64; 2]>,
    /// Samples at or above the histogram limit (not in `bins`).
    pub overflow_count: u64,
    /// The histogram limit in units, when known.
    pub limit: Option<u64>,
    /// Cycle numbers of the first overflows, as cyclictest lists them.
    pub overflow_samples: Vec<u64>,
    /// Exact figures in units, when the output has them.
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub avg: Option<f64>,
    /// 1000 for cyclictest's µs, 1 for its `-N` ns.
    pub unit_ns: u64,
}

impl BinnedThread {
    /// The series statistics, with a warning for everything estimated.
    pub fn stats(&self, name: &str, warnings: &mut Vec<String>) -> SeriesStats {
        let unit = self.unit_ns.max(1);
        let in_range = self.bins.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
        let samples = in_range.saturating_add(self.overflow_count);
        if samples == 0 {
            return SeriesStats {
                overflows: self.overflows(),
                ..SeriesStats::default()
            };
        }
        let lowest_bin = self.bins.first().map(|b| b[0]);
        let highest_bin = self.bins.last().map(|b| b[0]);
        let max_units = match (self.max, self.overflow_count) {
            (Some(max), _) => max,
            (None, 0) => highest_bin.unwrap_or(0),
            (None, n) => {
                let at_least = self.limit.unwrap_or(highest_bin.map_or(0, |b| b + 1));
                warnings.push(format!(
                    "{name}: the maximum is unknown (no max in the file and {n} samples beyond \
                     the histogram); {at_least} {} (the histogram limit) is a lower bound",
                    unit_name(unit)
                ));
                at_least.max(highest_bin.unwrap_or(0))
            }
        };
        let min_units = self
            .min
            .or(lowest_bin)
            .unwrap_or(self.limit.unwrap_or(max_units))
            .min(max_units);

        // The histogram that percentiles, stdev and the bootstrap read:
        // samples beyond the limit are counted at the max, an upper bound.
        let mut effective = self.bins.clone();
        if self.overflow_count > 0 {
            match effective.last_mut() {
                Some(last) if last[0] == max_units => {
                    last[1] = last[1].saturating_add(self.overflow_count)
                }
                _ => effective.push([max_units, self.overflow_count]),
            }
            warnings.push(format!(
                "{name}: {} samples at or beyond the histogram limit have unknown values; they \
                 are counted at the max ({} {}) in the histograms, percentiles and stdev",
                self.overflow_count,
                max_units,
                unit_name(unit)
            ));
        }
        let histogram_ns: Vec<[u64; 2]> = effective
            .iter()
            .map(|&[v, c]| [v.saturating_mul(unit), c])
            .collect();
        let mut histogram_us: Vec<[u64; 2]> = Vec::new();
        for &[v_ns, c] in &histogram_ns {
            let bin = v_ns / 1000;
            match histogram_us.last_mut() {
                Some(last) if last[0] == bin => last[1] = last[1].saturating_add(c),
                _ => histogram_us.push([bin, c]),
            }
        }

        let min_ns = min_units.saturating_mul(unit);
        let max_ns = max_units.saturating_mul(unit);
        let q = |quantile| quantile_of(&histogram_ns, samples, quantile).clamp(min_ns, max_ns);
        let percentiles_ns = Percentiles {
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        };

        let (bins_mean, stdev_ns) = moments(&histogram_ns, samples);
        let mean_ns = match self.avg {
            // cyclictest's own average is exact when every sample is in a
            // bin: the bins give it unrounded.
            Some(avg) if self.overflow_count > 0 => (avg * unit as f64).round(),
            _ => bins_mean,
        };

        SeriesStats {
            samples,
            missed: 0,
            dropped: 0,
            min_ns,
            max_ns,
            mean_ns,
            stdev_ns,
            percentiles_ns,
            max_at: None,
            top: Vec::new(),
            histogram_ns,
            histogram_us,
            overflows: self.overflows(),
            // cyclictest keeps no order of its samples.
            block_maxima: None,
        }
    }

    fn overflows(&self) -> Option<Overflows> {
        // Overflows are a µs notion (cyclictest's -h in µs).
        if self.unit_ns != 1000 {
            return None;
        }
        self.limit.map(|limit_us| Overflows {
            limit_us,
            count: self.overflow_count,
            first_samples: self.overflow_samples.clone(),
        })
    }
}

/// Mean and sample standard deviation (n − 1) of a histogram holding
/// `samples` values: exact integer sums where they fit, f64 otherwise.
pub(crate) fn moments(histogram: &[[u64; 2]], samples: u64) -> (f64, f64) {
    if samples == 0 {
        return (0.0, 0.0);
    }
    let exact = histogram
        .iter()
        .try_fold((0u128, 0u128), |(s, sq), &[v, c]| {
            let (v, c) = (u128::from(v), u128::from(c));
            let vc = v.checked_mul(c)?;
            Some((s.checked_add(vc)?, sq.checked_add(vc.checked_mul(v)?)?))
        });
    let n = samples as f64;
    if let Some((sum, sum_sq)) = exact {
        let mean = sum as f64 / n;
        if samples < 2 {
            return (mean, 0.0);
        }
        let big_n = u128::from(samples);
        let variance = match (big_n.checked_mul(sum_sq), sum.checked_mul(sum)) {
            (Some(a), Some(b)) if a >= b => (a - b) as f64 / (n * (n - 1.0)),
            _ => (sum_sq as f64 / n - mean * mean) * n / (n - 1.0),
        };
        return (mean, variance.max(0.0).sqrt());
    }
    let mean = histogram
        .iter()
        .map(|&[v, c]| v as f64 * c as f64)
        .sum::<f64>()
        / n;
    let squares: f64 = histogram
        .iter()
        .map(|&[v, c]| (v as f64 - mean).powi(2) * c as f64)
        .sum();
    let stdev = if samples < 2 {
        0.0
    } else {
        (squares / (n - 1.0)).sqrt()
    };
    (mean, stdev)
}

fn unit_name(unit_ns: u64) -> &'static str {
    if unit_ns == 1 {
        "ns"
    } else {
        "µs"
    }
}

/// The parts of a RunResult every importer fills the same way.
pub(crate) fn imported_run(
    format: Format,
    origin: &str,
    started_at: String,
    environment: Environment,
    series: Vec<Series>,
    warnings: Vec<String>,
) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.to_string(),
        id: RunResult::new_id(),
        probe: "cyclictest".to_string(),
        status: RunStatus::Complete,
        // The schema wants an end for a run that is not running; the
        // importers set the real one where the file has it.
        ended_at: Some(started_at.clone()),
        started_at,
        elapsed_ns: 0,
        command: Vec::new(),
        config: serde_json::json!({
            "imported_from": origin,
            "format": format.name(),
            "resolution_ns": 1000,
        }),
        effective: Effective::default(),
        environment,
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        warnings,
    }
}

/// A series for one cyclictest thread.
pub(crate) fn thread_series(
    name: String,
    cpu: Option<usize>,
    interval_ns: u64,
    requested: SchedParams,
    stats: SeriesStats,
) -> Series {
    Series {
        name,
        metric: "wakeup_latency".to_string(),
        cpu,
        interval_ns,
        thread: ThreadSettings {
            tid: 0,
            pinned_cpu: cpu,
            requested,
            actual: None,
            timer_slack_ns: None,
        },
        stats,
    }
}

/// The scheduling of a thread nobody recorded.
pub(crate) fn unknown_sched() -> SchedParams {
    SchedParams {
        policy: Policy::Other,
        priority: 0,
        deadline: None,
    }
}

/// An RFC 3339 UTC timestamp with µs, as rtlab writes them; `None` for a
/// time RFC 3339 cannot write (before 1970 or after 9999: humantime
/// panics on those, and a file's date is input).
pub(crate) fn rfc3339(t: SystemTime) -> Option<String> {
    // 10000-01-01T00:00:00Z.
    const YEAR_10000: u64 = 253_402_300_800;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    (secs < YEAR_10000).then(|| humantime::format_rfc3339_micros(t).to_string())
}

/// The time of the import, in RFC 3339 (the clock is past 1970 and before
/// 9999 on any machine rtlab runs on; the epoch if not).
pub(crate) fn now_rfc3339() -> String {
    rfc3339(SystemTime::now()).unwrap_or_else(|| "1970-01-01T00:00:00.000000Z".to_string())
}

/// An environment that says nothing but when it was "captured" (the
/// schema wants a timestamp) and who wrote it.
pub(crate) fn unknown_environment(captured_at: &str) -> Environment {
    Environment {
        rtlab_version: rtlab_core::VERSION.to_string(),
        captured_at: seconds_precision(captured_at),
        ..Environment::default()
    }
}

/// `2026-11-21T20:02:16.000000Z` → `2026-11-21T20:02:16Z`.
pub(crate) fn seconds_precision(ts: &str) -> String {
    match (ts.find('.'), ts.ends_with('Z')) {
        (Some(dot), true) => format!("{}Z", &ts[..dot]),
        _ => ts.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats_by_content() {
        assert_eq!(
            detect("# Histogram\n000000 000001\n"),
            Some(Format::CyclictestHistfile)
        );
        assert_eq!(
            detect("000000 000001\t000002\n"),
            Some(Format::CyclictestHistfile)
        );
        assert_eq!(detect("{\"thread\": {}}"), Some(Format::CyclictestJson));
        assert_eq!(
            detect(" {\"schema\": \"rtlab.run/1\"}"),
            Some(Format::RtlabJson)
        );
        assert_eq!(detect("hello world"), None);
        assert_eq!(detect("{\"a\": 1}"), None);
        assert_eq!(detect(""), None);
    }

    #[test]
    fn overflows_are_counted_at_the_max() {
        let t = BinnedThread {
            bins: vec![[1, 2], [3, 1]],
            overflow_count: 1,
            limit: Some(5),
            overflow_samples: vec![2],
            min: Some(1),
            max: Some(9),
            avg: Some(3.5),
            unit_ns: 1000,
        };
        let mut warnings = Vec::new();
        let s = t.stats("thread0", &mut warnings);
        assert_eq!(s.samples, 4);
        assert_eq!(s.histogram_us, vec![[1, 2], [3, 1], [9, 1]]);
        assert_eq!(s.histogram_ns, vec![[1000, 2], [3000, 1], [9000, 1]]);
        assert_eq!(s.percentiles_ns.p99, 9000);
        assert_eq!(s.percentiles_ns.p50, 1000);
        assert_eq!(s.mean_ns, 3500.0);
        assert_eq!(warnings.len(), 1);
        assert_eq!(s.overflows.unwrap().count, 1);
    }
}
