//! The CPU affinities of threads rtlab moved between cpusets: the kernel
//! sets a thread's affinity to its new cpuset's CPUs on every move, so
//! moving it back is not enough to give a pinned thread its CPUs again.
//! Journaled in one entry (there may be hundreds) before the moves, and
//! re-applied after the threads are back, each only while its id still
//! names the recorded thread.

use super::entry::{Outcome, ThreadAffinity};
use super::error::io_message;
use super::thread::ForeignThread;
use crate::cpuset::CpuSet;
use crate::sched;

/// Sets every recorded thread that is still itself back to its CPUs.
pub(super) fn restore_affinities(threads: &[ThreadAffinity]) -> Outcome {
    let mut restored = 0;
    let mut failed = Vec::new();
    for t in threads {
        let thread = ForeignThread {
            pid: t.pid,
            tid: t.tid,
            starttime: t.starttime,
        };
        if !thread.is_alive() {
            continue;
        }
        let applied = CpuSet::parse(&t.affinity)
            .map_err(|e| e.to_string())
            .and_then(|cpus| {
                sched::set_thread_affinity(t.tid, &cpus).map_err(|e| {
                    if e.raw_os_error() == Some(libc::ESRCH) {
                        String::new()
                    } else {
                        io_message(&e)
                    }
                })
            });
        match applied {
            Ok(()) => restored += 1,
            Err(e) if e.is_empty() => {}
            Err(e) => failed.push(format!("thread {} ({}): {e}", t.tid, t.affinity)),
        }
    }
    if !failed.is_empty() {
        return Outcome::Failed {
            error: failed.join("; "),
        };
    }
    if restored == 0 {
        return Outcome::Skipped {
            reason: "every recorded thread is gone".into(),
        };
    }
    Outcome::Restored { was: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_thread_gets_its_cpus_back_and_a_stranger_is_left_alone() {
        let handle = std::thread::spawn(|| {
            let tid = sched::gettid();
            let before = sched::thread_affinity(0).unwrap();
            let me = ForeignThread::of(std::process::id() as i32, tid).unwrap();
            let first = before.iter().next().unwrap();
            sched::set_thread_affinity(0, &CpuSet::from_cpus(vec![first])).unwrap();
            let record = ThreadAffinity {
                pid: me.pid,
                tid,
                starttime: me.starttime,
                affinity: before.to_string(),
            };
            let stranger = ThreadAffinity {
                starttime: me.starttime + 1,
                affinity: first.to_string(),
                ..record.clone()
            };
            let outcome = restore_affinities(&[record, stranger]);
            assert!(matches!(outcome, Outcome::Restored { .. }), "{outcome:?}");
            assert_eq!(sched::thread_affinity(0).unwrap(), before);
        });
        handle.join().unwrap();
    }
}
