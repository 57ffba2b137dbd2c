//! Making systemd reload its units (`systemctl daemon-reload`).

use super::child::{describe_status, run_with_timeout, CHILD_TIMEOUT};
use serde::Serialize;
use std::fmt;
use std::path::Path;
use std::process::Command;

/// Exists only while systemd runs as PID 1 (what `sd_booted()` tests).
pub const SYSTEMD_BOOTED_MARKER: &str = "/run/systemd/system";

/// What became of `systemctl daemon-reload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// systemd read the changed files.
    Reloaded,
    /// systemd runs but the reload failed: the file is written, yet systemd
    /// uses it only after a reload (or reboot).
    Failed { message: String },
    /// systemd is not PID 1 here: nothing to reload.
    Skipped { reason: String },
}

impl fmt::Display for ReloadOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadOutcome::Reloaded => write!(f, "systemctl daemon-reload: done"),
            ReloadOutcome::Failed { message } => write!(
                f,
                "systemctl daemon-reload FAILED: {message}; the file is written, \
                 run `systemctl daemon-reload` once systemd can be reached"
            ),
            ReloadOutcome::Skipped { reason } => write!(f, "systemctl daemon-reload: {reason}"),
        }
    }
}

/// `systemctl daemon-reload` when systemd runs as PID 1, so it reads the
/// written file; otherwise skipped. Never an error: the file stays written
/// either way.
pub fn reload() -> ReloadOutcome {
    reload_with(Path::new(SYSTEMD_BOOTED_MARKER), Path::new("systemctl"))
}

/// [`reload`] with the directory that marks a running systemd and the
/// `systemctl` program given.
pub fn reload_with(booted_marker: &Path, systemctl: &Path) -> ReloadOutcome {
    if !booted_marker.is_dir() {
        return ReloadOutcome::Skipped {
            reason: format!(
                "systemd is not running as PID 1 ({} does not exist): reload skipped; \
                 systemd reads the file when it starts",
                booted_marker.display()
            ),
        };
    }
    let mut cmd = Command::new(systemctl);
    cmd.arg("daemon-reload");
    match run_with_timeout(cmd, CHILD_TIMEOUT) {
        Ok(Some(output)) if output.status.success() => ReloadOutcome::Reloaded,
        Ok(Some(output)) => {
            let said = output.stderr.trim();
            ReloadOutcome::Failed {
                message: format!(
                    "{} daemon-reload exited with {}{}{}",
                    systemctl.display(),
                    describe_status(output.status),
                    if said.is_empty() { "" } else { ": " },
                    said.replace('\n', "; ")
                ),
            }
        }
        Ok(None) => ReloadOutcome::Failed {
            message: format!(
                "{} daemon-reload did not finish within {}s and was stopped",
                systemctl.display(),
                CHILD_TIMEOUT.as_secs()
            ),
        },
        Err(e) => ReloadOutcome::Failed {
            message: format!("cannot run {} daemon-reload: {e}", systemctl.display()),
        },
    }
}
