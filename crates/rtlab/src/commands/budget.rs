//! `--budget` and `--junit` of every command that measures: checked before
//! anything runs, evaluated on every run that ends (an interrupted one
//! too), printed, written as JUnit XML and folded into the exit code.
//!
//! Exit codes, strongest first: 2 bad input (before anything runs), 130
//! stopped by a signal, 1 a run failed (or crossed --break-at), 1 the
//! budget was not kept, 0. A budget only turns a 0 into a 1: the code of a
//! run that already failed or was stopped is kept.

use crate::cli::BudgetArgs;
use crate::input::{bad_input, InputError};
use anyhow::Context;
use rtlab_report::budget::{self, Budget, Evaluation, Outcome};
use rtlab_report::junit;
use std::path::Path;

/// Checks the flags before measuring: `--junit` needs a budget (given by
/// `--budget` or, for a campaign, by its file), a regular file it can
/// write, and a file none of the command's other outputs (`others`: flag
/// and path; the result store among them) is written to: the JUnit file is
/// replaced whole at the end and would destroy it.
pub fn check(
    args: &BudgetArgs,
    budget: Option<&Budget>,
    others: &[(&str, &Path)],
) -> anyhow::Result<()> {
    let Some(path) = &args.junit else {
        return Ok(());
    };
    for (flag, other) in others {
        if *other != Path::new("-") && same_file(path, other) {
            bad_input!(
                "--junit {}: is also the {flag} file, which the JUnit report would replace; \
                 give another file",
                path.display()
            );
        }
    }
    if path.exists() && !path.is_file() {
        bad_input!(
            "--junit {}: exists and is not a regular file",
            path.display()
        );
    }
    if budget.is_none() {
        bad_input!(
            "--junit {}: the JUnit file holds the checks of a budget: give --budget too",
            path.display()
        );
    }
    if path == Path::new("-") {
        bad_input!("--junit -: give a file (stdout carries the tables or the JSON)");
    }
    check_writable(path, "--junit")
}

/// The outputs of a command that writes the result store (at `db`, else
/// the default place), `--json` and `--samples`: what `--junit` must not be.
pub fn outputs<'a>(
    db: Option<&'a Path>,
    default_db: &'a Option<std::path::PathBuf>,
    json: Option<&'a Path>,
    samples: Option<&'a Path>,
) -> Vec<(&'static str, &'a Path)> {
    let mut others = Vec::new();
    others.extend(
        db.or(default_db.as_deref())
            .map(|p| ("result store (--db)", p)),
    );
    others.extend(json.map(|p| ("--json", p)));
    others.extend(samples.map(|p| ("--samples", p)));
    others
}

/// Whether two paths name the same file (also through symlinks or a
/// different spelling of the directory), including the store's WAL and
/// shared-memory files beside a database.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let normal = |p: &Path| -> Option<std::path::PathBuf> {
        let name = p.file_name()?;
        let dir = match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir.canonicalize().ok()?,
            None => std::env::current_dir().ok()?,
        };
        let joined = dir.join(name);
        Some(joined.canonicalize().unwrap_or(joined))
    };
    let (Some(a), Some(b)) = (normal(a), normal(b)) else {
        return false;
    };
    let companions = ["", "-wal", "-shm", "-journal"].map(|suffix| {
        let mut name = b.as_os_str().to_os_string();
        name.push(suffix);
        std::path::PathBuf::from(name)
    });
    companions.contains(&a)
}

/// Fails now, as bad input, when `path` cannot be written, without
/// truncating a file that is there (it is replaced atomically at the end).
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    let existed = path.exists();
    let opened = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    match opened {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(InputError(format!(
            "{flag} {}: cannot create: {e}",
            path.display()
        )))),
    }
}

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

/// The exit code with the budget folded in: a run's own non-zero code is
/// kept; a 0 becomes 1 when a check failed, with a line on stderr saying so.
pub fn exit_code(code: u8, evaluations: &[Evaluation]) -> u8 {
    let broken: Vec<&Evaluation> = evaluations.iter().filter(|e| !e.passed()).collect();
    if broken.is_empty() {
        return code;
    }
    let failed: usize = broken.iter().map(|e| e.failures()).sum();
    let runs = match evaluations.len() {
        1 => String::new(),
        n => format!(" by {} of {n} runs", broken.len()),
    };
    let first = broken[0]
        .checks
        .iter()
        .find(|c| c.outcome == Outcome::Fail)
        .map(|c| format!(", first {} {}: {}", c.series_label(), c.text, c.message()))
        .unwrap_or_default();
    eprintln!(
        "error: budget \"{}\" not kept{runs}: {failed} check{} failed{first}{}",
        broken[0].spec,
        if failed == 1 { "" } else { "s" },
        match code {
            0 => String::new(),
            c => format!(" (the run's own exit code {c} is kept)"),
        }
    );
    if code == 0 {
        1
    } else {
        code
    }
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
