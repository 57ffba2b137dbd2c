//! Changing one thread safely: the identity checks around the system
//! call, and what is done when its id was reused meanwhile.

use super::error::ChangeError;
use crate::task::{self, Settings, Task};
use serde::Serialize;
use std::os::fd::AsRawFd;

/// What became of one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ThreadOutcome {
    Changed {
        old: Settings,
        new: Settings,
    },
    /// It already had the settings.
    Held {
        settings: Settings,
    },
}

/// What becomes of a recorded change once it has been tried.
pub(super) enum Fate {
    /// Nothing changed (or nothing is left to restore): drop the entry.
    Drop,
    /// Keep it, with the settings the thread really has now when they
    /// differ from what was asked.
    Keep(Option<Settings>),
}

/// Where a test stops a change to swap the thread under it (see tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(super) enum Stage {
    /// After the record is durable, before the identity check.
    Recorded,
    /// After the identity check, before the system call.
    Checked,
}

#[cfg(test)]
type Hook = Box<dyn FnMut(Stage, i32)>;

#[cfg(test)]
thread_local! {
    /// The test seam: called at each [`Stage`] of a change made on this
    /// thread. Compiled only into the crate's own tests.
    pub(super) static HOOK: std::cell::RefCell<Option<Hook>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
fn hook(stage: Stage, tid: i32) {
    HOOK.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f(stage, tid)
        }
    });
}

#[cfg(not(test))]
fn hook(_: Stage, _: i32) {}

/// Makes one recorded change and judges it.
///
/// The kernel changes a thread by id, and ids are reused. Recording the
/// change takes fsyncs (tens of ms on a busy disk), so the thread's identity
/// is checked again immediately before the change, not only when it was
/// planned: a thread that ended meanwhile is left unchanged, whatever now
/// holds its id. A window remains between that check and the system call.
/// It is closed from the other side: a pidfd opened *before* the check
/// (and seen by the check to name the thread of the recorded start time)
/// cannot be re-pointed, so if it still shows the thread alive after the
/// call, the thread lived through the call and its id could not have been
/// given to anyone else: the change reached it. If it shows the thread
/// ended (or, without pidfds, the start time at the id changed), the
/// change may have reached a newcomer at the id. That newcomer is taken
/// back to SCHED_OTHER when it provably started inside the window (its
/// start time is not before the check) and has exactly the scheduling
/// this change gave: the safe direction for a process that was never meant
/// to be real-time; anything else is reported, not touched.
pub(super) fn make_change(
    task: &Task,
    old: Settings,
    new: Settings,
) -> (Result<ThreadOutcome, ChangeError>, Fate) {
    hook(Stage::Recorded, task.tid);
    let pin = Pin::open(task);
    let checked_at = boot_ticks();
    if task::starttime_of(task.tid) != Some(task.starttime) || pin.as_ref().is_some_and(Pin::ended)
    {
        return (Err(ChangeError::Vanished), Fate::Drop);
    }
    hook(Stage::Checked, task.tid);
    let made = new.write(task.tid);
    let still_ours = pin.as_ref().is_none_or(|p| !p.ended());
    match task::starttime_of(task.tid) {
        Some(start) if start == task.starttime && still_ours => {}
        // Ended: a change made reached it before it went (nothing is left
        // to restore either way).
        None => {
            let outcome = match made {
                Ok(()) => Ok(ThreadOutcome::Changed { old, new }),
                Err(_) => Err(ChangeError::Vanished),
            };
            return (outcome, Fate::Drop);
        }
        // Ended but not yet reaped (a zombie keeps its id): nothing to
        // restore, and no one else can have the id.
        Some(start) if start == task.starttime => return (Err(ChangeError::Vanished), Fate::Drop),
        // The id names another thread now, which a successful write may
        // have reached.
        Some(other) => {
            let error = match made {
                Err(_) => ChangeError::Vanished,
                Ok(()) => ChangeError::EndedDuring {
                    tid: task.tid,
                    starttime: other,
                    taken_back: take_back_newcomer(task.tid, other, checked_at, &new),
                    new: Box::new(new),
                },
            };
            return (Err(error), Fate::Drop);
        }
    }
    match made {
        Ok(()) => match read_settings(task.tid) {
            // The kernel had nothing to change (an affinity the cpuset
            // narrows back to what it was): nothing to undo.
            Ok(actual) if actual == old => {
                (Ok(ThreadOutcome::Held { settings: actual }), Fate::Drop)
            }
            Ok(actual) => {
                // Undo compares against what the kernel really set.
                let fate = Fate::Keep((actual != new).then(|| actual.clone()));
                (Ok(ThreadOutcome::Changed { old, new: actual }), fate)
            }
            Err(ChangeError::Vanished) => (Err(ChangeError::Vanished), Fate::Drop),
            Err(e) => (Err(e), Fate::Keep(None)),
        },
        Err(error) => {
            // sched_setattr changes all or nothing, but an affinity refused
            // after it leaves the policy changed: put it back, and keep the
            // record unless that is seen to have worked.
            let _ = old.write(task.tid);
            let now = Settings::read(task.tid).ok();
            if now.as_ref() == Some(&old) {
                return (
                    Err(ChangeError::Refused {
                        error: Box::new(error),
                        left_at: None,
                    }),
                    Fate::Drop,
                );
            }
            let left_at = now.clone().or(Some(new)).map(Box::new);
            (
                Err(ChangeError::Refused {
                    error: Box::new(error),
                    left_at,
                }),
                Fate::Keep(now),
            )
        }
    }
}

/// A pidfd on the thread a change is for: it keeps naming that thread
/// (never a newcomer at its id) and shows when it has ended.
struct Pin(std::os::fd::OwnedFd);

/// pidfd_open's flag for a thread that is not its process's leader
/// (Linux 6.9; PIDFD_THREAD = O_EXCL).
const PIDFD_THREAD: libc::c_int = libc::O_EXCL;

impl Pin {
    /// None where the kernel has no pidfds for it (before 5.3, or a
    /// non-leader thread before 6.9): the start time checks remain.
    fn open(task: &Task) -> Option<Pin> {
        Pin::open_ids(task.pid, task.tid)
    }

    fn open_ids(pid: i32, tid: i32) -> Option<Pin> {
        let flags = if tid == pid { 0 } else { PIDFD_THREAD };
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, flags) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd was just returned to us and is owned by no one else.
        Some(Pin(unsafe {
            std::os::fd::FromRawFd::from_raw_fd(fd as std::os::fd::RawFd)
        }))
    }

    /// The thread has ended (a pidfd polls readable once it exits).
    fn ended(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0
    }
}

/// Why [`write_to`] did not (only) change the thread it was for.
pub(super) enum Missed {
    /// It has ended; nothing was changed.
    Gone,
    /// The kernel refused.
    Refused(crate::task::WriteError),
    /// It ended during the write and its id names a newcomer now, which
    /// the write may have reached (`taken_back` as in [`make_change`]).
    Reached { starttime: u64, taken_back: bool },
}

/// Writes `settings` to thread `tid` of process `pid` only if it is still
/// the thread that started at `starttime`, with the checks of
/// [`make_change`] immediately before and after the system calls: for
/// undo and for taking a change back, which have no record to write first
/// but the same window between the check and the call.
pub(super) fn write_to(
    pid: i32,
    tid: i32,
    starttime: u64,
    settings: &Settings,
) -> Result<(), Missed> {
    let pin = Pin::open_ids(pid, tid);
    let checked_at = boot_ticks();
    if task::starttime_of(tid) != Some(starttime) || pin.as_ref().is_some_and(Pin::ended) {
        return Err(Missed::Gone);
    }
    hook(Stage::Checked, tid);
    let made = settings.write(tid);
    let still_ours = pin.as_ref().is_none_or(|p| !p.ended());
    match (task::starttime_of(tid), made) {
        (Some(now), Ok(())) if now == starttime && still_ours => Ok(()),
        (Some(now), Err(e)) if now == starttime && still_ours => Err(Missed::Refused(e)),
        (Some(now), Ok(())) if now != starttime => Err(Missed::Reached {
            starttime: now,
            taken_back: take_back_newcomer(tid, now, checked_at, settings),
        }),
        _ => Err(Missed::Gone),
    }
}

impl Missed {
    pub(super) fn describe(&self, tid: i32, settings: &Settings) -> String {
        match self {
            Missed::Gone => "the thread ended".into(),
            Missed::Refused(e) => e.to_string(),
            Missed::Reached {
                starttime,
                taken_back,
            } => ChangeError::EndedDuring {
                tid,
                starttime: *starttime,
                taken_back: *taken_back,
                new: Box::new(settings.clone()),
            }
            .to_string(),
        }
    }
}

/// Now, in the clock ticks of /proc/PID/stat's start time (boot time).
pub(super) fn boot_ticks() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000
}

/// After a change that may have reached thread `tid`'s newcomer (start
/// time `starttime`): takes it back to SCHED_OTHER if it started no
/// earlier than the identity check (`checked_at`; one tick earlier, as
/// start times are rounded down) and has exactly the scheduling `new`
/// gave. Whether it did.
fn take_back_newcomer(tid: i32, starttime: u64, checked_at: u64, new: &Settings) -> bool {
    if starttime + 1 < checked_at {
        return false;
    }
    let Ok(now) = Settings::read(tid) else {
        return false;
    };
    if (now.policy, now.priority, now.deadline) != (new.policy, new.priority, new.deadline)
        || !now.policy.is_realtime()
    {
        return false;
    }
    let plain = Settings {
        policy: rtlab_core::sched::Policy::Other,
        priority: 0,
        deadline: None,
        ..now
    };
    plain.write(tid).is_ok() && task::starttime_of(tid) == Some(starttime)
}

/// A thread's settings; a thread that ended reads as `Vanished`.
pub(super) fn read_settings(tid: i32) -> Result<Settings, ChangeError> {
    Settings::read(tid).map_err(|source| {
        if source.raw_os_error() == Some(libc::ESRCH) {
            ChangeError::Vanished
        } else {
            ChangeError::Unreadable { tid, source }
        }
    })
}
