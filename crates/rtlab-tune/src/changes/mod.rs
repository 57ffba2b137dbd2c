//! The record of every change `rtlab tune` makes, kept so `rtlab tune undo`
//! can put things back.
//!
//! Unlike a run's journal (rtlab-core), these changes are meant to outlast
//! the command, so nothing is restored at exit. Each change is written to
//! the record *before* it is made. A thread is named by its id and start
//! time (and the boot), so undo never touches a thread that merely reuses
//! the id of one rtlab changed.

mod entry;
mod error;
mod record;
#[cfg(test)]
mod tests;
mod thread;
mod txn;
mod undo;

pub use entry::{Change, Entry};
pub use error::ChangeError;
pub use record::{default_dir, ChangeLog, SCHEMA};
pub use thread::ThreadOutcome;
pub use txn::Txn;
pub use undo::{UndoOutcome, UndoScope, Undone};
