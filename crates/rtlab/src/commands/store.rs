//! The commands over the result store itself: `rtlab runs delete`,
//! `rtlab runs tag`, `rtlab store check` and `rtlab store push`
//! (docs/runs.md, docs/store.md).

use crate::cli::{RunsDeleteArgs, RunsTagArgs, StoreCheckArgs, StorePushArgs};
use crate::input::InputError;
use crate::session;
use crate::terminal::out;
use rtlab_core::result::terminal_text;
use rtlab_store::{Location, RunFilter, Store, StoreError};
use std::collections::BTreeSet;
use std::process::ExitCode;

/// A store error a user can act on is bad input (exit 2).
fn input(e: StoreError) -> anyhow::Error {
    anyhow::Error::new(InputError(e.to_string()))
}

pub fn delete(args: RunsDeleteArgs) -> anyhow::Result<ExitCode> {
    let mut store = session::open_existing_store(args.store.db.as_deref())?;
    // Every id is resolved before anything is deleted: one unknown or
    // ambiguous id deletes nothing.
    let mut ids = BTreeSet::new();
    for id in &args.runs {
        ids.insert(store.resolve(id).map_err(input)?);
    }
    if let Some(execution) = &args.execution {
        let runs = execution_runs(&store, execution)?;
        if runs.is_empty() {
            return Err(InputError(format!(
                "no run of campaign execution `{}` in result store {}",
                execution,
                store.path().display()
            ))
            .into());
        }
        ids.extend(runs);
    }
    // What deleting these would leave of each campaign execution they are in.
    let mut partial = Vec::new();
    let mut executions = BTreeSet::new();
    for id in &ids {
        if let Some(campaign) = store.get(id).map_err(input)?.campaign {
            executions.insert(campaign.execution);
        }
    }
    for execution in &executions {
        let all = execution_runs(&store, execution)?;
        let kept = all.iter().filter(|id| !ids.contains(*id)).count();
        if kept > 0 {
            partial.push(format!(
                "campaign execution {}: {} of its {} runs would be deleted and {kept} kept",
                execution,
                all.len() - kept,
                all.len()
            ));
        }
    }
    if !args.yes && (ids.len() > 1 || !partial.is_empty()) {
        let mut message = format!(
            "this would delete {} runs from {}: {}",
            ids.len(),
            store.path().display(),
            ids.iter().cloned().collect::<Vec<_>>().join(", ")
        );
        for line in &partial {
            message.push_str(&format!("; {line}"));
        }
        message.push_str("; nothing was deleted: pass --yes to delete them");
        return Err(InputError(message).into());
    }
    // One transaction: a kill or an error part way deletes none of them.
    store
        .delete_all(&ids.iter().collect::<Vec<_>>())
        .map_err(input)?;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "db": store.path(),
                "deleted": ids,
            }))?
        );
    } else {
        for line in &partial {
            // Escaped as stdout is (see `emit`): the ids and execution are stored text.
            eprintln!("note: {}", terminal_text(line));
        }
        for id in &ids {
            out!("deleted run {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The ids of a campaign execution's runs.
fn execution_runs(store: &Store, execution: &str) -> anyhow::Result<Vec<String>> {
    let filter = RunFilter {
        execution: Some(execution.to_string()),
        ..Default::default()
    };
    Ok(store
        .list(&filter)
        .map_err(input)?
        .into_iter()
        .map(|s| s.id)
        .collect())
}

pub fn tag(args: RunsTagArgs) -> anyhow::Result<ExitCode> {
    let mut store = session::open_existing_store(args.store.db.as_deref())?;
    let (id, changed) = if args.untag {
        store.untag(&args.run, &args.tag).map_err(input)?
    } else {
        let had = store
            .resolve(&args.run)
            .and_then(|id| store.tags(&id))
            .map_err(input)?
            .contains(&args.tag);
        (store.tag(&args.run, &args.tag).map_err(input)?, !had)
    };
    let tags = store.tags(&id).map_err(input)?;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "run": id,
                "tags": tags,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let what = match (args.untag, changed) {
        (false, true) => "tagged",
        (false, false) => "already tagged",
        (true, true) => "untagged",
        (true, false) => "was not tagged",
    };
    let list = match tags.is_empty() {
        true => "none".to_string(),
        false => tags.join(", "),
    };
    out!("run {} {what} {}; its tags: {list}", id, args.tag);
    Ok(ExitCode::SUCCESS)
}

pub fn check(args: StoreCheckArgs) -> anyhow::Result<ExitCode> {
    let location = session::store_location(args.store.db.as_deref())?;
    // Opened read-only: checking never changes the store. A file that
    // does not open as a store is a problem found, not a usage error; a
    // path with nothing at all is, and so is one that is no file (a
    // directory, a FIFO, a device), as for every other command, and a
    // server that cannot be reached.
    if let Location::File(path) = &location {
        if !path.exists() {
            let path = path.clone();
            return Err(input(StoreError::NoStore { path }));
        }
    }
    let no_file = |path: &std::path::Path| std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let report = match Store::open_location_read_only(&location) {
        Ok(store) => store.check().map_err(|e| anyhow::anyhow!("{e}"))?,
        Err(e) if e.is_connection() || location.file().is_some_and(no_file) => {
            return Err(input(e))
        }
        Err(e) => rtlab_store::CheckReport {
            db: location.shown_path(),
            schema_version: 0,
            runs: 0,
            problems: vec![e.to_string()],
        },
    };
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": "rtlab.store-check/1",
                "db": report.db,
                "schema_version": report.schema_version,
                "runs": report.runs,
                "ok": report.problems.is_empty(),
                "problems": report.problems,
            }))?
        );
    } else if report.problems.is_empty() {
        out!(
            "{}: ok (schema version {}, {} runs)",
            report.db.display(),
            report.schema_version,
            report.runs
        );
    } else {
        let count = report.problems.len();
        out!(
            "{}: {count} problem{} ({} runs read)",
            report.db.display(),
            if count == 1 { "" } else { "s" },
            report.runs
        );
        for problem in &report.problems {
            out!("  {problem}");
        }
    }
    Ok(ExitCode::from(u8::from(!report.problems.is_empty())))
}

pub fn push(args: StorePushArgs) -> anyhow::Result<ExitCode> {
    let mut store = session::open_store(args.store.db.as_deref())?;
    if !matches!(store.location(), Location::Postgres(_)) {
        return Err(InputError(format!(
            "--db {}: `rtlab store push` stores the runs kept for a PostgreSQL store; runs \
             kept for a file are stored with `rtlab import FILE`",
            store.path().display()
        ))
        .into());
    }
    let report = store
        .push_kept(&rtlab_store::unsaved_dirs())
        .map_err(input)?;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": "rtlab.store-push/1",
                "db": store.path(),
                "stored": report.stored,
                "already": report.already,
                "failed": report.failed,
            }))?
        );
    } else {
        for id in &report.stored {
            out!("stored run {id}");
        }
        for id in &report.already {
            out!("run {id} was stored already: its kept file was removed");
        }
        for failure in &report.failed {
            out!(
                "left {}: {}",
                failure.file.display(),
                terminal_text(&failure.reason)
            );
        }
        if report.stored.is_empty() && report.already.is_empty() && report.failed.is_empty() {
            out!("no run kept for {}", store.path().display());
        }
    }
    Ok(ExitCode::from(u8::from(!report.failed.is_empty())))
}
