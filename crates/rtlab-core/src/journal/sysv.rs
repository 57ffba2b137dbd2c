//! SysV semaphore sets rtlab created: telling one from a later set that
//! reuses its id, and removing it.

use std::io;

use super::entry::{unix_time, Outcome};
use super::error::io_message;

/// A SysV semaphore set as `semctl(IPC_STAT)` shows it: its id, and what
/// tells it from a later set that reuses the id (the kernel recycles ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysvSemSet {
    pub semid: i32,
    /// `sem_ctime`: set when the set is created, and only changed by
    /// `semctl` IPC_SET/SETVAL/SETALL (never by `semop`).
    pub ctime: i64,
    /// The creator's uid.
    pub cuid: u32,
}

impl SysvSemSet {
    /// The set `semid` as it is now.
    pub fn stat(semid: i32) -> io::Result<SysvSemSet> {
        // SAFETY: semid_ds is plain data, filled in by the kernel.
        let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT takes a pointer to a semid_ds (union semun's buf).
        if unsafe { libc::semctl(semid, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SysvSemSet {
            semid,
            ctime: ds.sem_ctime as i64,
            cuid: ds.sem_perm.cuid,
        })
    }
}

/// Removes `set` if a set with its id still exists and is the same set
/// (same creation time and creator); an id that is gone or now belongs to
/// another set is left alone.
pub fn remove_sysv_sem_set(set: SysvSemSet) -> Outcome {
    let now = match SysvSemSet::stat(set.semid) {
        Ok(now) => now,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIDRM)) => {
            return Outcome::Skipped {
                reason: "it is already gone".into(),
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            return Outcome::Skipped {
                reason: "a set with that id exists but is not ours (permission denied): left alone"
                    .into(),
            }
        }
        Err(e) => {
            return Outcome::Failed {
                error: format!("semctl IPC_STAT: {e}"),
            }
        }
    };
    if now != set {
        return Outcome::Skipped {
            reason: format!(
                "the id now belongs to another set (created at {} by uid {}): left alone",
                unix_time(now.ctime),
                now.cuid
            ),
        };
    }
    // SAFETY: plain syscall on a set we just identified as ours.
    if unsafe { libc::semctl(set.semid, 0, libc::IPC_RMID) } != 0 {
        let e = io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIDRM)) {
            return Outcome::Skipped {
                reason: "it is already gone".into(),
            };
        }
        return Outcome::Failed {
            error: format!("semctl IPC_RMID: {}", io_message(&e)),
        };
    }
    Outcome::Removed
}

#[cfg(test)]
mod tests {
    use super::super::file::read_journal;
    use super::super::testutil::*;
    use super::super::{recover_stale, Entry, Journal};
    use super::*;
    use tempfile::TempDir;

    /// A new private SysV semaphore set, removed when dropped if a test
    /// left it behind.
    struct TestSet(i32);

    impl TestSet {
        fn new() -> TestSet {
            // SAFETY: plain syscall.
            let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
            assert!(id >= 0, "semget: {}", io::Error::last_os_error());
            TestSet(id)
        }

        fn exists(&self) -> bool {
            SysvSemSet::stat(self.0).is_ok()
        }
    }

    impl Drop for TestSet {
        fn drop(&mut self) {
            // SAFETY: plain syscall on the set this test created.
            unsafe { libc::semctl(self.0, 0, libc::IPC_RMID) };
        }
    }

    fn sysv_entry(set: SysvSemSet) -> Entry {
        Entry::SysvSem {
            semid: set.semid,
            ctime: set.ctime,
            cuid: set.cuid,
            note: "created by a test".into(),
        }
    }

    #[test]
    fn sysv_sem_set_is_journaled_and_removed_at_the_normal_end() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let mut j = Journal::new(dir.clone());
        let stat = j.note_sysv_sem(set.0, "created by a test").unwrap();
        assert_eq!(stat, SysvSemSet::stat(set.0).unwrap());
        // On disk before the set is used.
        let files = journal_files(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(
            read_journal(&files[0]).unwrap().entries,
            vec![sysv_entry(stat)]
        );
        assert!(content(&files[0]).contains("\"kind\": \"sysv_sem\""));

        let removed = j.remove_sysv_sem(set.0).expect("an entry for the set");
        assert_eq!(removed.outcome, Outcome::Removed, "{removed}");
        assert!(
            removed
                .to_string()
                .starts_with("removed SysV semaphore set"),
            "{removed}"
        );
        assert!(!set.exists());
        assert!(j.entries().is_empty());
        assert!(journal_files(&dir).is_empty());
        assert!(j.remove_sysv_sem(set.0).is_none(), "nothing left to remove");

        // Dropping the journal removes a set still recorded.
        let other = TestSet::new();
        {
            let mut j = Journal::new(dir.clone());
            j.note_sysv_sem(other.0, "created by a test").unwrap();
        }
        assert!(!other.exists());
        assert!(journal_files(&dir).is_empty());
    }

    #[test]
    fn recover_stale_removes_a_dead_owners_sysv_sem_set() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let stat = SysvSemSet::stat(set.0).unwrap();
        let journal = fabricate(&dir, dead_owner(), vec![sysv_entry(stat)]);

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{}", recovered[0]);
        assert_eq!(recovered[0].restored[0].outcome, Outcome::Removed);
        assert!(!set.exists(), "the set is removed");
        assert!(!journal.exists());
        let json = serde_json::to_value(&recovered[0].restored[0]).unwrap();
        assert_eq!(json["kind"], "sysv_sem");
        assert_eq!(json["status"], "removed");
        assert_eq!(json["semid"], set.0);
    }

    #[test]
    fn a_reused_sysv_sem_id_is_left_alone() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let stat = SysvSemSet::stat(set.0).unwrap();
        // The recorded set had this id but another creation time: the set
        // there now is someone else's.
        let older = SysvSemSet {
            ctime: stat.ctime - 3600,
            ..stat
        };
        let journal = fabricate(&dir, dead_owner(), vec![sysv_entry(older)]);
        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{}", recovered[0]);
        let restored = &recovered[0].restored[0];
        assert!(
            matches!(&restored.outcome, Outcome::Skipped { reason } if reason.contains("another set")),
            "{restored}"
        );
        assert!(set.exists(), "someone else's set is not removed");
        assert!(!journal.exists(), "the entry is done");

        // Another creator: left alone as well.
        let foreign = SysvSemSet {
            cuid: stat.cuid + 1,
            ..stat
        };
        assert!(matches!(
            remove_sysv_sem_set(foreign),
            Outcome::Skipped { .. }
        ));
        assert!(set.exists());

        // A set that is gone already: nothing to do.
        let gone = TestSet::new();
        let gone_stat = SysvSemSet::stat(gone.0).unwrap();
        drop(gone);
        assert!(matches!(
            remove_sysv_sem_set(gone_stat),
            Outcome::Skipped { reason } if reason.contains("already gone")
        ));
    }
}
