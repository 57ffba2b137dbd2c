//! `rtlab campaign plan|run`.

use super::shared::{BudgetArgs, StoreArgs};
use crate::outputs::OutputTarget;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum CampaignCommand {
    /// List the runs a campaign would make, with an ETA.
    #[command(after_help = "Examples:
  rtlab campaign plan quick
  rtlab campaign plan examples/hallberg2017.toml --json -

SOURCE is a campaign file (TOML, see docs/campaign.md) or a built-in preset:
quick, hallberg2017, hallberg2017-net, romero, straumann2001, srinivasan1998.")]
    Plan(CampaignPlanArgs),
    /// Run a campaign; every run is stored when it ends.
    #[command(after_help = "Examples:
  rtlab campaign run quick
  rtlab campaign run examples/romero.toml --db results.db --quiet
  rtlab campaign run quick --budget 'p99.9<200us,missed=0' --junit budget.xml

Ctrl-C ends the current run as `partial` (stored), starts no further run and
restores the system. --budget (or the file's `budget`) is checked on every run,
one JUnit testsuite per run (docs/budgets.md). Exit code: 0 all runs complete
(and within the budget), 1 a run failed or a run broke the budget, 2 bad input,
130 stopped by a signal.")]
    Run(CampaignRunArgs),
}

#[derive(Args)]
pub struct CampaignPlanArgs {
    /// A campaign file or a preset name.
    pub source: String,
    /// Print the plan as JSON to PATH, or `-` for stdout.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,
}

#[derive(Args)]
pub struct CampaignRunArgs {
    /// A campaign file or a preset name.
    pub source: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Write the campaign's results as JSON to PATH (rewritten after every run), or `-` for stdout.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,
    /// No progress bar and no tables (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// --budget overrides the campaign file's `budget`.
    #[command(flatten)]
    pub budget: BudgetArgs,
}
