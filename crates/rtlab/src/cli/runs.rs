//! The stored runs: `rtlab runs`, `show`, `compare`.

use super::shared::StoreArgs;
use crate::input;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  rtlab runs
  rtlab runs --campaign quick --limit 8
  rtlab runs --probe cyclictest --json   # the list as JSON on stdout
  rtlab runs --tag baseline
  rtlab runs tag last baseline
  rtlab runs delete 20261121T193012Z-4242

The store is opened read-only to list: a store one may read but not write is
listed too. See docs/runs.md."
)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: Option<RunsAction>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only runs with this tag (see `rtlab runs tag`).
    #[arg(long)]
    pub tag: Option<String>,
    /// Only runs of this campaign (name).
    #[arg(long)]
    pub campaign: Option<String>,
    /// Only runs of this campaign execution (id).
    #[arg(long)]
    pub execution: Option<String>,
    /// Only runs taken on this host.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs of this probe (timer, cyclictest, ...).
    #[arg(long)]
    pub probe: Option<String>,
    /// Only runs with this status (complete, partial, failed, break, running).
    #[arg(long, value_parser = ["complete", "partial", "failed", "break", "running"])]
    pub status: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print the list as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum RunsAction {
    /// Delete stored runs (no undo): by id, unique prefix or `last`, or a whole campaign execution.
    Delete(RunsDeleteArgs),
    /// Tag a stored run (or take a tag off it with --untag); `rtlab runs --tag T` lists them.
    Tag(RunsTagArgs),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab runs delete last
  rtlab runs delete 20261121T193012Z-4242 20261121T193102Z-4242-2 --yes
  rtlab runs delete --execution 20261121T193000Z-4242 --yes --json

Deleting more than one run, or some but not all runs of a campaign execution,
needs --yes: without it rtlab lists what would be deleted and exits 2. Nothing
is deleted unless every id names exactly one run. See docs/runs.md.")]
pub struct RunsDeleteArgs {
    /// Run ids, unique prefixes of one, or `last`.
    #[arg(value_name = "ID", required_unless_present = "execution")]
    pub runs: Vec<String>,
    /// Every run of this campaign execution (its id, as `rtlab runs` shows under --execution).
    #[arg(long, value_name = "ID")]
    pub execution: Option<String>,
    /// Delete more than one run, or part of a campaign execution.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the deleted ids as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab runs tag last baseline
  rtlab runs tag 20261121T193012Z-4242 kernel-6.18 --json
  rtlab runs tag last baseline --untag
  rtlab runs --tag baseline

A tag is 1 to 64 ASCII letters, digits, '-', '_' and '.', starting with a letter
or digit. See docs/runs.md.")]
pub struct RunsTagArgs {
    /// Run id, a unique prefix of one, or `last`.
    #[arg(value_name = "ID")]
    pub run: String,
    #[arg(value_name = "TAG")]
    pub tag: String,
    /// Take the tag off instead.
    #[arg(long)]
    pub untag: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the run's tags as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab show last
  rtlab show 20261121T193012Z --json
  rtlab show last --pwcet           # with the worst-case estimate (docs/pwcet.md)
  rtlab show last --spikes 8        # 8 top spikes per series, each with its likeliest cause")]
pub struct ShowArgs {
    /// Run id, a unique prefix of one, or `last`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the whole result (rtlab.run/1) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Add the worst-case estimate of each series (extreme-value fit,
    /// pWCET at 1e-3 ... 1e-9 per sample; see docs/pwcet.md). With --json,
    /// only the estimates (rtlab.pwcet/1).
    #[arg(long)]
    pub pwcet: bool,
    /// How many top spikes per series to list with what the witness saw
    /// around them (docs/runs.md, "Spikes explained"); 0 lists none.
    #[arg(long, value_name = "N", default_value_t = rtlab_report::report::spike_tables::DEFAULT_SPIKES)]
    pub spikes: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CompareFormat {
    Table,
    Md,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab compare 20261121T193012Z-4242 20261121T194501Z-4311
  rtlab compare RUN_A RUN_B --format md --resamples 5000
  rtlab compare last old-cyclictest-hist.txt --match all
  rtlab compare --baseline golden.json last                  # exit 1 if last regressed
  rtlab compare --baseline 20261121T193000Z-4242 fleet --threshold 5% --metric p99,missed

The first run is the baseline. Series are matched by name (cpu0, cpu1, ...).
The p99 difference comes with a bootstrap confidence interval; a difference
whose interval excludes 0 is marked significant.

With --baseline REF, each RUN is a candidate judged against REF: a run, a file,
a campaign execution id or a campaign name (its newest execution; executions
pair by configuration, load and series, repeats folded). Exit 0 when nothing
regressed, 1 when a figure is worse by more than --threshold (for the p99, also
significantly by the bootstrap), 2 for bad input. See docs/compare.md.")]
pub struct CompareArgs {
    /// Runs to compare, the baseline first: stored run ids (or unique prefixes, or `last`),
    /// or files `rtlab import` reads (rtlab JSON, cyclictest histfile or JSON). With
    /// --baseline: the candidates, runs or campaign executions (ids or campaign names).
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// Judge each RUN against this baseline and exit 1 when one regressed: a stored
    /// run (id, unique prefix, `last`), a file, a campaign execution id or a campaign name.
    #[arg(long, value_name = "REF")]
    pub baseline: Option<String>,
    /// With --baseline: how much worse than the baseline's a figure may be, in percent.
    #[arg(long, value_name = "PERCENT", requires = "baseline",
          default_value_t = rtlab_report::compare::DEFAULT_THRESHOLD_PERCENT,
          value_parser = rtlab_report::compare::parse_threshold)]
    pub threshold: f64,
    /// With --baseline: the figures judged, comma-separated: p99 (tested by the
    /// bootstrap), p50, p90, p99.9, p99.99, max, missed (per million wake-ups).
    #[arg(
        long,
        value_name = "LIST",
        requires = "baseline",
        default_value_t = rtlab_report::compare::DEFAULT_METRIC.to_string()
    )]
    pub metric: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Bootstrap resamples for the p99 interval; 0 skips the test.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub resamples: u64,
    /// Confidence level of the interval.
    #[arg(long, default_value_t = 0.95, value_parser = input::probability)]
    pub confidence: f64,
    /// Seed of the bootstrap (the same seed gives the same interval).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Table for the terminal or Markdown.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// How series are paired: by name, all series of a run merged, or auto
    /// (by name, or merged when each run has one series under different names).
    #[arg(long = "match", default_value = "auto", value_parser = ["auto", "name", "all"])]
    pub matching: String,
    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
