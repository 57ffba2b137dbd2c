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
    // Two names of one inode (a hard link, a bind mount).
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        use std::os::unix::fs::MetadataExt;
        if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
            return true;
        }
    }
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
/// truncating a file that is there (it is replaced atomically at the end)
/// nor following a symlink another user could have planted.
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    match rtlab_core::fsutil::open_output(path) {
        Ok((file, created)) => {
            if created {
                remove_if_still(path, &file);
            }
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(InputError(format!(
            "{flag} {}: cannot create: {e}",
            path.display()
        )))),
    }
}

/// Removes `path` if it is still the (empty) file `file` created there.
fn remove_if_still(path: &Path, file: &std::fs::File) {
    use std::os::unix::fs::MetadataExt;
    let (Ok(ours), Ok(there)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
        return;
    };
    if ours.dev() == there.dev() && ours.ino() == there.ino() && there.len() == 0 {
        let _ = std::fs::remove_file(path);
    }
}

/// Refuses, as bad input, two of a command's outputs (flag and path) that
/// are the same file: the second written would destroy the first. `-`
/// (stdout) twice is refused too; a FIFO or a device (`/dev/null`) may
/// take several.
pub fn check_distinct(outputs: &[(&str, &Path)]) -> anyhow::Result<()> {
    for (i, (flag_a, a)) in outputs.iter().enumerate() {
        for (flag_b, b) in &outputs[i + 1..] {
            let stdout = Path::new("-");
            if *a == stdout && *b == stdout {
                bad_input!("{flag_a} - and {flag_b} -: both on stdout; give one of them a file");
            }
            if *a == stdout || *b == stdout || special(a) || special(b) {
                continue;
            }
            if same_file(a, b) || same_file(b, a) {
                bad_input!(
                    "{flag_a} {} and {flag_b} {}: the same file, one would destroy the other; \
                     give two files",
                    a.display(),
                    b.display()
                );
            }
        }
    }
    Ok(())
}

/// An existing FIFO, device or socket (not a file one output replaces).
fn special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
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
