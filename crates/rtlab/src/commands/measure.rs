//! What every `rtlab measure PROBE` command does around its probe: check
//! the shared flags, open the outputs before measuring, run the probe
//! through the runner (loads, journal, store), print the tables and pick
//! the exit code.

use super::budget;
use super::output::{create_output, rewritable, Output};
use crate::cli::RunArgs;
use crate::input::InputError;
use crate::progress::LiveStatus;
use crate::session;
use anyhow::Context;
use rtlab_core::journal;
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_core::units::human_duration;
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::{Probe, ProbeRun};
use rtlab_report::budget::{Evaluation, JsonWithBudget};
use rtlab_report::export::{write_file, JsonExporter};
use rtlab_report::probe_tables::probe_tables;
use rtlab_report::table::summary_table;
use rtlab_run::{execute, Refused, RunObserver, RunRequest};
use rtlab_store::Store;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// A finished measurement, before its exit code is decided.
pub struct Measured {
    pub result: RunResult,
    /// Where the human-readable output goes (stderr when --json - is given).
    pub human: Box<dyn Write>,
    pub stored: bool,
    /// `--json`'s path (`-` for stdout), where the result was also written.
    pub json: Option<std::path::PathBuf>,
    /// The run checked against `--budget`, when one was given.
    pub budget: Option<Evaluation>,
    /// The outputs opened before measuring, held open until the command
    /// has written them: the reader of a FIFO given as one (a named pipe
    /// to `jq`) would otherwise see the end of its input before the
    /// document, and the final write would wait for it forever.
    _held: Vec<Output>,
}

/// Runs `probe` with the shared flags of `args`; `extra_outputs` are
/// (path, flag) pairs of the command's own files, created before measuring.
pub fn measure(
    probe: Box<dyn Probe>,
    args: &RunArgs,
    extra_outputs: &[(&Path, &str)],
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
    let mut others: Vec<(&str, &Path)> = extra_outputs.iter().map(|(p, f)| (*f, *p)).collect();
    others.extend(args.json.as_deref().map(|p| ("--json", p)));
    others.extend(args.samples.as_deref().map(|p| ("--samples", p)));
    others.extend(store_path.as_deref().map(|p| ("result store (--db)", p)));
    // Two outputs in one file: the last written would silently destroy
    // the other (or the result store).
    budget::check_distinct(&others)?;
    budget::check(&args.budget, args.budget.budget.as_ref(), &others)?;
    let json_path = args.json.as_deref();
    let to_stdout = json_path == Some(Path::new("-"));
    // With --json - the table goes to stderr, so stdout is JSON only.
    let human: Box<dyn Write> = if to_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let json_file = json_path.filter(|p| *p != Path::new("-"));
    let mut outputs = Vec::new();
    for (path, what) in extra_outputs
        .iter()
        .copied()
        .chain(json_file.map(|p| (p, "--json")))
    {
        outputs.push(create_output(path, what)?);
    }
    let samples_csv: Option<Box<dyn Write + Send>> = match &args.samples {
        Some(path) => {
            let mut output = create_output(path, "--samples")?;
            let writer = output
                .writer()
                .map_err(|e| InputError(format!("--samples {}: {e}", path.display())))?;
            outputs.push(output);
            Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, writer)))
        }
        None => None,
    };
    let mut store = open_store(args)?;

    let context = rtlab_run::begin(&[session::LOAD_WORKER])?;
    let mut observer = LiveObserver {
        status: None,
        planned_ns: probe.planned_ns(),
        quiet: args.quiet,
        // Snapshots while running only into a file: a FIFO or a device
        // gets the one final document.
        json_file: json_file.filter(|p| rewritable(p)),
    };
    let request = RunRequest {
        probe,
        process: ProcessOptions {
            mlock: true,
            dma_latency_us: (!args.no_dma_latency).then_some(0),
        },
        sysctls: args.sysctl.clone(),
        loads,
        command: std::env::args().collect(),
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
    // Measured: the outputs are this run's now (a file that cannot be
    // emptied must not cost the result).
    for output in &mut outputs {
        if let Err(e) = output.keep() {
            eprintln!("warning: emptying {}: {e}", output.path().display());
        }
    }
    if let Some(status) = observer.status.take() {
        status.finish();
    }
    // The result is checked whatever its status: a partial run's figures
    // cover what it measured, and its evaluation says so.
    let evaluation = args.budget.budget.as_ref().map(|b| b.evaluate(&result));
    if let Some(path) = json_path {
        match &evaluation {
            Some(evaluation) => write_file(&JsonWithBudget(evaluation), &result, path),
            None => write_file(&JsonExporter, &result, path),
        }
        .with_context(|| format!("writing {}", path.display()))?;
    }
    match &mut store {
        // A store that cannot take the run now (disk full, file made
        // read-only) must not lose it: it is kept as a file, named in the
        // error, and the command fails.
        Some(store) => store.save_or_keep(&result)?,
        // The default store could not be opened (warned about at the
        // start): without --json the run would be nowhere.
        None if !args.no_store && json_path.is_none() => {
            match rtlab_store::keep_unsaved_in(&result, &rtlab_store::unsaved_dirs()) {
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
    if let (Some(path), Some(evaluation)) = (&args.budget.junit, &evaluation) {
        budget::write_junit(path, &budget::title(), std::slice::from_ref(evaluation))?;
    }
    Ok(Measured {
        result,
        human,
        stored: store.is_some(),
        json: json_path.map(Path::to_path_buf),
        budget: evaluation,
        _held: outputs,
    })
}

/// An explicit --db that cannot be opened is bad input; the default store
/// being unusable (no writable home) only costs the stored copy.
fn open_store(args: &RunArgs) -> anyhow::Result<Option<Store>> {
    Ok(match (args.no_store, args.store.db.as_deref()) {
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
    pub fn report(mut self, quiet: bool) -> anyhow::Result<ExitCode> {
        if !quiet {
            print_summary(&mut self.human, &self.result)?;
            if self.stored {
                writeln!(self.human, "stored as run {}", self.result.id)?;
            }
        }
        let stored = self
            .stored
            .then_some(format!("stored as run {}", self.result.id));
        let code = status_code(&self.result, &kept_where(stored, self.json.as_deref()));
        let Some(evaluation) = &self.budget else {
            return Ok(ExitCode::from(code));
        };
        if !quiet {
            write!(self.human, "{}", evaluation.report())?;
        }
        let evaluations = std::slice::from_ref(evaluation);
        Ok(ExitCode::from(budget::exit_code(code, evaluations)))
    }
}

/// Where a stopped run's partial result went, as the message on stopping
/// says it: `stored` (e.g. "stored as run ID") and `--json`'s path. With
/// --no-store it must not claim the result was kept.
pub fn kept_where(stored: Option<String>, json: Option<&Path>) -> String {
    let written = json.map(|path| match path == Path::new("-") {
        true => "written to stdout".to_string(),
        false => format!("written to {}", path.display()),
    });
    match (stored, written) {
        (Some(stored), Some(written)) => format!("the partial result was {stored} and {written}"),
        (Some(stored), None) => format!("the partial result was {stored}"),
        (None, Some(written)) => format!("the partial result was {written}; it was not stored"),
        (None, None) => "nothing was kept: the run was not stored and --json was not given".into(),
    }
}

/// The exit code of a run's status, with its message on stderr: 0
/// complete, 1 failed or stopped by --break-at, 130 stopped by a signal
/// (saying where the partial result went: `kept`, from [`kept_where`]).
pub fn status_code(result: &RunResult, kept: &str) -> u8 {
    match result.status {
        RunStatus::Failed => {
            eprintln!("error: the run failed: see the warnings above");
            1
        }
        RunStatus::Break => 1,
        RunStatus::Partial => {
            eprintln!("stopped by a signal: {kept}");
            130
        }
        _ => 0,
    }
}

/// Live status on the terminal and the --json file rewritten during the run.
struct LiveObserver<'a> {
    status: Option<LiveStatus>,
    planned_ns: u64,
    quiet: bool,
    json_file: Option<&'a Path>,
}

impl RunObserver for LiveObserver<'_> {
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
        if let Some(path) = self.json_file {
            if let Err(e) = write_file(&JsonExporter, result, path) {
                eprintln!("warning: rewriting {}: {e}", path.display());
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

#[cfg(test)]
mod tests {
    use super::kept_where;
    use std::path::Path;

    /// A stopped run says where its partial result went, and never that it
    /// was kept when it was not.
    #[test]
    fn a_stopped_run_says_where_its_result_went() {
        let stored = || Some("stored as run R".to_string());
        assert_eq!(
            kept_where(stored(), None),
            "the partial result was stored as run R"
        );
        assert_eq!(
            kept_where(stored(), Some(Path::new("r.json"))),
            "the partial result was stored as run R and written to r.json"
        );
        assert_eq!(
            kept_where(None, Some(Path::new("-"))),
            "the partial result was written to stdout; it was not stored"
        );
        assert_eq!(
            kept_where(None, None),
            "nothing was kept: the run was not stored and --json was not given"
        );
    }
}
