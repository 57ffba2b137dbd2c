//! The changes of one focus in a journal that others may share (`exec
//! serve` records its own there): each entry this focus added is kept, so
//! that ending the focus undoes exactly those, newest first.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rtlab_core::journal::{Entry, Journal, JournalError, Restored};

use crate::model::FocusError;

pub(crate) struct Changes {
    journal: Arc<Mutex<Journal>>,
    mine: Vec<Entry>,
}

impl Changes {
    pub(crate) fn new(journal: Arc<Mutex<Journal>>) -> Changes {
        Changes {
            journal,
            mine: Vec::new(),
        }
    }

    /// Runs one journal operation; the entry it adds becomes this focus's.
    /// (Its error comes boxed: a `JournalError` is large.)
    pub(crate) fn record<T>(
        &mut self,
        op: impl FnOnce(&mut Journal) -> Result<T, Box<JournalError>>,
    ) -> Result<T, Box<JournalError>> {
        let mut journal = lock(&self.journal);
        let before = journal.entries().len();
        let result = op(&mut journal);
        if journal.entries().len() > before {
            if let Some(entry) = journal.entries().last() {
                self.mine.push(entry.clone());
            }
        }
        result
    }

    /// Runs a journal operation that ends one of this focus's changes.
    pub(crate) fn end_one<T>(&mut self, op: impl FnOnce(&mut Journal) -> T) -> T {
        let mut journal = lock(&self.journal);
        let result = op(&mut journal);
        let left = journal.entries().to_vec();
        drop(journal);
        self.mine.retain(|e| left.contains(e));
        result
    }

    /// Where process `pid` joined the partition from (None: it did not).
    pub(crate) fn origin_of(&self, pid: i32) -> Option<std::path::PathBuf> {
        self.mine.iter().find_map(|e| match e {
            Entry::CgroupProcess { pid: p, from, .. } if *p == pid => Some(from.clone()),
            _ => None,
        })
    }

    /// The processes that joined the partition and have not left.
    pub(crate) fn joined(&self) -> Vec<i32> {
        self.mine
            .iter()
            .filter_map(|e| match e {
                Entry::CgroupProcess { pid, .. } => Some(*pid),
                _ => None,
            })
            .collect()
    }

    /// Undoes this focus's changes, newest first; what fails stays in
    /// the journal (for `rtlab restore`) and is retried by a next call.
    pub(crate) fn undo(&mut self) -> Vec<Restored> {
        let mine = self.mine.clone();
        self.end_one(|journal| journal.undo(&mine))
    }
}

fn lock(journal: &Mutex<Journal>) -> MutexGuard<'_, Journal> {
    // A panic elsewhere while it was held leaves the journal usable:
    // each of its operations is complete or not done.
    journal.lock().unwrap_or_else(|p| p.into_inner())
}

/// Creates the cgroup directory `dir`, journaled first: on undo its tasks
/// go to `return_to` and it is removed. One that exists already is not
/// this focus's to remove: refused.
pub(crate) fn make_cgroup(
    changes: &mut Changes,
    dir: &Path,
    return_to: &Path,
    note: &str,
) -> Result<(), FocusError> {
    if dir.exists() {
        return Err(FocusError::Unavailable(format!(
            "{} exists already: this process holds a focus",
            dir.display()
        )));
    }
    changes
        .record(|j| j.note_cgroup_dir(dir, return_to, note).map_err(Box::new))
        .map_err(journal_error)?;
    std::fs::create_dir(dir)
        .map_err(|e| FocusError::Failed(format!("cannot create cgroup {}: {e}", dir.display())))
}

/// Writes a cgroup file: one of a cgroup this focus created (it goes with
/// the directory, so it needs no entry of its own), or one whose undo was
/// journaled before.
pub(crate) fn write_cgroup_file(path: &Path, value: &str) -> Result<(), FocusError> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{value}\n").as_bytes()))
        .map_err(|e| FocusError::Failed(format!("cannot write {value} to {}: {e}", path.display())))
}

/// A journal error as a focus error: another rtlab's hold on a file means
/// focusing is not available now; anything else is a failed step.
pub(crate) fn journal_error(e: Box<JournalError>) -> FocusError {
    match *e {
        JournalError::Conflict { .. } | JournalError::StaleConflict { .. } => {
            FocusError::Unavailable(e.to_string())
        }
        _ => FocusError::Failed(e.to_string()),
    }
}
