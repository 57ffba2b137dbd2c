//! cyclictest's `--json=FILE` (rt-tests 2.x, `"file_version": 1`):
//!
//! ```text
//! { "file_version": 1, "cmdline:": "cyclictest -m -q -p 90 … -h 200 --json=…",
//!   "rt_test_version:": "2.40", "start_time": "Sat, 21 Nov 2026 20:02:16 +0000",
//!   "end_time": "…", "return_code": 0,
//!   "sysinfo": { "sysname", "nodename", "release", "version", "machine", "realtime" },
//!   "num_threads": 2, "resolution_in_ns": 0,
//!   "thread": { "0": { "histogram": { "13": 7, … }, "cycles": 2000, "min": 13,
//!                      "max": 78, "avg": 29.39, "cpu": 0, "node": 0 }, … } }
//! ```
//!
//! (The colons inside `"cmdline:"` and `"rt_test_version:"` are
//! cyclictest's; both spellings are read.) `histogram` is empty without
//! `-h`/`-H`, and leaves out the samples beyond the histogram: they are
//! `cycles` minus the histogram's sum. Values are µs, or ns with `-N`
//! (`"resolution_in_ns": 1`). The interval, priority, policy, mlockall and
//! histogram limit are read back from the recorded command line as rt-tests
//! 2.x interprets it. Every other top-level key is kept verbatim in
//! `config.cyclictest`.

use super::binned::BinnedThread;
use super::checks::{check_counts, check_text};
use super::cyclictest_cmdline::CommandLine;
use super::error::{json_syntax_error, ImportError};
use super::format::Format;
use super::run::{
    imported_run, now_rfc3339, rfc3339, thread_series, unknown_environment, unknown_sched,
};
use rtlab_core::env::Environment;
use rtlab_core::result::{RunResult, RunStatus, Series, SeriesStats};
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

struct Ctx<'a> {
    origin: &'a str,
}

impl Ctx<'_> {
    fn err(&self, at: impl Into<String>, message: impl Into<String>) -> ImportError {
        ImportError::Json {
            path: self.origin.to_string(),
            at: at.into(),
            message: message.into(),
        }
    }

    fn u64_at(&self, v: &Value, at: &str) -> Result<u64, ImportError> {
        v.as_u64()
            .or_else(|| {
                // "13.0" is still a whole number.
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                self.err(
                    at,
                    format!("expected a non-negative integer, found {}", show(v)),
                )
            })
    }
}

/// A JSON value short enough to quote in an error.
fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

/// `printf("%.2f", 0.0/0)` writes `nan` or `-nan` (a thread with no
/// cycles): not JSON. Turn such values into `null`.
fn repair_nan(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while let Some(pos) = rest.find(':') {
        out.push_str(&rest[..=pos]);
        rest = &rest[pos + 1..];
        let value = rest.trim_start();
        let spaces = &rest[..rest.len() - value.len()];
        let word_len = value
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '+' || c == '.'))
            .unwrap_or(value.len());
        let word = value[..word_len].to_ascii_lowercase();
        if matches!(
            word.as_str(),
            "nan" | "-nan" | "+nan" | "inf" | "-inf" | "+inf" | "infinity" | "-infinity"
        ) {
            out.push_str(spaces);
            out.push_str("null");
            rest = &value[word_len..];
            changed = true;
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `Sat, 21 Nov 2026 20:02:16 +0000` (strftime `%a, %d %b %Y %T %z`):
/// `Ok(None)` for text that is not such a date (or one before 1970), an
/// error for a date rtlab cannot record (after the year 9999, the last an
/// RFC 3339 timestamp holds).
pub(crate) fn parse_rfc2822(text: &str) -> Result<Option<SystemTime>, String> {
    let mut fields = text.split_whitespace();
    let year = match fields.next() {
        Some(weekday) if weekday.ends_with(',') => fields.nth(2),
        Some(_) => fields.nth(1),
        None => None,
    };
    // Any number of digits: a year too long for an integer is after 9999 too.
    if let Some(year) = year.filter(|y| y.len() > 4 && y.bytes().all(|b| b.is_ascii_digit())) {
        if year.trim_start_matches('0').len() > 4 {
            return Err(format!(
                "the year {year} is after 9999, the last year a timestamp can hold"
            ));
        }
    }
    Ok(rfc2822_fields(text))
}

/// [`parse_rfc2822`] for a year up to 9999 (which keeps the day count
/// below any overflow).
fn rfc2822_fields(text: &str) -> Option<SystemTime> {
    let mut fields: Vec<&str> = text.split_whitespace().collect();
    if fields.first().is_some_and(|f| f.ends_with(',')) {
        fields.remove(0);
    }
    let [day, month, year, time, zone] = fields[..] else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let year: i64 = year.parse().ok().filter(|y| (0..=9999).contains(y))?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, s] = hms[..] else { return None };
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let offset_min = match zone {
        "GMT" | "UTC" | "UT" | "Z" => 0,
        // ASCII only: the slices below are by byte.
        z if z.len() == 5 && z.is_ascii() && (z.starts_with('+') || z.starts_with('-')) => {
            let hh: i64 = z[1..3].parse().ok()?;
            let mm: i64 = z[3..5].parse().ok()?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (hh * 60 + mm)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    u64::try_from(secs)
        .ok()
        .map(|secs| UNIX_EPOCH + Duration::from_secs(secs))
}

/// Parses cyclictest's JSON. `origin` names the file in errors and in
/// `config.imported_from`.
pub fn parse(text: &str, origin: &str) -> Result<RunResult, ImportError> {
    let ctx = Ctx { origin };
    let mut warnings = Vec::new();
    let root = read_root(text, &ctx, &mut warnings)?;

    let cmdline = string_at(&root, &ctx, &["cmdline:", "cmdline"])?;
    let args = cmdline
        .as_deref()
        .map(CommandLine::parse)
        .unwrap_or_default();
    let version = string_at(&root, &ctx, &["rt_test_version:", "rt_test_version"])?;
    if let Some(v) = root.get("file_version") {
        if v.as_u64() != Some(1) {
            warnings.push(format!(
                "cyclictest JSON file_version {} (this importer knows version 1): read as \
                 version 1",
                show(v)
            ));
        }
    }
    let nsecs = match root.get("resolution_in_ns") {
        None | Some(Value::Null) => args.nsecs,
        Some(v) => ctx.u64_at(v, "$.resolution_in_ns")? != 0,
    };
    let unit_ns = if nsecs { 1 } else { 1000 };

    let indexed = threads(&root, &ctx, &mut warnings)?;
    let (series, any_histogram, longest_ns) = read_series(
        &indexed,
        &ctx,
        &args,
        cmdline.is_some(),
        unit_ns,
        &mut warnings,
    )?;
    resolution_warnings(nsecs, &mut warnings);
    if !any_histogram && !series.is_empty() {
        warnings.push(
            "no histogram in the file (cyclictest ran without -h/-H): only samples, min, max \
             and mean are known; percentiles, stdev and histograms are unknown (shown as 0 or -)"
                .to_string(),
        );
    }
    if nsecs && args.histogram.is_some() {
        warnings.push(
            "with -N the histogram's bins are ns: its limit is not recorded as µs overflows"
                .to_string(),
        );
    }

    let times = RunTimes::read(&root, &ctx, &mut warnings)?;
    let environment = environment_of(&root, &times.started_at, &mut warnings);

    let mut cyclictest = root.clone();
    cyclictest.remove("thread");
    let mut run = imported_run(
        Format::CyclictestJson,
        origin,
        times.started_at,
        environment,
        series,
        warnings,
    );
    if let Value::Object(config) = &mut run.config {
        config.insert("resolution_ns".into(), Value::from(unit_ns));
        if let Some(v) = &version {
            config.insert("rt_tests_version".into(), Value::from(v.clone()));
        }
        config.insert("cyclictest".into(), Value::Object(cyclictest));
    }
    run.command = cmdline
        .as_deref()
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    if let Some(end) = times.end.and_then(rfc3339) {
        run.ended_at = Some(end);
    }
    run.effective.mlockall = args.mlockall;
    run.elapsed_ns = if longest_ns > 0 {
        longest_ns
    } else {
        match (times.start, times.end) {
            (Some(s), Some(e)) => e.duration_since(s).map_or(0, |d| d.as_nanos() as u64),
            _ => 0,
        }
    };
    if let Some(code) = root.get("return_code").and_then(Value::as_i64) {
        if code != 0 {
            run.status = RunStatus::Failed;
            run.warnings
                .push(format!("cyclictest exited with return code {code}"));
        }
    }
    check_counts(&run, origin)?;
    Ok(run)
}

/// The document's top-level object: JSON, or JSON once cyclictest's `nan`
/// values are read as unknown (with a warning), free of control
/// characters.
fn read_root(
    text: &str,
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Map<String, Value>, ImportError> {
    let text = text.trim_start_matches('\u{feff}');
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => match repair_nan(text).map(|t| serde_json::from_str::<Value>(&t)) {
            Some(Ok(v)) => {
                warnings.push(
                    "the file holds nan/inf values (cyclictest prints them for a thread without \
                     cycles); they were read as unknown"
                        .to_string(),
                );
                v
            }
            _ => return Err(json_syntax_error(ctx.origin, &e)),
        },
    };
    // Host names, the command line and the whole document are kept and printed.
    check_text(&root, "$", ctx.origin)?;
    match root {
        Value::Object(root) => Ok(root),
        other => Err(ctx.err("$", format!("expected an object, found {}", show(&other)))),
    }
}

/// The string under the first of `keys` present; None when absent or null.
fn string_at(
    root: &Map<String, Value>,
    ctx: &Ctx,
    keys: &[&str],
) -> Result<Option<String>, ImportError> {
    match keys.iter().find_map(|k| root.get(*k)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ctx.err(
            format!("$.{}", keys[0].trim_end_matches(':')),
            format!("expected a string, found {}", show(other)),
        )),
    }
}

/// A thread's number and its object.
type Thread<'a> = (u64, &'a Map<String, Value>);

/// The threads under `$.thread`, by number, with a warning when
/// `num_threads` disagrees.
fn threads<'a>(
    root: &'a Map<String, Value>,
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Vec<Thread<'a>>, ImportError> {
    let threads_value = root.get("thread").ok_or_else(|| {
        ctx.err(
            "$.thread",
            "missing: expected cyclictest's per-thread results",
        )
    })?;
    let Value::Object(threads) = threads_value else {
        return Err(ctx.err(
            "$.thread",
            format!(
                "expected an object of threads (\"0\": {{…}}), found {}",
                show(threads_value)
            ),
        ));
    };
    let mut indexed: Vec<Thread> = Vec::with_capacity(threads.len());
    for (key, value) in threads {
        let at = format!("$.thread[\"{key}\"]");
        let index = key
            .parse::<u64>()
            .map_err(|_| ctx.err(&at, "expected a thread number as the key"))?;
        let Value::Object(t) = value else {
            return Err(ctx.err(at, format!("expected an object, found {}", show(value))));
        };
        indexed.push((index, t));
    }
    indexed.sort_by_key(|(i, _)| *i);
    if let Some(n) = root.get("num_threads").and_then(Value::as_u64) {
        if n as usize != indexed.len() {
            warnings.push(format!(
                "num_threads says {n} but the file holds {} threads",
                indexed.len()
            ));
        }
    }
    Ok(indexed)
}

/// Every thread as a series; whether any had a histogram, and the longest
/// thread's duration (interval × cycles), ns.
fn read_series(
    indexed: &[Thread],
    ctx: &Ctx,
    args: &CommandLine,
    has_cmdline: bool,
    unit_ns: u64,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Series>, bool, u64), ImportError> {
    // A thread's CPU names its series when every thread has its own.
    let cpus: Vec<Option<usize>> = indexed
        .iter()
        .map(|(_, t)| {
            t.get("cpu")
                .and_then(Value::as_i64)
                .and_then(|c| usize::try_from(c).ok())
        })
        .collect();
    let mut distinct = cpus.clone();
    distinct.sort();
    distinct.dedup();
    let name_by_cpu = cpus.iter().all(Option::is_some) && distinct.len() == cpus.len();

    let sched = args.sched();
    if !has_cmdline {
        warnings.push(
            "no command line in the file: interval and scheduling are unknown (0 and other)"
                .to_string(),
        );
    } else if sched.is_none() {
        warnings.push("unknown --policy in the command line: scheduling recorded as other".into());
    }
    let sched = sched.unwrap_or_else(unknown_sched);
    let interval_us = has_cmdline.then(|| args.interval_us.unwrap_or(1000));
    // rt-tests 2.x adds the distance to each further thread's interval
    // unless a histogram was asked for.
    let distance_us = if args.histogram.is_some() {
        0
    } else {
        args.distance_us.unwrap_or(500)
    };

    let mut series = Vec::with_capacity(indexed.len());
    let mut any_histogram = false;
    let mut longest_ns = 0u64;
    for (pos, (index, t)) in indexed.iter().enumerate() {
        let name = if name_by_cpu {
            format!("cpu{}", cpus[pos].unwrap_or_default())
        } else {
            format!("thread{index}")
        };
        let thread = ThreadFields::read(t, *index, ctx)?;
        let cycles = thread.cycles;
        let (stats, has_histogram) = thread.stats(&name, args, unit_ns, ctx, warnings)?;
        any_histogram |= has_histogram;
        let interval_ns = interval_us
            .map(|i| {
                // Both come from the file: saturate rather than overflow.
                i.saturating_add(distance_us.saturating_mul(*index))
                    .saturating_mul(1000)
            })
            .unwrap_or(0);
        longest_ns = longest_ns.max(interval_ns.saturating_mul(cycles));
        series.push(thread_series(name, cpus[pos], interval_ns, sched, stats));
    }
    Ok((series, any_histogram, longest_ns))
}

/// One thread's figures as cyclictest wrote them, in its units.
struct ThreadFields {
    index: u64,
    cycles: u64,
    min: Option<u64>,
    max: Option<u64>,
    avg: Option<f64>,
    /// `[bin, count]`, increasing, counts > 0, each bin once.
    bins: Vec<[u64; 2]>,
}

impl ThreadFields {
    fn read(t: &Map<String, Value>, index: u64, ctx: &Ctx) -> Result<ThreadFields, ImportError> {
        let at = |field: &str| format!("$.thread[\"{index}\"].{field}");
        let cycles = match t.get("cycles") {
            Some(v) => ctx.u64_at(v, &at("cycles"))?,
            None => return Err(ctx.err(at("cycles"), "missing: expected the number of cycles")),
        };
        let number = |field: &str| -> Result<Option<u64>, ImportError> {
            match t.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => ctx.u64_at(v, &at(field)).map(Some),
            }
        };
        let min = number("min")?;
        let max = number("max")?;
        let avg = match t.get("avg") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| {
                        ctx.err(at("avg"), format!("expected a number, found {}", show(v)))
                    })?,
            ),
        };
        // A mean above the maximum is no cyclictest output, and one near
        // f64::MAX would become infinite in ns (and `null` in our JSON).
        // In ns (the unit is at most a second) a mean must stay a finite
        // u64, or the run's JSON would hold `null` for it.
        if let Some(a) = avg.filter(|a| *a > u64::MAX as f64 / 1e9) {
            return Err(ctx.err(at("avg"), format!("{a} is too large for a mean latency")));
        }
        if let (Some(a), Some(m)) = (avg, max) {
            if a > m as f64 + 1.0 {
                return Err(ctx.err(
                    at("avg"),
                    format!("{a} is above the thread's max ({m}): not a mean of its samples"),
                ));
            }
        }
        let bins = read_bins(t.get("histogram"), &at("histogram"), ctx)?;
        Ok(ThreadFields {
            index,
            cycles,
            min,
            max,
            avg,
            bins,
        })
    }

    /// The series' statistics, and whether they come with a histogram.
    fn stats(
        self,
        name: &str,
        args: &CommandLine,
        unit_ns: u64,
        ctx: &Ctx,
        warnings: &mut Vec<String>,
    ) -> Result<(SeriesStats, bool), ImportError> {
        let (index, cycles) = (self.index, self.cycles);
        let in_histogram = self.bins.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
        if in_histogram > cycles {
            return Err(ctx.err(
                format!("$.thread[\"{index}\"].histogram"),
                format!("holds {in_histogram} samples, more than the {cycles} cycles"),
            ));
        }
        let has_histogram = in_histogram > 0 || args.histogram.is_some();
        if !has_histogram {
            // No histogram: only count, min, max and mean are known.
            let mut s = SeriesStats {
                samples: cycles,
                ..Default::default()
            };
            if cycles > 0 {
                let max_ns = self.max.unwrap_or(0).saturating_mul(unit_ns);
                s.min_ns = self.min.unwrap_or(0).saturating_mul(unit_ns).min(max_ns);
                s.max_ns = max_ns;
                s.mean_ns = (self.avg.unwrap_or(0.0) * unit_ns as f64).round();
            }
            return Ok((s, false));
        }
        let limit = args
            .histogram
            .or_else(|| self.bins.last().map(|b| b[0].saturating_add(1)));
        let stats = BinnedThread {
            bins: self.bins,
            overflow_count: cycles - in_histogram,
            limit,
            overflow_samples: Vec::new(),
            min: self.min,
            max: self.max,
            avg: self.avg,
            unit_ns,
        }
        .stats(name, warnings);
        Ok((stats, true))
    }
}

/// A thread's `histogram` object (`"bin": count`) as sorted bins, a bin
/// written twice counted once with both counts.
fn read_bins(histogram: Option<&Value>, at: &str, ctx: &Ctx) -> Result<Vec<[u64; 2]>, ImportError> {
    let mut bins: Vec<[u64; 2]> = Vec::new();
    match histogram {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            for (bin, count) in h {
                let b = bin.trim().parse::<u64>().map_err(|_| {
                    ctx.err(
                        at,
                        format!("expected a bin number as the key, found \"{bin}\""),
                    )
                })?;
                let c = ctx.u64_at(count, &format!("{at}[\"{bin}\"]"))?;
                if c > 0 {
                    bins.push([b, c]);
                }
            }
        }
        Some(other) => {
            return Err(ctx.err(
                at,
                format!("expected an object of bin: count, found {}", show(other)),
            ))
        }
    }
    bins.sort_by_key(|b| b[0]);
    bins.dedup_by(|later, earlier| {
        let same = later[0] == earlier[0];
        if same {
            earlier[1] = earlier[1].saturating_add(later[1]);
        }
        same
    });
    Ok(bins)
}

/// The two warnings every import starts with: the resolution, and what
/// cyclictest does not record.
fn resolution_warnings(nsecs: bool, warnings: &mut Vec<String>) {
    warnings.insert(
        0,
        if nsecs {
            "imported from cyclictest's JSON: 1 ns resolution (-N)".to_string()
        } else {
            "imported from cyclictest's JSON: 1 µs resolution (latencies truncated to the µs); \
             percentiles are the bin's lower edge"
                .to_string()
        },
    );
    warnings.insert(
        1,
        "not in cyclictest's output: the time of the max, thread ids, the scheduling actually \
         in effect; missed deadlines are not counted by cyclictest (missed = 0 here)"
            .to_string(),
    );
}

/// When the run started and ended, as far as the file says.
struct RunTimes {
    start: Option<SystemTime>,
    end: Option<SystemTime>,
    /// RFC 3339: the start, else the end, else the time of the import.
    started_at: String,
}

impl RunTimes {
    fn read(
        root: &Map<String, Value>,
        ctx: &Ctx,
        warnings: &mut Vec<String>,
    ) -> Result<RunTimes, ImportError> {
        let start = string_at(root, ctx, &["start_time"])?;
        let end = string_at(root, ctx, &["end_time"])?;
        let date = |field: &str, text: &Option<String>| match text.as_deref().map(parse_rfc2822) {
            None => Ok(None),
            Some(Ok(parsed)) => Ok(parsed),
            Some(Err(why)) => Err(ctx.err(
                format!("$.{field}"),
                format!(
                    "'{}': {why}",
                    rtlab_core::result::printable(text.as_deref().unwrap_or(""), 80)
                ),
            )),
        };
        let start_time = date("start_time", &start)?;
        let end_time = date("end_time", &end)?;
        for (label, text, parsed) in [
            ("start_time", &start, start_time),
            ("end_time", &end, end_time),
        ] {
            if let (Some(text), None) = (text, parsed) {
                warnings.push(format!(
                    "{label} '{text}' is not a date like 'Sat, 21 Nov 2026 20:02:16 +0000': ignored"
                ));
            }
        }
        // Both are between 1970 and 9999 (parse_rfc2822), so RFC 3339 holds them.
        let started_at = match start_time.or(end_time).and_then(rfc3339) {
            Some(t) => t,
            None => {
                warnings
                    .push("no start time in the file: started_at is the time of the import".into());
                now_rfc3339()
            }
        };
        Ok(RunTimes {
            start: start_time,
            end: end_time,
            started_at,
        })
    }
}

/// The host and kernel from `sysinfo`, unknown without it.
fn environment_of(
    root: &Map<String, Value>,
    started_at: &str,
    warnings: &mut Vec<String>,
) -> Environment {
    let mut environment = unknown_environment(started_at);
    if let Some(Value::Object(sys)) = root.get("sysinfo") {
        let text = |k: &str| sys.get(k).and_then(Value::as_str).map(str::to_string);
        environment.hostname = text("nodename");
        environment.kernel_release = text("release");
        environment.kernel_version = text("version");
        environment.machine = text("machine");
        environment.realtime_sysfs = sys.get("realtime").and_then(Value::as_i64).map(|r| r == 1);
        let (model, sources) = preempt_model(
            environment.realtime_sysfs,
            environment.kernel_version.as_deref(),
        );
        environment.preempt_model = model;
        environment.preempt_sources = sources;
    } else {
        warnings.push("no sysinfo in the file: host and kernel are unknown".into());
    }
    environment
}

/// The preemption model as far as uname -v and /sys/kernel/realtime tell
/// (rtlab's own capture reads more).
fn preempt_model(realtime: Option<bool>, version: Option<&str>) -> (String, Vec<String>) {
    if realtime == Some(true) {
        return ("rt".into(), vec!["cyclictest sysinfo: realtime 1".into()]);
    }
    let tokens: Vec<&str> = version.unwrap_or("").split_whitespace().collect();
    let has = |t: &str| tokens.contains(&t);
    let source = |what: &str| vec![format!("cyclictest sysinfo version: {what}")];
    if has("PREEMPT_RT") || tokens.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        ("rt".into(), source("PREEMPT_RT"))
    } else if has("PREEMPT_DYNAMIC") {
        ("dynamic-unknown".into(), source("PREEMPT_DYNAMIC"))
    } else if has("PREEMPT_LAZY") {
        ("lazy".into(), source("PREEMPT_LAZY"))
    } else if has("PREEMPT") {
        ("full".into(), source("PREEMPT"))
    } else {
        ("unknown".into(), Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::super::run::seconds_precision;
    use super::*;

    #[test]
    fn reads_rt_tests_dates() {
        let date = |text| parse_rfc2822(text).unwrap().unwrap();
        let t = date("Sat, 21 Nov 2026 20:02:16 +0000");
        assert_eq!(rfc3339(t).unwrap(), "2026-11-21T20:02:16.000000Z");
        let t = date("Sat, 21 Nov 2026 21:02:16 +0100");
        assert_eq!(
            seconds_precision(&rfc3339(t).unwrap()),
            "2026-11-21T20:02:16Z"
        );
        assert_eq!(
            rfc3339(date("Thu, 01 Jan 1970 00:00:00 +0000")).unwrap(),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            rfc3339(date("Fri, 31 Dec 9999 23:59:59 +0000")).unwrap(),
            "9999-12-31T23:59:59.000000Z"
        );
        assert!(parse_rfc2822("yesterday").unwrap().is_none());
        // A multi-byte zone of five bytes used to be sliced inside a char.
        assert!(parse_rfc2822("Sat, 21 Nov 2026 20:02:16 +a\u{e9}b")
            .unwrap()
            .is_none());
        assert!(parse_rfc2822("Sat, 21 Foo 2026 20:02:16 +0000")
            .unwrap()
            .is_none());
        assert!(parse_rfc2822("Sat, 21 Nov 1969 20:02:16 +0000")
            .unwrap()
            .is_none());
        // Beyond 9999: an error, not a panic (RFC 3339 stops there) nor an
        // overflow of the day count.
        for year in [
            "10000",
            "99999999999999999",
            "123456789012345678901234567890",
        ] {
            let error = parse_rfc2822(&format!("Sat, 21 Nov {year} 20:02:16 +0000")).unwrap_err();
            assert!(error.contains(year), "{error}");
        }
    }

    #[test]
    fn nan_becomes_null() {
        let fixed = repair_nan("{\"avg\": -nan,\n\"x\": nan, \"s\": \"nan\"}").unwrap();
        assert_eq!(fixed, "{\"avg\": null,\n\"x\": null, \"s\": \"nan\"}");
        assert!(repair_nan("{\"a\": 1}").is_none());
    }
}
