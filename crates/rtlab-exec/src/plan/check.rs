//! Checks a plan before it runs (docs/plan-format.md, "Checks"). One pass
//! over the events, so a mapped 10 M event plan checks in bounded memory.
//!
//! Errors (the dispatcher refuses the plan): offsets out of order, an event
//! for a module outside the table, a repeat period not longer than the
//! plan's span, non-zero flags (reserved in version 1).
//! Warnings: a module declared but never used, events closer than
//! [`MIN_SPACING_NS`] (the dispatcher fires them back to back, late), a
//! plan without events.

use super::model::{Event, EventSource, PlanHeader};
use super::text::format_offset;
use serde::Serialize;
use std::collections::BTreeMap;

/// The closest spacing the dispatcher is designed to honour: 1 µs, i.e.
/// one million events per second. Closer events are fired back to back.
pub const MIN_SPACING_NS: u64 = 1_000;

/// Findings kept per code; the rest are only counted.
pub const KEEP_PER_CODE: u64 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// One thing wrong (or doubtful) in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable name: `unsorted`, `unknown-module`, `repeat-too-short`,
    /// `flags`, `unused-module`, `too-close`, `empty`.
    pub code: &'static str,
    /// 0-based index of the event, when about one.
    pub index: Option<u64>,
    /// 1-based line of a text plan, when known.
    pub line: Option<usize>,
    pub message: String,
}

/// All findings of a check: the first [`KEEP_PER_CODE`] of each code, and
/// how many there were of each.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub counts: BTreeMap<&'static str, u64>,
    pub errors: u64,
    pub warnings: u64,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.errors == 0
    }

    fn add(&mut self, finding: Finding) {
        let count = self.counts.entry(finding.code).or_insert(0);
        *count += 1;
        match finding.severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
        }
        if *count <= KEEP_PER_CODE {
            self.findings.push(finding);
        }
    }

    /// Findings beyond those kept, per code.
    pub fn not_shown(&self) -> Vec<(&'static str, u64)> {
        self.counts
            .iter()
            .filter(|(_, &n)| n > KEEP_PER_CODE)
            .map(|(&code, &n)| (code, n - KEEP_PER_CODE))
            .collect()
    }
}

/// Largest offset (and repeat period) accepted: 2^62 ns, 146 years, so
/// that the dispatcher's sums of offsets and periods never overflow.
pub const MAX_OFFSET_NS: u64 = 1 << 62;

/// How many events the scan reads between two residency hints.
const ADVISE_EVERY: u64 = 1 << 16;

/// Checks a plan.
pub fn check(header: &PlanHeader, events: &dyn EventSource) -> Report {
    check_lines(header, events, None)
}

/// [`check`], with the line of each event of a text plan.
pub fn check_lines(
    header: &PlanHeader,
    events: &dyn EventSource,
    lines: Option<&[usize]>,
) -> Report {
    let mut report = Report::default();
    let line_of = |i: u64| lines.and_then(|l| l.get(i as usize).copied());
    let scan = scan_events(header, events, &line_of, &mut report);
    check_repeat(header, &scan, &line_of, &mut report);
    check_modules_used(header, &scan.used, &mut report);
    if scan.events == 0 {
        report.add(Finding {
            severity: Severity::Warning,
            code: "empty",
            index: None,
            line: None,
            message: "the plan has no events".into(),
        });
    }
    report.findings.sort_by_key(|f| {
        (
            std::cmp::Reverse(f.severity),
            f.index.unwrap_or(u64::MAX),
            f.code,
        )
    });
    report
}

/// What the pass over the events leaves for the checks of the whole plan.
struct Scan {
    events: u64,
    /// Per module of the table: whether an event uses it.
    used: Vec<bool>,
    first: Option<u64>,
    /// The last event's offset.
    last: Option<u64>,
    /// The largest offset, and the last event that has it.
    max: u64,
    max_index: u64,
}

/// The one pass over the events: each checked against the module table,
/// the offset range, the reserved flags and the event before it.
fn scan_events(
    header: &PlanHeader,
    events: &dyn EventSource,
    line_of: &dyn Fn(u64) -> Option<usize>,
    report: &mut Report,
) -> Scan {
    let mut scan = Scan {
        events: events.len(),
        used: vec![false; header.modules.len()],
        first: None,
        last: None,
        max: 0,
        max_index: 0,
    };
    for i in 0..scan.events {
        if i % ADVISE_EVERY == 0 {
            // A mapped plan is read once here: keep only a window resident.
            events.advise(i, i + ADVISE_EVERY);
        }
        let e = events.event(i);
        let mut finding = |severity, code, message| {
            report.add(Finding {
                severity,
                code,
                index: Some(i),
                line: line_of(i),
                message,
            })
        };
        check_event(header, i, &e, scan.last, &mut scan.used, &mut finding);
        scan.first.get_or_insert(e.offset_ns);
        if e.offset_ns >= scan.max {
            scan.max = e.offset_ns;
            scan.max_index = i;
        }
        scan.last = Some(e.offset_ns);
    }
    scan
}

/// The checks of event `i` on its own and against the one before it
/// (`previous`, its offset); marks its module used.
fn check_event(
    header: &PlanHeader,
    i: u64,
    e: &Event,
    previous: Option<u64>,
    used: &mut [bool],
    finding: &mut dyn FnMut(Severity, &'static str, String),
) {
    match used.get_mut(e.module as usize) {
        Some(u) => *u = true,
        None => finding(
            Severity::Error,
            "unknown-module",
            format!(
                "event {i}: module id {} is outside the module table ({} modules)",
                e.module,
                header.modules.len()
            ),
        ),
    }
    if e.offset_ns > MAX_OFFSET_NS {
        finding(
            Severity::Error,
            "offset-too-large",
            format!(
                "event {i}: offset {} is beyond 2^62 ns (146 years): not a plan",
                format_offset(e.offset_ns)
            ),
        );
    }
    if e.flags != 0 {
        finding(
            Severity::Error,
            "flags",
            format!(
                "event {i}: flags 0x{:x}: reserved, must be 0 in version 1",
                e.flags
            ),
        );
    }
    if let Some(prev) = previous {
        if e.offset_ns < prev {
            finding(
                Severity::Error,
                "unsorted",
                format!(
                    "event {i}: offset {} is before the previous event's {}: offsets must not decrease",
                    format_offset(e.offset_ns),
                    format_offset(prev)
                ),
            );
        } else if e.offset_ns - prev < MIN_SPACING_NS {
            finding(
                Severity::Warning,
                "too-close",
                format!(
                    "event {i}: {} after the previous event, closer than the dispatcher's {} (it fires them back to back)",
                    format_offset(e.offset_ns - prev),
                    format_offset(MIN_SPACING_NS)
                ),
            );
        }
    }
}

/// The repeat period: within range, longer than the plan's last offset,
/// and not bringing a repetition's first event too close to the last.
fn check_repeat(
    header: &PlanHeader,
    scan: &Scan,
    line_of: &dyn Fn(u64) -> Option<usize>,
    report: &mut Report,
) {
    if let Some(repeat) = header.repeat_ns.filter(|r| *r > MAX_OFFSET_NS) {
        report.add(Finding {
            severity: Severity::Error,
            code: "offset-too-large",
            index: None,
            line: None,
            message: format!(
                "repeat {}: beyond 2^62 ns (146 years)",
                format_offset(repeat)
            ),
        });
    }
    if let Some(repeat) = header.repeat_ns {
        if scan.events > 0 && repeat <= scan.max {
            report.add(Finding {
                severity: Severity::Error,
                code: "repeat-too-short",
                index: None,
                // In a text plan, the line of the last offset.
                line: line_of(scan.max_index),
                message: format!(
                    "repeat period {} is not longer than the last offset {}",
                    format_offset(repeat),
                    format_offset(scan.max)
                ),
            });
        } else if let (Some(first), Some(last)) = (scan.first, scan.last) {
            if repeat > last && repeat - last + first < MIN_SPACING_NS {
                report.add(Finding {
                    severity: Severity::Warning,
                    code: "too-close",
                    index: Some(0),
                    line: line_of(0),
                    message: format!(
                        "the first event of a repetition is {} after the last of the previous one, closer than {}",
                        format_offset(repeat - last + first),
                        format_offset(MIN_SPACING_NS)
                    ),
                });
            }
        }
    }
}

/// A warning for each module of the table that no event uses.
fn check_modules_used(header: &PlanHeader, used: &[bool], report: &mut Report) {
    for (m, used) in header.modules.iter().zip(used) {
        if !used {
            report.add(Finding {
                severity: Severity::Warning,
                code: "unused-module",
                index: None,
                line: None,
                message: format!(
                    "module {} ({} {}) is declared but no event uses it",
                    m.id, m.name, m.kind
                ),
            });
        }
    }
}

/// Figures of a plan's timing, from one pass over its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub events: u64,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// Last offset minus first offset.
    pub span_ns: u64,
    /// Smallest gap between consecutive events (None below 2 events);
    /// 0 if some events share an offset or are out of order.
    pub min_spacing_ns: Option<u64>,
    /// Span / (events - 1).
    pub mean_spacing_ns: Option<f64>,
    /// Events per module id.
    pub per_module: BTreeMap<u16, u64>,
}

pub fn stats(events: &dyn EventSource) -> Stats {
    let mut s = Stats {
        events: events.len(),
        ..Stats::default()
    };
    let mut previous: Option<u64> = None;
    for i in 0..events.len() {
        let e = events.event(i);
        if let Some(prev) = previous {
            let gap = e.offset_ns.saturating_sub(prev);
            s.min_spacing_ns = Some(s.min_spacing_ns.map_or(gap, |m| m.min(gap)));
        }
        s.first_ns.get_or_insert(e.offset_ns);
        s.last_ns = Some(e.offset_ns);
        *s.per_module.entry(e.module).or_insert(0) += 1;
        previous = Some(e.offset_ns);
    }
    if let (Some(first), Some(last)) = (s.first_ns, s.last_ns) {
        s.span_ns = last.saturating_sub(first);
        if s.events > 1 {
            s.mean_spacing_ns = Some(s.span_ns as f64 / (s.events - 1) as f64);
        }
    }
    s
}
