//! cyclictest's histogram: `--histfile=FILE`, or the same text printed on
//! stdout by `-h N`/`-H N` (what precedes its `# Histogram` line, such as
//! the `T: 0 (…)` status lines, is skipped). The layout, as cyclictest's
//! print_hist() writes it and [`crate::export::HistfileExporter`] copies it
//! (a space after the bin, tabs between the count columns):
//!
//! ```text
//! # Histogram
//! 000000 000000 000000          one row per 1 µs bin, one column per thread
//! 000001 000012 000009          (-H adds a column summing all threads)
//! …
//! # Total: 000002940 000002868 [all]      in-range samples per thread
//! # Min Latencies: 00010 00011            exact, µs
//! # Avg Latencies: 00032 00031            mean over all samples, truncated
//! # Max Latencies: 04897 07038 [max]      exact, µs (overflows included)
//! # Histogram Overflows: 00060 00132 [all] samples ≥ the number of bins
//! # Histogram Overflow at cycle number:
//! # Thread 0: 00057 00098 … # 00020 others   first overflows' cycle numbers
//! # Thread 1: …
//! ```
//!
//! What it gives: samples (Total + Overflows), exact min/max, the 1 µs
//! histogram, percentiles at 1 µs resolution (bin × 1000 ns), the mean
//! (exact from the bins when nothing overflowed, else the trailer's
//! truncated average), stdev from the bins. What it does not say: the
//! CPUs, the interval, the priorities, when the run happened, missed
//! deadlines (cyclictest does not count them) and the values of the
//! samples beyond the histogram (counted at the max).

use super::binned::BinnedThread;
use super::checks::check_counts;
use super::error::ImportError;
use super::format::Format;
use super::run::{
    imported_run, now_rfc3339, rfc3339, thread_series, unknown_environment, unknown_sched,
};
use rtlab_core::result::RunResult;
use std::time::SystemTime;

/// The trailer lines, as parsed (values per column, summary included).
#[derive(Default)]
struct Trailer {
    total: Option<(usize, Vec<u64>)>,
    min: Option<(usize, Vec<u64>)>,
    avg: Option<(usize, Vec<u64>)>,
    max: Option<(usize, Vec<u64>)>,
    overflows: Option<(usize, Vec<u64>)>,
    /// `# Thread N:` lines: (line, thread, listed cycles, "others" count).
    threads: Vec<(usize, usize, Vec<u64>, u64)>,
    /// The line the trailer starts on.
    first_line: Option<usize>,
}

struct Parser<'a> {
    origin: &'a str,
}

impl Parser<'_> {
    fn err(&self, line: usize, message: impl Into<String>) -> ImportError {
        ImportError::Histfile {
            path: self.origin.to_string(),
            line,
            message: message.into(),
        }
    }

    fn numbers(&self, line: usize, label: &str, text: &str) -> Result<Vec<u64>, ImportError> {
        text.split_whitespace()
            .map(|field| {
                field.parse::<u64>().map_err(|_| {
                    self.err(
                        line,
                        format!(
                            "'# {label}:' holds '{field}': expected decimal numbers, one per \
                             thread"
                        ),
                    )
                })
            })
            .collect()
    }

    /// `# Thread 3: 00012 00034 # 00005 others`.
    fn thread_line(
        &self,
        line: usize,
        rest: &str,
    ) -> Result<Option<(usize, Vec<u64>, u64)>, ImportError> {
        let Some((index, list)) = rest.split_once(':') else {
            return Ok(None);
        };
        let Ok(index) = index.trim().parse::<usize>() else {
            return Ok(None);
        };
        let (listed, others) = match list.split_once('#') {
            Some((listed, others)) => (listed, Some(others)),
            None => (list, None),
        };
        let cycles = self.numbers(line, &format!("Thread {index}"), listed)?;
        let others = match others {
            None => 0,
            Some(text) => {
                let text = text.trim();
                let count = text
                    .strip_suffix("others")
                    .map(str::trim)
                    .and_then(|n| n.parse::<u64>().ok());
                count.ok_or_else(|| {
                    self.err(
                        line,
                        format!(
                            "expected '# NNNNN others' after the cycle numbers, found '# {text}'"
                        ),
                    )
                })?
            }
        };
        Ok(Some((index, cycles, others)))
    }
}

/// A histogram row: its line, its bin and one count per column.
type Row = (usize, u64, Vec<u64>);

/// Parses a cyclictest histogram. `origin` names the file in errors and in
/// `config.imported_from`; `modified` (the file's modification time) is
/// taken as the run's time, since the file records none.
pub fn parse(
    text: &str,
    origin: &str,
    modified: Option<SystemTime>,
) -> Result<RunResult, ImportError> {
    let p = Parser { origin };
    let lines: Vec<&str> = text.lines().collect();
    let start = p.histogram_start(&lines)?;
    let (rows, trailer) = p.body(&lines, start)?;

    let last_line = lines.len().max(1);
    let Some((total_line, totals)) = trailer.total.clone() else {
        return Err(p.err(
            last_line,
            "the file ends without cyclictest's trailer (no '# Total:' line): truncated?",
        ));
    };
    let (threads, summary) = p.layout(&trailer, &rows, total_line, &totals)?;
    let mut warnings = vec![
        "imported from a cyclictest histogram: 1 µs resolution (latencies truncated to the \
         µs); percentiles are the bin's lower edge"
            .to_string(),
        "not in a cyclictest histogram: CPUs, interval, priorities, time of the run and of \
         the max; missed deadlines are not counted by cyclictest (missed = 0 here)"
            .to_string(),
    ];
    if summary {
        summary_column_warning(&rows, threads, &mut warnings);
    }
    let columns = TrailerColumns::read(&p, &trailer, threads, &mut warnings)?;

    let limit = rows.last().map(|r| r.1.saturating_add(1));
    let mut series = Vec::with_capacity(threads);
    for t in 0..threads {
        let bins: Vec<[u64; 2]> = rows
            .iter()
            .filter(|r| r.2[t] > 0)
            .map(|r| [r.1, r.2[t]])
            .collect();
        let in_range = bins.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
        if in_range != columns.totals[t] {
            return Err(p.err(
                total_line,
                format!(
                    "'# Total:' says {} samples for thread {t} but its histogram column sums \
                     to {in_range}: rows missing or altered?",
                    columns.totals[t]
                ),
            ));
        }
        let listed = trailer
            .threads
            .iter()
            .find(|(_, index, _, _)| *index == t)
            .map(|(_, _, cycles, _)| cycles.clone())
            .unwrap_or_default();
        let thread = BinnedThread {
            bins,
            overflow_count: columns.overflows.as_ref().map_or(0, |o| o[t]),
            limit,
            overflow_samples: listed,
            min: columns.mins.as_ref().map(|m| m[t]),
            max: columns.maxs.as_ref().map(|m| m[t]),
            avg: columns.avgs.as_ref().map(|a| a[t] as f64),
            unit_ns: 1000,
        };
        let name = format!("thread{t}");
        let stats = thread.stats(&name, &mut warnings);
        series.push(thread_series(name, None, 0, unknown_sched(), stats));
    }

    let started_at = started_at(modified, &mut warnings);
    let environment = unknown_environment(&started_at);
    let run = imported_run(
        Format::CyclictestHistfile,
        origin,
        started_at,
        environment,
        series,
        warnings,
    );
    check_counts(&run, origin)?;
    Ok(run)
}

impl Parser<'_> {
    /// Where the histogram starts: after its header, or else at the first
    /// row.
    fn histogram_start(&self, lines: &[&str]) -> Result<usize, ImportError> {
        match lines.iter().position(|l| l.trim() == "# Histogram") {
            Some(i) => Ok(i + 1),
            None => lines
                .iter()
                .position(|l| {
                    let l = l.trim();
                    !l.is_empty() && l.bytes().next().is_some_and(|b| b.is_ascii_digit())
                })
                .ok_or_else(|| {
                    self.err(
                        1,
                        "no '# Histogram' line and no histogram rows: not a cyclictest histogram",
                    )
                }),
        }
    }

    /// The rows and the trailer, from line index `start` on.
    fn body(&self, lines: &[&str], start: usize) -> Result<(Vec<Row>, Trailer), ImportError> {
        let mut rows: Vec<Row> = Vec::new();
        let mut trailer = Trailer::default();
        for (i, raw) in lines.iter().enumerate().skip(start) {
            let number = i + 1;
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                trailer.first_line.get_or_insert(number);
                self.trailer_line(number, comment, &mut trailer)?;
                continue;
            }
            if trailer.first_line.is_some() {
                return Err(self.err(
                    number,
                    format!(
                        "unexpected text after the histogram's trailer: '{}' (expected nothing \
                         after the '# Thread N:' lines)",
                        clip(line)
                    ),
                ));
            }
            let row = self.row(number, line, rows.last())?;
            rows.push(row);
        }
        Ok((rows, trailer))
    }

    /// One `# Label: values` line of the trailer, read into its slot.
    fn trailer_line(
        &self,
        number: usize,
        comment: &str,
        trailer: &mut Trailer,
    ) -> Result<(), ImportError> {
        let comment = comment.trim();
        let (label, rest) = comment.split_once(':').unwrap_or((comment, ""));
        let label = label.trim();
        let slot = match label {
            "Total" => &mut trailer.total,
            "Min Latencies" => &mut trailer.min,
            "Avg Latencies" => &mut trailer.avg,
            "Max Latencies" => &mut trailer.max,
            "Histogram Overflows" => &mut trailer.overflows,
            _ => {
                if let Some(rest) = comment.strip_prefix("Thread ") {
                    if let Some((index, cycles, others)) = self.thread_line(number, rest)? {
                        trailer.threads.push((number, index, cycles, others));
                    }
                }
                // Any other comment (e.g. "Histogram Overflow at cycle
                // number:") carries nothing to read.
                return Ok(());
            }
        };
        *slot = Some((number, self.numbers(number, label, rest)?));
        Ok(())
    }

    /// A histogram row `BIN COUNT [COUNT…]`, checked against the row before.
    fn row(&self, number: usize, line: &str, previous: Option<&Row>) -> Result<Row, ImportError> {
        let mut fields = line.split_whitespace();
        let parse = |field: &str| -> Result<u64, ImportError> {
            field.parse::<u64>().map_err(|_| {
                self.err(
                    number,
                    format!(
                        "expected a histogram row 'BIN COUNT [COUNT…]' of decimal numbers, \
                         found '{}' in '{}'",
                        clip(field),
                        clip(line)
                    ),
                )
            })
        };
        let bin = parse(fields.next().unwrap_or_default())?;
        let counts = fields.map(parse).collect::<Result<Vec<u64>, _>>()?;
        if counts.is_empty() {
            return Err(self.err(
                number,
                format!("histogram row '{}' has a bin but no count", clip(line)),
            ));
        }
        if let Some((prev_line, prev_bin, prev_counts)) = previous {
            if bin <= *prev_bin {
                return Err(self.err(
                    number,
                    format!(
                        "bin {bin} follows bin {prev_bin} (line {prev_line}): expected \
                         increasing bins"
                    ),
                ));
            }
            if counts.len() != prev_counts.len() {
                return Err(self.err(
                    number,
                    format!(
                        "{} count columns, but line {prev_line} has {}",
                        counts.len(),
                        prev_counts.len()
                    ),
                ));
            }
        }
        Ok((number, bin, counts))
    }

    /// How many threads, and whether the rows end with -H's all-threads
    /// column.
    fn layout(
        &self,
        trailer: &Trailer,
        rows: &[Row],
        total_line: usize,
        totals: &[u64],
    ) -> Result<(usize, bool), ImportError> {
        let columns = rows.first().map(|r| r.2.len());
        // How many threads: the per-thread-only lines say it best.
        let threads = trailer
            .min
            .as_ref()
            .map(|m| m.1.len())
            .or_else(|| trailer.avg.as_ref().map(|a| a.1.len()))
            .or_else(|| (!trailer.threads.is_empty()).then_some(trailer.threads.len()))
            .or(columns)
            .unwrap_or(totals.len());
        if threads == 0 {
            return Err(self.err(total_line, "'# Total:' lists no thread"));
        }
        let summary = match columns {
            Some(c) if c == threads => false,
            Some(c) if c == threads + 1 && threads > 1 => true,
            Some(c) => {
                return Err(self.err(
                    rows[0].0,
                    format!(
                        "{c} count columns, but the trailer describes {threads} threads \
                         (expected {threads}, or {} with -H's all-threads column)",
                        threads + 1
                    ),
                ))
            }
            None => false,
        };
        Ok((threads, summary))
    }
}

/// A warning at the first row whose all-threads column is not the sum of
/// the threads'.
fn summary_column_warning(rows: &[Row], threads: usize, warnings: &mut Vec<String>) {
    for (line, _, counts) in rows {
        let sum = counts[..threads]
            .iter()
            .fold(0u64, |a, c| a.saturating_add(*c));
        if counts[threads] != sum {
            warnings.push(format!(
                "line {line}: the all-threads column says {} but the threads sum to {sum}; \
                 the per-thread columns are used",
                counts[threads]
            ));
            break;
        }
    }
}

/// The trailer's values, one per thread (the all-threads value dropped).
struct TrailerColumns {
    totals: Vec<u64>,
    mins: Option<Vec<u64>>,
    avgs: Option<Vec<u64>>,
    maxs: Option<Vec<u64>>,
    overflows: Option<Vec<u64>>,
}

impl TrailerColumns {
    /// The columns, with a warning for each line missing.
    fn read(
        p: &Parser,
        trailer: &Trailer,
        threads: usize,
        warnings: &mut Vec<String>,
    ) -> Result<TrailerColumns, ImportError> {
        let per_thread = |entry: &Option<(usize, Vec<u64>)>,
                          label: &str|
         -> Result<Option<Vec<u64>>, ImportError> {
            match entry {
                None => Ok(None),
                Some((line, values)) if values.len() < threads => Err(p.err(
                    *line,
                    format!(
                        "'# {label}:' has {} values, expected one per thread ({threads})",
                        values.len()
                    ),
                )),
                Some((_, values)) => Ok(Some(values[..threads].to_vec())),
            }
        };
        let totals = per_thread(&trailer.total, "Total")?.unwrap_or_default();
        let mins = per_thread(&trailer.min, "Min Latencies")?;
        let avgs = per_thread(&trailer.avg, "Avg Latencies")?;
        let maxs = per_thread(&trailer.max, "Max Latencies")?;
        let overflows = per_thread(&trailer.overflows, "Histogram Overflows")?;
        if overflows.is_none() {
            warnings.push(
                "no '# Histogram Overflows:' line: samples beyond the histogram, if any, are \
                 not counted"
                    .to_string(),
            );
        }
        for (label, present) in [
            ("Min Latencies", mins.is_some()),
            ("Max Latencies", maxs.is_some()),
        ] {
            if !present {
                warnings.push(format!(
                    "no '# {label}:' line: taken from the histogram's bins"
                ));
            }
        }
        Ok(TrailerColumns {
            totals,
            mins,
            avgs,
            maxs,
            overflows,
        })
    }
}

/// The run's time: the file's modification time where it has one RFC 3339
/// can hold, else the time of the import; a warning says which.
fn started_at(modified: Option<SystemTime>, warnings: &mut Vec<String>) -> String {
    match modified.map(|t| (t, rfc3339(t))) {
        Some((_, Some(text))) => {
            warnings.push(
                "a cyclictest histogram records no time: started_at and ended_at are the \
                 file's modification time (about when the run ended)"
                    .to_string(),
            );
            text
        }
        Some((t, None)) => {
            warnings.push(format!(
                "a cyclictest histogram records no time, and the file's modification time \
                 ({}) is before 1970 or after 9999: started_at is the time of the import",
                mtime_text(t)
            ));
            now_rfc3339()
        }
        None => {
            warnings.push(
                "a cyclictest histogram records no time: started_at is the time of the import"
                    .to_string(),
            );
            now_rfc3339()
        }
    }
}

/// A piece of input short enough to quote in an error.
fn clip(text: &str) -> String {
    // Control characters escaped: the line is printed on a terminal.
    rtlab_core::result::printable(text, 40)
}

/// A file time as seconds from the epoch (negative before it), for a
/// message: any SystemTime, where RFC 3339 stops at 9999.
fn mtime_text(t: SystemTime) -> String {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => format!("{} s after 1970", d.as_secs()),
        Err(e) => format!("{} s before 1970", e.duration().as_secs()),
    }
}
