//! Opening a store on a PostgreSQL server: connect (plain, within a
//! timeout), refuse a database that is not rtlab's or is newer than this
//! rtlab, and migrate it forward in one transaction under an advisory lock,
//! so that two hosts opening a new database at once do not race.

use std::cell::RefCell;
use std::path::Path;

use crate::error::StoreError;
use crate::location::{Location, PgTarget};
use crate::migrations;
use crate::open::{Conn, Store};

/// The advisory lock every rtlab takes to migrate (any fixed number: it
/// only has to be the same for every rtlab).
const MIGRATION_LOCK: i64 = 0x7274_6c62_5f6d_6967; // "rtlb_mig"

/// Settings of every session: times without an offset read as UTC (as
/// SQLite's julianday does), no notices on stderr.
const SESSION: &str = "SET TimeZone = 'UTC'; SET client_min_messages = warning;";

impl Store {
    /// Connects to the database of `target` and migrates it to schema
    /// `version` (if it is older).
    pub(crate) fn open_postgres(target: &PgTarget, version: u32) -> Result<Store, StoreError> {
        if version == 0 || version > migrations::LATEST {
            return Err(StoreError::Invalid(format!(
                "schema version {version} does not exist: this rtlab knows 1 to {}",
                migrations::LATEST
            )));
        }
        let mut store = connect(target, false)?;
        let found = store.schema_version()?;
        if found > migrations::LATEST {
            return Err(too_new(&store, found));
        }
        if found < version {
            store.migrate_postgres(version)?;
        }
        Ok(store)
    }

    /// Connects to the database of `target` for reading only (the session
    /// is read-only: nothing can be written); a database rtlab never wrote
    /// reads as an empty store.
    pub(crate) fn open_postgres_read_only(target: &PgTarget) -> Result<Store, StoreError> {
        let store = connect(target, true)?;
        store.readable_as_it_is()
    }

    /// Applies the migrations up to `target`, all in one transaction.
    fn migrate_postgres(&mut self, target: u32) -> Result<(), StoreError> {
        let path = self.path.clone();
        let Conn::Postgres(client) = &mut self.conn else {
            unreachable!("PostgreSQL's migrations on an SQLite store")
        };
        let err = |e: postgres::Error| StoreError::postgres(&path, &e);
        let mut tx = client.get_mut().transaction().map_err(err)?;
        // Another host may be creating or migrating the same database:
        // the second waits here, then finds the work done.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(err)?;
        let from = schema_version(&mut tx, &path)?;
        if from >= target {
            return Ok(());
        }
        if from > migrations::LATEST {
            return Err(StoreError::TooNew {
                path,
                found: from,
                known: migrations::LATEST,
            });
        }
        for migration in &migrations::MIGRATIONS[from as usize..target as usize] {
            let failed = |cause: postgres::Error| StoreError::Migration {
                path: path.clone(),
                from,
                to: migration.version,
                description: migration.description,
                cause: StoreError::postgres(&path, &cause).to_string(),
            };
            tx.batch_execute(migration.postgres).map_err(failed)?;
            tx.execute(
                "UPDATE rtlab_schema SET version = $1",
                &[&i64::from(migration.version)],
            )
            .map_err(failed)?;
        }
        tx.commit().map_err(|cause| StoreError::Migration {
            path: path.clone(),
            from,
            to: target,
            description: "committing the migration",
            cause: StoreError::postgres(&path, &cause).to_string(),
        })
    }
}

fn connect(target: &PgTarget, read_only: bool) -> Result<Store, StoreError> {
    let location = Location::Postgres(target.clone());
    let path = location.shown_path();
    let mut client = target
        .connect()
        .map_err(|e| StoreError::postgres(&path, &e))?;
    let mut session = SESSION.to_string();
    if read_only {
        session.push_str(" SET default_transaction_read_only = on;");
    }
    client
        .batch_execute(&session)
        .map_err(|e| StoreError::postgres(&path, &e))?;
    Ok(Store {
        path,
        location,
        conn: Conn::Postgres(RefCell::new(client)),
        read_only,
    })
}

fn too_new(store: &Store, found: u32) -> StoreError {
    StoreError::TooNew {
        path: store.path.clone(),
        found,
        known: migrations::LATEST,
    }
}

/// The schema version of the database: `rtlab_schema`'s, or 0 for a
/// database without tables. A database with tables but no such mark, or
/// a mark that is not one row of rtlab's, is another program's.
pub(crate) fn schema_version<C: postgres::GenericClient>(
    client: &mut C,
    path: &Path,
) -> Result<u32, StoreError> {
    let err = |e: postgres::Error| StoreError::postgres(path, &e);
    let foreign = |detail: String| StoreError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    // One statement, so one snapshot: another rtlab may be creating the
    // store right now.
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM information_schema.tables
                     WHERE table_schema = current_schema()),
                    EXISTS (SELECT 1 FROM information_schema.tables
                     WHERE table_schema = current_schema() AND table_name = 'rtlab_schema')",
            &[],
        )
        .map_err(err)?;
    let (tables, marked): (i64, bool) = (row.get(0), row.get(1));
    if !marked {
        return match tables {
            0 => Ok(0),
            n => Err(foreign(format!(
                "its database has {n} tables but no rtlab_schema table: it is another \
                 program's (give rtlab a database of its own)"
            ))),
        };
    }
    let rows = client
        .query(
            "SELECT application::text, version::bigint FROM rtlab_schema",
            &[],
        )
        .map_err(err)?;
    let [row] = rows.as_slice() else {
        return Err(foreign(format!(
            "its rtlab_schema table has {} rows, not one",
            rows.len()
        )));
    };
    let application: Option<String> = row.get(0);
    let version: Option<i64> = row.get(1);
    match (application.as_deref(), version) {
        (Some("rtlab"), Some(version)) => {
            u32::try_from(version).map_err(|_| foreign(format!("its schema version is {version}")))
        }
        _ => Err(foreign(
            "its rtlab_schema table does not name rtlab with a version".into(),
        )),
    }
}
