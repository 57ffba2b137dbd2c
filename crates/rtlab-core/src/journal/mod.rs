//! The system-change journal.
//!
//! Every change rtlab makes to the host (sysctls, sysfs values, ...) is first
//! recorded durably in a per-process journal file, then made. Objects
//! rtlab creates that would outlive it (a SysV semaphore set) are recorded
//! as soon as they exist, before they are used. The journal is
//! replayed backwards on normal exit (`Drop`), on panic
//! ([`install_panic_restore`]) and, after SIGKILL or power loss, by
//! [`recover_stale`] (`rtlab restore`, also run at every start:
//! [`recover_stale_in_state_dir`]).

mod affinity;
mod cgroup;
mod conflict;
mod entry;
mod error;
mod file;
mod focus_notes;
mod notes;
mod owner;
mod panic;
mod record;
mod recover;
mod socket;
mod state_dir;
mod sysv;
#[cfg(test)]
mod testutil;
mod thread;
mod value;

// This file only declares and re-exports: the files import what they share
// from one another, never from here (no import circle).

pub use cgroup::{cgroup_procs, move_to_cgroup};
pub use entry::{Entry, Outcome, Recovered, Restored, ThreadAffinity};
pub use error::JournalError;
pub use file::SCHEMA;
pub use owner::Owner;
pub use panic::install_panic_restore;
pub use record::Journal;
pub use recover::{recover_stale, recover_stale_in_state_dir};
pub use state_dir::{lock_dir, state_dir, DirLock};
pub use sysv::{remove_sysv_sem_set, SysvSemSet};
pub use thread::ForeignThread;
pub use value::parse_sysctl;
