//! Futex wait and wake on a word in memory shared between processes: the
//! release word of the page `rtlab exec serve` and a client both map (a
//! memfd), and the executive's "table changed" word. Shared futexes (no
//! FUTEX_PRIVATE_FLAG): a private one keys on the address space and would
//! never wake the other process. Allocation-free; each call is one syscall.

use std::sync::atomic::AtomicU32;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// Woken, or the word no longer held the value (EAGAIN), or a signal
    /// or a spurious wake-up: the caller looks at the word again.
    Maybe,
    /// The timeout passed.
    TimedOut,
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// One FUTEX_WAIT-family call on `word` while it holds `expected`, until
/// the timeout (relative for FUTEX_WAIT, absolute for FUTEX_WAIT_BITSET).
#[inline]
fn wait(word: &AtomicU32, op: libc::c_int, expected: u32, timeout_ns: u64) -> Woken {
    let ts = timespec(timeout_ns);
    // SAFETY: word is a valid, aligned u32 for the call; ts lives for it;
    // the unused uaddr2 is null; the bitset is ignored by FUTEX_WAIT.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
    // SAFETY: __errno_location always returns the calling thread's errno.
    if rc < 0 && unsafe { *libc::__errno_location() } == libc::ETIMEDOUT {
        Woken::TimedOut
    } else {
        Woken::Maybe
    }
}

/// Waits while `word` holds `expected`, at most `timeout_ns` (relative).
#[inline]
pub fn wait_for(word: &AtomicU32, expected: u32, timeout_ns: u64) -> Woken {
    wait(word, libc::FUTEX_WAIT, expected, timeout_ns)
}

/// Waits while `word` holds `expected`, at most until the absolute
/// CLOCK_MONOTONIC instant `deadline_ns` (FUTEX_WAIT_BITSET: the one futex
/// wait with an absolute timeout, so a late wake-up never drifts).
#[inline]
pub fn wait_until(word: &AtomicU32, expected: u32, deadline_ns: u64) -> Woken {
    wait(word, libc::FUTEX_WAIT_BITSET, expected, deadline_ns)
}

/// Wakes every waiter of `word`.
#[inline]
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: word is a valid, aligned u32 for the call.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// CLOCK_MONOTONIC now, ns (the clock of every instant on the page).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_times_out_and_a_changed_word_returns_at_once() {
        let word = AtomicU32::new(7);
        assert_eq!(wait_for(&word, 7, 1_000_000), Woken::TimedOut);
        assert_eq!(wait_for(&word, 8, 10_000_000_000), Woken::Maybe);
        let past = now_ns();
        assert_eq!(wait_until(&word, 7, past), Woken::TimedOut);
    }

    #[test]
    fn a_wake_ends_a_wait() {
        let word = std::sync::Arc::new(AtomicU32::new(0));
        let waker = std::sync::Arc::clone(&word);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            waker.store(1, std::sync::atomic::Ordering::Release);
            wake_all(&waker);
        });
        while word.load(std::sync::atomic::Ordering::Acquire) == 0 {
            wait_for(&word, 0, 10_000_000_000);
        }
        thread.join().unwrap();
    }
}
