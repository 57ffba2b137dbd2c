//! `rtlab campaign plan|run` and `rtlab quick`.

use crate::cli::{BudgetArgs, CampaignPlanArgs, CampaignRunArgs, QuickArgs, StoreArgs};
use crate::input::InputError;
use crate::outputs::exit::exit_code;
use crate::outputs::{budget, OutputTarget, Outputs, Requested};
use crate::session;
use indicatif::{ProgressBar, ProgressDrawTarget};
use rtlab_campaign::runner::{self, CampaignObserver};
use rtlab_campaign::{Campaign, CampaignError, Plan, PlannedRun};
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_core::text::check_label;
use rtlab_core::units::{human_duration, Micros};
use rtlab_probe::ProbeRun;
use rtlab_report::budget::{Budget, Evaluation};
use rtlab_report::matrix::{per_probe, verdicts, Matrix};
use rtlab_run::RunObserver;
use rtlab_store::StoreError;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// Reads a campaign file or preset and expands it, with the file's budget;
/// every problem is bad input naming the file, line and field.
fn plan_of(source: &str) -> anyhow::Result<(Plan, Option<Budget>)> {
    let check_load = |spec: &str| {
        check_label("the load spec", spec).map_err(|e| e.to_string())?;
        spec.parse::<rtlab_load::LoadSpec>()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let bad = |e: CampaignError| anyhow::Error::new(InputError(e.to_string()));
    let campaign = rtlab_campaign::read(source, &check_load).map_err(bad)?;
    check_names(&campaign).map_err(bad)?;
    let budget = file_budget(&campaign).map_err(bad)?;
    let plan = rtlab_campaign::plan(campaign).map_err(bad)?;
    Ok((plan, budget))
}

/// Refuses a campaign whose name, or the name of one of its probes, loads
/// or configurations, is longer than a stored run's labels may be
/// ([`rtlab_core::text::MAX_LABEL_CHARS`]).
fn check_names(campaign: &Campaign) -> Result<(), CampaignError> {
    let named = std::iter::once(("name".to_string(), &campaign.name))
        .chain(
            campaign
                .probes
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("probe[{}].name", i + 1), &p.name)),
        )
        .chain(
            campaign
                .loads
                .iter()
                .enumerate()
                .map(|(i, l)| (format!("load[{}].name", i + 1), &l.name)),
        )
        .chain(
            campaign
                .configurations
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("configuration[{}].name", i + 1), &c.name)),
        );
    for (field, name) in named {
        check_label("the name", name).map_err(|e| CampaignError {
            origin: campaign.origin.clone(),
            position: None,
            field: Some(field),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// The campaign file's `budget`, parsed; a bad clause is reported at its
/// place in the file, as every other error in it.
fn file_budget(campaign: &Campaign) -> Result<Option<Budget>, CampaignError> {
    let Some(text) = &campaign.budget else {
        return Ok(None);
    };
    Budget::parse(&text.text)
        .map(Some)
        .map_err(|e| CampaignError {
            origin: campaign.origin.clone(),
            position: Some(text.position_of(e.offset)),
            field: Some("budget".into()),
            message: e.to_string(),
        })
}

/// The budget a campaign runs with: `--budget` replaces the file's.
fn budget_of(args: &BudgetArgs, from_file: Option<Budget>, quiet: bool) -> Option<Budget> {
    match (&args.budget, from_file) {
        (Some(flag), Some(file)) => {
            if !quiet && flag != &file {
                eprintln!("note: --budget \"{flag}\" replaces the campaign's budget \"{file}\"");
            }
            Some(flag.clone())
        }
        (Some(flag), None) => Some(flag.clone()),
        (None, file) => file,
    }
}

pub fn plan(args: CampaignPlanArgs) -> anyhow::Result<ExitCode> {
    let (plan, _) = plan_of(&args.source)?;
    match args.json.as_ref() {
        Some(json) => {
            // A path that cannot be written is bad input (exit 2), as
            // for every other command's --json.
            let outputs = Outputs::open(Requested {
                json: Some(json),
                ..Requested::default()
            })?;
            outputs.write_json(&plan)?;
        }
        None => {
            print!("{}", plan.table());
            for warning in &plan.warnings {
                eprintln!("warning: {warning}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: CampaignRunArgs) -> anyhow::Result<ExitCode> {
    let (plan, from_file) = plan_of(&args.source)?;
    run_plan(
        plan,
        from_file,
        (&args.store, args.json.as_ref(), &args.budget),
        args.quiet,
        false,
    )
}

pub fn quick(args: QuickArgs) -> anyhow::Result<ExitCode> {
    let (plan, from_file) = plan_of("quick")?;
    run_plan(
        plan,
        from_file,
        (&args.store, args.json.as_ref(), &args.budget),
        args.quiet,
        true,
    )
}

/// Runs `plan` with its file's budget (`from_file`) and the outputs of the
/// command line; `verdict` prints the plan's verdict after its tables.
fn run_plan(
    plan: Plan,
    from_file: Option<Budget>,
    (store_args, json, budget_args): (&StoreArgs, Option<&OutputTarget>, &BudgetArgs),
    quiet: bool,
    verdict: bool,
) -> anyhow::Result<ExitCode> {
    let budget = budget_of(budget_args, from_file, quiet);
    let db = store_args.db.as_deref();
    let default_db = rtlab_store::Store::default_path().ok();
    // Opened, not emptied: a campaign refused before its first run leaves
    // a result file that was there as it was (and removes one it created).
    let outputs = Outputs::open(Requested {
        json,
        store: db.or(default_db.as_deref()),
        budget: budget.as_ref(),
        junit: budget_args.junit.as_ref(),
        ..Requested::default()
    })?;
    let mut store = session::open_store(db)?;
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    let context = rtlab_run::begin(&[session::LOAD_WORKER])?;
    if !quiet {
        eprintln!(
            "campaign {}: {} runs, about {}; results go to {}",
            plan.campaign.name,
            plan.runs.len(),
            human_duration(plan.eta_ns()),
            store.path().display()
        );
    }
    let mut observer = Progress::new(&plan, quiet, &outputs);
    let command = session::recorded_command();
    let outcome = runner::run_campaign(&plan, &context, &mut store, &command, &mut observer);
    // Runs kept while a PostgreSQL store could not be reached go in now if it can.
    session::push_kept(&mut store);
    // Those still not in the store make the campaign fail (exit 1): its
    // results are not where a fleet looks for them (yet).
    let unstored: Vec<String> = observer
        .kept
        .iter()
        .filter(|id| !store.contains(id).unwrap_or(false))
        .cloned()
        .collect();
    let outcome = outcome?;
    observer.finish();

    let matrices = per_probe(&outcome.results);
    // The verdict compares configurations of one probe; with several probe
    // kinds (whose figures mean different things) there is none here (the
    // report shows one per kind).
    let verdict_text = match verdicts(&outcome.results).as_slice() {
        [(_, verdict)] => verdict.clone(),
        _ => String::new(),
    };
    let evaluations = outputs.evaluate(&outcome.results);
    let doc = || {
        Ok(campaign_json(
            &plan,
            &outcome.execution,
            &outcome.results,
            Some(&verdict_text),
            outputs.budget_json(&evaluations),
        ))
    };
    let title = junit_title(&plan.campaign.name, &outcome.execution);
    outputs.finish(doc, &title, &evaluations)?;
    let mut out = outputs.human();
    if !quiet {
        for (probe, matrix) in &matrices {
            writeln!(out)?;
            if matrices.len() > 1 {
                writeln!(out, "probe {probe}:")?;
            }
            write!(out, "{}", matrix.table())?;
        }
        if verdict && !verdict_text.is_empty() {
            writeln!(out)?;
            write!(out, "{verdict_text}")?;
        }
        write!(out, "{}", budget::summary_text(&evaluations))?;
        let db_flag = db_flag(db, &store);
        writeln!(
            out,
            "{} runs stored (campaign execution {}); see `rtlab runs{db_flag} --execution {}`,\n\
             charts and tables: `rtlab report{db_flag} --execution {} -o report.html`",
            outcome.results.len(),
            outcome.execution,
            outcome.execution,
            outcome.execution
        )?;
    }
    let code = if outcome.interrupted {
        eprintln!("stopped by a signal: the runs so far were stored, the current one as partial");
        130
    } else if outcome
        .results
        .iter()
        .any(|r| r.status == RunStatus::Failed)
    {
        // Name them, with the store they are in: `rtlab show RUN` alone
        // looked in the default store, not the --db the campaign used.
        let failed: Vec<&str> = outcome
            .results
            .iter()
            .filter(|r| r.status == RunStatus::Failed)
            .map(|r| r.id.as_str())
            .collect();
        let db_flag = db_flag(db, &store);
        let message = format!(
            "error: {} of {} runs failed ({}): see `rtlab show{db_flag} {}` for why",
            failed.len(),
            outcome.results.len(),
            failed.join(", "),
            failed[0]
        );
        eprintln!("{}", rtlab_core::result::terminal_text(&message));
        1
    } else if !unstored.is_empty() {
        let message = format!(
            "error: {} of {} runs are not in {} yet, only kept as files ({}): store them with \
             `rtlab store push{}` once it can be reached",
            unstored.len(),
            outcome.results.len(),
            store.path().display(),
            unstored.join(", "),
            db_flag(db, &store)
        );
        eprintln!("{}", rtlab_core::result::terminal_text(&message));
        1
    } else {
        0
    };
    Ok(ExitCode::from(exit_code(code, &evaluations)))
}

/// ` --db STORE` for the commands a campaign suggests, when the store was
/// given (by --db or RTLAB_DB): the store as shown, a URL without its
/// password (this goes to terminals and CI logs).
fn db_flag(db: Option<&Path>, store: &rtlab_store::Store) -> String {
    db.map_or_else(String::new, |_| {
        format!(" --db {}", shell_word(store.path()))
    })
}

/// A path as one shell word, quoted when it needs to be.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The JUnit report's name: `rtlab campaign quick (execution ID)`.
fn junit_title(name: &str, execution: &str) -> String {
    format!("rtlab campaign {name} (execution {execution})")
}

/// The `--json` document, `rtlab.campaign/1`.
fn campaign_json(
    plan: &Plan,
    execution: &str,
    results: &[RunResult],
    verdict: Option<&str>,
    budget: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "schema": "rtlab.campaign/1",
        "name": plan.campaign.name,
        "origin": plan.campaign.origin,
        "execution": execution,
        "planned_runs": plan.runs.len(),
        "matrix": single_matrix(results),
        "matrices": matrices_json(results),
        "verdict": verdict,
        "budget": budget,
        "runs": results,
    })
}

/// The campaign JSON's `matrix`: the matrix when every run is of one probe
/// kind, null otherwise (see `matrices`).
fn single_matrix(results: &[RunResult]) -> serde_json::Value {
    match per_probe(results).as_slice() {
        [(_, matrix)] => serde_json::json!(matrix),
        [] => serde_json::json!(Matrix::of(results)),
        _ => serde_json::Value::Null,
    }
}

/// The campaign JSON's `matrices`: `[{"probe": KIND, "matrix": …}]`.
fn matrices_json(results: &[RunResult]) -> serde_json::Value {
    per_probe(results)
        .into_iter()
        .map(|(probe, matrix)| serde_json::json!({ "probe": probe, "matrix": matrix }))
        .collect()
}

/// The progress bar (on a terminal) or one line per run (otherwise), and
/// the outputs rewritten after every run.
struct Progress<'a> {
    bar: Option<ProgressBar>,
    quiet: bool,
    current: String,
    done_ns: u64,
    eta_ns: u64,
    /// The --json file (a snapshot after every run), the budget every run
    /// is checked on as it is stored, the --junit file rewritten with it.
    outputs: &'a Outputs,
    plan_name: String,
    /// The plan has several probes: name the probe in each run's line.
    several_probes: bool,
    results: Vec<RunResult>,
    /// The runs kept as files because the store could not be reached.
    kept: Vec<String>,
    /// The index of the current run in the plan.
    run_index: usize,
    /// Warnings of the current run already printed while it measured.
    printed: Vec<String>,
}

impl<'a> Progress<'a> {
    /// `load × configuration`, after `probe / ` when the plan has several.
    fn cell(&self, planned: &PlannedRun) -> String {
        let cell = format!("{} × {}", planned.load.name, planned.configuration.name);
        match self.several_probes {
            true => format!("{} / {cell}", planned.probe.name),
            false => cell,
        }
    }

    fn new(plan: &Plan, quiet: bool, outputs: &'a Outputs) -> Progress<'a> {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(plan.eta_ns() / 1_000_000),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            bar.set_style(crate::progress::bar_style());
            bar
        });
        Progress {
            bar,
            quiet,
            current: String::new(),
            done_ns: 0,
            eta_ns: plan.eta_ns(),
            outputs,
            plan_name: plan.campaign.name.clone(),
            several_probes: plan.campaign.probes.len() > 1,
            results: Vec::new(),
            kept: Vec::new(),
            run_index: 0,
            printed: Vec::new(),
        }
    }

    /// `warning: run N: …`, above the bar when there is one (a plain line
    /// would be erased by its next redraw).
    fn print_warning(&self, index: usize, warning: &str) {
        let text = format!("warning: run {index}: {warning}");
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl RunObserver for Progress<'_> {
    /// The warnings known when the probe starts, and each one found while
    /// it measures, are printed then, and not again with the others when
    /// the run is stored.
    fn started(&mut self, result: &RunResult, _run: &dyn ProbeRun) {
        for warning in &result.warnings {
            self.warning(warning);
        }
    }

    fn warning(&mut self, warning: &str) {
        self.print_warning(self.run_index, warning);
        self.printed.push(warning.to_string());
    }

    fn tick(&mut self, run: &dyn ProbeRun) {
        if let Some(bar) = &self.bar {
            let live = run.live();
            let worst = live.iter().map(|s| s.max_ns).max().unwrap_or(0);
            bar.set_position((self.done_ns + run.elapsed_ns()) / 1_000_000);
            bar.set_message(format!("{}  max so far {} µs", self.current, Micros(worst)));
        }
    }
}

impl CampaignObserver for Progress<'_> {
    fn run_kept(&mut self, planned: &PlannedRun, result: &RunResult, kept: &StoreError) {
        let why = kept.to_string();
        let why = rtlab_core::result::terminal_text(&why);
        self.print_warning(planned.index, &format!("{why}; the campaign goes on"));
        self.kept.push(result.id.clone());
        // Kept counts as done: it is in the campaign's results and files.
        self.run_stored(planned, result);
    }

    fn run_starting(&mut self, planned: &PlannedRun, total: usize, remaining_ns: u64) {
        self.current = format!("run {}/{total}: {}", planned.index, self.cell(planned));
        self.run_index = planned.index;
        self.printed.clear();
        self.done_ns = self.eta_ns.saturating_sub(remaining_ns);
        match &self.bar {
            Some(bar) => bar.set_message(self.current.clone()),
            None if !self.quiet => eprintln!("{} ...", self.current),
            None => {}
        }
    }

    fn run_stored(&mut self, planned: &PlannedRun, result: &RunResult) {
        let worst_max = result
            .series
            .iter()
            .map(|s| s.stats.max_ns)
            .max()
            .unwrap_or(0);
        let worst_p999 = result
            .series
            .iter()
            .map(|s| s.stats.percentiles_ns.p99_9)
            .max()
            .unwrap_or(0);
        let status = serde_json::to_value(result.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let line = format!(
            "run {}: {}: {status}, p99.9 {} µs, max {} µs ({}){}",
            planned.index,
            self.cell(planned),
            Micros(worst_p999),
            Micros(worst_max),
            result.id,
            self.outputs.budget().map_or(String::new(), |b| format!(
                "; {}",
                run_verdict(&b.evaluate(result))
            ))
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
        let mut printed = std::mem::take(&mut self.printed);
        for warning in &result.warnings {
            match printed.iter().position(|p| p == warning) {
                Some(i) => {
                    printed.swap_remove(i);
                }
                None => self.print_warning(planned.index, warning),
            }
        }
        self.results.push(result.clone());
        let execution = result
            .campaign
            .as_ref()
            .map(|c| c.execution.clone())
            .unwrap_or_default();
        let evaluations = self.outputs.evaluate(&self.results);
        let title = junit_title(&self.plan_name, &execution);
        if let Err(e) = self.outputs.write_junit(&title, &evaluations) {
            eprintln!("warning: {e:#}");
        }
        // Snapshots only into a file: a FIFO or a device gets the last.
        if self.outputs.snapshot_target().is_some() {
            let doc = serde_json::json!({
                "schema": "rtlab.campaign/1",
                "name": self.plan_name,
                "execution": execution,
                "matrix": single_matrix(&self.results),
                "matrices": matrices_json(&self.results),
                "verdict": null,
                "budget": self.outputs.budget_json(&evaluations),
                "runs": self.results,
            });
            if let Err(e) = self.outputs.snapshot_json(&doc) {
                eprintln!("warning: {e:#}");
            }
        }
    }
}

/// A run's budget in its progress line: the checks that found something
/// to check; a clause that found nothing may apply to other runs, which
/// the end of the campaign decides.
fn run_verdict(e: &Evaluation) -> String {
    let checked: Vec<_> = e.checks.iter().filter(|c| c.matched).collect();
    let failed = checked
        .iter()
        .filter(|c| c.outcome == rtlab_report::budget::Outcome::Fail)
        .count();
    let unmatched = match e.checks.len() - checked.len() {
        0 => String::new(),
        n => format!(", {n} found nothing to check"),
    };
    match failed {
        0 => format!("budget kept ({} checks{unmatched})", checked.len()),
        n => format!(
            "budget NOT kept ({n} of {} checks failed{unmatched})",
            checked.len()
        ),
    }
}
