//! The scheduling and CPUs of a thread of another process that rtlab
//! changed (`rtlab exec serve` promotes the threads that attach to it):
//! journaled with the thread's start time, so that a restore after a
//! SIGKILL puts back the thread that was promoted and never touches a
//! thread that reused its id.

use std::io;
use std::path::PathBuf;

use super::entry::Outcome;
use super::error::io_message;
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
