//! Thin system-call helpers for the switch probe. Everything here that the
//! timer thread, the task or the forked child call while measuring is
//! allocation-free and lock-free.

use rtlab_core::sched::{Policy, SchedParams};
use std::io;
use std::sync::atomic::AtomicU32;

/// The calling thread's errno.
#[inline]
pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns the calling thread's errno.
    unsafe { *libc::__errno_location() }
}

/// FUTEX_WAIT on `word` while it holds `expected`. Non-private (no
/// FUTEX_PRIVATE_FLAG): the word may be shared with a forked process, and
/// the one flavour serves threads and processes alike. Returns at once when
/// the word already differs (EAGAIN); spurious and EINTR returns are the
/// caller's loop to handle.
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: word is a valid, aligned u32 for the call; no timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// FUTEX_WAIT with a relative timeout, for bounded waits off the hot path.
pub fn futex_wait_for(word: &AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: word is a valid, aligned u32; ts lives for the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// FUTEX_WAKE of up to `count` waiters of `word` (non-private, see
/// [`futex_wait`]).
#[inline]
pub fn futex_wake(word: &AtomicU32, count: i32) {
    // SAFETY: word is a valid, aligned u32 for the call.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count);
    }
}

/// Not in every libc release: fixed by the kernel ABI.
const SCHED_RESET_ON_FORK: i32 = 0x4000_0000;

/// The scheduling policy and priority of another task (the forked child)
/// as the kernel sees them now.
pub fn sched_of(pid: libc::pid_t) -> io::Result<SchedParams> {
    // SAFETY: plain syscalls; param is a valid out-pointer.
    let (raw, priority) = unsafe {
        let raw = libc::sched_getscheduler(pid);
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut param = libc::sched_param { sched_priority: 0 };
        if libc::sched_getparam(pid, &mut param) != 0 {
            return Err(io::Error::last_os_error());
        }
        (raw & !SCHED_RESET_ON_FORK, param.sched_priority)
    };
    let policy = match raw {
        libc::SCHED_OTHER => Policy::Other,
        libc::SCHED_BATCH => Policy::Batch,
        libc::SCHED_IDLE => Policy::Idle,
        libc::SCHED_FIFO => Policy::Fifo,
        libc::SCHED_RR => Policy::Rr,
        other => return Err(io::Error::other(format!("unknown policy {other}"))),
    };
    Ok(SchedParams {
        policy,
        priority: priority.max(0) as u32,
        deadline: None,
    })
}

/// Whether this process has memory locked (`VmLck` above 0 in
/// /proc/self/status): a forked child loses the locks and must take them
/// again itself.
pub fn memory_locked() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmLck:"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .is_some_and(|kb| kb > 0)
}

/// The text of an errno value (for warnings, off the hot path).
pub fn describe_errno(errno: i32) -> String {
    io::Error::from_raw_os_error(errno).to_string()
}
