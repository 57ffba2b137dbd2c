//! What every `rtlab measure PROBE` command does around its probe: check
//! the shared flags, open the outputs before measuring, run the probe
//! through the runner (loads, journal, store), print the tables and pick
//! the exit code.

use crate::cli::RunArgs;
use crate::input::InputError;
use crate::outputs::exit::{exit_code, kept_where, status_code};
use crate::outputs::{OutputTarget, Outputs, Requested, ResultFile};
use crate::progress::LiveStatus;
use crate::session;
use rtlab_core::journal;
use rtlab_core::result::RunResult;
use rtlab_core::units::human_duration;
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::{Probe, ProbeRun};
use rtlab_report::budget::Evaluation;
use rtlab_report::export::{Exporter, JsonExporter};
use rtlab_report::probe_summary::probe_tables;
use rtlab_report::run_summary::summary_table;
use rtlab_run::{execute, Refused, RunObserver, RunRequest};
use rtlab_store::Store;
use std::io::Write;
use std::process::ExitCode;

/// A finished measurement, before its exit code is decided.
pub struct Measured {
    pub result: RunResult,
    pub stored: bool,
    /// The run checked against `--budget`, when one was given.
    pub budget: Option<Evaluation>,
    /// The outputs, `--json` among them, held open until the command has
    /// written them (see [`Outputs`]).
    pub outputs: Outputs,
}

/// Runs `probe` with the shared flags of `args`; `files` are the command's
/// own files (`--histfile`), checked and created before measuring and
/// written from the result after the others (see [`Outputs::finish_run`]).
pub fn measure(
    probe: Box<dyn Probe>,
    args: &RunArgs,
    files: &[ResultFile],
) -> anyhow::Result<Measured> {
    // One value per sysctl: `--sysctl k=0 --sysctl k=1` ran with one of
    // them, silently.
    let mut given: Vec<(std::path::PathBuf, String, &str)> = Vec::new();
    for assignment in &args.sysctl {
        let (path, value) =
            journal::parse_sysctl(assignment).map_err(|e| InputError(format!("--sysctl: {e}")))?;
        if let Some((_, _, first)) = given.iter().find(|(p, v, _)| *p == path && *v != value) {
            return Err(InputError(format!(
                "--sysctl: {} is given twice, as {first} and as {assignment}: give it once",
                path.display()
            ))
            .into());
        }
        given.push((path, value, assignment));
    }
    let witness = args.witness.settings()?;
    let loads = match &args.load {
        Some(list) => {
            rtlab_load::parse_list(list).map_err(|e| InputError(format!("--load: {e}")))?
        }
        None => Vec::new(),
    };
    let store_path = match &args.store.db {
        Some(db) => Some(db.clone()),
        None => rtlab_store::Store::default_path().ok(),
    };
    let mut outputs = Outputs::open(Requested {
        json: args.json.as_ref(),
        samples: args.samples.as_ref(),
        files: files.to_vec(),
        store: store_path.as_deref(),
        budget: args.budget.budget.as_ref(),
        junit: args.budget.junit.as_ref(),
    })?;
    let samples_csv = outputs.take_samples();
    let mut store = open_store(args)?;

    let mut context = rtlab_run::begin(&[session::LOAD_WORKER])?;
    context.witness = witness;
    let mut observer = LiveObserver {
        status: None,
        planned_ns: probe.planned_ns(),
        quiet: args.quiet,
        json_file: outputs.snapshot_target(),
    };
    let request = RunRequest {
        probe,
        process: ProcessOptions {
            mlock: true,
            dma_latency_us: (!args.no_dma_latency).then_some(0),
        },
        sysctls: args.sysctl.clone(),
        loads,
        command: session::recorded_command(),
        campaign: None,
        samples_csv,
    };
    // A setting that cannot be applied refuses the run before it measures.
    let result =
        execute(request, &context, &mut observer).map_err(|e| match e.downcast::<Refused>() {
            Ok(refused) => {
                anyhow::Error::new(InputError(format!("{refused}; nothing was measured")))
            }
            Err(e) => e,
        })?;
    outputs.measured();
    if let Some(status) = observer.status.take() {
        status.finish();
    }
    // The result is checked whatever its status: a partial run's figures
    // cover what it measured, and its evaluation says so.
    let evaluation = args.budget.budget.as_ref().map(|b| b.evaluate(&result));
    outputs.finish_run(&result, evaluation.as_ref(), || {
        save(
            &mut store,
            &result,
            args.no_store || outputs.json().is_some(),
        )
    })?;
    Ok(Measured {
        result,
        stored: store.is_some(),
        budget: evaluation,
        outputs,
    })
}

/// Saves `result` in the store. A store that cannot take the run now
/// (disk full, file made read-only) must not lose it: it is kept as a
/// file, named in the error, and the command fails. Without a store (the
/// default one could not be opened, warned about at the start) the run is
/// kept as a file unless `no_file` (--no-store asked for none, or --json
/// has the run: without either it would be nowhere).
pub(super) fn save(
    store: &mut Option<Store>,
    result: &RunResult,
    no_file: bool,
) -> anyhow::Result<()> {
    match store {
        Some(store) => store.save_or_keep(result)?,
        None if !no_file => {
            match rtlab_store::keep_unsaved_in(result, &rtlab_store::unsaved_dirs()) {
                Ok(kept) => eprintln!(
                    "the run was kept in {kept}: store it with `rtlab import {}`",
                    kept.file.display()
                ),
                Err(e) => eprintln!(
                    "warning: the run could not be kept in a file either ({e}): it is lost"
                ),
            }
        }
        None => {}
    }
    Ok(())
}

/// An explicit --db that cannot be opened is bad input; the default store
/// being unusable (no writable home) only costs the stored copy.
fn open_store(args: &RunArgs) -> anyhow::Result<Option<Store>> {
    open_run_store(args.no_store, args.store.db.as_deref())
}

/// The store runs are saved to: none with `--no-store`, the one `--db`
/// names (bad input when it cannot be opened), else the default one (a
/// warning when it cannot be: the runs are then kept as files).
pub(super) fn open_run_store(
    no_store: bool,
    db: Option<&std::path::Path>,
) -> anyhow::Result<Option<Store>> {
    Ok(match (no_store, db) {
        (true, _) => None,
        (false, Some(db)) => Some(session::open_store(Some(db))?),
        (false, None) => match session::open_store(None) {
            Ok(store) => Some(store),
            Err(e) => {
                eprintln!("warning: the run will not be stored: {e:#}");
                None
            }
        },
    })
}

impl Measured {
    /// Prints the tables (unless quiet) and the budget's checks, and
    /// returns the exit code: the run's status (0 complete, 1 failed, 130
    /// stopped by a signal), then 1 for a budget not kept if that was 0.
    pub fn report(self, quiet: bool) -> anyhow::Result<ExitCode> {
        // Stderr when --json - is given.
        let mut human = self.outputs.human();
        if !quiet {
            print_summary(&mut human, &self.result)?;
            if self.stored {
                writeln!(human, "stored as run {}", self.result.id)?;
            }
        }
        let stored = self
            .stored
            .then_some(format!("stored as run {}", self.result.id));
        let code = status_code(&self.result, &kept_where(stored, self.outputs.json()));
        let Some(evaluation) = &self.budget else {
            return Ok(ExitCode::from(code));
        };
        if !quiet {
            write!(human, "{}", evaluation.report())?;
        }
        let evaluations = std::slice::from_ref(evaluation);
        Ok(ExitCode::from(exit_code(code, evaluations)))
    }
}

/// Live status on the terminal and the --json file rewritten during the run.
struct LiveObserver {
    status: Option<LiveStatus>,
    planned_ns: u64,
    quiet: bool,
    /// The --json file, rewritten at every checkpoint.
    json_file: Option<OutputTarget>,
}

impl RunObserver for LiveObserver {
    fn started(&mut self, result: &RunResult, run: &dyn ProbeRun) {
        for warning in &result.warnings {
            eprintln!("warning: {warning}");
        }
        self.checkpoint(result);
        self.status = LiveStatus::new(&run.series_names(), self.planned_ns, self.quiet);
    }

    fn warning(&mut self, warning: &str) {
        match &self.status {
            Some(status) => status.println(&format!("warning: {warning}")),
            None => eprintln!("warning: {warning}"),
        }
    }

    fn tick(&mut self, run: &dyn ProbeRun) {
        if let Some(status) = &self.status {
            status.update(&run.series_names(), &run.live(), run.elapsed_ns());
        }
    }

    fn checkpoint(&mut self, result: &RunResult) {
        if let Some(target) = &self.json_file {
            if let Err(e) = target.write_with(|out| JsonExporter.write(result, out)) {
                eprintln!("warning: rewriting {target}: {e}");
            }
        }
    }
}

/// The summary table, the probe's own tables, what was in effect, the
/// loads and the warnings.
pub fn print_summary(out: &mut dyn Write, result: &RunResult) -> std::io::Result<()> {
    writeln!(out)?;
    write!(out, "{}", summary_table(result))?;
    write!(out, "{}", probe_tables(result))?;
    let sched = result
        .series
        .first()
        .and_then(|s| s.thread.actual)
        .map_or_else(|| "unknown".to_string(), |p| p.to_string());
    writeln!(
        out,
        "status {}, {} measured, policy in effect: {sched}, mlockall {}, cpu_dma_latency {}",
        serde_json::to_value(result.status)?.as_str().unwrap_or("?"),
        human_duration(result.elapsed_ns),
        if result.effective.mlockall {
            "on"
        } else {
            "OFF"
        },
        result
            .effective
            .dma_latency_us
            .map_or_else(|| "not held".to_string(), |v| format!("{v} us")),
    )?;
    for load in &result.loads {
        let work: Vec<String> = load
            .work
            .iter()
            .map(|(name, value)| format!("{name} {}", rtlab_load::counter_text(name, *value)))
            .collect();
        writeln!(out, "under load {}: {}", load.spec, work.join(", "))?;
        for note in &load.notes {
            writeln!(out, "  {note}")?;
        }
    }
    for warning in &result.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}
