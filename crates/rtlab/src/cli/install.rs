//! `rtlab completions` and `rtlab man`.

use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab completions bash > /etc/bash_completion.d/rtlab
  rtlab completions zsh > \"${fpath[1]}/_rtlab\"
  rtlab completions fish > ~/.config/fish/completions/rtlab.fish
  rtlab completions bash --json | jq -r .script

Every command, flag and fixed value (--format, --policy, ...) completes; the
script is made from this rtlab's command line, so regenerate it after an
upgrade. See docs/install.md.")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
    /// The script inside a JSON document (`rtlab.completions/1`) instead.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab man | man -l -                          # rtlab(1), now
  rtlab man --dir /usr/local/share/man/man1     # rtlab.1, rtlab-measure-timer.1, ...
  rtlab man --dir man/ && man -l man/rtlab-plan-gen.1
  rtlab man --dir man/ --json                   # the files written

One page per command (rtlab-NOUN-VERB.1), made from this rtlab's --help: the
options, their defaults and the examples. See docs/install.md.")]
pub struct ManArgs {
    /// Write every page (rtlab.1 and one per command) into DIR, created if
    /// missing, instead of rtlab(1) on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A JSON document (`rtlab.man/1`): the page, or with --dir the files written.
    #[arg(long)]
    pub json: bool,
}
