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
        let from = crate::pg_schema::schema_version(&mut tx, &path)?;
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
        migrations::run_steps(&path, from, target, |migration| {
            tx.batch_execute(migration.postgres).map_err(pg_cause)?;
            tx.execute(
                "UPDATE rtlab_schema SET version = $1",
                &[&i64::from(migration.version)],
            )
            .map(drop)
            .map_err(pg_cause)
        })?;
        tx.commit().map_err(|cause| {
            migrations::failed(
                &path,
                from,
                target,
                "committing the migration",
                pg_cause(cause),
            )
        })
    }
}

/// The server's own text of an error (no store name: the migration's
/// message has it).
fn pg_cause(e: postgres::Error) -> String {
    match StoreError::postgres(Path::new(""), &e) {
        StoreError::Postgres { cause, .. } | StoreError::Unreachable { cause, .. } => cause,
        other => other.to_string(),
    }
}

fn connect(target: &PgTarget, read_only: bool) -> Result<Store, StoreError> {
    let location = Location::Postgres(target.clone());
    let path = location.shown_path();
    let mut client = target.connect(&path)?;
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
