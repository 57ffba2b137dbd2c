//! Argument groups several commands share: the run's loads, settings and
//! outputs, the budget, the result store; and their value parsers.

use crate::input;
use crate::outputs::OutputTarget;
use clap::Args;
use rtlab_core::sched::Policy;
use rtlab_probe::witness::WitnessSettings;
use rtlab_report::budget::Budget;
use std::path::PathBuf;

/// What every measuring command shares: loads, system settings, outputs.
#[derive(Args)]
pub struct RunArgs {
    /// Run loads beside the measurement, e.g. `vm,io` or `cpu:workers=4` (see `rtlab load --help`).
    #[arg(long, value_name = "LOADS", value_parser = input::Label)]
    pub load: Option<String>,

    /// Do not hold /dev/cpu_dma_latency at 0 during the run.
    #[arg(long)]
    pub no_dma_latency: bool,

    /// Set a sysctl for the run and restore it afterwards (repeatable),
    /// e.g. kernel.sched_rt_runtime_us=-1.
    #[arg(long, value_name = "KEY=VALUE")]
    pub sysctl: Vec<String>,

    /// Write the result as JSON (schema rtlab.run/1) to PATH, or `-` for stdout.
    /// A file is rewritten every 2 s during the run, so an interrupted run still leaves a valid one.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,

    /// Write every sample as CSV (timer: cpu,t_ns,latency_ns; switch:
    /// series,t_ns,latency_ns; noise: cpu,start_ns,duration_ns,source; net:
    /// index,t_ns,send_lag_ns,response_ns,response_from_send_ns,lost).
    #[arg(long, value_name = "PATH", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub samples: Option<OutputTarget>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// Do not keep the result in the database.
    #[arg(long)]
    pub no_store: bool,

    /// No live status and no table (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,

    #[command(flatten)]
    pub budget: BudgetArgs,

    #[command(flatten)]
    pub witness: WitnessArgs,
}

/// The witness beside a run: what the host did on the measured CPUs, to
/// explain each series' top spikes (docs/runs.md, "Spikes explained").
#[derive(Args, Clone, Default)]
pub struct WitnessArgs {
    /// Run without the witness that explains the top spikes (interrupts,
    /// softirqs, threads and steal time on the measured CPUs).
    #[arg(long)]
    pub no_witness: bool,

    /// How often the witness reads the host's counters (5ms to 1s; default 50ms).
    #[arg(long, value_name = "DURATION", value_parser = input::positive_duration, conflicts_with = "no_witness")]
    pub witness_period: Option<u64>,

    /// Witness only in even seconds of the run, to measure its own cost in
    /// one run (bench/witness-cost.sh).
    #[arg(long, conflicts_with = "no_witness")]
    pub witness_alternate: bool,
}

impl WitnessArgs {
    /// The engine's witness settings (None: no witness), checked by their
    /// one judge; a bad value names its flag.
    pub fn settings(&self) -> Result<Option<WitnessSettings>, input::InputError> {
        if self.no_witness {
            return Ok(None);
        }
        let defaults = WitnessSettings::default();
        let settings = WitnessSettings {
            period_ns: self.witness_period.unwrap_or(defaults.period_ns),
            alternate: self.witness_alternate,
            ..defaults
        };
        settings
            .validate()
            .map_err(|e| input::InputError(e.render(rtlab_core::settings::flag)))?;
        Ok(Some(settings))
    }
}

/// Limits a run must keep, checked when it ends (docs/budgets.md).
#[derive(Args, Clone, Default)]
pub struct BudgetArgs {
    /// Limits every run must keep, e.g. `p99.9<100us,max<2ms,missed=0` or
    /// `cpu*:p99<50us`: exit code 1 when one is not kept (docs/budgets.md).
    #[arg(long, value_name = "SPEC", value_parser = parse_budget)]
    pub budget: Option<Budget>,

    /// Write the budget's checks as JUnit XML (one testsuite per run, one
    /// testcase per series and clause) for CI.
    #[arg(long, value_name = "PATH", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub junit: Option<OutputTarget>,
}

/// Where results are kept: a file, or a PostgreSQL database shared by
/// many hosts (parsed by `session::store_location`; docs/store.md).
#[derive(Args)]
pub struct StoreArgs {
    /// The result database: an SQLite file, or a PostgreSQL URL
    /// (postgresql://user@host/db, postgresql://user@%2Frun%2Fpostgresql/db
    /// for a local socket) [default: $RTLAB_DB, else
    /// $XDG_DATA_HOME/rtlab/results.db].
    // The variable's value is never shown in --help: it may hold a password.
    #[arg(long, value_name = "PATH|URL", env = "RTLAB_DB", hide_env = true)]
    pub db: Option<PathBuf>,
}

pub(super) fn parse_budget(s: &str) -> Result<Budget, String> {
    s.parse()
        .map_err(|e: rtlab_report::budget::BudgetError| e.to_string())
}

pub(super) fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}

/// The arguments of one command, as clap reads them: for the tests that
/// the defaults written as text for `--help` are the lower crates' own.
#[cfg(test)]
pub(crate) fn parse_args<T: Args + clap::FromArgMatches>(args: &[&str]) -> T {
    let command = T::augment_args(clap::Command::new("rtlab"));
    let matches = command
        .try_get_matches_from([&["rtlab"], args].concat())
        .unwrap();
    T::from_arg_matches(&matches).unwrap()
}

/// The help of a `--priority` whose default is the probes' default priority
/// ([`rtlab_probe::DEFAULT_PRIORITY`]), shown as clap shows a default.
pub(super) fn with_default_priority(what: &str) -> String {
    format!("{what} [default: {}]", rtlab_probe::DEFAULT_PRIORITY)
}
