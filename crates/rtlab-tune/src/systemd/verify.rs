//! Checking rtlab's files with `systemd-analyze verify`.

use super::child::{describe_status, run_with_timeout, shell_quote, CHILD_TIMEOUT};
use super::error::SystemdError;
use super::names::{dropin_path, unit_name, watch_unit_path, WATCH_UNIT_NAME};
use serde::Serialize;
use std::fmt;
use std::io;
use std::path::Path;
use std::process::{Command, ExitStatus};

/// What `systemd-analyze verify` said about a unit and its drop-ins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verification {
    /// No problem in what rtlab wrote, and the unit loads. `notes` holds
    /// what systemd-analyze said about files rtlab did not write (the
    /// vendor's unit, other drop-ins, dependencies), if anything.
    Passed { command: String, notes: Vec<String> },
    /// systemd-analyze found problems; its messages, line by line.
    Failed {
        command: String,
        messages: Vec<String>,
    },
    /// The check could not run (systemd-analyze missing, timed out, ...).
    Skipped { reason: String },
}

impl Verification {
    pub fn passed(&self) -> bool {
        matches!(self, Verification::Passed { .. })
    }
}

impl fmt::Display for Verification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verification::Passed { notes, .. } => {
                write!(f, "systemd-analyze verify: passed")?;
                if !notes.is_empty() {
                    write!(f, " (notes about files rtlab did not write follow)")?;
                }
                for note in notes {
                    write!(f, "\n  note: {note}")?;
                }
                Ok(())
            }
            Verification::Failed { command, messages } => {
                write!(f, "systemd-analyze verify: FAILED ({command})")?;
                for message in messages {
                    write!(f, "\n  {message}")?;
                }
                Ok(())
            }
            Verification::Skipped { reason } => {
                write!(f, "systemd-analyze verify: skipped: {reason}")
            }
        }
    }
}

/// Checks `unit` as systemd would load it with `unit_dir` first in its
/// search path: the unit file (from `unit_dir` or the system's unit
/// directories) and every drop-in, including the ones in `unit_dir/UNIT.d/`.
/// Runs `systemd-analyze verify` from `$PATH`.
pub fn verify(unit_dir: &Path, unit: &str) -> Result<Verification, SystemdError> {
    verify_with(Path::new("systemd-analyze"), unit_dir, unit)
}

/// [`verify`] with the given `systemd-analyze` program (a name looked up in
/// `$PATH`, or a path).
///
/// How the drop-in is found without systemd running: `SYSTEMD_UNIT_PATH` is
/// set to `unit_dir` followed by a `:` (the trailing colon keeps the
/// compiled-in directories after it), and the unit is verified by name, so
/// systemd-analyze resolves it, templates included, the way PID 1 would and
/// reads `unit_dir/UNIT.d/*.conf` beside it. `--recursive-errors=no` makes
/// its exit status report problems of this unit only (not of the units it
/// depends on); `--man=no` skips checking `Documentation=` man pages.
/// Problems in files rtlab did not write are notes, not failures (see
/// [`Verification`]).
pub fn verify_with(
    systemd_analyze: &Path,
    unit_dir: &Path,
    unit: &str,
) -> Result<Verification, SystemdError> {
    let unit = unit_name(unit)?;
    let unit_dir = match std::path::absolute(unit_dir) {
        Ok(dir) => dir,
        Err(e) => {
            return Ok(Verification::Skipped {
                reason: format!(
                    "cannot make unit directory {} absolute: {e}",
                    unit_dir.display()
                ),
            })
        }
    };
    let Some(dir_text) = unit_dir.to_str() else {
        return Ok(Verification::Skipped {
            reason: format!(
                "unit directory {} is not valid UTF-8; systemd cannot search it",
                unit_dir.display()
            ),
        });
    };
    if dir_text.contains(':') {
        return Ok(Verification::Skipped {
            reason: format!(
                "unit directory {dir_text} contains ':', which SYSTEMD_UNIT_PATH cannot express"
            ),
        });
    }
    let search_path = format!("{dir_text}:");
    let args = ["verify", "--man=no", "--recursive-errors=no", &unit];
    let command = format!(
        "SYSTEMD_UNIT_PATH={} {} {}",
        shell_quote(&search_path),
        shell_quote(&systemd_analyze.to_string_lossy()),
        args.map(shell_quote).join(" ")
    );
    let mut cmd = Command::new(systemd_analyze);
    cmd.args(args)
        .env("SYSTEMD_UNIT_PATH", &search_path)
        .env("SYSTEMD_COLORS", "0")
        .env("SYSTEMD_PAGER", "")
        .env("SYSTEMD_LOG_TARGET", "console")
        .env_remove("SYSTEMD_LOG_LEVEL");
    let output = match run_with_timeout(cmd, CHILD_TIMEOUT) {
        Ok(Some(output)) => output,
        Ok(None) => {
            return Ok(Verification::Skipped {
                reason: format!(
                    "{} did not finish within {}s and was stopped",
                    systemd_analyze.display(),
                    CHILD_TIMEOUT.as_secs()
                ),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Verification::Skipped {
                reason: format!(
                "{} is not installed (not found); check the unit by hand after installing systemd",
                systemd_analyze.display()
            ),
            })
        }
        Err(e) => {
            return Ok(Verification::Skipped {
                reason: format!("cannot run {}: {e}", systemd_analyze.display()),
            })
        }
    };
    let messages: Vec<String> = output
        .stderr
        .lines()
        .chain(output.stdout.lines())
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect();
    Ok(classify(
        command,
        &rtlab_files(&unit_dir, &unit),
        output.status,
        messages,
        systemd_analyze,
    ))
}

/// The files rtlab writes for `unit` in `unit_dir`: its drop-in, and for the
/// watch unit the unit file itself.
fn rtlab_files(unit_dir: &Path, unit: &str) -> Vec<String> {
    let mut files = vec![dropin_path(unit_dir, unit)];
    if unit == WATCH_UNIT_NAME {
        files.push(watch_unit_path(unit_dir));
    }
    files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// The file a `FILE:LINE: text` message is about, if it has that form.
fn message_file(message: &str) -> Option<&str> {
    static FILE_LINE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re =
        FILE_LINE.get_or_init(|| regex::Regex::new(r"^(/.+?):[0-9]+: ").expect("a valid pattern"));
    re.captures(message)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// Sorts systemd-analyze's messages. A problem in a file rtlab wrote fails
/// the check. A `FILE:LINE:` message about another file (the vendor's unit,
/// an administrator's drop-in) was there before rtlab and is only a note,
/// although it makes systemd-analyze exit non-zero: refusing a drop-in for
/// a unit that already uses a deprecated setting would help nobody. Any
/// other message with a non-zero exit (unit not found, its program not
/// executable, a fatal configuration error) fails the check: the unit would
/// not run as asked.
fn classify(
    command: String,
    ours: &[String],
    status: ExitStatus,
    messages: Vec<String>,
    systemd_analyze: &Path,
) -> Verification {
    let is_ours = |file: &str| ours.iter().any(|o| o == file);
    let problem = |m: &String| match message_file(m) {
        Some(file) => is_ours(file),
        None => !status.success(),
    };
    if !messages.iter().any(problem) {
        if status.success() || !messages.is_empty() {
            return Verification::Passed {
                command,
                notes: messages,
            };
        }
        return Verification::Failed {
            command,
            messages: vec![format!(
                "{} exited with {} and printed nothing",
                systemd_analyze.display(),
                describe_status(status)
            )],
        };
    }
    Verification::Failed { command, messages }
}
