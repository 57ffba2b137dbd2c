//! `rtlab completions SHELL`: the shell's completion script for rtlab,
//! generated from the command line itself (clap_complete), on stdout.

use crate::cli::CompletionsArgs;
use std::process::ExitCode;

pub fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut visible_command(), "rtlab", &mut script);
    if args.json {
        let doc = serde_json::json!({
            "schema": "rtlab.completions/1",
            "shell": args.shell.to_string(),
            "script": String::from_utf8_lossy(&script),
        });
        script = format!("{}\n", serde_json::to_string_pretty(&doc)?).into_bytes();
    }
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(ExitCode::SUCCESS)
}

/// The command line without its hidden commands (`__load-worker`), which
/// clap_complete would offer; clap has no way to remove a subcommand, so
/// the top level is rebuilt from the visible ones.
fn visible_command() -> clap::Command {
    let full = crate::cli::command();
    let mut top = clap::Command::new("rtlab")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
    if let Some(about) = full.get_about() {
        top = top.about(about.clone());
    }
    top
}
