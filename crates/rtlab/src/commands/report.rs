//! `rtlab report`: stored runs or a campaign as an HTML page, Markdown or
//! terminal tables, charts as PNG, and an optional budget.
//!
//! Every input is read and checked before any work, and every output is
//! written whole at the end, so bad input costs nothing and leaves nothing.

use crate::cli::{ReportArgs, ReportFormat};
use crate::input::{bad_input, InputError};
use crate::outputs::budget;
use crate::outputs::checks::{check_junit, same_file, Named};
use crate::outputs::exit::exit_code;
use crate::outputs::file::check_writable;
use crate::outputs::OutputTarget;
use crate::session;
use crate::terminal::{out, put};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rtlab_core::result::RunResult;
use rtlab_report::export::write_with;
use rtlab_report::report::samples::SampleFile;
use rtlab_report::report::{png, Report, ReportOptions, RunSamples};
use rtlab_store::{RunFilter, Store};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn input_error(message: String) -> anyhow::Error {
    anyhow::Error::new(InputError(message))
}

/// The file of `-o`; `-o -` is stdout, as without -o.
fn output_file(args: &ReportArgs) -> Option<&Path> {
    args.output.as_ref().and_then(OutputTarget::file)
}

/// The format: `--format`, else the extension of `-o`, else text.
fn format_of(args: &ReportArgs) -> ReportFormat {
    if let Some(format) = args.format {
        return format;
    }
    let extension = output_file(args)
        .and_then(Path::extension)
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("html" | "htm") => ReportFormat::Html,
        Some("md" | "markdown") => ReportFormat::Md,
        _ => ReportFormat::Text,
    }
}

/// The runs of a campaign execution: the one given, or the newest of the
/// campaign named.
/// The result store, opened only when a run or campaign is to be read from
/// it: reporting on files alone creates no database.
struct LazyStore {
    db: Option<PathBuf>,
    store: Option<Store>,
}

impl LazyStore {
    fn get(&mut self) -> anyhow::Result<&Store> {
        if self.store.is_none() {
            self.store = Some(session::open_store_read_only(self.db.as_deref())?);
        }
        Ok(self.store.as_ref().expect("opened above"))
    }
}

fn campaign_runs(store: &mut LazyStore, args: &ReportArgs) -> anyhow::Result<Vec<RunResult>> {
    let execution = match (&args.execution, &args.campaign) {
        (Some(execution), _) => execution.clone(),
        (None, Some(name)) => {
            let store = store.get()?;
            let newest = store.list(&RunFilter {
                campaign: Some(name.clone()),
                limit: Some(1),
                ..RunFilter::default()
            })?;
            match newest.first().and_then(|run| run.execution.clone()) {
                Some(execution) => execution,
                None => bad_input!(
                    "--campaign {name}: no run of this campaign in {} (see `rtlab runs`)",
                    store.path().display()
                ),
            }
        }
        (None, None) => return Ok(Vec::new()),
    };
    let store = store.get()?;
    let runs = store.campaign_runs(&execution)?;
    if runs.is_empty() {
        bad_input!(
            "--execution {execution}: no run of this execution in {} (see `rtlab runs`)",
            store.path().display()
        );
    }
    if let Some(name) = &args.campaign {
        if let Some(other) = runs
            .iter()
            .filter_map(|r| r.campaign.as_ref())
            .find(|c| c.name != *name)
        {
            bad_input!(
                "--execution {execution} is a run of campaign `{}`, not `{name}`",
                other.name
            );
        }
    }
    Ok(runs)
}

fn load_runs(store: &mut LazyStore, args: &ReportArgs) -> anyhow::Result<Vec<RunResult>> {
    let mut runs = campaign_runs(store, args)?;
    for id in &args.runs {
        let path = Path::new(id);
        // A file is read as `rtlab import` reads it, without storing it.
        let run = if path.is_file() {
            rtlab_report::import::import_file(path).map_err(|e| input_error(e.to_string()))?
        } else {
            store
                .get()?
                .get(id)
                .map_err(|e| input_error(e.to_string()))?
        };
        runs.push(run);
    }
    let mut seen = std::collections::HashSet::new();
    runs.retain(|r| seen.insert(r.id.clone()));
    if runs.is_empty() {
        bad_input!("give the runs to report on: RUN… (ids, `last` or files) or --campaign NAME");
    }
    Ok(runs)
}

/// `--samples [RUN=]PATH`, each read now: a bad file is bad input before
/// any work.
fn load_samples(
    store: &mut LazyStore,
    args: &ReportArgs,
    runs: &[RunResult],
) -> anyhow::Result<BTreeMap<String, RunSamples>> {
    let mut out = BTreeMap::new();
    for spec in &args.samples {
        let (run, path) = match spec.split_once('=') {
            Some((run, path)) if !Path::new(spec).exists() => (Some(run), path),
            _ => (None, spec.as_str()),
        };
        let result = match run {
            Some(run) => {
                let id = match runs.iter().find(|r| r.id == run) {
                    Some(r) => r.id.clone(),
                    None => store.get()?.resolve(run).unwrap_or_else(|_| run.to_string()),
                };
                runs.iter().find(|r| r.id == id).ok_or_else(|| {
                    input_error(format!(
                        "--samples {spec}: run `{run}` is not one of the runs reported"
                    ))
                })?
            }
            None => match runs {
                [only] => only,
                _ => bad_input!(
                    "--samples {spec}: {} runs are reported: say whose samples these are as RUN=PATH",
                    runs.len()
                ),
            },
        };
        let names: Vec<String> = result.series.iter().map(|s| s.name.clone()).collect();
        let samples = SampleFile::read(Path::new(path), &names)
            .map_err(|e| input_error(format!("--samples {e}")))?;
        check_samples_match(spec, result, &samples)?;
        if out
            .insert(
                result.id.clone(),
                RunSamples {
                    path: path.to_string(),
                    samples,
                },
            )
            .is_some()
        {
            bad_input!(
                "--samples {spec}: run {} has a samples file already",
                result.id
            );
        }
    }
    Ok(out)
}

/// A samples file must be the run's own: it has exactly the run's series
/// that recorded samples, each with as many samples, and the same maximum,
/// as the run recorded.
fn check_samples_match(spec: &str, run: &RunResult, file: &SampleFile) -> anyhow::Result<()> {
    for name in file.series.keys() {
        if !run.series.iter().any(|s| s.name == *name) {
            bad_input!(
                "--samples {spec}: series {name} is not in run {} (its series: {})",
                run.id,
                run.series
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    for series in run.series.iter().filter(|s| s.stats.samples > 0) {
        let points = file.series.get(&series.name).map_or(&[][..], Vec::as_slice);
        let values = points.iter().filter_map(|p| p.1);
        let count = values.clone().count() as u64;
        let max = values.max().unwrap_or(0);
        if count != series.stats.samples || max != series.stats.max_ns {
            bad_input!(
                "--samples {spec}: not the samples of run {}: series {} has {count} samples \
                 (max {max} ns) in the file and {} (max {} ns) in the run",
                run.id,
                series.name,
                series.stats.samples,
                series.stats.max_ns
            );
        }
    }
    Ok(())
}

/// Fails as bad input when no file can be created in `dir` (or, when it
/// does not exist yet, in its parent), without leaving anything there.
fn check_dir_writable(dir: &Path, flag: &str) -> anyhow::Result<()> {
    // The directory is created with its missing parents: the first one
    // that exists must take a new entry.
    let mut existing = dir;
    while !existing.exists() {
        existing = match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
    }
    if !existing.is_dir() {
        bad_input!(
            "{flag} {}: {} is not a directory",
            dir.display(),
            existing.display()
        );
    }
    let probe = existing.join(format!(".rtlab-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bad_input!("{flag} {}: cannot write there: {e}", dir.display()),
    }
}

fn progress_bar(args: &ReportArgs, total: usize) -> Option<ProgressBar> {
    if args.quiet || total < 2 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("analysing series {pos}/{len} {wide_bar} {elapsed}")
            .expect("static template"),
    );
    Some(bar)
}

/// The outputs checked before any work: `-o` and `--png` must be
/// writable, and neither `-o` nor `--junit` may be one of the inputs (the
/// result store with its -wal/-shm, a RUN file, a samples file) or the
/// other.
fn check_outputs(
    args: &ReportArgs,
    budget: Option<&rtlab_report::budget::Budget>,
) -> anyhow::Result<()> {
    let default_db = rtlab_store::Store::default_path().ok();
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    inputs.extend(
        args.store
            .db
            .as_deref()
            .or(default_db.as_deref())
            .map(|db| ("result store (--db)", db)),
    );
    inputs.extend(
        args.runs
            .iter()
            .map(Path::new)
            .filter(|p| p.is_file())
            .map(|p| ("RUN", p)),
    );
    inputs.extend(args.samples.iter().map(|spec| {
        let path = match spec.split_once('=') {
            Some((_, path)) if !Path::new(spec).exists() => path,
            _ => spec.as_str(),
        };
        ("--samples", Path::new(path))
    }));
    let mut others: Vec<Named> = inputs
        .iter()
        .map(|(what, path)| (*what, OutputTarget::File(path.to_path_buf())))
        .collect();
    if let Some(path) = output_file(args) {
        if path.is_dir() {
            bad_input!("-o {}: is a directory; give a file", path.display());
        }
        for (what, input) in &inputs {
            if same_file(path, input) {
                bad_input!(
                    "-o {}: is also the {what} file, which the report would replace; give another file",
                    path.display()
                );
            }
        }
        check_writable(path, "-o")?;
        others.push(("-o", OutputTarget::File(path.to_path_buf())));
    }
    if let Some(dir) = &args.png {
        if dir.exists() && !dir.is_dir() {
            bad_input!("--png {}: exists and is not a directory", dir.display());
        }
        check_dir_writable(dir, "--png")?;
    }
    if args.json && output_file(args).is_none() && args.format.is_some() {
        bad_input!("--json prints on stdout: give -o PATH for the --format report");
    }
    check_junit(args.budget.junit.as_ref(), budget, &others)
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let budget_spec = args.budget.budget.clone();
    check_outputs(&args, budget_spec.as_ref())?;
    let mut store = LazyStore {
        db: args.store.db.clone(),
        store: None,
    };
    let runs = load_runs(&mut store, &args)?;
    let samples = load_samples(&mut store, &args, &runs)?;
    drop(store);

    let evaluations = budget::evaluate_all(budget_spec.as_ref(), &runs);
    let total: usize = runs.iter().map(|r| r.series.len()).sum();
    let bar = progress_bar(&args, total);
    let options = ReportOptions {
        title: args.title.clone(),
        ..ReportOptions::default()
    };
    let mut report = Report::build(runs, samples, &options, &mut |done, _| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report.add_budget(&evaluations);

    let format = format_of(&args);
    let document = match format {
        ReportFormat::Html => report.to_html(),
        ReportFormat::Md => report.to_markdown(),
        ReportFormat::Text => report.to_text(),
    };
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(dir) = &args.png {
        let charts: Vec<(String, String)> = report
            .named_charts()
            .into_iter()
            .map(|(name, chart)| (name, chart.plot.to_svg()))
            .collect();
        // Every target must be a file rtlab may replace: checked before
        // the first one is written.
        for (name, _) in &charts {
            let target = dir.join(format!("{name}.png"));
            if target.exists() && !target.is_file() {
                bad_input!(
                    "--png {}: {} exists and is not a regular file",
                    dir.display(),
                    target.display()
                );
            }
        }
        if !png::have_fonts() {
            eprintln!("warning: --png: no system font found: charts are drawn without text (install fonts-dejavu-core)");
        }
        written.extend(
            png::write_all(dir, &charts).with_context(|| format!("--png {}", dir.display()))?,
        );
    }
    match output_file(&args) {
        Some(path) => {
            write_with(path, |out| out.write_all(document.as_bytes()))
                .with_context(|| format!("writing -o {}", path.display()))?;
            written.insert(0, path.to_path_buf());
        }
        // Labels, hostnames and warnings of stored runs are in it: printed
        // with control characters escaped, as everything rtlab prints.
        None if !args.json => put!("{document}"),
        None => {}
    }
    if let Some(path) = args.budget.junit.as_ref().and_then(OutputTarget::file) {
        budget::write_junit(path, &budget::title(), &evaluations)?;
        written.push(path.to_path_buf());
    }
    if args.json {
        let mut doc = report.to_json();
        doc["budget"] = budget::json(budget_spec.as_ref(), &evaluations);
        doc["files"] = serde_json::json!(written);
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else if !args.quiet && !written.is_empty() {
        let charts = report.named_charts().len();
        eprintln!(
            "report: {} run(s), {} series, {charts} chart(s); wrote {}",
            report.runs.len(),
            report.runs.iter().map(|r| r.series.len()).sum::<usize>(),
            match written.len() {
                1 => written[0].display().to_string(),
                n => format!("{} and {} more file(s)", written[0].display(), n - 1),
            }
        );
    }
    Ok(ExitCode::from(exit_code(0, &evaluations)))
}
