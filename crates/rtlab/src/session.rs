//! The result store every command opens, and the hidden subcommand load
//! workers run as (the rest of a measuring session is `rtlab_run::begin`).

use crate::input::InputError;
use rtlab_store::{Location, Store};
use std::path::Path;

/// Hidden subcommand a load worker runs as (the command line's name for
/// it, run by commands/load.rs): what `rtlab_run::begin` is given to start
/// loads with.
pub const LOAD_WORKER: &str = "__load-worker";

/// Where the store is: `--db` (whose default is `RTLAB_DB`, see
/// `cli::StoreArgs`), a file or a PostgreSQL URL, else the default file.
/// A URL that does not parse is bad input naming the flag or variable it
/// came from, never its password.
pub fn store_location(db: Option<&Path>) -> anyhow::Result<Location> {
    match db {
        Some(given) => Location::parse(given).map_err(|e| {
            let from_env = std::env::var_os("RTLAB_DB").is_some_and(|v| Path::new(&v) == given);
            let flag = if from_env { "RTLAB_DB" } else { "--db" };
            InputError(format!("{flag}: {e}")).into()
        }),
        None => Store::default_path()
            .map(Location::File)
            .map_err(|e| InputError(format!("{e} (or give --db PATH|URL)")).into()),
    }
}

/// The command line as results record it (`RunResult.command`): a
/// PostgreSQL URL given to `--db` without its password.
pub fn recorded_command() -> Vec<String> {
    rtlab_store::redact_args(std::env::args())
}

/// Opens the store at `--db` or the default place (creating and migrating
/// it). One that cannot be opened is bad input: it fails before anything
/// is measured.
pub fn open_store(db: Option<&Path>) -> anyhow::Result<Store> {
    let location = store_location(db)?;
    Store::open_location(&location).map_err(|e| anyhow::Error::new(InputError(e.to_string())))
}

/// Opens the store at `--db` or the default place for writing, but only
/// one that exists: deleting or tagging runs of a store with none refuses
/// without creating it (`runs tag last x` with a mistyped --db left a new
/// empty store there). A PostgreSQL database exists when one can connect
/// to it (a mistyped name cannot).
pub fn open_existing_store(db: Option<&Path>) -> anyhow::Result<Store> {
    let location = store_location(db)?;
    if let Location::File(path) = &location {
        if !path.exists() {
            let path = path.clone();
            return Err(InputError(rtlab_store::StoreError::NoStore { path }.to_string()).into());
        }
    }
    Store::open_location(&location).map_err(|e| anyhow::Error::new(InputError(e.to_string())))
}

/// Opens the store at `--db` or the default place for reading only:
/// never created, migrated nor written (see `Store::open_read_only`), so
/// a store one may read but not write can be listed and shown. Every
/// failure is bad input (exit 2) with the store's own message; a server
/// that cannot be reached fails within its connect timeout.
pub fn open_store_read_only(db: Option<&Path>) -> anyhow::Result<Store> {
    let location = store_location(db)?;
    let store = Store::open_location_read_only(&location)
        .map_err(|e| anyhow::Error::new(InputError(e.to_string())))?;
    let version = store.schema_version()?;
    if version < rtlab_store::SCHEMA_VERSION {
        eprintln!(
            "note: result store {} has schema version {version}, older than this rtlab's {}: \
             it is read as it is (without what later versions add); the next command that \
             writes to it migrates it",
            store.path().display(),
            rtlab_store::SCHEMA_VERSION
        );
    }
    Ok(store)
}

/// Stores the runs kept for a PostgreSQL `store` while it could not be
/// reached (`rtlab store push`), saying what happened on stderr; a store
/// still unreachable leaves them for `rtlab store push`. For a file store
/// nothing: its kept runs go in with `rtlab import`.
pub fn push_kept(store: &mut Store) {
    if !matches!(store.location(), Location::Postgres(_)) {
        return;
    }
    match store.push_kept(&rtlab_store::unsaved_dirs()) {
        Ok(report) => {
            let pushed = report.stored.len() + report.already.len();
            if pushed > 0 {
                eprintln!(
                    "stored {pushed} run(s) kept while {} could not be reached",
                    store.path().display()
                );
            }
            for failure in &report.failed {
                eprintln!(
                    "warning: kept run {} was not stored: {}",
                    failure.file.display(),
                    rtlab_core::result::terminal_text(&failure.reason)
                );
            }
        }
        Err(e) => eprintln!(
            "note: the runs kept for {} stay kept ({e}): store them with `rtlab store push`",
            store.path().display()
        ),
    }
}
