//! The changes of one command: each recorded before it is made.

use super::entry::{still_there, Change, Entry};
use super::error::ChangeError;
use super::record::{write_atomically, ChangeLog};
use super::thread::{make_change, read_settings, write_to, Fate, Missed, ThreadOutcome};
use crate::task::{self, Settings, Task};
use rtlab_core::process::boot_id;
use std::fs;
use std::io;
use std::path::Path;

/// Past this many entries a new change first drops the entries of threads
/// that have ended, so a watch that runs for months keeps a record the
/// size of what it holds (and a burst of changes stays cheap).
const PRUNE_AT: usize = 64;

/// The changes of one command.
pub struct Txn<'a> {
    log: &'a ChangeLog,
    id: u64,
    command: String,
}

impl ChangeLog {
    /// Starts the changes of one command. Threads that have ended since
    /// earlier commands are dropped from the record here: nothing can be
    /// restored for them.
    pub fn begin(&self, command: &str) -> Result<Txn<'_>, ChangeError> {
        let id = self.update(|record| {
            let this_boot = boot_id();
            record
                .entries
                .retain(|e| still_there(e, this_boot.as_deref()));
            record.next_txn += 1;
            Ok(record.next_txn)
        })?;
        Ok(Txn {
            log: self,
            id,
            command: command.to_string(),
        })
    }
}

impl Txn<'_> {
    pub fn id(&self) -> u64 {
        self.id
    }

    fn entry(&self, change: Change) -> Entry {
        Entry {
            txn: self.id,
            at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command: self.command.clone(),
            boot_id: boot_id(),
            change,
        }
    }

    /// Gives `task` the settings `target(current)`: records the change,
    /// then makes it, then records what the kernel really set.
    pub fn change_thread(
        &self,
        task: &Task,
        target: impl Fn(&Settings) -> Settings,
    ) -> Result<ThreadOutcome, ChangeError> {
        self.change_threads(&[task], |_, current| target(current))?
            .pop()
            .expect("one outcome per thread")
    }

    /// [`Txn::change_thread`] for many threads at once: all changes are
    /// recorded in one durable write before the first is made, and what
    /// the kernel set is recorded in one more after the last, so promoting
    /// a hundred threads costs two writes of the record, not two hundred.
    /// The outer error is the record's; the inner ones are per thread.
    pub fn change_threads(
        &self,
        tasks: &[&Task],
        target: impl Fn(&Task, &Settings) -> Settings,
    ) -> Result<Vec<Result<ThreadOutcome, ChangeError>>, ChangeError> {
        let _lock = self.log.lock()?;
        let mut outcomes: Vec<Option<Result<ThreadOutcome, ChangeError>>> = Vec::new();
        let mut pending: Vec<(usize, &Task, Settings, Settings)> = Vec::new();
        for (i, &task) in tasks.iter().enumerate() {
            let planned = (|| {
                if task::starttime_of(task.tid) != Some(task.starttime) {
                    return Err(ChangeError::Vanished);
                }
                let old = read_settings(task.tid)?;
                let new = target(task, &old);
                Ok((old, new))
            })();
            match planned {
                Ok((old, new)) if new == old => {
                    outcomes.push(Some(Ok(ThreadOutcome::Held { settings: old })))
                }
                Ok((old, new)) => {
                    outcomes.push(None);
                    pending.push((i, task, old, new));
                }
                Err(e) => outcomes.push(Some(Err(e))),
            }
        }
        if pending.is_empty() {
            return Ok(outcomes.into_iter().flatten().collect());
        }

        let mut record = self.log.read()?;
        if record.entries.len() + pending.len() > PRUNE_AT {
            let this_boot = boot_id();
            record
                .entries
                .retain(|e| still_there(e, this_boot.as_deref()));
        }
        let first = record.entries.len();
        for (_, task, old, new) in &pending {
            record.entries.push(self.entry(Change::Thread {
                pid: task.pid,
                tid: task.tid,
                starttime: task.starttime,
                name: task.name.clone(),
                process_name: task.process_name.clone(),
                old: old.clone(),
                new: new.clone(),
            }));
        }
        self.log.write(&record)?;

        let mut keep = vec![true; record.entries.len()];
        // The usual case, every change made as asked, needs no second write.
        let mut dirty = false;
        for (n, (i, task, old, new)) in pending.into_iter().enumerate() {
            let (outcome, fate) = make_change(task, old, new);
            match fate {
                Fate::Drop => {
                    keep[first + n] = false;
                    dirty = true;
                }
                Fate::Keep(Some(now)) => {
                    if let Change::Thread { new, .. } = &mut record.entries[first + n].change {
                        *new = now;
                    }
                    dirty = true;
                }
                Fate::Keep(None) => {}
            }
            outcomes[i] = Some(outcome);
        }
        if dirty {
            let mut flags = keep.into_iter();
            record.entries.retain(|_| flags.next().unwrap_or(true));
            self.log.write(&record)?;
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// Whether rtlab gave thread `tid` (with start time `starttime`) the
    /// `settings` it holds: the newest change of it in the record, by any
    /// command of this boot, left it those. A thread that had them from
    /// elsewhere (its service's own settings, `chrt`, the kernel's default
    /// for its threads) is not rtlab's.
    pub fn gave(&self, tid: i32, starttime: u64, settings: &Settings) -> Result<bool, ChangeError> {
        let _lock = self.log.lock()?;
        let this_boot = boot_id();
        let newest = self.log.read()?.entries.into_iter().rev().find(|e| {
            e.boot_id == this_boot
                && matches!(e.change, Change::Thread { tid: t, starttime: s, .. }
                    if t == tid && s == starttime)
        });
        Ok(
            matches!(newest, Some(Entry { change: Change::Thread { new, .. }, .. }) if new == *settings),
        )
    }

    /// Takes back this command's change of `task` if the thread (same id
    /// and start time) still has what it was given: for a thread that no
    /// rule matches any more (it ran another program, or renamed itself).
    /// `Ok(None)` when there is nothing of this command's to take back, or
    /// someone changed the thread since.
    pub fn revert_thread(&self, task: &Task) -> Result<Option<ThreadOutcome>, ChangeError> {
        let _lock = self.log.lock()?;
        let mut record = self.log.read()?;
        let Some(index) = record.entries.iter().rposition(|e| {
            e.txn == self.id
                && matches!(e.change, Change::Thread { tid, starttime, .. }
                    if tid == task.tid && starttime == task.starttime)
        }) else {
            return Ok(None);
        };
        let Change::Thread { old, new, .. } = record.entries[index].change.clone() else {
            return Ok(None);
        };
        let now = read_settings(task.tid)?;
        if now != new {
            return Ok(None);
        }
        match write_to(task.pid, task.tid, task.starttime, &old) {
            Ok(()) => {}
            Err(Missed::Refused(error)) => {
                return Err(ChangeError::Refused {
                    error: Box::new(error),
                    left_at: Settings::read(task.tid).ok().map(Box::new),
                })
            }
            Err(Missed::Gone) => return Err(ChangeError::Vanished),
            Err(Missed::Reached {
                starttime,
                taken_back,
            }) => {
                record.entries.remove(index);
                self.log.write(&record)?;
                return Err(ChangeError::EndedDuring {
                    tid: task.tid,
                    starttime,
                    taken_back,
                    new: Box::new(old),
                });
            }
        }
        record.entries.remove(index);
        self.log.write(&record)?;
        Ok(Some(ThreadOutcome::Changed { old: now, new: old }))
    }

    /// Writes `contents` to `path` (atomically), recording what was there.
    pub fn write_file(&self, path: &Path, contents: &str) -> Result<(), ChangeError> {
        let _lock = self.log.lock()?;
        let old = match fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ChangeError::File {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if old.as_deref() == Some(contents) {
            return Ok(());
        }
        let mut record = self.log.read()?;
        record.entries.push(self.entry(Change::File {
            path: path.to_path_buf(),
            old,
            new: contents.to_string(),
        }));
        self.log.write(&record)?;
        if let Err(source) = write_atomically(path, contents) {
            record.entries.pop();
            self.log.write(&record)?;
            return Err(ChangeError::File {
                path: path.to_path_buf(),
                source,
            });
        }
        Ok(())
    }
}
