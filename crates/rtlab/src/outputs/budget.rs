//! `--budget` and `--junit` of every command that measures: evaluated on
//! every run that ends (an interrupted one too), printed, written as JUnit
//! XML and put into the JSON document; checked before anything runs in
//! [`super::checks`], folded into the exit code in [`super::exit`].

use anyhow::Context;
use rtlab_report::budget::{self, failures_table, summary_line, Budget, Evaluation};
use rtlab_report::junit;
use std::path::Path;

/// `rtlab measure timer`: the command's words, to title the JUnit report.
pub fn title() -> String {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .take_while(|a| !a.starts_with('-'))
        .take(2)
        .collect();
    format!("rtlab {}", words.join(" ")).trim_end().to_string()
}

/// Writes the JUnit file (atomically: a crash never leaves half a file).
pub fn write_junit(path: &Path, title: &str, evaluations: &[Evaluation]) -> anyhow::Result<()> {
    junit::write(path, title, evaluations)
        .with_context(|| format!("writing --junit {}", path.display()))
}

/// The budget's part of a command's JSON document over several runs:
/// `{"spec", "passed", "runs": [evaluation, …]}`, or null without a budget.
pub fn json(budget: Option<&Budget>, evaluations: &[Evaluation]) -> serde_json::Value {
    match budget {
        None => serde_json::Value::Null,
        Some(budget) => serde_json::json!({
            "spec": budget.spec(),
            "passed": evaluations.iter().all(Evaluation::passed),
            "runs": evaluations,
        }),
    }
}

/// The budget's report after the tables of several runs: a blank line,
/// the summary line and the failed checks; nothing without a budget.
pub fn summary_text(evaluations: &[Evaluation]) -> String {
    if evaluations.is_empty() {
        return String::new();
    }
    format!(
        "\n{}\n{}",
        summary_line(evaluations),
        failures_table(evaluations)
    )
}

/// Evaluates `budget` (if any) on every result, clauses that apply to
/// some runs only being skipped on the others (see [`budget::reconcile`]).
pub fn evaluate_all(
    budget: Option<&Budget>,
    results: &[rtlab_core::result::RunResult],
) -> Vec<Evaluation> {
    let Some(budget) = budget else {
        return Vec::new();
    };
    let mut evaluations: Vec<Evaluation> = results.iter().map(|r| budget.evaluate(r)).collect();
    budget::reconcile(&mut evaluations);
    evaluations
}
