//! What the record holds: one entry per change, a thread's or a file's.

use crate::task::{self, Settings};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A thread's scheduling and affinity.
    Thread {
        pid: i32,
        tid: i32,
        starttime: u64,
        name: String,
        process_name: String,
        old: Settings,
        new: Settings,
    },
    /// A file rtlab wrote (a systemd drop-in or unit); `old` is None when
    /// the file did not exist, and undo then removes it.
    File {
        path: PathBuf,
        old: Option<String>,
        new: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Which command made it: one number per `rtlab tune` invocation.
    pub txn: u64,
    /// RFC 3339 UTC.
    pub at: String,
    pub command: String,
    pub boot_id: Option<String>,
    #[serde(flatten)]
    pub change: Change,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.change {
            Change::Thread {
                pid,
                tid,
                name,
                old,
                new,
                ..
            } => write!(f, "thread {pid}/{tid} ({name}): {old} -> {new}"),
            Change::File { path, old, .. } => write!(
                f,
                "file {} ({})",
                path.display(),
                if old.is_some() { "replaced" } else { "created" }
            ),
        }
    }
}

/// Whether an entry's thread (or file) can still be restored.
pub(super) fn still_there(entry: &Entry, this_boot: Option<&str>) -> bool {
    match &entry.change {
        Change::File { .. } => true,
        Change::Thread { tid, starttime, .. } => {
            entry.boot_id.as_deref() == this_boot && task::starttime_of(*tid) == Some(*starttime)
        }
    }
}
