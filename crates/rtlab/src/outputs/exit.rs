//! The exit code of a command that measures.
//!
//! Exit codes, strongest first: 2 bad input (before anything runs), 130
//! stopped by a signal, 1 a run failed (or crossed --break-at), 1 the
//! budget was not kept, 0. A budget only turns a 0 into a 1: the code of a
//! run that already failed or was stopped is kept.

use super::target::OutputTarget;
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_report::budget::{Evaluation, Outcome};

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

/// Where a stopped run's partial result went, as the message on stopping
/// says it: `stored` (e.g. "stored as run ID") and `--json`'s target. With
/// --no-store it must not claim the result was kept.
pub fn kept_where(stored: Option<String>, json: Option<&OutputTarget>) -> String {
    let written = json.map(|json| match json {
        OutputTarget::Stdout => "written to stdout".to_string(),
        OutputTarget::File(path) => format!("written to {}", path.display()),
    });
    match (stored, written) {
        (Some(stored), Some(written)) => format!("the partial result was {stored} and {written}"),
        (Some(stored), None) => format!("the partial result was {stored}"),
        (None, Some(written)) => format!("the partial result was {written}; it was not stored"),
        (None, None) => "nothing was kept: the run was not stored and --json was not given".into(),
    }
}

/// The exit code of a run's status, with its message on stderr: 0
/// complete, 1 failed or stopped by --break-at, 130 stopped by a signal
/// (saying where the partial result went: `kept`, from [`kept_where`]).
pub fn status_code(result: &RunResult, kept: &str) -> u8 {
    match result.status {
        RunStatus::Failed => {
            eprintln!("error: the run failed: see the warnings above");
            1
        }
        RunStatus::Break => 1,
        RunStatus::Partial => {
            eprintln!("stopped by a signal: {kept}");
            130
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{kept_where, OutputTarget};

    /// A stopped run says where its partial result went, and never that it
    /// was kept when it was not.
    #[test]
    fn a_stopped_run_says_where_its_result_went() {
        let stored = || Some("stored as run R".to_string());
        assert_eq!(
            kept_where(stored(), None),
            "the partial result was stored as run R"
        );
        assert_eq!(
            kept_where(stored(), Some(&OutputTarget::File("r.json".into()))),
            "the partial result was stored as run R and written to r.json"
        );
        assert_eq!(
            kept_where(None, Some(&OutputTarget::Stdout)),
            "the partial result was written to stdout; it was not stored"
        );
        assert_eq!(
            kept_where(None, None),
            "nothing was kept: the run was not stored and --json was not given"
        );
    }
}
