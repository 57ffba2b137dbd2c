//! rtlab's result store: every run, its latency series and their spikes in
//! an embedded SQLite database, or in a PostgreSQL database shared by a lab
//! or a fleet (docs/store.md).
//!
//! - Where: a [`Location`], parsed once from `--db` / `RTLAB_DB`: a file,
//!   or a `postgres://` URL (shown everywhere without its password).
//! - One [`Store`] API on both: the statements differ per dialect
//!   (db.rs), the logic around them is written once.
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
mod columns;
mod db;
mod error;
mod location;
mod migrations;
mod open;
mod pg;
mod pg_schema;
mod push;
mod query;
mod tags;
mod unsaved;
mod write;

pub use check::CheckReport;
pub use columns::{status_name, STATUSES};
pub use db::BUSY_TIMEOUT;
pub use error::StoreError;
pub use location::{is_postgres_url, redact, redact_args, Location, PgTarget, CONNECT_TIMEOUT};
pub use migrations::LATEST as SCHEMA_VERSION;
pub use open::{Store, READ_ONLY_OLDEST};
pub use push::{kept_dir, PushFailure, PushReport};
pub use query::{RunFilter, RunSummary};
pub use tags::{check_tag, TAG_MAX_LEN};
pub use unsaved::{
    choose_unsaved_dirs, keep_unsaved, keep_unsaved_in, unsaved_dir, unsaved_dirs, Kept, UnsavedDir,
};
pub use write::RECONNECT_FOR;
