//! `rtlab store check`: SQLite's own checks, the schema, and every run
//! read back (docs/store.md).

use std::path::PathBuf;

use rtlab_core::result::{check_run_id, printable, RunResult};
use serde::Serialize;

use crate::columns::uint;
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
    /// `foreign_key_check`, the schema version and tables, and every run
    /// row read back as a `RunResult` whose id is its row's and valid, with
    /// as many `series` rows as series. Problems are listed, not raised.
    pub fn check(&self) -> Result<CheckReport, StoreError> {
        let mut problems = Vec::new();
        let mut statement = self
            .conn
            .prepare("PRAGMA integrity_check")
            .map_err(|e| self.err(e))?;
        let lines = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        if lines != ["ok"] {
            problems.extend(
                lines
                    .iter()
                    .map(|l| format!("integrity: {}", printable(l, 200))),
            );
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
        let mut statement = self
            .conn
            .prepare("PRAGMA foreign_key_check")
            .map_err(|e| self.err(e))?;
        let orphans = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        for (table, rowid) in orphans {
            problems.push(format!(
                "row {rowid} of `{table}` belongs to no run (foreign key)"
            ));
        }
        let mut statement = self
            .conn
            .prepare(
                "SELECT r.id, r.result, (SELECT count(*) FROM series WHERE run_id = r.id)
                 FROM runs AS r ORDER BY r.id",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = statement.query([]).map_err(|e| self.err(e))?;
        let mut runs = 0;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            runs += 1;
            let id: String = row.get(0).map_err(|e| self.err(e))?;
            let shown = printable(&id, 80);
            if let Err(why) = check_run_id(&id) {
                problems.push(format!("run `{shown}`: {why}"));
            }
            let json: Result<String, _> = row.get(1);
            let run = match json.map(|json| serde_json::from_str::<RunResult>(&json)) {
                Ok(Ok(run)) => run,
                Ok(Err(e)) => {
                    problems.push(format!("run `{shown}`: its JSON is not a run: {e}"));
                    continue;
                }
                Err(e) => {
                    problems.push(format!("run `{shown}`: its JSON cannot be read: {e}"));
                    continue;
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
            let series: i64 = row.get(2).map_err(|e| self.err(e))?;
            if uint(series) != run.series.len() as u64 {
                problems.push(format!(
                    "run `{shown}`: {series} series rows for {} series in its JSON",
                    run.series.len()
                ));
            }
        }
        Ok(CheckReport {
            db: self.path.clone(),
            schema_version,
            runs,
            problems,
        })
    }
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
