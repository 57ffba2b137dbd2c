//! `rtlab tune check`: the system audit, as text or JSON.

use crate::cli::TuneCheckArgs;
use crate::terminal::{out, put};
use rtlab_tune::check::{self, AuditInput};
use std::process::ExitCode;

pub fn run(args: &TuneCheckArgs) -> anyhow::Result<ExitCode> {
    let input = AuditInput::from_system()
        .map_err(|e| anyhow::anyhow!("tune check: cannot read /proc: {e}"))?;
    let report = check::audit(&input);
    if args.json {
        out!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        // Findings name threads (other users choose their names): escaped.
        put!("{}", report.render_text());
    }
    Ok(match args.fail_on {
        Some(threshold) if report.fails(threshold) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}
