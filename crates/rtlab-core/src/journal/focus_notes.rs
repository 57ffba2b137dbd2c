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
