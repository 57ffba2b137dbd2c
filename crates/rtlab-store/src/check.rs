//! `rtlab store check`: SQLite's own checks, the schema, and every run
//! read back, on either database (docs/store.md).

use std::path::PathBuf;

use rtlab_core::result::{check_run_id, printable, RunResult};
use serde::Serialize;

use crate::columns::uint;
use crate::db::{Dialect, Row, Value};
use crate::error::StoreError;
use crate::open::Store;

/// What [`Store::check`] found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub db: PathBuf,
    pub schema_version: u32,
    /// Run rows read.
    pub runs: usize,
    /// Everything wrong, one line each (empty: the store is sound).
    pub problems: Vec<String>,
}

impl Store {
    /// The store's integrity: SQLite's `integrity_check` and
    /// `foreign_key_check` (PostgreSQL enforces its constraints itself),
    /// the schema version and tables, and every run row read back as a
    /// `RunResult` whose id is its row's and valid, with as many `series`
    /// rows as series. Problems are listed, not raised.
    pub fn check(&self) -> Result<CheckReport, StoreError> {
        let sqlite = self.dialect() == Dialect::Sqlite;
        let mut problems = Vec::new();
        if sqlite {
            let lines = self.read(|db| db.rows("PRAGMA integrity_check", &[]))?;
            let lines: Vec<String> = lines.into_iter().map(first_text).collect();
            if lines != ["ok"] {
                problems.extend(
                    lines
                        .iter()
                        .map(|l| format!("integrity: {}", printable(l, 200))),
                );
            }
        }
        // An older schema is not a problem (the next write migrates it):
        // its tables are checked for the version it says it is.
        let schema_version = self.schema_version()?;
        let tables: &[&str] = match schema_version {
            ..=2 => &["runs", "series", "spikes"],
            _ => &["runs", "series", "spikes", "tags"],
        };
        for table in tables {
            if !self.has_table(table)? {
                problems.push(format!(
                    "the table `{table}` of schema version {schema_version} is missing"
                ));
            }
        }
        if !problems.is_empty() {
            // The rows below cannot be trusted (nor perhaps read).
            return Ok(CheckReport {
                db: self.path.clone(),
                schema_version,
                runs: 0,
                problems,
            });
        }
        if sqlite {
            let orphans = self.read(|db| db.rows("PRAGMA foreign_key_check", &[]))?;
            for row in orphans {
                let table = row.first().and_then(Value::text).unwrap_or_default();
                let rowid = row.get(1).and_then(Value::int).unwrap_or_default();
                problems.push(format!(
                    "row {rowid} of `{table}` belongs to no run (foreign key)"
                ));
            }
        }
        // One run at a time: a store's JSON may not fit in memory at once.
        let ids = self.read(|db| db.rows("SELECT id FROM runs ORDER BY id", &[]))?;
        let runs = ids.len();
        for id in ids.into_iter().map(first_text) {
            let row = self.read(|db| {
                db.row(
                    "SELECT r.result, (SELECT count(*) FROM series WHERE run_id = r.id)
                     FROM runs AS r WHERE r.id = ?1",
                    &[(&id).into()],
                )
            })?;
            let Some(row) = row else {
                continue; // deleted meanwhile
            };
            problems.extend(check_run(&id, &row));
        }
        Ok(CheckReport {
            db: self.path.clone(),
            schema_version,
            runs,
            problems,
        })
    }
}

/// The first column of a row as text ("" when it is not).
fn first_text(row: Row) -> String {
    row.into_iter()
        .next()
        .and_then(Value::into_text)
        .unwrap_or_default()
}

/// What is wrong with one run's row (its result JSON and series count).
fn check_run(id: &str, row: &Row) -> Vec<String> {
    let shown = printable(id, 80);
    let mut problems = Vec::new();
    if let Err(why) = check_run_id(id) {
        problems.push(format!("run `{shown}`: {why}"));
    }
    let run = match row.first() {
        Some(Value::Text(json)) => match serde_json::from_str::<RunResult>(json) {
            Ok(run) => run,
            Err(e) => {
                problems.push(format!("run `{shown}`: its JSON is not a run: {e}"));
                return problems;
            }
        },
        _ => {
            problems.push(format!(
                "run `{shown}`: its JSON cannot be read: it is not text"
            ));
            return problems;
        }
    };
    if run.id != id {
        problems.push(format!(
            "run `{shown}`: its JSON says id `{}`",
            printable(&run.id, 80)
        ));
    }
    if let Some(at) = serde_json::to_value(&run)
        .ok()
        .and_then(|v| control_text(&v))
    {
        problems.push(format!(
            "run `{shown}`: the text at {at} holds control characters (stored before \
             rtlab refused them; shown escaped, exported as it is): delete the run, or export, \
             fix and import it"
        ));
    }
    let series = row.get(1).and_then(Value::int).unwrap_or(0);
    if uint(series) != run.series.len() as u64 {
        problems.push(format!(
            "run `{shown}`: {series} series rows for {} series in its JSON",
            run.series.len()
        ));
    }
    problems
}

/// The JSON path of the first key or string holding a control character
/// other than tab and newline (what `rtlab import` refuses), if any.
fn control_text(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let bad = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    };
    match value {
        Value::String(text) if bad(text) => Some("$".into()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| control_text(item).map(|at| format!("$[{i}]{}", &at[1..]))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let here = format!("$[\"{}\"]", printable(key, 40));
            match bad(key) {
                true => Some(here),
                false => control_text(item).map(|at| format!("{here}{}", &at[1..])),
            }
        }),
        _ => None,
    }
}
