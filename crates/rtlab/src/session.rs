//! The result store every command opens, and the hidden subcommand load
//! workers run as (the rest of a measuring session is `rtlab_run::begin`).

use crate::input::InputError;
use rtlab_store::Store;
use std::path::Path;

/// Hidden subcommand a load worker runs as (the command line's name for
/// it, run by commands/load.rs): what `rtlab_run::begin` is given to start
/// loads with.
pub const LOAD_WORKER: &str = "__load-worker";

/// Opens the store at `--db PATH` or the default place. A path that cannot
/// be opened is bad input: it fails before anything is measured.
pub fn open_store(db: Option<&Path>) -> anyhow::Result<Store> {
    let path = match db {
        Some(path) => path.to_path_buf(),
        None => {
            Store::default_path().map_err(|e| InputError(format!("{e} (or give --db PATH)")))?
        }
    };
    Store::open(&path).map_err(|e| anyhow::Error::new(InputError(e.to_string())))
}

/// Opens the store at `--db PATH` or the default place for writing, but
/// only one that exists: deleting or tagging runs of a store with none
/// refuses without creating it (`runs tag last x` with a mistyped --db
/// left a new empty store there).
pub fn open_existing_store(db: Option<&Path>) -> anyhow::Result<Store> {
    let path = match db {
        Some(path) => path.to_path_buf(),
        None => {
            Store::default_path().map_err(|e| InputError(format!("{e} (or give --db PATH)")))?
        }
    };
    if !path.exists() {
        return Err(InputError(rtlab_store::StoreError::NoStore { path }.to_string()).into());
    }
    open_store(Some(&path))
}

/// Opens the store at `--db PATH` or the default place for reading only:
/// never created, migrated nor written (see `Store::open_read_only`), so
/// a store one may read but not write can be listed and shown. Every
/// failure is bad input (exit 2) with the store's own message.
pub fn open_store_read_only(db: Option<&Path>) -> anyhow::Result<Store> {
    let path = match db {
        Some(path) => path.to_path_buf(),
        None => {
            Store::default_path().map_err(|e| InputError(format!("{e} (or give --db PATH)")))?
        }
    };
    let store =
        Store::open_read_only(&path).map_err(|e| anyhow::Error::new(InputError(e.to_string())))?;
    let version = store.schema_version()?;
    if version < rtlab_store::SCHEMA_VERSION {
        eprintln!(
            "note: result store {} has schema version {version}, older than this rtlab's {}: \
             it is read as it is (without tags); the next command that writes to it migrates it",
            store.path().display(),
            rtlab_store::SCHEMA_VERSION
        );
    }
    Ok(store)
}
