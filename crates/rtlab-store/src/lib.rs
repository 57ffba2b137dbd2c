//! rtlab's result store: every run, its latency series and their spikes in
//! an embedded SQLite database (docs/store.md).
//!
//! - The database lives at `$XDG_DATA_HOME/rtlab/results.db` (else
//!   `$HOME/.local/share/rtlab/results.db`) unless the user passes `--db`.
//! - It runs in WAL mode with `synchronous=FULL`: a run saved is on disk, and
//!   readers (`rtlab runs`) never block the rtlab that is measuring.
//! - Several rtlab processes may use one database: a writer waits up to
//!   [`BUSY_TIMEOUT`] for another one's transaction to end.
//! - The schema is versioned (`PRAGMA user_version`) and migrated forward on
//!   open; a database from a newer rtlab is refused, never changed.
//! - Each run keeps its complete [`RunResult`] JSON, so [`Store::get`]
//!   returns exactly what was saved; the columns and the `series` and
//!   `spikes` tables index it for listing and for queries by hand.
//! - A saved run is never replaced by another with the same id
//!   ([`Store::save`] refuses it); only the same run, saved while running,
//!   is updated when it ends ([`Store::update`]).
//! - Commands that only read open it with [`Store::open_read_only`]: a
//!   store one can read but not write can still be listed and shown.
//! - A run the store cannot take at the end of a measurement (disk full,
//!   read-only file) is kept as a file ([`Store::save_or_keep`]).

mod check;
mod error;
mod migrations;
mod tags;
mod unsaved;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rtlab_core::result::{check_run_id, printable, RunResult, RunStatus};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::Serialize;

pub use check::CheckReport;
pub use error::StoreError;
pub use migrations::LATEST as SCHEMA_VERSION;
pub use tags::{check_tag, TAG_MAX_LEN};
pub use unsaved::{
    choose_unsaved_dirs, keep_unsaved, keep_unsaved_in, unsaved_dir, unsaved_dirs, Kept, UnsavedDir,
};

/// How long a writer waits for another process's transaction to end before
/// giving up with [`StoreError::Locked`].
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The statuses a run can have, as stored (the `RunStatus` serde strings).
pub const STATUSES: [&str; 5] = ["running", "complete", "partial", "break", "failed"];

/// The oldest schema [`Store::open_read_only`] reads without migrating: 2
/// has every column the listing reads; 3 only adds tags.
pub const READ_ONLY_OLDEST: u32 = 2;

/// How many candidates an ambiguous id prefix lists.
const MAX_CANDIDATES: usize = 10;

/// The stored string of a status: its serde name.
pub fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Break => "break",
        RunStatus::Failed => "failed",
    }
}

/// Which runs [`Store::list`] returns; every field set must match.
#[derive(Default, Clone, Debug)]
pub struct RunFilter {
    /// Campaign name (`CampaignRef::name`).
    pub campaign: Option<String>,
    /// Campaign execution id (`CampaignRef::execution`).
    pub execution: Option<String>,
    /// `environment.hostname`.
    pub host: Option<String>,
    pub probe: Option<String>,
    /// One of [`STATUSES`].
    pub status: Option<String>,
    /// Runs with this tag.
    pub tag: Option<String>,
    /// At most this many runs (the newest).
    pub limit: Option<usize>,
}

/// One line of `rtlab runs`: a run and the totals of its series.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub started_at: String,
    pub probe: String,
    pub status: String,
    pub host: Option<String>,
    pub campaign: Option<String>,
    pub execution: Option<String>,
    pub configuration: Option<String>,
    pub load: Option<String>,
    /// Number of series.
    pub series: usize,
    /// Samples of all series.
    pub samples: u64,
    /// Missed deadlines of all series.
    pub missed: u64,
    /// The largest p99.9 of the series, ns (0 without samples).
    pub worst_p99_9_ns: u64,
    /// The largest maximum of the series, ns (0 without samples).
    pub worst_max_ns: u64,
    /// The run's tags, in order.
    pub tags: Vec<String>,
}

/// An open result store. Not shared between threads: open one per thread
/// (or process); they coordinate through SQLite's locks.
pub struct Store {
    path: PathBuf,
    conn: Connection,
    /// Opened with [`Store::open_read_only`]: nothing may be written.
    read_only: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// `$XDG_DATA_HOME/rtlab/results.db`, else
    /// `$HOME/.local/share/rtlab/results.db`; an error if neither is set (to
    /// an absolute path: the XDG spec says relative values are ignored).
    pub fn default_path() -> Result<PathBuf, StoreError> {
        default_path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
    }

    /// Opens the database at [`Store::default_path`].
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open(&Store::default_path()?)
    }

    /// Opens or creates (with parent directories) the database at `path`, in
    /// WAL mode with foreign keys on and a busy timeout (another rtlab may be
    /// writing), and migrates it to the latest schema. Refuses a database
    /// whose schema is newer than this rtlab knows, a file that is not an
    /// SQLite database and the database of another program. Errors name the
    /// path.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at_version(path, migrations::LATEST)
    }

    /// [`Store::open`], migrating only up to schema `version` (for tests of
    /// the migrations: builds a database as an older rtlab did). A database
    /// already past `version` is left as it is.
    #[doc(hidden)]
    pub fn open_at_version(path: &Path, version: u32) -> Result<Store, StoreError> {
        if version == 0 || version > migrations::LATEST {
            return Err(StoreError::Invalid(format!(
                "schema version {version} does not exist: this rtlab knows 1 to {}",
                migrations::LATEST
            )));
        }
        if path != Path::new(":memory:") {
            check_file_kind(path)?;
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|cause| StoreError::CreateDir {
                path: parent.to_path_buf(),
                cause,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| StoreError::sqlite(path, BUSY_TIMEOUT, e))?;
        let mut store = Store {
            path: path.to_path_buf(),
            conn,
            read_only: false,
        };
        store
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.err(e))?;
        // The first read of the file: refuse what is not ours before
        // changing anything.
        store.check_identity()?;
        let found = store.schema_version()?;
        if found > migrations::LATEST {
            return Err(StoreError::TooNew {
                path: store.path.clone(),
                found,
                known: migrations::LATEST,
            });
        }
        store
            .conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(|e| store.err(e))?;
        let mode = store.enter_wal()?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(StoreError::Invalid(format!(
                "result store {}: cannot use WAL mode (SQLite kept journal mode `{mode}`); put the \
                 database on a local file system",
                store.path.display()
            )));
        }
        store
            .conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(|e| store.err(e))?;
        if found < version {
            store.migrate(version)?;
        }
        Ok(store)
    }

    /// Opens the database at `path` for reading only (`SQLITE_OPEN_READ_ONLY`):
    /// it is never created, migrated nor written, so a store one may read
    /// but not write can be listed and shown. A store at an older schema is
    /// read as it is back to [`READ_ONLY_OLDEST`] (what it lacks, tags,
    /// reads as none), and refused with [`StoreError::NeedsMigration`]
    /// before that (a command that writes migrates it). A missing or empty
    /// file reads as an empty store (held
    /// in memory: nothing is created), so lookups say "no run" as they do
    /// in any store without it.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        check_file_kind(path)?;
        if std::fs::metadata(path).map_or(true, |m| m.is_file() && m.len() == 0) {
            return Store::empty_in_memory(path);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let open = |uri: &str| -> Result<Store, StoreError> {
            let conn = Connection::open_with_flags(uri, flags)
                .map_err(|e| StoreError::sqlite(path, BUSY_TIMEOUT, e))?;
            let store = Store {
                path: path.to_path_buf(),
                conn,
                read_only: true,
            };
            store
                .conn
                .busy_timeout(BUSY_TIMEOUT)
                .map_err(|e| store.err(e))?;
            store.check_identity()?;
            Ok(store)
        };
        let uri = file_uri(path);
        let store = match open(&uri) {
            Ok(store) => store,
            // A WAL database is read through its -shm file, which a reader
            // creates when no process has the database open. One who may
            // not write in the directory cannot: when no -wal file exists
            // either (nobody is writing, and the file holds every run),
            // read the file as it is, as SQLite's `immutable` does.
            Err(StoreError::Sqlite { cause, .. })
                if matches!(
                    cause.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::CannotOpen) | Some(rusqlite::ErrorCode::ReadOnly)
                ) && !wal_path(path).exists() =>
            {
                open(&format!("{uri}?immutable=1"))?
            }
            Err(e) => return Err(e),
        };
        let found = store.schema_version()?;
        if found == 0 {
            return Store::empty_in_memory(path);
        }
        if found > migrations::LATEST {
            return Err(StoreError::TooNew {
                path: store.path.clone(),
                found,
                known: migrations::LATEST,
            });
        }
        if found < READ_ONLY_OLDEST {
            return Err(StoreError::NeedsMigration {
                path: store.path.clone(),
                found,
                latest: migrations::LATEST,
            });
        }
        Ok(store)
    }

    /// An empty store at the latest schema in memory, named `path`, for
    /// reading a store that does not exist yet.
    fn empty_in_memory(path: &Path) -> Result<Store, StoreError> {
        let mut store = Store::open(Path::new(":memory:"))?;
        store.path = path.to_path_buf();
        store.read_only = true;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The schema version of the database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.err(e))?;
        // user_version is a signed 32-bit field; a negative one is not ours.
        u32::try_from(version).map_err(|_| StoreError::Foreign {
            path: self.path.clone(),
            detail: format!("its schema version is {version}"),
        })
    }

    /// Inserts a new run in one transaction: the run row with the complete
    /// `RunResult` JSON, one `series` row per series and one `spikes` row
    /// per spike. A run with the same id already stored is never replaced:
    /// that is [`StoreError::Duplicate`] (see [`Store::update`]). An id that
    /// [`check_run_id`] refuses is [`StoreError::InvalidRun`].
    pub fn save(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write(run, false)
    }

    /// Replaces a run saved while it was running with what it became (a
    /// run may be saved when it starts and again when it ends). Refused
    /// unless the stored run has this id, is still `running`, and has the
    /// same probe and start: anything else would be another run.
    pub fn update(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write(run, true)
    }

    /// Whether a run has exactly this id.
    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.err(e))
    }

    fn write(&mut self, run: &RunResult, update: bool) -> Result<(), StoreError> {
        self.write_all(std::slice::from_ref(run), update)
    }

    /// Saves every run of `runs` in one transaction: all of them are
    /// stored, or (an error, a crash, a kill) none. A run whose id is
    /// stored already, or comes twice, is [`StoreError::Duplicate`] and
    /// nothing is stored. `rtlab import` stores its files so.
    pub fn save_all(&mut self, runs: &[RunResult]) -> Result<(), StoreError> {
        self.write_all(runs, false)
    }

    fn write_all(&mut self, runs: &[RunResult], update: bool) -> Result<(), StoreError> {
        let mut encoded = Vec::with_capacity(runs.len());
        for run in runs {
            check_run_id(&run.id).map_err(|reason| self.invalid_run(run, reason))?;
            if self.read_only {
                return Err(self.invalid_run(run, "the store was opened read-only".into()));
            }
            encoded.push(
                Encoded::new(run)
                    .map_err(|e| self.invalid_run(run, format!("it cannot be serialized: {e}")))?,
            );
        }
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for (run, encoded) in runs.iter().zip(&encoded) {
            write_in(&tx, &path, run, encoded, update)?;
        }
        tx.commit().map_err(err)
    }

    /// The runs that match `filter`, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        if let Some(status) = &filter.status {
            if !STATUSES.contains(&status.as_str()) {
                return Err(StoreError::Invalid(format!(
                    "unknown run status `{status}`: expected one of {}",
                    STATUSES.join(", ")
                )));
            }
        }
        if let Some(tag) = &filter.tag {
            check_tag(tag)?;
        }
        // A store at schema 2, read without migrating, has no tags yet.
        let tagged = self.has_table("tags")?;
        if filter.tag.is_some() && !tagged {
            return Err(StoreError::Invalid(format!(
                "result store {} has no tags yet (schema version {}): tag a run to add them",
                self.path.display(),
                self.schema_version()?
            )));
        }
        let tags = match tagged {
            true => {
                "(SELECT json_group_array(tag) FROM
                         (SELECT tag FROM tags WHERE run_id = r.id ORDER BY tag))"
            }
            false => "'[]'",
        };
        let by_tag = match tagged {
            true => "EXISTS (SELECT 1 FROM tags AS t WHERE t.run_id = r.id AND t.tag = ?7)",
            false => "?7 IS NULL",
        };
        let limit = filter.limit.map_or(-1, |l| int(l as u64));
        let samples = saturating_sum("s.samples");
        let missed = saturating_sum("s.missed");
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, r.started_at, r.probe, r.status, r.host, r.campaign, r.execution,
                     r.configuration, r.load, count(s.position), {samples}, {missed}, coalesce(max(s.p99_9_ns), 0),
                     coalesce(max(s.max_ns), 0), {tags}
                 FROM runs AS r LEFT JOIN series AS s ON s.run_id = r.id
                 WHERE (?1 IS NULL OR r.campaign = ?1)
                   AND (?2 IS NULL OR r.execution = ?2)
                   AND (?3 IS NULL OR r.host = ?3)
                   AND (?4 IS NULL OR r.probe = ?4)
                   AND (?5 IS NULL OR r.status = ?5)
                   AND (?7 IS NULL OR {by_tag})
                 GROUP BY r.id
                 ORDER BY julianday(r.started_at) DESC, r.started_at DESC, r.id DESC
                 LIMIT ?6"
            ))
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map(
                params![
                    filter.campaign,
                    filter.execution,
                    filter.host,
                    filter.probe,
                    filter.status,
                    limit,
                    filter.tag,
                ],
                |row| {
                    Ok(RunSummary {
                        id: row.get(0)?,
                        started_at: row.get(1)?,
                        probe: row.get(2)?,
                        status: row.get(3)?,
                        host: row.get(4)?,
                        campaign: row.get(5)?,
                        execution: row.get(6)?,
                        configuration: row.get(7)?,
                        load: row.get(8)?,
                        series: uint(row.get(9)?) as usize,
                        samples: uint(row.get(10)?),
                        missed: uint(row.get(11)?),
                        worst_p99_9_ns: uint(row.get(12)?),
                        worst_max_ns: uint(row.get(13)?),
                        tags: serde_json::from_str(&row.get::<_, String>(14)?).unwrap_or_default(),
                    })
                },
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The run with this exact id, or with the only id that starts with it;
    /// `last` is the newest run. An unknown id or an ambiguous prefix is an
    /// error that names the candidates.
    pub fn get(&self, id: &str) -> Result<RunResult, StoreError> {
        let id = self.resolve(id)?;
        let json: String = self
            .conn
            .query_row("SELECT result FROM runs WHERE id = ?1", [&id], |row| {
                row.get(0)
            })
            .map_err(|e| self.err(e))?;
        self.parse(&id, &json)
    }

    /// The full id a user's `id` (exact, unique prefix or `last`) stands for.
    pub fn resolve(&self, id: &str) -> Result<String, StoreError> {
        if id.is_empty() {
            return Err(StoreError::Invalid(
                "empty run id: give a run id, a unique prefix of one, or `last`".into(),
            ));
        }
        if id == "last" {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs
                     ORDER BY julianday(started_at) DESC, started_at DESC, id DESC LIMIT 1",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.err(e))?
                .ok_or_else(|| StoreError::Empty {
                    path: self.path.clone(),
                });
        }
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [id], |row| row.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(exact) = exact {
            return Ok(exact);
        }
        // Checked after the exact lookup: a run stored before ids were
        // checked is still reached by its full id (as `runs delete` looks
        // up what a prefix resolved to), and never by a prefix that breaks
        // the rule.
        check_run_id(id).map_err(StoreError::Invalid)?;
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, count(*) OVER () FROM runs WHERE substr(id, 1, length(?1)) = ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let matches = statement
            .query_map(params![id, MAX_CANDIDATES as i64], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        match matches.as_slice() {
            [] => Err(StoreError::NotFound {
                path: self.path.clone(),
                id: id.to_string(),
            }),
            [(only, _)] => Ok(only.clone()),
            [(_, total), ..] => Err(StoreError::Ambiguous {
                path: self.path.clone(),
                prefix: id.to_string(),
                total: uint(*total) as usize,
                candidates: matches.iter().map(|(id, _)| id.clone()).collect(),
            }),
        }
    }

    /// The runs of one campaign execution, in plan order (runs saved twice
    /// at one place of the plan in the order they started). Empty when no
    /// run has this execution id.
    pub fn campaign_runs(&self, execution: &str) -> Result<Vec<RunResult>, StoreError> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, result FROM runs WHERE execution = ?1
                 ORDER BY plan_index, julianday(started_at), started_at, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([execution], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.iter().map(|(id, json)| self.parse(id, json)).collect()
    }

    /// Deletes the run with exactly this id (no prefix: deleting is not
    /// undone), with its series and spikes.
    pub fn delete(&mut self, id: &str) -> Result<(), StoreError> {
        self.delete_all(&[id])
    }

    /// Deletes the runs with exactly these ids in one transaction: all of
    /// them, or (one is not there any more, an error, a crash) none.
    pub fn delete_all<S: AsRef<str>>(&mut self, ids: &[S]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for id in ids {
            let id = id.as_ref();
            let deleted = delete_rows(&tx, id).map_err(err)?;
            if deleted == 0 {
                return Err(StoreError::NotFound {
                    path: self.path.clone(),
                    id: id.to_string(),
                });
            }
        }
        tx.commit().map_err(err)
    }

    pub(crate) fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.err(e))
    }

    fn parse(&self, id: &str, json: &str) -> Result<RunResult, StoreError> {
        serde_json::from_str(json).map_err(|cause| StoreError::Corrupt {
            path: self.path.clone(),
            id: id.to_string(),
            cause,
        })
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.path, BUSY_TIMEOUT, e)
    }

    fn invalid_run(&self, run: &RunResult, reason: String) -> StoreError {
        StoreError::InvalidRun {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            reason,
        }
    }

    /// Switches the database to WAL mode (a no-op when it is already), and
    /// returns the journal mode SQLite then reports. Switching a new
    /// database needs it to itself for an instant, and SQLite answers
    /// "busy" at once rather than wait when another connection is opening
    /// it too: so retry here, up to the busy timeout.
    fn enter_wal(&self) -> Result<String, StoreError> {
        let start = std::time::Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match self
                .conn
                .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            {
                Ok(mode) => return Ok(mode),
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(rusqlite::ErrorCode::DatabaseBusy)
                            | Some(rusqlite::ErrorCode::DatabaseLocked)
                    ) && start.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    /// Refuses a file that is not an SQLite database (the first read of it
    /// fails) and the database of another program.
    fn check_identity(&self) -> Result<(), StoreError> {
        match foreign(&self.conn).map_err(|e| self.err(e))? {
            Some(detail) => Err(StoreError::Foreign {
                path: self.path.clone(),
                detail,
            }),
            None => Ok(()),
        }
    }

    /// Applies the migrations up to `target` in one transaction, each
    /// setting `user_version`. The version is read inside the transaction:
    /// another process may have migrated meanwhile.
    fn migrate(&mut self, target: u32) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        // One transaction for every step: a kill part way (a new store's
        // first write) leaves the store as it was, never at a version
        // between (which a read-only command would have to refuse).
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let current: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(err)?;
        let from = u32::try_from(current).unwrap_or(u32::MAX);
        if from >= target {
            return Ok(());
        }
        if let Some(detail) = foreign(&tx).map_err(err)? {
            return Err(StoreError::Foreign {
                path: self.path.clone(),
                detail,
            });
        }
        for migration in &migrations::MIGRATIONS[from as usize..target as usize] {
            let failed = |cause| StoreError::Migration {
                path: self.path.clone(),
                from,
                to: migration.version,
                description: migration.description,
                cause,
            };
            tx.execute_batch(migration.sql).map_err(failed)?;
            tx.pragma_update(None, "user_version", migration.version)
                .map_err(failed)?;
        }
        tx.commit().map_err(|cause| StoreError::Migration {
            path: self.path.clone(),
            from,
            to: target,
            description: "committing the migration",
            cause,
        })
    }
}

/// Why the database is not an rtlab result store, if it is not: another
/// application id, a schema version without rtlab's application id, or
/// tables without a schema version. An empty database is a new store.
fn foreign(conn: &Connection) -> rusqlite::Result<Option<String>> {
    // One statement, so one snapshot: another rtlab may be creating the
    // store right now (and sets all three in one transaction).
    let (application_id, version, tables): (i32, i64, i64) = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()),
                (SELECT user_version FROM pragma_user_version()),
                (SELECT count(*) FROM sqlite_schema
                 WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\')",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    if application_id != 0 && application_id != migrations::APPLICATION_ID {
        return Ok(Some(format!(
            "it is the SQLite database of another program (application id {application_id:#x})"
        )));
    }
    if version != 0 && application_id == 0 {
        return Ok(Some(format!(
            "it is an SQLite database of another program (schema version {version} without \
             rtlab's application id)"
        )));
    }
    if version == 0 && tables > 0 {
        return Ok(Some(
            "it is an SQLite database of another program (it has tables but no rtlab schema \
             version)"
                .into(),
        ));
    }
    Ok(None)
}

/// Deletes a run's rows (spikes, series, run), returning how many runs.
/// Explicit rather than by cascade alone, so it does not depend on the
/// connection's foreign-key setting.
fn delete_rows(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    // A store opened at an older schema (tests of the migrations) has no tags.
    let tags: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'tags'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if tags.is_some() {
        conn.execute("DELETE FROM tags WHERE run_id = ?1", [id])?;
    }
    conn.execute("DELETE FROM spikes WHERE run_id = ?1", [id])?;
    conn.execute("DELETE FROM series WHERE run_id = ?1", [id])?;
    conn.execute("DELETE FROM runs WHERE id = ?1", [id])
}

/// Inserts (or, for `update`, replaces the same running run with) one run
/// inside the caller's transaction.
fn write_in(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    run: &RunResult,
    encoded: &Encoded,
    update: bool,
) -> Result<(), StoreError> {
    let err = |e| StoreError::sqlite(path, BUSY_TIMEOUT, e);
    let campaign = run.campaign.as_ref();
    // Read in the transaction: another process may be saving too.
    let stored: Option<(String, String, String, i64)> = tx
        .query_row(
            &format!(
                "SELECT r.status, r.started_at, r.probe,
                     (SELECT {} FROM series WHERE run_id = r.id)
                 FROM runs AS r WHERE r.id = ?1",
                saturating_sum("samples")
            ),
            [&run.id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()
        .map_err(err)?;
    let same_run = |(status, started_at, probe, _): &(String, String, String, i64)| {
        status == "running" && *started_at == run.started_at && *probe == run.probe
    };
    match (&stored, update) {
        (None, false) => {}
        (Some(found), true) if same_run(found) => {
            delete_rows(tx, &run.id).map_err(err)?;
        }
        (None, true) => {
            return Err(StoreError::NotFound {
                path: path.to_path_buf(),
                id: run.id.clone(),
            })
        }
        (Some((status, started_at, probe, samples)), _) => {
            return Err(StoreError::Duplicate {
                path: path.to_path_buf(),
                id: run.id.clone(),
                stored: format!(
                    "{probe}, {status}, started {}, {samples} samples",
                    printable(started_at, 40)
                ),
            })
        }
    }
    tx.execute(
        "INSERT INTO runs (id, format, probe, status, host, started_at, ended_at, elapsed_ns,
                 command, config, environment, warnings, result,
                 campaign, execution, plan_index, plan_total, configuration, load, repeat, loads)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                 ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
        params![
            run.id,
            run.schema,
            run.probe,
            status_name(run.status),
            run.environment.hostname,
            run.started_at,
            run.ended_at,
            int(run.elapsed_ns),
            encoded.command,
            encoded.config,
            encoded.environment,
            encoded.warnings,
            encoded.result,
            campaign.map(|c| &c.name),
            campaign.map(|c| &c.execution),
            campaign.map(|c| int(c.index as u64)),
            campaign.map(|c| int(c.total as u64)),
            campaign.map(|c| &c.configuration),
            campaign.map(|c| &c.load),
            campaign.map(|c| c.repeat),
            encoded.loads,
        ],
    )
    .map_err(err)?;
    {
        let mut insert_series = tx
            .prepare_cached(
                "INSERT INTO series (run_id, position, name, metric, cpu, interval_ns,
                         samples, missed, dropped, min_ns, max_ns, mean_ns, stdev_ns,
                         p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, max_at_ns, max_sample,
                         histogram_ns, histogram_us)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                         ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            )
            .map_err(err)?;
        let mut insert_spike = tx
            .prepare_cached(
                "INSERT INTO spikes (run_id, series_index, series, rank, sample, at_ns,
                         latency_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(err)?;
        for (position, (series, (hist_ns, hist_us))) in
            run.series.iter().zip(&encoded.histograms).enumerate()
        {
            let stats = &series.stats;
            let p = &stats.percentiles_ns;
            insert_series
                .execute(params![
                    run.id,
                    position as i64,
                    series.name,
                    series.metric,
                    series.cpu.map(|c| int(c as u64)),
                    int(series.interval_ns),
                    int(stats.samples),
                    int(stats.missed),
                    int(stats.dropped),
                    int(stats.min_ns),
                    int(stats.max_ns),
                    stats.mean_ns,
                    stats.stdev_ns,
                    int(p.p50),
                    int(p.p90),
                    int(p.p99),
                    int(p.p99_9),
                    int(p.p99_99),
                    stats.max_at.map(|s| int(s.at_ns)),
                    stats.max_at.map(|s| int(s.sample)),
                    hist_ns,
                    hist_us,
                ])
                .map_err(err)?;
            for (rank, spike) in stats.top.iter().enumerate() {
                insert_spike
                    .execute(params![
                        run.id,
                        position as i64,
                        series.name,
                        rank as i64,
                        int(spike.sample),
                        int(spike.at_ns),
                        int(spike.latency_ns),
                    ])
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Refuses a path that is there but is not a regular file (after links):
/// SQLite would wait forever on a FIFO, read /dev/zero as an empty
/// database and migrate it, and say "disk I/O error" of a directory.
fn check_file_kind(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(md) = std::fs::metadata(path) else {
        return Ok(());
    };
    let kind = md.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(StoreError::Foreign {
        path: path.to_path_buf(),
        detail: format!("it is {what}, not a file"),
    })
}

/// The WAL file of the database at `path`.
fn wal_path(path: &Path) -> PathBuf {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// `file:` URI of a path, every byte outside the unreserved set escaped
/// (SQLite reads `?` and `#` in a URI as its query and fragment).
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn default_path_from(
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, StoreError> {
    let absolute = |value: Option<OsString>| value.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(data) = absolute(xdg_data_home) {
        return Ok(data.join("rtlab").join("results.db"));
    }
    if let Some(home) = absolute(home) {
        return Ok(home.join(".local/share/rtlab/results.db"));
    }
    Err(StoreError::NoDefaultPath)
}

/// A u64 as an SQLite integer. Columns saturate at i64::MAX (292 years in
/// ns); the run's JSON keeps the exact value.
/// SQL for the sum of an integer column that saturates at i64::MAX.
/// SQLite's sum() fails the whole query with 'integer overflow' instead,
/// and counts read from an imported file can be as large as i64::MAX (a
/// histfile's overflow line): `rtlab runs` then failed on that store for
/// good. total() sums in floating point, exact below 2^53 and 0.0 for no
/// rows, and CAST takes a real beyond i64 to i64::MAX.
fn saturating_sum(column: &str) -> String {
    format!("CAST(total({column}) AS INTEGER)")
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The JSON columns of a run, serialized before the transaction starts.
struct Encoded {
    result: String,
    command: String,
    config: String,
    environment: String,
    warnings: String,
    loads: String,
    /// `histogram_ns` and `histogram_us` of each series.
    histograms: Vec<(String, String)>,
}

impl Encoded {
    fn new(run: &RunResult) -> serde_json::Result<Encoded> {
        use serde_json::to_string;
        Ok(Encoded {
            result: to_string(run)?,
            command: to_string(&run.command)?,
            config: to_string(&run.config)?,
            environment: to_string(&run.environment)?,
            warnings: to_string(&run.warnings)?,
            loads: to_string(&run.loads)?,
            histograms: run
                .series
                .iter()
                .map(|s| {
                    Ok((
                        to_string(&s.stats.histogram_ns)?,
                        to_string(&s.stats.histogram_us)?,
                    ))
                })
                .collect::<serde_json::Result<_>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_prefers_xdg_data_home() {
        let path = default_path_from(Some("/data".into()), Some("/home/u".into())).unwrap();
        assert_eq!(path, PathBuf::from("/data/rtlab/results.db"));
    }

    #[test]
    fn default_path_falls_back_to_home() {
        let expected = PathBuf::from("/home/u/.local/share/rtlab/results.db");
        assert_eq!(
            default_path_from(None, Some("/home/u".into())).unwrap(),
            expected
        );
        // Empty or relative XDG_DATA_HOME is ignored, as the XDG spec says.
        assert_eq!(
            default_path_from(Some("".into()), Some("/home/u".into())).unwrap(),
            expected
        );
        assert_eq!(
            default_path_from(Some("rel".into()), Some("/home/u".into())).unwrap(),
            expected
        );
    }

    #[test]
    fn default_path_needs_xdg_data_home_or_home() {
        let error = default_path_from(None, None).unwrap_err();
        assert!(matches!(error, StoreError::NoDefaultPath));
        assert!(error.to_string().contains("--db"), "{error}");
        assert!(default_path_from(Some("".into()), Some("".into())).is_err());
    }

    #[test]
    fn status_names_are_the_serde_names() {
        for status in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Partial,
            RunStatus::Break,
            RunStatus::Failed,
        ] {
            let serde = serde_json::to_value(status).unwrap();
            assert_eq!(serde.as_str(), Some(status_name(status)));
            assert!(STATUSES.contains(&status_name(status)));
        }
    }

    #[test]
    fn migrations_are_numbered_in_order_and_mark_the_file() {
        for (index, migration) in migrations::MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version as usize, index + 1);
        }
        assert!(migrations::MIGRATIONS[0].sql.contains(&format!(
            "PRAGMA application_id = {};",
            migrations::APPLICATION_ID
        )));
    }

    #[test]
    fn a_store_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Store>();
        send::<StoreError>();
    }

    #[test]
    fn int_saturates() {
        assert_eq!(int(u64::MAX), i64::MAX);
        assert_eq!(int(5), 5);
        assert_eq!(uint(-1), 0);
    }
}
