//! Recording what `rtlab focus` changes in cgroups and threads' CPUs:
//! the cgroup directories it creates, the processes it moves, the
//! controller it enables and the CPUs of the threads it moves. The undo
//! of each lives beside its kind (`cgroup.rs`, `affinity.rs`), which
//! `value.rs` calls on restore; this file only adds them to the
//! [`Journal`].

use std::io;
use std::path::{Path, PathBuf};

use super::cgroup::starttime_of;
use super::entry::{Entry, Restored, ThreadAffinity};
use super::error::JournalError;
use super::record::Journal;

impl Journal {
    /// Records the cgroup directory `path` before the caller creates it;
    /// restoring moves the tasks in it to `return_to` and removes it.
    pub fn note_cgroup_dir(
        &mut self,
        path: &Path,
        return_to: &Path,
        note: &str,
    ) -> Result<(), JournalError> {
        let _lock = self.prepare()?;
        self.record(Entry::CgroupDir {
            path: path.to_path_buf(),
            return_to: return_to.to_path_buf(),
            note: note.to_string(),
        })
    }

    /// Records process `pid`, now in cgroup `from`, before the caller
    /// moves it to `to`. On error nothing is recorded.
    pub fn note_cgroup_process(
        &mut self,
        pid: i32,
        from: &Path,
        to: &Path,
        note: &str,
    ) -> Result<(), JournalError> {
        let starttime = starttime_of(pid).ok_or_else(|| JournalError::Read {
            path: PathBuf::from(format!("/proc/{pid}/stat")),
            source: io::Error::from_raw_os_error(libc::ESRCH),
        })?;
        let _lock = self.prepare()?;
        self.record(Entry::CgroupProcess {
            pid,
            starttime,
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            note: note.to_string(),
        })
    }

    /// The normal end of a move recorded with
    /// [`Journal::note_cgroup_process`]: moves `pid` back and drops the
    /// entry; `None` when there is none.
    pub fn restore_cgroup_process(&mut self, pid: i32) -> Option<Restored> {
        self.undo_first(|e| matches!(e, Entry::CgroupProcess { pid: p, .. } if *p == pid))
    }

    /// Records that `controller` is about to be enabled in the
    /// `cgroup.subtree_control` file `path`.
    pub fn note_cgroup_controller(
        &mut self,
        path: &Path,
        controller: &str,
        note: &str,
    ) -> Result<(), JournalError> {
        let _lock = self.prepare()?;
        self.record(Entry::CgroupController {
            path: path.to_path_buf(),
            controller: controller.to_string(),
            note: note.to_string(),
        })
    }
}

impl Journal {
    /// Records the CPUs of `threads` before the caller moves them.
    pub fn note_thread_affinities(
        &mut self,
        threads: Vec<ThreadAffinity>,
        note: &str,
    ) -> Result<(), JournalError> {
        let _lock = self.prepare()?;
        self.record(Entry::ThreadAffinities {
            threads,
            note: note.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::entry::Outcome;
    use super::super::file::read_journal;
    use super::super::testutil::*;
    use super::*;
    use std::fs;
    use tempfile::TempDir;

    #[test]
    fn a_focus_is_undone_newest_first_and_only_its_own() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let other = target(&tmp, "other", "1");
        let created = tmp.path().join("rtlab-focus-1");
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        fs::create_dir_all(&from).unwrap();
        fs::create_dir_all(&to).unwrap();
        // This process, recorded as moved into `to`, but `to` does not
        // list it: moving it back is skipped, nothing is written.
        fs::write(to.join("cgroup.procs"), "").unwrap();

        let mut j = Journal::new(dir.clone());
        j.set_file(&other, "2").unwrap();
        let me = std::process::id() as i32;
        let first = j.entries().len();
        j.note_thread_affinities(Vec::new(), "focus").unwrap();
        j.note_cgroup_dir(&created, tmp.path(), "focus").unwrap();
        fs::create_dir(&created).unwrap();
        j.note_cgroup_process(me, &from, &to, "joined").unwrap();
        let mine = j.entries()[first..].to_vec();
        let on_disk = fs::read_to_string(j.file().unwrap()).unwrap();
        for kind in ["thread_affinities", "cgroup_dir", "cgroup_process"] {
            assert!(
                on_disk.contains(&format!("\"kind\": \"{kind}\"")),
                "{on_disk}"
            );
        }
        assert_eq!(read_journal(j.file().unwrap()).unwrap().entries.len(), 4);

        let results = j.undo(&mine);
        let kinds: Vec<String> = results
            .iter()
            .map(|r| {
                serde_json::to_value(r).unwrap()["kind"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["cgroup_process", "cgroup_dir", "thread_affinities"]);
        assert!(
            matches!(&results[0].outcome, Outcome::Skipped { reason } if reason.contains("no longer in"))
        );
        assert!(
            matches!(results[1].outcome, Outcome::Removed),
            "{:?}",
            results[1]
        );
        assert!(!created.exists());
        assert!(results.iter().all(|r| !r.to_string().is_empty()));
        // The other part's change stays, and is put back by its own end.
        assert_eq!(j.entries().len(), 1);
        assert_eq!(content(&other), "2\n");
        assert!(j.undo(&mine).is_empty(), "a second undo does nothing");
        j.restore();
        assert_eq!(content(&other), "1\n");
    }
}
