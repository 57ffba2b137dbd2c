//! Recording and ending the changes `exec serve` makes to what is not
//! rtlab's own: the scheduling of an attached process's thread
//! ([`ForeignThread`]) and the socket it binds. The undo of each lives
//! beside its kind (`thread.rs`, `socket.rs`), which `value.rs` calls on
//! restore; this file only adds them to the [`Journal`].

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::entry::{Entry, Restored};
use super::error::JournalError;
use super::record::Journal;
use super::thread::ForeignThread;
use crate::sched;

impl Journal {
    /// Records thread `thread`'s scheduling and CPUs as they are now,
    /// before the caller changes them; restoring puts them back (only
    /// while it is the same thread). On error nothing is recorded and
    /// nothing may be changed.
    pub fn note_thread_sched(
        &mut self,
        thread: ForeignThread,
        note: &str,
    ) -> Result<(), JournalError> {
        let read = |source| JournalError::Thread {
            pid: thread.pid,
            tid: thread.tid,
            source,
        };
        let old = sched::thread_sched(thread.tid).map_err(read)?;
        let affinity = sched::thread_affinity(thread.tid).map_err(read)?;
        if !thread.is_alive() {
            return Err(read(io::Error::other("it is gone (or its id was reused)")));
        }
        let _lock = self.prepare()?;
        self.record(Entry::ThreadSched {
            pid: thread.pid,
            tid: thread.tid,
            starttime: thread.starttime,
            old,
            affinity: affinity.to_string(),
            note: note.to_string(),
        })
    }

    /// The normal end of a promotion recorded with
    /// [`Journal::note_thread_sched`]: puts thread `tid` back and drops
    /// the entry; `None` when there is none.
    pub fn restore_thread_sched(&mut self, tid: i32) -> Option<Restored> {
        self.undo_first(|e| matches!(e, Entry::ThreadSched { tid: t, .. } if *t == tid))
    }
}

impl Journal {
    /// Records the socket just bound at `path`. On error nothing is
    /// recorded (and the caller must remove the socket itself).
    pub fn note_socket(&mut self, path: &Path, note: &str) -> Result<(), JournalError> {
        let meta = std::fs::symlink_metadata(path).map_err(|source| JournalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let _lock = self.prepare()?;
        self.record(Entry::Socket {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            note: note.to_string(),
        })
    }

    /// The normal end of a socket recorded with [`Journal::note_socket`]:
    /// removes it (if still the same) and drops the entry.
    pub fn remove_socket(&mut self, path: &Path) -> Option<Restored> {
        self.undo_first(|e| matches!(e, Entry::Socket { path: p, .. } if p == path))
    }
}

#[cfg(test)]
mod tests {
    use super::super::entry::Outcome;
    use super::super::testutil::*;
    use super::super::thread::restore_thread;
    use super::*;
    use crate::sched::ThreadSched;
    use crate::sched::{Policy, SchedParams};
    use tempfile::TempDir;

    fn spawn_sleeper() -> (
        i32,
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
    ) {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            tid_tx.send(sched::gettid()).unwrap();
            let _ = stop_rx.recv();
        });
        (tid_rx.recv().unwrap(), stop_tx, handle)
    }

    #[test]
    fn a_promoted_thread_is_put_back_and_a_gone_one_skipped() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let (tid, stop, handle) = spawn_sleeper();
        let pid = std::process::id() as i32;
        let before = sched::thread_sched(tid).unwrap();
        let mut j = Journal::new(dir.clone());
        let thread = ForeignThread::of(pid, tid).unwrap();
        j.note_thread_sched(thread, "test").unwrap();
        assert_eq!(journal_files(&dir).len(), 1);
        let fifo = ThreadSched {
            params: SchedParams {
                policy: Policy::Fifo,
                priority: 10,
                deadline: None,
            },
            ..before
        };
        if sched::set_thread(tid, &fifo).is_ok() {
            let restored = j.restore_thread_sched(tid).unwrap();
            assert!(
                matches!(restored.outcome, Outcome::Restored { .. }),
                "{restored}"
            );
            assert_eq!(sched::thread_sched(tid).unwrap().params, before.params);
        } else {
            j.restore_thread_sched(tid).unwrap();
        }
        assert!(journal_files(&dir).is_empty());
        stop.send(()).unwrap();
        handle.join().unwrap();
        let gone = restore_thread(thread, &before, "0");
        assert!(matches!(gone, Outcome::Skipped { .. }), "{gone:?}");
        let reused = ForeignThread {
            starttime: thread.starttime + 1,
            tid: pid,
            pid,
        };
        let other = restore_thread(reused, &before, "0");
        assert!(
            matches!(other, Outcome::Skipped { ref reason } if reason.contains("another")),
            "{other:?}"
        );
    }

    #[test]
    fn a_socket_is_removed_only_while_it_is_the_same() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let path = tmp.path().join("exec.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let mut j = Journal::new(dir.clone());
        j.note_socket(&path, "test").unwrap();
        let restored = j.remove_socket(&path).unwrap();
        assert!(matches!(restored.outcome, Outcome::Removed), "{restored}");
        assert!(!path.exists());
        assert!(journal_files(&dir).is_empty());
        drop(listener);

        let _first = std::os::unix::net::UnixListener::bind(&path).unwrap();
        j.note_socket(&path, "test").unwrap();
        std::fs::remove_file(&path).unwrap();
        let _second = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let restored = j.remove_socket(&path).unwrap();
        assert!(
            matches!(restored.outcome, Outcome::Skipped { .. }),
            "{restored}"
        );
        assert!(path.exists(), "another socket bound since is left alone");
    }
}
