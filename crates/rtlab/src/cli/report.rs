//! `rtlab report`, `export` and `import`.

use super::shared::{BudgetArgs, StoreArgs};
use crate::input;
use crate::outputs::OutputTarget;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained page: inline SVG charts and CSS, nothing fetched.
    Html,
    /// The tables as GitHub Markdown.
    Md,
    /// The tables for the terminal.
    Text,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab report last -o report.html                   # charts, tables, worst case of one run
  rtlab report --campaign quick -o quick.html        # the newest execution of a campaign
  rtlab report RUN_A RUN_B                           # tables in the terminal, runs compared
  rtlab report last --format md > report.md
  rtlab report last --samples samples.csv -o r.html  # every sample on the time chart
  rtlab report --campaign quick --png charts/ --budget 'p99.9<100us,max<2ms' --junit budget.xml

Per series: a histogram (1 µs bins, log counts), the exceedance plot with the
worst-case estimate, latency against time; per report: percentiles, the loads ×
configurations matrix, the pWCET table, paper 002's % within x µs, paper 001's
max / avg ± σ, and charts overlaying every series. See docs/report.md.")]
pub struct ReportArgs {
    /// Runs: stored run ids (or unique prefixes, or `last`), or files
    /// `rtlab import` reads (rtlab JSON, cyclictest histfile or JSON).
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,

    /// Every run of the newest execution of this campaign (before the RUNs given).
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,

    /// Every run of this campaign execution (an id `rtlab runs` shows).
    #[arg(long, value_name = "ID")]
    pub execution: Option<String>,

    /// Write the report to PATH instead of stdout (replaced whole when done).
    #[arg(long, short, value_name = "PATH", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub output: Option<OutputTarget>,

    /// html, md or text [default: from the extension of -o (.html, .md), else text].
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,

    /// Also write each chart as a PNG file into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,

    /// A run's samples file (what its --samples wrote): its time charts
    /// then draw every sample. `RUN=PATH`, or `PATH` when there is one run.
    /// Repeat for several runs.
    #[arg(long, value_name = "[RUN=]PATH")]
    pub samples: Vec<String>,

    /// The report's title [default: from the campaign or the run].
    #[arg(long, value_parser = input::Label)]
    pub title: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,

    /// Print the report's tables and worst-case estimates as JSON
    /// (rtlab.report/1) on stdout; -o and --png still write their files.
    #[arg(long)]
    pub json: bool,

    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Histfile,
    Markdown,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab export last --format histfile -o hist.txt
  rtlab export 20261121T193012Z-4242 --format markdown
  rtlab export last --format csv -o runs.csv
  rtlab export last --json > run.json")]
pub struct ExportArgs {
    /// Run id, a unique prefix of one, or `last`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Output format.
    #[arg(long, value_enum, required_unless_present = "json")]
    pub format: Option<ExportFormat>,
    /// The same as `--format json`: the whole result (schema rtlab.run/1).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Output file, or `-` for stdout.
    #[arg(long, short, default_value = "-", value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub output: OutputTarget,
    /// Range of a histfile: 1 µs bins up to this latency [default: the range the run
    /// was recorded with, else 1000us].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub hist_max: Option<u64>,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab import old-cyclictest-hist.txt
  cyclictest -m -p 90 -l 100000 -h 1000 --json=ct.json && rtlab import ct.json
  rtlab import run.json --new-id     # an rtlab result whose id is already stored

Accepts cyclictest --histfile/-h output, cyclictest --json output and rtlab's
own JSON (rtlab.run/1, which keeps its id); the format is detected from the
content. A run whose id is already stored is refused (exit 2): nothing is ever
replaced. See docs/import-export.md for what each keeps.")]
pub struct ImportArgs {
    /// Store every file under a new run id (its old one is noted in its warnings).
    #[arg(long)]
    pub new_id: bool,
    /// Files to import.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the ids of the imported runs as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
