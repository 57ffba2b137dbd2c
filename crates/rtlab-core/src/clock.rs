//! The clock and the three ways a probe waits for a deadline. All times are
//! CLOCK_MONOTONIC nanoseconds. `now_ns` goes through the vDSO: no syscall.

use std::io;

const NS_PER_SEC: u64 = 1_000_000_000;

fn to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_SEC) as libc::time_t,
        tv_nsec: (ns % NS_PER_SEC) as libc::c_long,
    }
}

/// CLOCK_MONOTONIC now, in ns.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Sleeps until the absolute CLOCK_MONOTONIC instant `deadline_ns`. A signal
/// interrupting the sleep just resumes it: the deadline is absolute, so
/// nothing drifts.
#[inline]
pub fn sleep_until(deadline_ns: u64) {
    let ts = to_timespec(deadline_ns);
    loop {
        // SAFETY: ts is valid for the call; remaining time is unused with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Sleeps for `ns` relative to now (cyclictest `-r`): each wake-up's lateness
/// shifts every later one, which is what this mode exists to show.
#[inline]
pub fn sleep_for(ns: u64) {
    let mut request = to_timespec(ns);
    let mut remaining = to_timespec(0);
    loop {
        // SAFETY: both timespecs are valid for the call.
        let rc =
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &request, &mut remaining) };
        if rc != libc::EINTR {
            return;
        }
        request = remaining;
    }
}

/// Sleeps to the absolute instant `deadline_ns` in slices of at most
/// `slice_ns`, looking at `stop` before each: true once the deadline is
/// reached, false as soon as `stop` is seen. For a measuring thread's
/// long waits between periods or bursts (the noise probe's spinner,
/// `rtlab monitor`), so that it ends soon after being told.
pub fn sleep_until_or_stop(
    deadline_ns: u64,
    stop: &std::sync::atomic::AtomicBool,
    slice_ns: u64,
) -> bool {
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let now = now_ns();
        if now >= deadline_ns {
            return true;
        }
        sleep_until(deadline_ns.min(now.saturating_add(slice_ns)));
    }
}

/// A periodic CLOCK_MONOTONIC timerfd armed at absolute times: the kernel
/// keeps the grid and tells how many expirations passed, so overruns are
/// counted by the kernel itself.
pub struct PeriodicTimer {
    fd: libc::c_int,
}

impl PeriodicTimer {
    /// First expiry at `first_ns` (absolute), then every `period_ns`.
    pub fn new(first_ns: u64, period_ns: u64) -> io::Result<PeriodicTimer> {
        // SAFETY: plain syscall; the fd is owned by the returned value.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let timer = PeriodicTimer { fd };
        let spec = libc::itimerspec {
            it_interval: to_timespec(period_ns),
            it_value: to_timespec(first_ns),
        };
        // SAFETY: fd is ours, spec is valid, old value not requested.
        let rc = unsafe {
            libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(timer)
    }

    /// Blocks until the next expiry; returns how many expirations happened
    /// since the last call (1 when on time, k+1 when k periods were missed).
    #[inline]
    pub fn wait(&self) -> u64 {
        let mut expirations: u64 = 0;
        loop {
            // SAFETY: reading 8 bytes into a u64 owned by this frame.
            let n = unsafe {
                libc::read(
                    self.fd,
                    (&mut expirations as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if n == 8 {
                return expirations;
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // Any other failure of a timerfd read is impossible for a valid fd;
            // report one expiry so the caller's accounting stays sane.
            return 1;
        }
    }
}

impl Drop for PeriodicTimer {
    fn drop(&mut self) {
        // SAFETY: fd is owned by self and closed once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn sleep_until_never_wakes_early() {
        let deadline = now_ns() + 2_000_000;
        sleep_until(deadline);
        assert!(now_ns() >= deadline);
    }

    #[test]
    fn timerfd_counts_overruns() {
        let start = now_ns() + 1_000_000;
        let timer = PeriodicTimer::new(start, 1_000_000).unwrap();
        // Stay away for at least three periods after the first expiry.
        sleep_until(start + 3_500_000);
        let first = timer.wait();
        assert!(first >= 4, "{first}");
        // Every expiry counted once, none invented: never more than the
        // periods that passed (however late this thread ran).
        let second = timer.wait();
        let passed = (now_ns() - start) / 1_000_000 + 1;
        assert!(
            second >= 1 && first + second <= passed,
            "{first} + {second} > {passed}"
        );
    }
}
