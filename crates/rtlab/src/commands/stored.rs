//! The commands over stored results: `rtlab runs`, `show`, `compare`,
//! `export` and `import`.

use crate::cli::{
    CompareArgs, CompareFormat, ExportArgs, ExportFormat, ImportArgs, RunsArgs, ShowArgs,
};
use crate::input::{self, InputError};
use crate::outputs::OutputTarget;
use crate::session;
use crate::terminal::{out, put};
use anyhow::Context;
use rtlab_core::result::RunResult;
use rtlab_core::units::{human_duration, Micros};
use rtlab_report::compare::{
    compare_matching, comparison_markdown, comparison_table, CompareOptions, Matching,
};
use rtlab_report::evt::EvtText;
use rtlab_report::export::{
    CsvExporter, Exporter, HistfileExporter, JsonExporter, MarkdownExporter,
};
use rtlab_report::probe_summary::probe_tables;
use rtlab_report::report::spike_tables::run_spikes_table;
use rtlab_report::run_summary::summary_table;
use rtlab_report::text::align;
use rtlab_store::{RunFilter, Store};
use std::io::IsTerminal;
use std::process::ExitCode;

/// A run that is not in the store is bad input (exit 2), with the store's
/// own message (which names the candidates).
fn get(store: &Store, id: &str) -> anyhow::Result<RunResult> {
    store
        .get(id)
        .map_err(|e| anyhow::Error::new(InputError(e.to_string())))
}

fn status_name(result: &RunResult) -> String {
    serde_json::to_value(result.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    if args.limit == Some(0) {
        return Err(InputError(
            "--limit 0: at least 1 run is listed (leave --limit out for all)".into(),
        )
        .into());
    }
    let filter = RunFilter {
        campaign: args.campaign,
        execution: args.execution,
        host: args.host,
        probe: args.probe,
        status: args.status,
        tag: args.tag,
        limit: args.limit,
    };
    // Listing only reads: a store one may not write is listed too, and a
    // store that does not exist yet has no runs (it is not created).
    let store = session::open_store_read_only(args.store.db.as_deref())?;
    let path = store.path();
    let runs = store
        .list(&filter)
        .map_err(|e| anyhow::Error::new(InputError(e.to_string())))?;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": "rtlab.runs/1",
                "db": path,
                "runs": runs,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        // With filters, the store may well hold runs: say that none match.
        let filtered = filter.campaign.is_some()
            || filter.execution.is_some()
            || filter.host.is_some()
            || filter.probe.is_some()
            || filter.status.is_some()
            || filter.tag.is_some();
        match filtered {
            true => out!("no run in {} matches the filters given", path.display()),
            false => out!("no runs in {}", path.display()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![[
        "id",
        "started",
        "probe",
        "status",
        "campaign",
        "load",
        "configuration",
        "samples",
        "missed",
        "p99.9 µs",
        "max µs",
        "tags",
    ]
    .map(String::from)
    .to_vec()];
    for run in &runs {
        // Long labels are cut to keep the table readable; control
        // characters (runs stored before import refused them) are escaped
        // where everything is printed (`emit`).
        let text = |t: &str| match t.chars().nth(80) {
            None => t.to_string(),
            Some(_) => t.chars().take(80).chain(['…']).collect(),
        };
        let or_dash = |t: &Option<String>| t.as_deref().map_or_else(|| "-".into(), text);
        rows.push(vec![
            text(&run.id),
            text(&run.started_at.chars().take(19).collect::<String>()),
            text(&run.probe),
            run.status.clone(),
            or_dash(&run.campaign),
            or_dash(&run.load),
            or_dash(&run.configuration),
            run.samples.to_string(),
            run.missed.to_string(),
            Micros(run.worst_p99_9_ns).to_string(),
            Micros(run.worst_max_ns).to_string(),
            match run.tags.is_empty() {
                true => "-".into(),
                false => run.tags.join(","),
            },
        ]);
    }
    put!("{}", align(&rows, |col, _| col < 7 || col == 11, false));
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = session::open_store_read_only(args.store.db.as_deref())?;
    let result = get(&store, &args.run)?;
    let pwcet = || -> Vec<(String, rtlab_report::evt::EvtReport)> {
        let options = rtlab_report::evt::EvtOptions::default();
        result
            .series
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    rtlab_report::evt::for_series(&s.stats, &options),
                )
            })
            .collect()
    };
    if args.json && args.pwcet {
        let series: Vec<serde_json::Value> = pwcet()
            .into_iter()
            .map(|(name, report)| serde_json::json!({ "series": name, "estimate": report }))
            .collect();
        let doc = serde_json::json!({
            "schema": "rtlab.pwcet/1",
            "run": result.id,
            "series": series,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let mut json = Vec::new();
        JsonExporter.write(&result, &mut json)?;
        put!("{}", String::from_utf8_lossy(&json));
        return Ok(ExitCode::SUCCESS);
    }
    let env = &result.environment;
    out!("run        {}", result.id);
    out!(
        "probe      {} ({}), started {}, {} measured",
        result.probe,
        status_name(&result),
        result.started_at,
        human_duration(result.elapsed_ns)
    );
    out!(
        "host       {}, kernel {} ({}), {}",
        env.hostname.as_deref().unwrap_or("unknown"),
        env.kernel_release.as_deref().unwrap_or("unknown"),
        env.preempt_model,
        env.virtualization.as_deref().map_or_else(
            || "virtualization unknown".to_string(),
            |v| format!("virtualization {v}")
        )
    );
    if let Some(c) = &result.campaign {
        out!(
            "campaign   {} run {}/{} (execution {}): load {}, configuration {}, repeat {}",
            c.name,
            c.index,
            c.total,
            c.execution,
            c.load,
            c.configuration,
            c.repeat
        );
    }
    if result.loads.is_empty() {
        out!("loads      none");
    }
    for load in &result.loads {
        let work: Vec<String> = load
            .work
            .iter()
            .map(|(k, v)| format!("{k} {}", rtlab_load::counter_text(k, *v)))
            .collect();
        out!("load       {}: {}", load.spec, work.join(", "));
        for note in &load.notes {
            out!("             {note}");
        }
    }
    out!();
    put!("{}", summary_table(&result));
    put!("{}", probe_tables(&result));
    if let Some(spikes) = run_spikes_table(&result, args.spikes) {
        out!();
        put!("{}", spikes.to_text());
    }
    put!("{}", super::exec_guards::show_text(&result));
    for warning in &result.warnings {
        out!("warning: {warning}");
    }
    if args.pwcet {
        for (name, report) in pwcet() {
            out!();
            out!("worst-case estimate, series {name}");
            put!("{}", report.render_text());
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare_runs(args: CompareArgs) -> anyhow::Result<ExitCode> {
    if let Some(baseline) = &args.baseline {
        return super::compare_baseline::run(&args, baseline);
    }
    if args.runs.len() < 2 {
        return Err(InputError(
            "compare needs two runs or more, the baseline first (or --baseline REF and a run)"
                .into(),
        )
        .into());
    }
    // The store is opened only when a run is not a file: comparing files
    // needs no store at all.
    let mut store = None;
    let mut runs = Vec::new();
    for id in &args.runs {
        // A file is read as `rtlab import` reads it, without storing it.
        let run = match std::path::Path::new(id).is_file() {
            true => rtlab_report::import::import_file(std::path::Path::new(id))
                .map_err(|e| anyhow::Error::new(InputError(e.to_string())))?,
            false => {
                if store.is_none() {
                    store = Some(session::open_store_read_only(args.store.db.as_deref())?);
                }
                get(store.as_ref().expect("opened above"), id)?
            }
        };
        runs.push(run);
    }
    let options = CompareOptions {
        resamples: args.resamples as usize,
        confidence: args.confidence,
        seed: args.seed,
    };
    options
        .validate()
        .map_err(|e| anyhow::Error::new(InputError(e)))?;
    let matching: Matching = args
        .matching
        .parse()
        .map_err(|e: String| anyhow::Error::new(InputError(format!("--match: {e}"))))?;
    let comparison = compare_matching(&runs, &options, matching);
    if args.json {
        out!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        match args.format {
            CompareFormat::Table => put!("{}", comparison_table(&comparison)),
            CompareFormat::Md => put!("{}", comparison_markdown(&comparison)),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = session::open_store_read_only(args.store.db.as_deref())?;
    // Replacing the store with one of its runs would lose every other.
    if let Some(path) = args.output.file() {
        if crate::outputs::checks::same_file(path, store.path()) {
            return Err(InputError(format!(
                "-o {}: is also the result store (--db) file, which the export would replace; \
                 give another file",
                path.display()
            ))
            .into());
        }
    }
    let result = get(&store, &args.run)?;
    let histfile;
    let format = args.format.unwrap_or(ExportFormat::Json);
    let exporter: &dyn Exporter = match format {
        ExportFormat::Json => &JsonExporter,
        ExportFormat::Csv => &CsvExporter,
        ExportFormat::Markdown => &MarkdownExporter,
        ExportFormat::Histfile => {
            let recorded_us = result
                .series
                .iter()
                .find_map(|s| s.stats.overflows.as_ref().map(|o| o.limit_us));
            let hist_max_us = match args.hist_max {
                Some(ns) => input::hist_max_us(ns)?,
                // A range recorded in an imported file is input too.
                None => recorded_us
                    .unwrap_or(rtlab_probe::timer::DEFAULT_HIST_MAX_NS / 1000)
                    .min(rtlab_report::export::HISTFILE_MAX_RANGE_US),
            };
            histfile = HistfileExporter {
                hist_max_us,
                all_threads_column: false,
            };
            &histfile
        }
    };
    let OutputTarget::File(path) = &args.output else {
        // To standard output, JSON goes through the writer that escapes
        // control characters (JSON's own escape: the same document), and so
        // does any format when it reaches a terminal; other formats piped
        // on are the stored data, byte for byte.
        let mut data = Vec::new();
        exporter.write(&result, &mut data)?;
        if matches!(format, ExportFormat::Json) || std::io::stdout().is_terminal() {
            put!("{}", String::from_utf8_lossy(&data));
        } else {
            std::io::Write::write_all(&mut std::io::stdout(), &data)?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    match args.output.write_with(|out| exporter.write(&result, out)) {
        Ok(()) => {}
        // A path that cannot be created is bad input (exit 2), as for
        // report -o and plan gen -o; a write that fails on the way (a full
        // disk) stays an error of the run (exit 1).
        Err(e) if cannot_create(&e) => {
            return Err(InputError(format!("-o {}: cannot create: {e}", path.display())).into())
        }
        Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether an error creating an output file says the path is wrong (no
/// such directory, no permission, a directory, a read-only file system)
/// rather than that writing failed.
fn cannot_create(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        NotFound
            | PermissionDenied
            | InvalidInput
            | IsADirectory
            | NotADirectory
            | ReadOnlyFilesystem
    )
}

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    // Every file is read and checked before the store is opened: a bad
    // file creates no store (a new --db, or the default one of a user who
    // never stored anything, was left behind by a refused import) ...
    let mut read = Vec::new();
    for path in &args.files {
        let result = rtlab_report::import::import_file(path)
            .map_err(|e| anyhow::Error::new(InputError(e.to_string())))?;
        read.push((path, result));
    }
    let mut store = session::open_store(args.store.db.as_deref())?;
    // ... and before anything is stored, so a bad file among good ones
    // leaves the store as it was.
    let mut imported: Vec<(&std::path::PathBuf, RunResult)> = Vec::new();
    for (path, mut result) in read {
        let taken = |id: &str, imported: &[(&std::path::PathBuf, RunResult)]| {
            Ok::<_, anyhow::Error>(
                store.contains(id)? || imported.iter().any(|(_, other)| other.id == id),
            )
        };
        if args.new_id {
            let old = std::mem::take(&mut result.id);
            // new_id is unique in this process; the loop only guards
            // against a run of another process stored in the same second.
            result.id = RunResult::new_id();
            while taken(&result.id, &imported)? {
                result.id = RunResult::new_id();
            }
            result.warnings.push(format!(
                "imported from {} under a new id: its id was {old}",
                path.display()
            ));
        } else if taken(&result.id, &imported)? {
            let place = match imported.iter().find(|(_, other)| other.id == result.id) {
                Some((first, _)) => format!("{} too", first.display()),
                None => format!("result store {}", store.path().display()),
            };
            return Err(InputError(format!(
                "{}: run {} is already in {place}: a stored run is never replaced; pass \
                 --new-id to import it under a new id (nothing was imported)",
                path.display(),
                result.id
            ))
            .into());
        }
        imported.push((path, result));
    }
    // One transaction: every file is stored, or (a kill, a full disk, a run
    // another rtlab stored meanwhile) none.
    let (paths, runs): (Vec<_>, Vec<RunResult>) = imported.into_iter().unzip();
    let imported: Vec<(&std::path::PathBuf, &RunResult)> = paths.into_iter().zip(&runs).collect();
    match store.save_all(&runs) {
        Ok(()) => {}
        Err(rtlab_store::StoreError::Duplicate { id, .. }) => {
            let file = imported
                .iter()
                .find(|(_, r)| r.id == id)
                .map_or_else(|| "?".into(), |(p, _)| p.display().to_string());
            return Err(InputError(format!(
                "{file}: run {id} was stored in result store {} by another process meanwhile: \
                 a stored run is never replaced; pass --new-id to import it under a new id \
                 (nothing was imported)",
                store.path().display()
            ))
            .into());
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "storing in {} (nothing was imported)",
                store.path().display()
            )))
        }
    }
    if args.json {
        let ids: Vec<serde_json::Value> = imported
            .iter()
            .map(|(path, r)| serde_json::json!({ "file": path, "id": r.id, "series": r.series.len() }))
            .collect();
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "imported": ids }))?
        );
    } else {
        for (path, result) in &imported {
            out!(
                "{} -> run {} ({} series, {} samples)",
                path.display(),
                result.id,
                result.series.len(),
                result.series.iter().map(|s| s.stats.samples).sum::<u64>()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
