//! The journal of this process: recording a change durably before making
//! it, and restoring on demand or drop.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::entry::{Entry, Outcome, Restored};
use super::error::JournalError;
use super::file::{journal_name, remove_durably, write_atomic, JournalFile, SCHEMA};
use super::owner::Owner;
use super::recover::restore_entries;
use super::state_dir::{ensure_state_dir, lock_dir, state_dir, DirLock};
use super::sysv::SysvSemSet;
use super::value::{check_value, parse_sysctl, read_value, restore_entry, write_value};

/// The journal of this process. Record changes through it; they are undone
/// by [`Journal::restore`] or when it is dropped.
#[derive(Debug)]
pub struct Journal {
    pub(super) state_dir: PathBuf,
    owner: Option<Owner>,
    created_at: String,
    entries: Vec<Entry>,
    /// Path of the journal file once the owner is known.
    pub(super) file: Option<PathBuf>,
    /// Whether the journal file exists on disk (as far as we know).
    on_disk: bool,
}

impl Journal {
    /// Creates nothing until the first change.
    pub fn new(state_dir: PathBuf) -> Journal {
        Journal {
            state_dir,
            owner: None,
            created_at: String::new(),
            entries: Vec::new(),
            file: None,
            on_disk: false,
        }
    }

    pub fn for_this_process() -> Journal {
        Journal::new(state_dir())
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The journal file, once the first change has been recorded.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Sets a sysctl from `key=value`, see [`parse_sysctl`].
    pub fn set_sysctl(&mut self, assignment: &str) -> Result<(), JournalError> {
        let (path, value) = parse_sysctl(assignment)?;
        self.set_file(&path, &value)
    }

    /// Writes `value` to a sysfs/procfs file after journaling its old value.
    pub fn set_file(&mut self, path: &Path, value: &str) -> Result<(), JournalError> {
        check_value(path, value)?;
        // Journal the real file: /sys is full of symlinks, and conflicts
        // must be found whichever name another rtlab used.
        let target = fs::canonicalize(path).map_err(|source| JournalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let _lock = self.prepare()?;
        self.check_conflicts(&target)?;

        // A second change of the same file keeps the first old value, so
        // the reverse replay can never end on an intermediate value.
        let existing = self
            .entries
            .iter()
            .position(|e| e.changed_file() == Some(target.as_path()));
        let undo = match existing {
            Some(i) => {
                let previous = self.replace_new(i, value.to_string());
                if let Err(e) = self.persist() {
                    self.replace_new(i, previous);
                    return Err(e);
                }
                Some((i, previous))
            }
            None => {
                let old = read_value(&target).map_err(|source| JournalError::Read {
                    path: target.clone(),
                    source,
                })?;
                self.record(Entry::File {
                    path: target.clone(),
                    old,
                    new: value.to_string(),
                })?;
                None
            }
        };

        if let Err(source) = write_value(&target, value) {
            match undo {
                Some((i, previous)) => {
                    self.replace_new(i, previous);
                }
                None => {
                    self.entries.pop();
                }
            }
            // If this rewrite fails the stale entry only makes a later
            // restore write back the value the file still has.
            let _ = self.persist();
            return Err(JournalError::Write {
                path: target,
                value: value.to_string(),
                source,
            });
        }
        Ok(())
    }

    /// Records a change the kernel undoes by itself when our descriptor
    /// closes (e.g. a PM QoS request), so `rtlab restore` can report it.
    pub fn note_held(&mut self, path: &Path, value: &str, note: &str) -> Result<(), JournalError> {
        let _lock = self.prepare()?;
        self.record(Entry::Held {
            path: path.to_path_buf(),
            value: value.to_string(),
            note: note.to_string(),
        })
    }

    /// Records a SysV semaphore set this process has just created, before
    /// it is used: after a SIGKILL, `rtlab restore` removes it. On error
    /// nothing is recorded (and the caller must remove the set itself).
    pub fn note_sysv_sem(&mut self, semid: i32, note: &str) -> Result<SysvSemSet, JournalError> {
        let set =
            SysvSemSet::stat(semid).map_err(|source| JournalError::SysvSem { semid, source })?;
        let _lock = self.prepare()?;
        self.record(Entry::SysvSem {
            semid,
            ctime: set.ctime,
            cuid: set.cuid,
            note: note.to_string(),
        })?;
        Ok(set)
    }

    /// The normal end of a set recorded with [`Journal::note_sysv_sem`]:
    /// removes it (if it is still the recorded set) and drops its entry.
    /// `None` when the journal holds no entry for it (already restored);
    /// a removal that fails keeps the entry for `rtlab restore`.
    pub fn remove_sysv_sem(&mut self, semid: i32) -> Option<Restored> {
        self.undo_first(|e| matches!(e, Entry::SysvSem { semid: id, .. } if *id == semid))
    }

    /// Undoes the first entry `which` picks and drops it from the journal
    /// (the normal end of one change while others stay); `None` when there
    /// is none. An undo that fails keeps the entry for `rtlab restore`.
    pub(super) fn undo_first(&mut self, which: impl Fn(&Entry) -> bool) -> Option<Restored> {
        let index = self.entries.iter().position(which)?;
        let entry = self.entries[index].clone();
        let outcome = restore_entry(&entry);
        if !matches!(outcome, Outcome::Failed { .. }) {
            self.entries.remove(index);
            // If this rewrite fails the stale entry only makes a later
            // restore find the change already undone.
            let _ = self.persist();
        }
        Some(Restored { entry, outcome })
    }

    /// Undoes, newest first, the entries of this journal equal to one of
    /// `mine` (the changes of one part of the program, e.g. a focus),
    /// leaving the others; what fails stays for `rtlab restore`.
    pub fn undo(&mut self, mine: &[Entry]) -> Vec<Restored> {
        if let Some(owner) = &self.owner {
            if owner.pid != std::process::id() {
                return Vec::new();
            }
        }
        let mut results = Vec::new();
        for index in (0..self.entries.len()).rev() {
            if !mine.contains(&self.entries[index]) {
                continue;
            }
            let entry = self.entries[index].clone();
            let outcome = restore_entry(&entry);
            if !matches!(outcome, Outcome::Failed { .. }) {
                self.entries.remove(index);
            }
            results.push(Restored { entry, outcome });
        }
        // If this rewrite fails the stale entries only make a later
        // restore find their changes already undone.
        let _ = self.persist();
        results
    }

    /// Undoes all entries in reverse order. Entries that cannot be restored
    /// stay in the journal file (for `rtlab restore`); when all are restored
    /// the file is deleted. Calling it again only retries what failed.
    pub fn restore(&mut self) -> Vec<Restored> {
        // A forked child inherits the journal but owns none of its changes.
        if let Some(owner) = &self.owner {
            if owner.pid != std::process::id() {
                return Vec::new();
            }
        }
        let (results, remaining) = restore_entries(&self.entries);
        self.entries = remaining;
        // On failure the file keeps more entries than memory; restoring
        // those again later is harmless.
        let _ = self.persist();
        results
    }

    /// Replaces the `new` value of the File entry at `i`, returning the
    /// previous one.
    fn replace_new(&mut self, i: usize, value: String) -> String {
        match &mut self.entries[i] {
            Entry::File { new, .. } => std::mem::replace(new, value),
            _ => value,
        }
    }

    /// Creates the state directory, locks it and settles the journal's
    /// file name.
    pub(super) fn prepare(&mut self) -> Result<DirLock, JournalError> {
        ensure_state_dir(&self.state_dir)?;
        let lock = lock_dir(&self.state_dir).map_err(|e| JournalError::StateDir {
            path: self.state_dir.clone(),
            reason: format!("cannot lock it: {e}"),
        })?;
        if self.owner.is_none() {
            let owner = Owner::this_process().map_err(JournalError::Owner)?;
            self.file = Some(
                self.state_dir
                    .join(journal_name(owner.pid, owner.starttime)),
            );
            self.owner = Some(owner);
        }
        if !self.on_disk {
            if let Some(file) = &self.file {
                if fs::symlink_metadata(file).is_ok() {
                    return Err(JournalError::InUse { path: file.clone() });
                }
            }
        }
        Ok(lock)
    }

    /// Appends an entry and puts it on disk; on failure the entry is gone
    /// again and nothing may be changed.
    pub(super) fn record(&mut self, entry: Entry) -> Result<(), JournalError> {
        self.entries.push(entry);
        if let Err(e) = self.persist() {
            self.entries.pop();
            return Err(e);
        }
        Ok(())
    }

    fn persist(&mut self) -> Result<(), JournalError> {
        let (Some(file), Some(owner)) = (self.file.clone(), self.owner.clone()) else {
            return Ok(());
        };
        let journal_err = |source| JournalError::Journal {
            path: file.clone(),
            source,
        };
        if self.entries.is_empty() {
            if self.on_disk {
                remove_durably(&file).map_err(journal_err)?;
                self.on_disk = false;
            }
            return Ok(());
        }
        if self.created_at.is_empty() {
            self.created_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        }
        let content = JournalFile {
            schema: SCHEMA.to_string(),
            owner,
            created_at: self.created_at.clone(),
            entries: self.entries.clone(),
        };
        let mut bytes =
            serde_json::to_vec_pretty(&content).map_err(|e| journal_err(io::Error::other(e)))?;
        bytes.push(b'\n');
        write_atomic(&file, &bytes).map_err(journal_err)?;
        self.on_disk = true;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if self.entries.is_empty() && !self.on_disk {
            return;
        }
        // Nobody can look at the results any more, so failures go to stderr
        // rather than leave the host silently changed.
        for result in self.restore() {
            if !result.ok() {
                eprintln!("rtlab: {result}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::file::read_journal;
    use super::super::testutil::*;
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn set_file_journals_before_and_restore_puts_back() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        assert!(
            journal_files(&dir).is_empty(),
            "nothing before the first change"
        );

        j.set_file(&knob, "0").unwrap();
        assert_eq!(content(&knob), "0\n");
        let files = journal_files(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(Some(files[0].as_path()), j.file());
        let on_disk = read_journal(&files[0]).unwrap();
        assert_eq!(on_disk.entries, vec![file_entry(&knob, "1", "0")]);
        assert_eq!(on_disk.owner.pid, std::process::id());
        assert!(on_disk.owner.is_alive());
        let text = content(&files[0]);
        assert!(text.contains("\"kind\": \"file\""), "{text}");
        assert!(text.contains("\"schema\": \"rtlab.journal/1\""), "{text}");

        let results = j.restore();
        assert_eq!(results.len(), 1);
        assert!(results[0].ok());
        assert_eq!(content(&knob), "1\n");
        assert!(journal_files(&dir).is_empty());
        let line = results[0].to_string();
        assert!(
            line.starts_with("restored ") && line.ends_with(" to 1 (was 0)"),
            "{line}"
        );
        let json = serde_json::to_value(&results[0]).unwrap();
        assert_eq!(json["kind"], "file");
        assert_eq!(json["status"], "restored");
        assert_eq!(json["was"], "0");
    }

    #[test]
    fn shorter_value_leaves_no_tail() {
        let tmp = TempDir::new().unwrap();
        let knob = target(&tmp, "knob", "100");
        let mut j = Journal::new(state(&tmp));
        j.set_file(&knob, "7").unwrap();
        assert_eq!(content(&knob), "7\n");
        j.restore();
        assert_eq!(content(&knob), "100\n");
    }

    #[test]
    fn restore_is_reverse_and_idempotent() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "1");
        let b = target(&tmp, "b", "x");
        let mut j = Journal::new(dir.clone());
        j.set_file(&a, "2").unwrap();
        j.set_file(&b, "y").unwrap();
        j.set_file(&a, "3").unwrap();
        assert_eq!(j.entries().len(), 2, "a second change of a keeps one entry");
        j.note_held(
            Path::new("/dev/cpu_dma_latency"),
            "0",
            "released by the kernel when the holder exits",
        )
        .unwrap();
        assert_eq!(content(&a), "3\n");

        let results = j.restore();
        assert_eq!(results.len(), 3);
        assert!(matches!(results[0].outcome, Outcome::Released));
        assert!(results[0].to_string().contains("released by the kernel"));
        assert!(matches!(&results[1].entry, Entry::File { path, .. } if path.ends_with("b")));
        assert!(matches!(&results[2].entry, Entry::File { path, .. } if path.ends_with("a")));
        assert_eq!(content(&a), "1\n");
        assert_eq!(content(&b), "x\n");
        assert!(journal_files(&dir).is_empty());
        assert!(j.entries().is_empty());

        fs::write(&a, "9\n").unwrap();
        assert!(j.restore().is_empty());
        assert_eq!(content(&a), "9\n", "a second restore does nothing");
    }

    #[test]
    fn drop_restores() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "performance");
        {
            let mut j = Journal::new(dir.clone());
            j.set_file(&knob, "powersave").unwrap();
            assert_eq!(content(&knob), "powersave\n");
        }
        assert_eq!(content(&knob), "performance\n");
        assert!(journal_files(&dir).is_empty());
    }

    #[test]
    fn failing_change_leaves_no_entry() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let mut j = Journal::new(dir.clone());

        let missing = tmp.path().join("missing");
        let err = j.set_file(&missing, "1").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");

        let err = j.set_file(tmp.path(), "1").unwrap_err();
        assert!(matches!(err, JournalError::Read { .. }), "{err}");

        // Readable but not writable, even for root: the entry is journaled,
        // the write fails, the entry is removed again.
        let err = j.set_file(Path::new("/proc/self/stat"), "1").unwrap_err();
        assert!(matches!(err, JournalError::Write { .. }), "{err}");
        assert!(err.to_string().contains("/proc/"), "{err}");

        let err = j.set_file(&target(&tmp, "knob", "1"), "a\nb").unwrap_err();
        assert!(matches!(err, JournalError::InvalidValue { .. }), "{err}");

        assert!(j.entries().is_empty());
        assert!(journal_files(&dir).is_empty());
        assert!(j.restore().is_empty());
    }
}
