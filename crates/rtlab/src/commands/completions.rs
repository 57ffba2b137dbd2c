//! `rtlab completions SHELL`: the shell's completion script for rtlab,
//! generated from the command line itself (clap_complete), on stdout.

use clap::Args;
use clap_complete::Shell;
use std::process::ExitCode;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab completions bash > /etc/bash_completion.d/rtlab
  rtlab completions zsh > \"${fpath[1]}/_rtlab\"
  rtlab completions fish > ~/.config/fish/completions/rtlab.fish

Every command, flag and fixed value (--format, --policy, ...) completes; the
script is made from this rtlab's command line, so regenerate it after an
upgrade. See docs/install.md.")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut visible_command(), "rtlab", &mut script);
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
