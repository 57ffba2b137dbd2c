//! `rtlab store check` and `rtlab restore`.

use super::shared::StoreArgs;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum StoreCommand {
    /// Check the store's integrity: SQLite's checks, its schema, every run readable.
    Check(StoreCheckArgs),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab store check
  rtlab store check --db /var/lib/rtlab/results.db --json

Exit code 0: the store is sound; 1: problems were found (listed); 2: no store
at that path. The store is opened read-only and never changed. See
docs/store.md.")]
pub struct StoreCheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Print what was restored as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
