//! Restoring entries, and recovering the journals of dead owners (after
//! SIGKILL or power loss).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::entry::{Entry, Outcome, Recovered, Restored};
use super::file::{
    list_journals, owner_of_tmp, read_journal, remove_durably, write_atomic, JournalFile,
};
use super::owner::Owner;
use super::state_dir::{check_state_dir, lock_dir, state_dir};
use super::value::restore_entry;

/// Restores in reverse order; returns the results and the entries that
/// could not be restored (in their original order).
pub(super) fn restore_entries(entries: &[Entry]) -> (Vec<Restored>, Vec<Entry>) {
    let mut results = Vec::with_capacity(entries.len());
    let mut remaining = Vec::new();
    for entry in entries.iter().rev() {
        let outcome = restore_entry(entry);
        if matches!(outcome, Outcome::Failed { .. }) {
            remaining.push(entry.clone());
        }
        results.push(Restored {
            entry: entry.clone(),
            outcome,
        });
    }
    remaining.reverse();
    (results, remaining)
}

/// What `rtlab restore` does and every session starts with: the journals
/// of dead owners in [`state_dir`] recovered ([`recover_stale`]). Returns
/// the directory, for the messages that name it, and what was recovered.
pub fn recover_stale_in_state_dir() -> (PathBuf, Vec<Recovered>) {
    let dir = state_dir();
    let recovered = recover_stale(&dir);
    (dir, recovered)
}

/// Restores every journal in `state_dir` whose owner is dead (reverse
/// order) and deletes it. Journals of live owners are left alone and not
/// reported; unreadable ones are reported and left in place.
pub fn recover_stale(state_dir: &Path) -> Vec<Recovered> {
    let mut out = Vec::new();
    match fs::symlink_metadata(state_dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
        _ => {}
    }
    if let Err(reason) = check_state_dir(state_dir) {
        out.push(Recovered::unreadable(
            state_dir,
            format!("state directory {reason}"),
        ));
        return out;
    }
    let _lock = match lock_dir(state_dir) {
        Ok(lock) => lock,
        Err(e) => {
            out.push(Recovered::unreadable(
                state_dir,
                format!("cannot lock state directory: {e}"),
            ));
            return out;
        }
    };
    remove_stale_tmp_files(state_dir);
    let journals = match list_journals(state_dir) {
        Ok(journals) => journals,
        Err(e) => {
            out.push(Recovered::unreadable(
                state_dir,
                format!("cannot list state directory: {e}"),
            ));
            return out;
        }
    };
    for path in journals {
        let journal = match read_journal(&path) {
            Ok(journal) => journal,
            Err(error) => {
                out.push(Recovered::unreadable(&path, error));
                continue;
            }
        };
        if journal.owner.is_alive() {
            continue;
        }
        let (restored, remaining) = restore_entries(&journal.entries);
        let (removed, error) = if remaining.is_empty() {
            match remove_durably(&path) {
                Ok(()) => (true, None),
                Err(e) => (false, Some(format!("cannot delete the journal: {e}"))),
            }
        } else {
            let rest = JournalFile {
                entries: remaining,
                ..journal.clone_header()
            };
            let error = serde_json::to_vec_pretty(&rest)
                .map_err(io::Error::other)
                .and_then(|mut bytes| {
                    bytes.push(b'\n');
                    write_atomic(&path, &bytes)
                })
                .err()
                .map(|e| format!("cannot rewrite the journal: {e}"));
            (false, error)
        };
        out.push(Recovered {
            journal: path,
            owner: Some(journal.owner),
            created_at: Some(journal.created_at),
            restored,
            removed,
            error,
        });
    }
    out
}

/// A crash between writing a journal's temporary file and renaming it
/// leaves that file, whose extra entry was never applied; drop those of
/// dead owners.
fn remove_stale_tmp_files(state_dir: &Path) {
    let Ok(dir) = fs::read_dir(state_dir) else {
        return;
    };
    for dirent in dir.flatten() {
        let name = dirent.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((pid, starttime)) = owner_of_tmp(name) else {
            continue;
        };
        let owner = Owner {
            pid,
            starttime,
            command: String::new(),
            boot_id: None,
        };
        if !owner.is_alive() {
            let _ = fs::remove_file(dirent.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::file::{old_tmp_path, SCHEMA};
    use super::super::testutil::*;
    use super::super::{Journal, JournalError};
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn recover_stale_restores_dead_owner() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "0");
        let b = target(&tmp, "b", "5");
        let dead = fabricate(&dir, dead_owner(), vec![file_entry(&a, "1", "0")]);

        // A live pid with the wrong starttime is a reused pid, not the owner.
        let mut reused = Owner::this_process().unwrap();
        reused.starttime += 12345;
        let reused_pid = reused.pid;
        let reused_file = fabricate(&dir, reused, vec![file_entry(&b, "4", "5")]);
        fs::write(old_tmp_path(&dead), "garbage").unwrap();
        let name = dead.file_name().unwrap().to_str().unwrap();
        let new_tmp = dir.join(format!(".{name}.00000000deadbeef.tmp"));
        fs::write(&new_tmp, "garbage").unwrap();

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 2, "{recovered:?}");
        assert!(recovered.iter().all(Recovered::ok), "{recovered:?}");
        assert_eq!(content(&a), "1\n");
        assert_eq!(content(&b), "4\n");
        assert!(!dead.exists() && !reused_file.exists());
        assert!(!old_tmp_path(&dead).exists(), "stale temp file removed");
        assert!(!new_tmp.exists(), "stale temp file removed");
        let line = recovered
            .iter()
            .find(|r| r.owner.as_ref().unwrap().pid == reused_pid)
            .unwrap()
            .to_string();
        assert!(line.contains("1 entry restored, journal deleted"), "{line}");

        assert!(recover_stale(&dir).is_empty());
    }

    #[test]
    fn recover_stale_restores_a_zombie_owners_journal() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "0");
        let zombie = Zombie::new();
        let path = fabricate(&dir, zombie.owner(), vec![file_entry(&knob, "1", "0")]);

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{recovered:?}");
        assert_eq!(content(&knob), "1\n");
        assert!(!path.exists());

        // Its value is stale, not held by a live rtlab: a new change is
        // told to restore first, not to wait for it.
        fabricate(&dir, zombie.owner(), vec![file_entry(&knob, "1", "0")]);
        let err = Journal::new(dir.clone()).set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::StaleConflict { .. }), "{err}");
        drop(zombie);
    }

    #[test]
    fn recover_stale_leaves_live_and_reports_corrupt() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        j.set_file(&knob, "0").unwrap();

        let corrupt = dir.join("journal-1-1.json");
        fs::write(&corrupt, "{not json").unwrap();
        let future = fabricate(&dir, dead_owner(), vec![]);
        let text = content(&future).replace(SCHEMA, "rtlab.journal/99");
        fs::write(&future, text).unwrap();

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 2, "{recovered:?}");
        for r in &recovered {
            assert!(!r.ok() && r.owner.is_none());
            assert!(r.to_string().contains("left in place"), "{r}");
        }
        assert!(corrupt.exists() && future.exists());
        assert_eq!(content(&knob), "0\n", "live journal left alone");
        assert!(j.file().unwrap().exists());

        j.restore();
        assert_eq!(content(&knob), "1\n");
    }

    #[test]
    fn recover_stale_keeps_what_it_cannot_restore() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "0");
        // A directory: no value can be written back to it (a file that
        // is gone is skipped instead, see value.rs).
        let stuck = tmp.path().join("stuck");
        fs::create_dir(&stuck).unwrap();
        let gone = Entry::File {
            path: stuck,
            old: "1".into(),
            new: "0".into(),
        };
        let path = fabricate(
            &dir,
            dead_owner(),
            vec![gone.clone(), file_entry(&a, "1", "0")],
        );
        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1);
        assert!(!recovered[0].ok());
        assert!(recovered[0]
            .to_string()
            .contains("1 of 2 entries could not be restored"));
        assert_eq!(content(&a), "1\n");
        assert_eq!(read_journal(&path).unwrap().entries, vec![gone]);
    }
}
