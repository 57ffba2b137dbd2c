//! What every measuring command sets up once per process: restore what a
//! killed rtlab left changed, a journal restored on exit, panic and
//! signal, and how loads are started; and the result store.

use crate::input::InputError;
use anyhow::Context;
use rtlab_campaign::runner::RunContext;
use rtlab_core::journal::{self, Journal};
use rtlab_load::Launcher;
use rtlab_store::Store;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Hidden subcommand a load worker runs as (see commands/load.rs).
pub const LOAD_WORKER: &str = "__load-worker";

pub fn begin() -> anyhow::Result<RunContext> {
    for recovered in journal::recover_stale(&journal::state_dir()) {
        eprintln!("restore: {recovered}");
    }
    let journal = Arc::new(Mutex::new(Journal::for_this_process()));
    journal::install_panic_restore(Arc::clone(&journal));
    let stop = Arc::new(AtomicBool::new(false));
    crate::signals::install(Arc::clone(&stop), Arc::clone(&journal))
        .context("installing signal handlers")?;
    let launcher = Launcher::this_executable(&[LOAD_WORKER])
        .context("finding rtlab's own executable to start loads with")?;
    Ok(RunContext {
        journal,
        stop,
        launcher,
    })
}

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
