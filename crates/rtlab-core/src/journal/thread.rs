//! The scheduling and CPUs of a thread of another process that rtlab
//! changed (`rtlab exec serve` promotes the threads that attach to it):
//! journaled with the thread's start time, so that a restore after a
//! SIGKILL puts back the thread that was promoted and never touches a
//! thread that reused its id.

use std::io;
use std::path::PathBuf;

use super::entry::{Entry, Outcome, Restored};
use super::error::{io_message, JournalError};
use super::record::Journal;
use crate::cpuset::CpuSet;
use crate::process::Stat;
use crate::sched::{self, ThreadSched};

/// Thread `tid` of process `pid` as the kernel names it for the life of
/// the boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignThread {
    pub pid: i32,
    pub tid: i32,
    /// Field 22 of its stat line.
    pub starttime: u64,
}

impl ForeignThread {
    /// Thread `tid` of process `pid` now (an error if it is not one of
    /// its threads).
    pub fn of(pid: i32, tid: i32) -> io::Result<ForeignThread> {
        let stat = Stat::read(&stat_path(pid, tid))?;
        let starttime = stat
            .starttime()
            .ok_or_else(|| io::Error::other("no start time in its stat line"))?;
        Ok(ForeignThread {
            pid,
            tid,
            starttime,
        })
    }

    /// Whether the thread is still the one recorded.
    pub fn is_alive(&self) -> bool {
        ForeignThread::of(self.pid, self.tid).is_ok_and(|now| now == *self)
    }
}

fn stat_path(pid: i32, tid: i32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/task/{tid}/stat"))
}

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

/// Puts a recorded thread back, if it is still that thread.
pub(super) fn restore_thread(thread: ForeignThread, old: &ThreadSched, affinity: &str) -> Outcome {
    match ForeignThread::of(thread.pid, thread.tid) {
        Err(_) => {
            return Outcome::Skipped {
                reason: "the thread is gone".into(),
            }
        }
        Ok(now) if now != thread => {
            return Outcome::Skipped {
                reason: "its id now belongs to another thread: left alone".into(),
            }
        }
        Ok(_) => {}
    }
    // The policy first: it ends the real-time spell even if the CPUs
    // cannot be put back.
    if let Err(e) = sched::set_thread(thread.tid, old) {
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Outcome::Skipped {
                reason: "the thread is gone".into(),
            };
        }
        return Outcome::Failed {
            error: format!("sched_setattr({}): {}", old.params, io_message(&e)),
        };
    }
    let cpus = match CpuSet::parse(affinity) {
        Ok(cpus) => cpus,
        Err(e) => {
            return Outcome::Failed {
                error: format!("affinity {affinity}: {e}"),
            }
        }
    };
    match sched::set_thread_affinity(thread.tid, &cpus) {
        Ok(()) => Outcome::Restored { was: None },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Outcome::Skipped {
            reason: "the thread is gone".into(),
        },
        Err(e) => Outcome::Failed {
            error: format!("sched_setaffinity({affinity}): {}", io_message(&e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
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
}
