//! A budget as written: its clauses (metric, operator, limit, series
//! glob), their parsing and their display.

use rtlab_core::units::parse_duration_ns;
use std::fmt;
use std::str::FromStr;

/// What a clause limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Min,
    Max,
    Mean,
    Stdev,
    P50,
    P90,
    P99,
    P99_9,
    P99_99,
    /// Samples recorded in the series.
    Samples,
    /// Deadlines without a wake-up of their own (periodic tasks' response
    /// series: deadline misses; the dispatcher: skipped events).
    Missed,
    /// Samples lost between the measuring thread and the recorder.
    Dropped,
    /// Net runs: messages that timed out.
    Lost,
    /// Net runs: replies that came after their message had timed out.
    Late,
    /// Net runs: replies received a second time.
    Duplicate,
    /// Net runs: replies that came after a reply to a later request.
    Reordered,
    /// Net runs: replies that did not parse, were not for this run, or failed authentication.
    Bad,
}

/// Every metric by its name, in the order the error messages list them.
const METRICS: &[(&str, Metric)] = &[
    ("min", Metric::Min),
    ("max", Metric::Max),
    ("mean", Metric::Mean),
    ("stdev", Metric::Stdev),
    ("p50", Metric::P50),
    ("p90", Metric::P90),
    ("p99", Metric::P99),
    ("p99.9", Metric::P99_9),
    ("p99.99", Metric::P99_99),
    ("samples", Metric::Samples),
    ("missed", Metric::Missed),
    ("dropped", Metric::Dropped),
    ("lost", Metric::Lost),
    ("late", Metric::Late),
    ("duplicate", Metric::Duplicate),
    ("reordered", Metric::Reordered),
    ("bad", Metric::Bad),
];

/// Other spellings accepted: the summary table's column `avg`, and the
/// JSON's keys of the percentiles.
const ALIASES: &[(&str, Metric)] = &[
    ("avg", Metric::Mean),
    ("p99_9", Metric::P99_9),
    ("p99_99", Metric::P99_99),
];

impl Metric {
    /// Every metric, in the order of [`Metric::known`].
    pub fn all() -> impl Iterator<Item = Metric> {
        METRICS.iter().map(|(_, m)| *m)
    }

    /// The metric's name in a spec: `p99.9`, `missed`.
    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(name, _)| name)
    }

    /// A time in ns (its limit takes a unit); otherwise a count.
    pub fn is_time(self) -> bool {
        matches!(
            self,
            Metric::Min
                | Metric::Max
                | Metric::Mean
                | Metric::Stdev
                | Metric::P50
                | Metric::P90
                | Metric::P99
                | Metric::P99_9
                | Metric::P99_99
        )
    }

    /// A count of the whole run (the net probe's messages) rather than of
    /// one series: it takes no `SERIES:` prefix.
    pub fn is_run_level(self) -> bool {
        matches!(
            self,
            Metric::Lost | Metric::Late | Metric::Duplicate | Metric::Reordered | Metric::Bad
        )
    }

    /// The known names, for error messages.
    pub fn known() -> String {
        METRICS
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The metric of a name or alias (`p99.9`, `p99_9`, `avg`).
    pub fn lookup(name: &str) -> Option<Metric> {
        METRICS
            .iter()
            .chain(ALIASES)
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// How the observed value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "=",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    /// Whether `observed OP limit` holds.
    pub fn holds(self, observed: f64, limit: f64) -> bool {
        match self {
            Op::Lt => observed < limit,
            Op::Le => observed <= limit,
            Op::Eq => observed == limit,
            Op::Ge => observed >= limit,
            Op::Gt => observed > limit,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.symbol())
    }
}

/// One clause of a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// 1-based place in the spec.
    pub index: usize,
    /// The clause as written, without the spaces around it.
    pub text: String,
    /// Byte offset of `text` in the spec.
    pub offset: usize,
    /// Glob on series names; None: every series of the run (and always
    /// None for a run-level metric).
    pub series: Option<String>,
    pub metric: Metric,
    pub op: Op,
    /// Nanoseconds for a time metric, a count otherwise.
    pub limit: u64,
}

impl Clause {
    /// Whether the clause applies to the series called `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.series
            .as_deref()
            .is_none_or(|glob| glob_match(glob, name))
    }
}

/// A parsed budget: the spec as given and its clauses in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    spec: String,
    clauses: Vec<Clause>,
}

/// A spec that could not be read. Displayed as `clause 2 "p99.5<1ms":
/// unknown metric 'p99.5' (known: …)`; errors about the whole spec (an
/// empty one) have no clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetError {
    /// 1-based number of the clause; 0 when the error is about the whole spec.
    pub clause: usize,
    /// The clause as written.
    pub text: String,
    /// Byte offset of the clause in the spec, to point at it in a file.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.clause == 0 {
            f.write_str(&self.message)
        } else {
            write!(
                f,
                "clause {} \"{}\": {}",
                self.clause, self.text, self.message
            )
        }
    }
}

impl std::error::Error for BudgetError {}

const EXAMPLE: &str = "p99.9<100us,max<2ms,missed=0";

impl Budget {
    /// Reads a spec such as `p99.9<100us,cpu*:max<2ms,missed=0`.
    pub fn parse(spec: &str) -> Result<Budget, BudgetError> {
        if spec.trim().is_empty() {
            return Err(BudgetError {
                clause: 0,
                text: String::new(),
                offset: 0,
                message: format!("the budget is empty: give clauses such as \"{EXAMPLE}\""),
            });
        }
        let mut clauses = Vec::new();
        let mut start = 0;
        for (i, piece) in spec.split(',').enumerate() {
            let lead = piece.len() - piece.trim_start().len();
            let text = piece.trim();
            let offset = start + lead;
            start += piece.len() + 1;
            let fail = |message: String| BudgetError {
                clause: i + 1,
                text: text.to_string(),
                offset,
                message,
            };
            clauses.push(parse_clause(i + 1, text, offset).map_err(fail)?);
        }
        Ok(Budget {
            spec: spec.trim().to_string(),
            clauses,
        })
    }

    /// The spec as given (without surrounding spaces).
    pub fn spec(&self) -> &str {
        &self.spec
    }

    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }
}

impl FromStr for Budget {
    type Err = BudgetError;
    fn from_str(s: &str) -> Result<Budget, BudgetError> {
        Budget::parse(s)
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

fn parse_clause(index: usize, text: &str, offset: usize) -> Result<Clause, String> {
    if text.is_empty() {
        return Err(format!(
            "empty clause (a stray comma?): clauses look like \"{EXAMPLE}\""
        ));
    }
    let Some(at) = text.find(['<', '>', '=']) else {
        return Err(
            "no comparison: expected [SERIES:]METRIC OP VALUE with OP one of <, <=, =, >=, > (e.g. \"max<2ms\")"
                .to_string(),
        );
    };
    let rest = &text[at..];
    let (op, len) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
        (b'<', Some(b'=')) => (Op::Le, 2),
        (b'>', Some(b'=')) => (Op::Ge, 2),
        (b'=', Some(b'=')) => (Op::Eq, 2),
        (b'<', _) => (Op::Lt, 1),
        (b'>', _) => (Op::Gt, 1),
        _ => (Op::Eq, 1),
    };
    let left = text[..at].trim();
    let right = text[at + len..].trim();
    if let Some(stray) = right.chars().next().filter(|c| "<>=".contains(*c)) {
        return Err(format!(
            "unknown comparison '{}{stray}' (use <, <=, =, >= or >)",
            op.symbol()
        ));
    }
    if left.ends_with('!') {
        return Err("'!=' is not a comparison budgets take (use <, <=, =, >= or >)".into());
    }
    let (series, metric_text) = match left.rsplit_once(':') {
        Some((series, metric)) => (Some(series.trim()), metric.trim()),
        None => (None, left),
    };
    if metric_text.is_empty() {
        return Err(format!(
            "no metric before '{}' (known: {})",
            op.symbol(),
            Metric::known()
        ));
    }
    let metric = Metric::lookup(metric_text).ok_or_else(|| {
        format!(
            "unknown metric '{metric_text}' (known: {})",
            Metric::known()
        )
    })?;
    let series = match series {
        None => None,
        Some("") => return Err("empty series name before ':'".into()),
        Some(s) if s.chars().any(char::is_whitespace) => {
            return Err(format!("series '{s}': a series name has no spaces"))
        }
        Some(s) if metric.is_run_level() => {
            return Err(format!(
                "'{metric}' counts the messages of the whole net run, not of a series: drop '{s}:'"
            ))
        }
        Some(s) => Some(s.to_string()),
    };
    if right.is_empty() {
        return Err(format!("no value after '{}'", op.symbol()));
    }
    let limit = if metric.is_time() {
        if right.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(format!(
                "'{right}' has no unit: {metric} is a time (give ns, us, µs, ms or s, e.g. {metric}<100us)"
            ));
        }
        parse_duration_ns(right).map_err(|e| format!("{metric} is a time: {e}"))?
    } else {
        right.parse::<u64>().map_err(|_| {
            if parse_duration_ns(right).is_ok() {
                format!("'{right}': {metric} is a count, give a whole number without a unit (e.g. {metric}=0)")
            } else {
                format!("'{right}' is not a whole number: {metric} is a count (e.g. {metric}=0)")
            }
        })?
    };
    Ok(Clause {
        index,
        text: text.to_string(),
        offset,
        series,
        metric,
        op,
        limit,
    })
}

/// Whether `name` matches `glob`: `*` any run of characters (none
/// included), `?` exactly one, anything else itself.
pub fn glob_match(glob: &str, name: &str) -> bool {
    let pattern: Vec<char> = glob.chars().collect();
    let text: Vec<char> = name.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}
