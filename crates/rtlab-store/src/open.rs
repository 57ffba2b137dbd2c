//! Opening a store: the file checked, WAL mode, the schema identified and
//! migrated forward (or read as it is, read-only). A PostgreSQL store is
//! opened by postgres.rs; both end as one [`Store`].

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::db::{DbError, Dialect, Lite, Sql, Value, BUSY_TIMEOUT};
use crate::error::StoreError;
use crate::location::Location;
use crate::migrations;

/// The oldest schema [`Store::open_read_only`] reads without migrating: 2
/// has every column the listing reads; 3 only adds tags.
pub const READ_ONLY_OLDEST: u32 = 2;

/// An open result store. Not shared between threads: open one per thread
/// (or process); they coordinate through SQLite's locks or PostgreSQL's
/// transactions.
pub struct Store {
    /// The file, or the PostgreSQL URL without its password: what
    /// messages name ([`Location::shown_path`]).
    pub(crate) path: PathBuf,
    pub(crate) location: Location,
    pub(crate) conn: Conn,
    /// Opened with [`Store::open_read_only`]: nothing may be written.
    pub(crate) read_only: bool,
}

/// The connection of a store. PostgreSQL's client takes `&mut` even to
/// read, and a store reads through `&self`: hence the cell (a store is
/// used by one thread at a time).
pub(crate) enum Conn {
    Sqlite(Connection),
    Postgres(RefCell<postgres::Client>),
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
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| StoreError::sqlite(path, BUSY_TIMEOUT, e))?;
        let mut store = Store::sqlite(path, conn, false);
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
            .lite()
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
            .lite()
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
            return Store::empty_in_memory(&Location::File(path.to_path_buf()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let open = |uri: &str| -> Result<Store, StoreError> {
            let conn = Connection::open_with_flags(uri, flags)
                .map_err(|e| StoreError::sqlite(path, BUSY_TIMEOUT, e))?;
            conn.busy_timeout(BUSY_TIMEOUT)
                .map_err(|e| StoreError::sqlite(path, BUSY_TIMEOUT, e))?;
            let store = Store::sqlite(path, conn, true);
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
        store.readable_as_it_is()
    }

    /// A store opened read-only, checked: one never written reads as an
    /// empty store, one too new or too old to read as it is is refused.
    pub(crate) fn readable_as_it_is(self) -> Result<Store, StoreError> {
        let found = self.schema_version()?;
        if found == 0 {
            return Store::empty_in_memory(&self.location);
        }
        if found > migrations::LATEST {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                known: migrations::LATEST,
            });
        }
        if found < READ_ONLY_OLDEST {
            return Err(StoreError::NeedsMigration {
                path: self.path.clone(),
                found,
                latest: migrations::LATEST,
            });
        }
        Ok(self)
    }

    /// An empty store at the latest schema in memory, named as
    /// `location`, for reading a store that does not exist yet.
    fn empty_in_memory(location: &Location) -> Result<Store, StoreError> {
        let mut store = Store::open(Path::new(":memory:"))?;
        store.path = location.shown_path();
        store.location = location.clone();
        store.read_only = true;
        Ok(store)
    }

    fn sqlite(path: &Path, conn: Connection, read_only: bool) -> Store {
        Store {
            path: path.to_path_buf(),
            location: Location::File(path.to_path_buf()),
            conn: Conn::Sqlite(conn),
            read_only,
        }
    }

    /// Opens (creating, migrating) the store at `location`: [`Store::open`]
    /// for a file, `Store::open_postgres` for a database.
    pub fn open_location(location: &Location) -> Result<Store, StoreError> {
        Store::open_location_at_version(location, migrations::LATEST)
    }

    /// [`Store::open_location`], migrating only up to `version` (tests).
    #[doc(hidden)]
    pub fn open_location_at_version(
        location: &Location,
        version: u32,
    ) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open_at_version(path, version),
            Location::Postgres(pg) => Store::open_postgres(pg, version),
        }
    }

    /// Opens the store at `location` read-only ([`Store::open_read_only`]).
    pub fn open_location_read_only(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open_read_only(path),
            Location::Postgres(pg) => Store::open_postgres_read_only(pg),
        }
    }

    /// The file, or the PostgreSQL URL without its password.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The SQLite connection (only an SQLite store calls this).
    pub(crate) fn lite(&self) -> &Connection {
        match &self.conn {
            Conn::Sqlite(conn) => conn,
            Conn::Postgres(_) => unreachable!("an SQLite statement on a PostgreSQL store"),
        }
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match &self.conn {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `f` on the store's connection; its error names the store.
    pub(crate) fn read<R>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<R, DbError>,
    ) -> Result<R, StoreError> {
        let result = match &self.conn {
            Conn::Sqlite(conn) => f(&mut Lite(conn)),
            Conn::Postgres(client) => f(&mut *client.borrow_mut()),
        };
        result.map_err(|e| self.db_err(e))
    }

    /// Runs `f` in one transaction that takes the write lock at once
    /// (SQLite's IMMEDIATE: a writer waits for another one's up to the
    /// busy timeout instead of failing at its first write), committed when
    /// `f` succeeds, rolled back otherwise.
    pub(crate) fn transaction<R>(
        &mut self,
        f: impl FnOnce(&mut dyn Sql, &Path) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let path = self.path.clone();
        let err = |e: DbError| StoreError::from_db(&path, e);
        match &mut self.conn {
            Conn::Sqlite(conn) => {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| err(e.into()))?;
                let result = f(&mut Lite(&tx), &path)?;
                tx.commit().map_err(|e| err(e.into()))?;
                Ok(result)
            }
            Conn::Postgres(client) => {
                let mut tx = client.get_mut().transaction().map_err(|e| err(e.into()))?;
                let result = f(&mut tx, &path)?;
                tx.commit().map_err(|e| err(e.into()))?;
                Ok(result)
            }
        }
    }

    pub(crate) fn db_err(&self, e: DbError) -> StoreError {
        StoreError::from_db(&self.path, e)
    }

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The schema version of the database (`PRAGMA user_version`, or
    /// PostgreSQL's `rtlab_schema` table; 0 for a new database).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        if let Conn::Postgres(client) = &self.conn {
            return crate::pg_schema::schema_version(&mut *client.borrow_mut(), &self.path);
        }
        let version: i64 = self
            .lite()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.err(e))?;
        // user_version is a signed 32-bit field; a negative one is not ours.
        u32::try_from(version).map_err(|_| StoreError::Foreign {
            path: self.path.clone(),
            detail: format!("its schema version is {version}"),
        })
    }

    pub(crate) fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        let sql = self.dialect().table_exists();
        self.read(|db| Ok(db.row(sql, &[Value::from(name)])?.is_some()))
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.path, BUSY_TIMEOUT, e)
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
                .lite()
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
        match foreign(self.lite()).map_err(|e| self.err(e))? {
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
        let Conn::Sqlite(conn) = &mut self.conn else {
            unreachable!("SQLite's migrations on a PostgreSQL store")
        };
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        // One transaction for every step: a kill part way (a new store's
        // first write) leaves the store as it was, never at a version
        // between (which a read-only command would have to refuse).
        let tx = conn
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
                path: path.clone(),
                detail,
            });
        }
        migrations::run_steps(&path, from, target, |migration| {
            tx.execute_batch(migration.sqlite)?;
            tx.pragma_update(None, "user_version", migration.version)
        })?;
        tx.commit().map_err(|cause| {
            migrations::failed(&path, from, target, "committing the migration", cause)
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
    fn migrations_are_numbered_in_order_and_mark_the_file() {
        for (index, migration) in migrations::MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version as usize, index + 1);
        }
        assert!(migrations::MIGRATIONS[0].sqlite.contains(&format!(
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
}
