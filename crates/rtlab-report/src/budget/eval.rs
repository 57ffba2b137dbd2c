//! A budget checked against runs: one [`Check`] per clause and series,
//! gathered in an [`Evaluation`] per run, shown as tables and JSON.

use super::spec::{Budget, Clause, Metric, Op};
use crate::export::Exporter;
use crate::text::align;
use rtlab_core::result::{CampaignRef, RunResult, RunStatus, Series};
use rtlab_core::units::{human_duration, Micros};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use std::collections::HashSet;
use std::io::{self, Write};

/// What became of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// The clause does not apply to this run but does to other runs
    /// evaluated with it (see [`reconcile`]).
    Skipped,
}

impl Outcome {
    /// `pass`, `fail`, `skipped`: the JSON's words.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skipped => "skipped",
        }
    }

    /// `PASS`, `FAIL`, `SKIP`: the tables' words.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Skipped => "SKIP",
        }
    }
}

/// One clause checked on one series (or on the run, for a run-level metric).
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// 1-based number of the clause in the spec.
    pub clause: usize,
    /// The clause as written.
    pub text: String,
    /// The series checked; None for a run-level count, or when nothing matched.
    pub series: Option<String>,
    pub metric: Metric,
    pub op: Op,
    /// ns for a time metric, a count otherwise.
    pub limit: u64,
    /// None when there was nothing to observe (no series matched, a series
    /// without samples, a run without the counts).
    pub observed: Option<f64>,
    pub outcome: Outcome,
    /// Why a check failed without an observed value, or was skipped.
    pub note: Option<String>,
    /// False when the clause found nothing to check in this run.
    pub matched: bool,
}

/// A value of `metric` as shown: µs with ns precision for times (the unit
/// always printed), a plain number for counts.
fn value_text(metric: Metric, value: f64) -> String {
    if metric.is_time() {
        format!("{} µs", Micros(value.round().max(0.0) as u64))
    } else {
        format!("{value:.0}")
    }
}

impl Check {
    /// The observed value with its unit, `-` when there is none.
    pub fn observed_text(&self) -> String {
        self.observed
            .map_or_else(|| "-".into(), |v| value_text(self.metric, v))
    }

    /// The comparison and the limit with its unit: `< 100.000 µs`.
    pub fn limit_text(&self) -> String {
        format!(
            "{} {}",
            self.op.symbol(),
            value_text(self.metric, self.limit as f64)
        )
    }

    /// The series' name, `(run)` for a run-level count, `-` when nothing matched.
    pub fn series_label(&self) -> &str {
        match &self.series {
            Some(name) => name,
            None if self.matched => "(run)",
            None => "-",
        }
    }

    /// The check's cells of a table row: series, clause, observed, limit,
    /// result, and its note where it has one.
    fn push_cells(&self, row: &mut Vec<String>) {
        row.extend([
            self.series_label().to_string(),
            self.text.clone(),
            self.observed_text(),
            self.limit_text(),
            self.outcome.label().to_string(),
        ]);
        row.extend(self.note.clone());
    }

    /// One line for a failure or skip: `observed 2345.678 µs, limit < 2000.000 µs`,
    /// or the note when there was nothing to observe.
    pub fn message(&self) -> String {
        match (&self.observed, &self.note) {
            (Some(_), None) => format!(
                "observed {}, limit {}",
                self.observed_text(),
                self.limit_text()
            ),
            (Some(_), Some(note)) => format!(
                "observed {}, limit {}; {note}",
                self.observed_text(),
                self.limit_text()
            ),
            (None, Some(note)) => note.clone(),
            (None, None) => "nothing observed".to_string(),
        }
    }
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Check", 10)?;
        st.serialize_field("clause", &self.clause)?;
        st.serialize_field("text", &self.text)?;
        st.serialize_field("series", &self.series)?;
        st.serialize_field("metric", self.metric.name())?;
        st.serialize_field("op", self.op.symbol())?;
        st.serialize_field("limit", &self.limit)?;
        st.serialize_field("observed", &self.observed.map(Number))?;
        st.serialize_field("unit", if self.metric.is_time() { "ns" } else { "count" })?;
        st.serialize_field("outcome", self.outcome.as_str())?;
        st.serialize_field("note", &self.note)?;
        st.end()
    }
}

/// A JSON number: an integer when the value is whole (counts, most times).
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 && self.0 >= 0.0 && self.0 < u64::MAX as f64 {
            s.serialize_u64(self.0 as u64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

/// A budget checked against one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The budget's spec as given.
    pub spec: String,
    pub run_id: String,
    pub probe: String,
    pub status: RunStatus,
    pub started_at: String,
    /// Measured time of the run, ns.
    pub elapsed_ns: u64,
    pub hostname: Option<String>,
    /// Where the run sits in a campaign, when a campaign ran it.
    pub campaign: Option<CampaignRef>,
    /// In clause order; within a clause, in the run's series order.
    pub checks: Vec<Check>,
}

impl Budget {
    /// Checks every clause against `result`. A clause whose series glob
    /// matches no series, and a run-level count on a run without it,
    /// fail: a typo must not pass silently. So does a time metric of a
    /// series without samples (nothing was measured), except for the noise
    /// probe, whose series hold noise events: none is no noise.
    pub fn evaluate(&self, result: &RunResult) -> Evaluation {
        let mut checks = Vec::new();
        for clause in self.clauses() {
            if clause.metric.is_run_level() {
                checks.push(run_check(clause, result));
                continue;
            }
            let before = checks.len();
            for series in result.series.iter().filter(|s| clause.matches(&s.name)) {
                checks.push(series_check(clause, series));
            }
            if checks.len() == before {
                checks.push(unmatched(clause, result));
            }
        }
        Evaluation {
            spec: self.spec().to_string(),
            run_id: result.id.clone(),
            probe: result.probe.clone(),
            status: result.status,
            started_at: result.started_at.clone(),
            elapsed_ns: result.elapsed_ns,
            hostname: result.environment.hostname.clone(),
            campaign: result.campaign.clone(),
            checks,
        }
    }
}

fn check(clause: &Clause, series: Option<&str>, observed: Option<f64>) -> Check {
    let outcome = match observed {
        Some(v) if clause.op.holds(v, clause.limit as f64) => Outcome::Pass,
        _ => Outcome::Fail,
    };
    Check {
        clause: clause.index,
        text: clause.text.clone(),
        series: series.map(str::to_string),
        metric: clause.metric,
        op: clause.op,
        limit: clause.limit,
        observed,
        outcome,
        note: None,
        matched: true,
    }
}

fn series_check(clause: &Clause, series: &Series) -> Check {
    let s = &series.stats;
    let p = &s.percentiles_ns;
    let observed = match clause.metric {
        Metric::Samples => Some(s.samples as f64),
        Metric::Missed => Some(s.missed as f64),
        Metric::Dropped => Some(s.dropped as f64),
        _ if s.samples == 0 && series.metric != "noise" => None,
        Metric::Min => Some(s.min_ns as f64),
        Metric::Max => Some(s.max_ns as f64),
        Metric::Mean => Some(s.mean_ns),
        Metric::Stdev => Some(s.stdev_ns),
        Metric::P50 => Some(p.p50 as f64),
        Metric::P90 => Some(p.p90 as f64),
        Metric::P99 => Some(p.p99 as f64),
        Metric::P99_9 => Some(p.p99_9 as f64),
        Metric::P99_99 => Some(p.p99_99 as f64),
        // Run-level metrics are checked by run_check.
        _ => None,
    };
    let mut check = check(clause, Some(&series.name), observed);
    if observed.is_none() {
        check.note = Some("no samples: nothing was measured".into());
    }
    check
}

fn run_check(clause: &Clause, result: &RunResult) -> Check {
    let Some(net) = &result.net else {
        let mut check = check(clause, None, None);
        check.matched = false;
        check.note = Some(format!(
            "not a net run: '{}' counts the net probe's messages (this run is {})",
            clause.metric, result.probe
        ));
        return check;
    };
    let m = &net.messages;
    let count = match clause.metric {
        Metric::Lost => m.lost,
        Metric::Late => m.late_replies,
        Metric::Duplicate => m.duplicate_replies,
        Metric::Reordered => m.reordered_replies,
        _ => m.bad_replies,
    };
    check(clause, None, Some(count as f64))
}

fn unmatched(clause: &Clause, result: &RunResult) -> Check {
    let mut check = check(clause, None, None);
    let names: Vec<&str> = result.series.iter().map(|s| s.name.as_str()).collect();
    // A run that recorded nothing at all fails every clause, even in a
    // campaign where other runs matched it (only a glob that finds nothing
    // in a run that did record series may be skipped there).
    check.matched = names.is_empty();
    check.note = Some(match (&clause.series, names.is_empty()) {
        (_, true) => "no series: the run recorded none".to_string(),
        (Some(glob), false) => format!(
            "no series matches '{glob}' (series: {})",
            shorten(&names, 8)
        ),
        (None, false) => "no series".to_string(),
    });
    check
}

/// `a, b, c, … (12 in all)` for long lists.
fn shorten(names: &[&str], most: usize) -> String {
    if names.len() <= most {
        return names.join(", ");
    }
    format!("{}, … ({} in all)", names[..most].join(", "), names.len())
}

impl Evaluation {
    /// No check failed (skipped checks do not fail a run).
    pub fn passed(&self) -> bool {
        self.failures() == 0
    }

    pub fn failures(&self) -> usize {
        self.count(Outcome::Fail)
    }

    pub fn skipped(&self) -> usize {
        self.count(Outcome::Skipped)
    }

    fn count(&self, outcome: Outcome) -> usize {
        self.checks.iter().filter(|c| c.outcome == outcome).count()
    }

    /// The run did not run to its planned end: its figures cover less.
    pub fn is_partial(&self) -> bool {
        self.status != RunStatus::Complete
    }

    /// What a reader must know about a run that did not complete.
    pub fn status_note(&self) -> Option<String> {
        let measured = human_duration(self.elapsed_ns);
        let covers = "the checks cover what was measured until then";
        Some(match self.status {
            RunStatus::Complete => return None,
            RunStatus::Partial => {
                format!("partial run: stopped by a signal after {measured}; {covers}")
            }
            RunStatus::Break => format!("stopped by --break-at after {measured}; {covers}"),
            RunStatus::Failed => {
                format!("failed run (see its warnings), {measured} measured; {covers}")
            }
            RunStatus::Running => {
                format!("unfinished run (killed while measuring?), {measured} measured; {covers}")
            }
        })
    }

    /// `run 3 (vm × promoted)` for a campaign's run, the run id otherwise.
    pub fn label(&self) -> String {
        match &self.campaign {
            Some(c) if c.repeat > 1 => format!(
                "run {} ({} × {}, repeat {})",
                c.index, c.load, c.configuration, c.repeat
            ),
            Some(c) => format!("run {} ({} × {})", c.index, c.load, c.configuration),
            None => self.run_id.clone(),
        }
    }

    /// One line: `budget kept: 6 checks of 3 clauses passed` or
    /// `budget NOT kept: 1 of 6 checks failed: cpu1 max<2ms observed …`.
    pub fn verdict(&self) -> String {
        let clauses = self.checks.iter().map(|c| c.clause).max().unwrap_or(0);
        let skipped = match self.skipped() {
            0 => String::new(),
            n => format!(", {n} skipped"),
        };
        if self.passed() {
            let passed = self.checks.len() - self.skipped();
            return format!(
                "budget kept: {passed} check{} of {clauses} clause{} passed{skipped}",
                plural(passed),
                plural(clauses)
            );
        }
        let first = self
            .checks
            .iter()
            .find(|c| c.outcome == Outcome::Fail)
            .map(|c| format!("{} {}: {}", c.series_label(), c.text, c.message()))
            .unwrap_or_default();
        format!(
            "budget NOT kept: {} of {} checks failed{skipped}; first: {first}",
            self.failures(),
            self.checks.len()
        )
    }

    /// The table of every check: series, clause, observed, limit, result
    /// (and a note where there is one).
    pub fn table(&self) -> String {
        let mut head = vec!["series", "clause", "observed", "limit", "result"];
        if self.checks.iter().any(|c| c.note.is_some()) {
            head.push("note");
        }
        let mut rows = vec![header(&head)];
        for c in &self.checks {
            let mut row = Vec::with_capacity(6);
            c.push_cells(&mut row);
            rows.push(row);
        }
        align(&rows, |col, _| matches!(col, 0 | 1 | 4 | 5), true)
    }

    /// What `rtlab` prints after a run: the spec, a note for a run that
    /// did not complete, the table and the verdict.
    pub fn report(&self) -> String {
        let mut out = format!("\nbudget \"{}\"", self.spec);
        if let Some(note) = self.status_note() {
            out += &format!(" ({note})");
        }
        out += ":\n";
        out += &self.table();
        out += &self.verdict();
        out.push('\n');
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn header(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

impl Serialize for Evaluation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Evaluation", 10)?;
        st.serialize_field("spec", &self.spec)?;
        st.serialize_field("run_id", &self.run_id)?;
        st.serialize_field("probe", &self.probe)?;
        st.serialize_field("status", &self.status)?;
        st.serialize_field("partial", &self.is_partial())?;
        st.serialize_field("passed", &self.passed())?;
        st.serialize_field("failed", &self.failures())?;
        st.serialize_field("skipped", &self.skipped())?;
        st.serialize_field("note", &self.status_note())?;
        st.serialize_field("checks", &self.checks)?;
        st.end()
    }
}

/// In runs evaluated together (a campaign's, with several probes), a
/// clause that finds nothing in one run but something in another is
/// skipped where it found nothing: `dispatch:max<50us` applies to the
/// dispatcher's runs, not to the timer's. A clause that found nothing in
/// any run keeps failing.
pub fn reconcile(evaluations: &mut [Evaluation]) {
    let applies: HashSet<(String, usize)> = evaluations
        .iter()
        .flat_map(|e| {
            e.checks
                .iter()
                .filter(|c| c.matched)
                .map(|c| (e.spec.clone(), c.clause))
        })
        .collect();
    for e in evaluations.iter_mut() {
        for c in e.checks.iter_mut() {
            if !c.matched
                && c.outcome == Outcome::Fail
                && applies.contains(&(e.spec.clone(), c.clause))
            {
                c.outcome = Outcome::Skipped;
                let note = c.note.take().unwrap_or_default();
                c.note = Some(format!("{note}; the clause applies to other runs"));
            }
        }
    }
}

/// One line over several runs: `budget "…": kept by 8 of 8 runs (48 checks)`.
pub fn summary_line(evaluations: &[Evaluation]) -> String {
    let spec = evaluations.first().map_or("", |e| e.spec.as_str());
    let runs = evaluations.len();
    let kept = evaluations.iter().filter(|e| e.passed()).count();
    let checks: usize = evaluations.iter().map(|e| e.checks.len()).sum();
    let failed: usize = evaluations.iter().map(Evaluation::failures).sum();
    let skipped: usize = evaluations.iter().map(Evaluation::skipped).sum();
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    let partial = match evaluations.iter().filter(|e| e.is_partial()).count() {
        0 => String::new(),
        n => format!("; {n} of the runs did not complete: their checks cover what they measured"),
    };
    if kept == runs {
        format!(
            "budget \"{spec}\": kept by {kept} of {runs} runs ({checks} checks{skipped}){partial}"
        )
    } else {
        format!(
            "budget \"{spec}\": NOT kept by {} of {runs} runs ({failed} of {checks} checks failed{skipped}){partial}",
            runs - kept
        )
    }
}

/// The failed checks of several runs, one row each, with the run.
pub fn failures_table(evaluations: &[Evaluation]) -> String {
    let mut head = vec!["run", "series", "clause", "observed", "limit", "result"];
    if evaluations
        .iter()
        .flat_map(|e| &e.checks)
        .any(|c| c.outcome == Outcome::Fail && c.note.is_some())
    {
        head.push("note");
    }
    let mut rows = vec![header(&head)];
    for e in evaluations {
        for c in e.checks.iter().filter(|c| c.outcome == Outcome::Fail) {
            let mut row = Vec::with_capacity(7);
            row.push(e.label());
            c.push_cells(&mut row);
            rows.push(row);
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    align(&rows, |col, _| matches!(col, 0 | 1 | 2 | 5 | 6), true)
}

/// A run with its budget's evaluation under the key `budget`: the
/// `rtlab.run/1` document of `--json` when a budget was given.
#[derive(Serialize)]
pub struct RunWithBudget<'a> {
    #[serde(flatten)]
    pub result: &'a RunResult,
    pub budget: &'a Evaluation,
}

/// The JSON exporter of a run checked against a budget (see [`RunWithBudget`]).
pub struct JsonWithBudget<'a>(pub &'a Evaluation);

impl Exporter for JsonWithBudget<'_> {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let doc = RunWithBudget {
            result,
            budget: self.0,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        out.write_all(b"\n")
    }
}
