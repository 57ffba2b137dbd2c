//! Taking changes back, newest first.

use super::entry::{Change, Entry};
use super::error::ChangeError;
use super::record::{write_atomically, ChangeLog};
use super::thread::{write_to, Missed};
use crate::task::{self, Settings};
use rtlab_core::process::boot_id;
use serde::Serialize;
use std::fs;
use std::io;

/// Which changes `undo` takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UndoScope {
    /// Those of the most recent command that still has some.
    Last,
    /// Those of one command (a command taking back its own work).
    Txn(u64),
    All,
}

/// What undo did (or, in a dry run, would do) with one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum UndoOutcome {
    Restored,
    /// The thread has ended (or the id now names another thread, or the
    /// machine rebooted): nothing to restore.
    Gone,
    /// Someone changed it after rtlab did; left alone unless forced.
    ChangedSince {
        now: String,
    },
    Failed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Undone {
    pub entry: Entry,
    #[serde(flatten)]
    pub outcome: UndoOutcome,
}

impl ChangeLog {
    /// Takes back changes, newest first. Restored and gone entries leave
    /// the record; the others stay for a later try (or `force`).
    pub fn undo(
        &self,
        scope: UndoScope,
        force: bool,
        dry_run: bool,
    ) -> Result<Vec<Undone>, ChangeError> {
        let _lock = self.lock()?;
        let mut record = self.read()?;
        let chosen_txn = match scope {
            UndoScope::All => None,
            UndoScope::Txn(txn) => Some(txn),
            UndoScope::Last => match record.entries.iter().map(|e| e.txn).max() {
                Some(txn) => Some(txn),
                None => return Ok(Vec::new()),
            },
        };
        let this_boot = boot_id();
        let mut done = Vec::new();
        let mut keep = vec![true; record.entries.len()];
        let in_scope = |e: &Entry| chosen_txn.is_none_or(|t| e.txn == t);
        let chains = chains(&record.entries, &in_scope);
        // What became of the older changes of a chain, settled with its
        // newest.
        let mut settled: std::collections::HashMap<usize, UndoOutcome> = Default::default();
        for (i, entry) in record.entries.iter().enumerate().rev() {
            if !in_scope(entry) {
                continue;
            }
            let outcome = if let Some(outcome) = settled.remove(&i) {
                outcome
            } else if let Some(older) = chains.get(&i) {
                // One write, to the oldest settings of the chain.
                let mut whole = entry.clone();
                if let (
                    Change::Thread { old, .. },
                    Some(Entry {
                        change: Change::Thread { old: first, .. },
                        ..
                    }),
                ) = (&mut whole.change, older.last().map(|&j| &record.entries[j]))
                {
                    *old = first.clone();
                }
                let outcome = undo_one(&whole, this_boot.as_deref(), force, dry_run);
                if matches!(outcome, UndoOutcome::ChangedSince { .. }) {
                    // Changed since by someone else: each on its own.
                    undo_one(entry, this_boot.as_deref(), force, dry_run)
                } else {
                    for &j in older {
                        settled.insert(j, outcome.clone());
                    }
                    outcome
                }
            } else {
                undo_one(entry, this_boot.as_deref(), force, dry_run)
            };
            if matches!(outcome, UndoOutcome::Restored | UndoOutcome::Gone) {
                keep[i] = false;
            }
            done.push(Undone {
                entry: entry.clone(),
                outcome,
            });
        }
        if !dry_run {
            let mut flags = keep.into_iter();
            record.entries.retain(|_| flags.next().unwrap_or(true));
            self.write(&record)?;
        }
        Ok(done)
    }
}

/// The threads changed more than once in a row (each change starting from
/// what the one before it gave, as a promotion and then a runaway's
/// demotion): the index of the newest change, with those of the older ones,
/// newest first. Undone one by one, newest first, such a chain would give
/// each older setting back in turn, a demoted runaway its real-time
/// priority for a moment (on its CPU, undo itself might not run again);
/// undone as one, the thread goes straight back to the oldest.
fn chains(
    entries: &[Entry],
    in_scope: &dyn Fn(&Entry) -> bool,
) -> std::collections::HashMap<usize, Vec<usize>> {
    let mut chains = std::collections::HashMap::new();
    let mut linked = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate().rev() {
        let Change::Thread {
            tid,
            starttime,
            old: mut from,
            ..
        } = entry.change.clone()
        else {
            continue;
        };
        if !in_scope(entry) || linked.contains(&i) {
            continue;
        }
        let mut older = Vec::new();
        for (j, before) in entries[..i].iter().enumerate().rev() {
            let Change::Thread {
                tid: t,
                starttime: s,
                old,
                new,
                ..
            } = &before.change
            else {
                continue;
            };
            if (*t, *s) != (tid, starttime) || before.boot_id != entry.boot_id {
                continue;
            }
            if !in_scope(before) || *new != from {
                break;
            }
            older.push(j);
            linked.insert(j);
            from = old.clone();
        }
        if !older.is_empty() {
            chains.insert(i, older);
        }
    }
    chains
}

fn undo_one(entry: &Entry, this_boot: Option<&str>, force: bool, dry_run: bool) -> UndoOutcome {
    match &entry.change {
        Change::Thread {
            pid,
            tid,
            starttime,
            old,
            new,
            ..
        } => {
            if entry.boot_id.as_deref() != this_boot || task::starttime_of(*tid) != Some(*starttime)
            {
                return UndoOutcome::Gone;
            }
            let now = match Settings::read(*tid) {
                Ok(now) => now,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return UndoOutcome::Gone,
                Err(e) => {
                    return UndoOutcome::Failed {
                        error: e.to_string(),
                    }
                }
            };
            // Already as it was: the change never landed (the command was
            // killed between recording it and making it) or was taken back
            // by hand. Nothing to write; left in the record, it was 'changed
            // since' and made every later undo exit 1.
            if now == *old {
                return UndoOutcome::Restored;
            }
            if now != *new && !force {
                return UndoOutcome::ChangedSince {
                    now: now.to_string(),
                };
            }
            if dry_run {
                return UndoOutcome::Restored;
            }
            match write_to(*pid, *tid, *starttime, old) {
                Ok(()) => UndoOutcome::Restored,
                Err(Missed::Gone) => UndoOutcome::Gone,
                Err(Missed::Refused(e)) if e.errno() == Some(libc::ESRCH) => UndoOutcome::Gone,
                Err(missed) => UndoOutcome::Failed {
                    error: missed.describe(*tid, old),
                },
            }
        }
        Change::File { path, old, new } => {
            let now = match fs::read_to_string(path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => {
                    return UndoOutcome::Failed {
                        error: e.to_string(),
                    }
                }
            };
            // As it was before: the write never happened (killed first)
            // or was taken back by hand.
            if now == *old {
                return UndoOutcome::Restored;
            }
            if now.as_deref() != Some(new.as_str()) && !force {
                return UndoOutcome::ChangedSince {
                    now: match now {
                        Some(_) => "edited since".into(),
                        None => "removed since".into(),
                    },
                };
            }
            if dry_run {
                return UndoOutcome::Restored;
            }
            let result = match old {
                Some(text) => write_atomically(path, text),
                None => match fs::remove_file(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => {
                        // A drop-in directory rtlab created goes with its
                        // last file; one with other files stays.
                        if let Some(dir) = path.parent() {
                            if dir.extension().is_some_and(|e| e == "d") {
                                let _ = fs::remove_dir(dir);
                            }
                        }
                        Ok(())
                    }
                },
            };
            match result {
                Ok(()) => UndoOutcome::Restored,
                Err(e) => UndoOutcome::Failed {
                    error: e.to_string(),
                },
            }
        }
    }
}
