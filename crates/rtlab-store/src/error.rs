//! The store's errors. Every message is complete on its own (it is printed
//! as is to the user): it names the database file where there is one and,
//! where there is one, what to do about it. Underlying errors are part of
//! the message rather than a `source()` chain, so `{:#}` prints them once.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "cannot tell where to keep results: neither XDG_DATA_HOME nor HOME is set to an absolute \
         path; set one of them or pass --db PATH"
    )]
    NoDefaultPath,

    #[error("cannot create the directory {} for the result store: {cause}", path.display())]
    CreateDir {
        path: PathBuf,
        cause: std::io::Error,
    },

    #[error("{} is not an rtlab result store: it is not an SQLite database; pass another --db PATH", path.display())]
    NotADatabase { path: PathBuf },

    #[error("{} is not an rtlab result store: {detail}; pass another --db PATH", path.display())]
    Foreign { path: PathBuf, detail: String },

    #[error(
        "result store {} has schema version {found}, but this rtlab ({}) knows versions up to \
         {known}: it was written by a newer rtlab; use that one, or pass another --db PATH \
         (the file was not changed)",
        path.display(), rtlab_core::VERSION
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        known: u32,
    },

    #[error(
        "cannot migrate result store {} from schema version {from} to {to} ({description}): \
         {cause}; the database was left at version {from}",
        path.display()
    )]
    Migration {
        path: PathBuf,
        from: u32,
        to: u32,
        description: &'static str,
        cause: String,
    },

    #[error(
        "result store {} is busy: another process held it for more than {} s ({cause}); \
         try again when it is done",
        path.display(), waited.as_secs()
    )]
    Locked {
        path: PathBuf,
        waited: Duration,
        cause: rusqlite::Error,
    },

    #[error("result store {}: {cause}{}", path.display(), sqlite_hint(cause))]
    Sqlite {
        path: PathBuf,
        cause: rusqlite::Error,
    },

    /// The PostgreSQL server refused a statement (not a connection problem).
    #[error("result store {}: {cause}", path.display())]
    Postgres { path: PathBuf, cause: String },

    /// The PostgreSQL server could not be reached, or the connection
    /// dropped: a save retries, then keeps the run ([`Store::save_or_keep`]).
    ///
    /// [`Store::save_or_keep`]: crate::Store::save_or_keep
    #[error(
        "cannot reach result store {}: {cause}; check that the server runs and that the URL \
         names its host or socket directory, user and database (--db or RTLAB_DB)",
        path.display()
    )]
    Unreachable { path: PathBuf, cause: String },

    #[error("no run `{id}` in result store {}", path.display())]
    NotFound { path: PathBuf, id: String },

    #[error("no runs in result store {} yet", path.display())]
    Empty { path: PathBuf },

    #[error(
        "run id `{prefix}` is ambiguous in result store {}: it matches {total} runs: {}; give more \
         characters",
        path.display(), candidate_list(candidates, *total)
    )]
    Ambiguous {
        path: PathBuf,
        prefix: String,
        /// The first matches, in id order.
        candidates: Vec<String>,
        /// How many runs match in all.
        total: usize,
    },

    #[error("run {id} in result store {} cannot be read: {cause}", path.display())]
    Corrupt {
        path: PathBuf,
        id: String,
        cause: serde_json::Error,
    },

    #[error("run `{id}` cannot be stored in {}: {reason}", path.display())]
    InvalidRun {
        path: PathBuf,
        id: String,
        reason: String,
    },

    #[error(
        "run `{id}` is already in result store {} ({stored}): a run is never replaced by \
         another with the same id; import it with --new-id to keep both",
        path.display()
    )]
    Duplicate {
        path: PathBuf,
        id: String,
        /// What the stored run is (probe, status, start, samples).
        stored: String,
    },

    #[error(
        "no result store at {}: nothing was stored there yet (or pass another --db PATH)",
        path.display()
    )]
    NoStore { path: PathBuf },

    #[error(
        "result store {} has schema version {found}, older than this rtlab's {latest}: a \
         command that only reads does not migrate it; run one that writes (e.g. `rtlab import` \
         or `rtlab runs tag`) as a user who may write the file, then try again",
        path.display()
    )]
    NeedsMigration {
        path: PathBuf,
        found: u32,
        latest: u32,
    },

    #[error(
        "run {id} was not stored in {}: {cause}; {}",
        path.display(),
        match (kept, push) {
            (Ok(kept), true) => format!(
                "it was kept in {kept} instead: store it with `rtlab store push --db {}` once \
                 the server can be reached",
                path.display()
            ),
            (Ok(kept), false) => format!(
                "it was kept in {kept} instead: store it with `rtlab import {}` once the \
                 store can be written",
                kept.file.display()
            ),
            (Err(why), _) => format!("keeping it in a file failed too ({why})"),
        }
    )]
    Unsaved {
        path: PathBuf,
        id: String,
        cause: Box<StoreError>,
        /// The file the run was kept in, or why it could not be written.
        kept: Result<crate::unsaved::Kept, String>,
        /// The store is a PostgreSQL database: `rtlab store push` stores
        /// the runs kept for it.
        push: bool,
    },

    /// A filter or id the store cannot use: the message says what was expected.
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    /// Wraps an SQLite error on the database at `path`, recognising the
    /// cases a user can act on (not a database, busy for too long).
    pub(crate) fn sqlite(path: &std::path::Path, busy: Duration, cause: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        match cause.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => StoreError::NotADatabase { path },
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Locked {
                path,
                waited: busy,
                cause,
            },
            _ => StoreError::Sqlite { path, cause },
        }
    }
}

impl StoreError {
    /// Names the store in an error of either database: a PostgreSQL error
    /// that is about the connection (refused, dropped, the server shutting
    /// down) is [`StoreError::Unreachable`], one the server gave for a
    /// statement [`StoreError::Postgres`].
    pub(crate) fn from_db(path: &std::path::Path, e: crate::db::DbError) -> Self {
        use crate::db::DbError;
        match e {
            DbError::Sqlite(e) => StoreError::sqlite(path, crate::db::BUSY_TIMEOUT, e),
            DbError::Postgres(e) => StoreError::postgres(path, &e),
            DbError::Type(why) => StoreError::Postgres {
                path: path.to_path_buf(),
                cause: why,
            },
        }
    }

    pub(crate) fn postgres(path: &std::path::Path, e: &postgres::Error) -> Self {
        let path = path.to_path_buf();
        let connection = match e.as_db_error() {
            // 08: connection exception; 57P: the server shutting down or
            // not accepting connections yet.
            Some(db) => {
                let code = db.code().code();
                code.starts_with("08") || code.starts_with("57P")
            }
            None => {
                e.is_closed()
                    || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
                    || e.to_string().contains("timed out")
            }
        };
        // The client's own text: it holds no password (only server and
        // connection messages), and a server's detail is kept as given.
        let cause = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.severity(), db.message()),
            // "error connecting to server" alone does not say why.
            None => match std::error::Error::source(e) {
                Some(source) => format!("{e}: {source}"),
                None => e.to_string(),
            },
        };
        match connection {
            true => StoreError::Unreachable { path, cause },
            false => StoreError::Postgres { path, cause },
        }
    }

    /// Whether a retry on a new connection may succeed.
    pub fn is_connection(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }
}

fn sqlite_hint(cause: &rusqlite::Error) -> &'static str {
    match cause.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::PermissionDenied) => {
            " (check the permissions of the file, its -wal/-shm files and its directory)"
        }
        Some(ErrorCode::CannotOpen) => " (check that the path is a file in a writable directory)",
        Some(ErrorCode::DiskFull) => " (the disk is full)",
        Some(ErrorCode::DatabaseCorrupt) => {
            " (the file is damaged: `sqlite3 FILE .recover` may save its contents)"
        }
        _ => "",
    }
}

fn candidate_list(candidates: &[String], total: usize) -> String {
    let mut list = candidates.join(", ");
    if total > candidates.len() {
        list.push_str(&format!(" and {} more", total - candidates.len()));
    }
    list
}
