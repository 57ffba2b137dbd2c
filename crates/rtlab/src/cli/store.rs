//! `rtlab store check`, `rtlab store push` and `rtlab restore`.

use super::shared::StoreArgs;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum StoreCommand {
    /// Check the store's integrity: SQLite's checks, its schema, every run readable.
    Check(StoreCheckArgs),
    /// Store the runs kept as files while a PostgreSQL store could not be reached.
    Push(StorePushArgs),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab store check
  rtlab store check --db /var/lib/rtlab/results.db --json
  rtlab store check --db postgresql://rtlab@%2Frun%2Fpostgresql/lab

Exit code 0: the store is sound; 1: problems were found (listed); 2: no store
at that path, or a server that cannot be reached. The store is opened
read-only and never changed. See docs/store.md.")]
pub struct StoreCheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab store push --db postgresql://rtlab@%2Frun%2Fpostgresql/lab
  RTLAB_DB=postgresql://rtlab@db.lab/fleet rtlab store push --json

A run that ends while its PostgreSQL store cannot be reached (after a few
seconds of trying to connect again) is kept as a file under the unsaved
directory, in a folder of that database's own. This stores every run kept
for the store --db names, each in its own transaction, and removes each
file once its run is committed; a run that is there already is not stored
twice (its file is removed). A campaign tries this itself when it ends.
Exit code 0: every kept run is stored; 1: some files are left (listed);
2: the server cannot be reached. See docs/store.md.")]
pub struct StorePushArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print what was pushed as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Print what was restored as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
