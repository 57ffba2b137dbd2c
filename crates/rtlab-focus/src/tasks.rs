//! The tasks of the host: every thread with its CPUs, moving every
//! process out of one cgroup into another (in passes, since processes fork
//! while they are moved), and who still runs on the focused CPUs after.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::{cgroup_procs, move_to_cgroup, ThreadAffinity};
use rtlab_core::process::{Stat, FLAGS};
use rtlab_core::result::printable;
use rtlab_core::sched;

use crate::cpus::intersects;
use crate::model::TaskNote;

/// A kernel thread (`PF_KTHREAD`, include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;
/// A thread whose CPUs only the kernel may set (`PF_NO_SETAFFINITY`):
/// per-CPU kernel threads, workqueue workers, IRQ threads.
const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// How many times the processes of a cgroup are moved before giving up
/// on those that keep appearing (a fork bomb cannot keep rtlab busy).
const MAX_PASSES: usize = 16;

/// One thread as the kernel shows it now.
#[derive(Debug, Clone)]
pub(crate) struct ThreadInfo {
    pub pid: i32,
    pub tid: i32,
    pub starttime: u64,
    /// Printable (another user chose it).
    pub comm: String,
    flags: u64,
    pub affinity: CpuSet,
}

impl ThreadInfo {
    pub(crate) fn is_kernel(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// Whether rtlab may set its CPUs (and so put them back).
    pub(crate) fn settable(&self) -> bool {
        self.flags & PF_NO_SETAFFINITY == 0
    }
}

fn numbered(dir: &Path) -> Vec<i32> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// Every thread of the host (those that end while being read are left out).
pub(crate) fn threads() -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    for pid in numbered(Path::new("/proc")) {
        for tid in numbered(Path::new(&format!("/proc/{pid}/task"))) {
            let Ok(stat) = Stat::read(Path::new(&format!("/proc/{pid}/task/{tid}/stat"))) else {
                continue;
            };
            let (Some(starttime), Some(flags)) = (stat.starttime(), stat.number::<u64>(FLAGS))
            else {
                continue;
            };
            let Ok(affinity) = sched::thread_affinity(tid) else {
                continue;
            };
            out.push(ThreadInfo {
                pid,
                tid,
                starttime,
                comm: printable(&String::from_utf8_lossy(stat.comm()), 64),
                flags,
                affinity,
            });
        }
    }
    out
}

/// The threads whose CPUs a move between cpusets would lose: every one
/// rtlab may set whose CPUs are not all the online ones.
pub(crate) fn pinned(threads: &[ThreadInfo], online: &CpuSet) -> Vec<ThreadAffinity> {
    threads
        .iter()
        .filter(|t| t.settable() && t.affinity != *online)
        .map(|t| ThreadAffinity {
            pid: t.pid,
            tid: t.tid,
            starttime: t.starttime,
            affinity: t.affinity.to_string(),
        })
        .collect()
}

/// Notes for the pinned threads that had some of the focused CPUs.
pub(crate) fn pinned_notes(
    threads: &[ThreadInfo],
    online: &CpuSet,
    cpus: &CpuSet,
) -> Vec<TaskNote> {
    threads
        .iter()
        .filter(|t| t.settable() && t.affinity != *online && intersects(&t.affinity, cpus))
        .map(|t| TaskNote {
            pid: t.pid,
            comm: t.comm.clone(),
            reason: format!(
                "thread {} was pinned to CPUs {}; it runs on the rest until the end, then gets them back",
                t.tid, t.affinity
            ),
        })
        .collect()
}

/// What moving the processes of a cgroup did.
#[derive(Debug, Default)]
pub(crate) struct Moves {
    pub moved: BTreeSet<i32>,
    /// Processes the kernel refused to move, with its reason.
    pub refused: BTreeMap<i32, String>,
}

/// Moves every process of cgroup `from` to cgroup `to`, pass after pass
/// until a pass finds nothing new to move (bounded: see [`MAX_PASSES`]).
pub(crate) fn move_all(from: &Path, to: &Path) -> Moves {
    let mut moves = Moves::default();
    for _ in 0..MAX_PASSES {
        let mut new = 0;
        for pid in cgroup_procs(from).unwrap_or_default() {
            if moves.refused.contains_key(&pid) {
                continue;
            }
            match move_to_cgroup(to, pid) {
                Ok(()) => {
                    moves.moved.insert(pid);
                    new += 1;
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    let why = match e.raw_os_error() {
                        Some(libc::EINVAL) => {
                            "the kernel refuses to move it (EINVAL: a kernel thread whose CPUs only the kernel sets)"
                                .to_string()
                        }
                        _ => format!("moving it failed: {e}"),
                    };
                    moves.refused.insert(pid, why);
                }
            }
        }
        if new == 0 {
            break;
        }
    }
    moves
}

/// The processes outside the partition that still may run on the focused
/// CPUs, once each, with why (`refused` says what the kernel answered).
pub(crate) fn stragglers(
    threads: &[ThreadInfo],
    cpus: &CpuSet,
    partition: &Path,
    refused: &BTreeMap<i32, String>,
) -> Vec<TaskNote> {
    let inside: BTreeSet<i32> = cgroup_procs(partition)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut seen = BTreeSet::new();
    let mut notes = Vec::new();
    for t in threads {
        if inside.contains(&t.pid) || !intersects(&t.affinity, cpus) || !seen.insert(t.pid) {
            continue;
        }
        let reason = match refused.get(&t.pid) {
            Some(why) => format!("{why}; bound to CPUs {}", t.affinity),
            None if t.is_kernel() && !t.settable() => {
                format!("kernel thread bound to CPUs {} by the kernel", t.affinity)
            }
            None => format!(
                "thread {} still runs on CPUs {} (it started or moved while the others were moved)",
                t.tid, t.affinity
            ),
        };
        notes.push(TaskNote {
            pid: t.pid,
            comm: t.comm.clone(),
            reason,
        });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_is_seen_with_its_cpus() {
        let me = std::process::id() as i32;
        let tid = sched::gettid();
        let all = threads();
        let mine = all.iter().find(|t| t.tid == tid).expect("this thread");
        assert_eq!(mine.pid, me);
        assert!(!mine.is_kernel() && mine.settable());
        assert_eq!(mine.affinity, sched::thread_affinity(0).unwrap());
        assert!(all.iter().any(|t| t.is_kernel()), "kthreadd at least");
    }

    #[test]
    fn only_threads_off_the_online_cpus_are_pinned() {
        let online = CpuSet::parse("0-1").unwrap();
        let thread = |tid, cpus: &str, flags| ThreadInfo {
            pid: 10,
            tid,
            starttime: 5,
            comm: "x".into(),
            flags,
            affinity: CpuSet::parse(cpus).unwrap(),
        };
        let all = [
            thread(10, "0-1", 0),
            thread(11, "1", 0),
            thread(12, "0", 0),
            thread(13, "1", PF_KTHREAD | PF_NO_SETAFFINITY),
        ];
        let pinned: Vec<i32> = pinned(&all, &online).iter().map(|t| t.tid).collect();
        assert_eq!(pinned, [11, 12]);
        let notes = pinned_notes(&all, &online, &CpuSet::parse("1").unwrap());
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].reason.contains("thread 11 was pinned to CPUs 1"),
            "{:?}",
            notes[0]
        );
    }
}
