//! A POSIX interval timer for `--mode posix` (cyclictest `-x`):
//! `timer_create(CLOCK_MONOTONIC)` whose expiries are a real-time signal
//! sent to the measuring thread itself (`SIGEV_THREAD_ID`), kept blocked
//! in that thread and taken synchronously with `sigwaitinfo`: no handler
//! ever runs, so nothing happens in signal context. Armed once at
//! absolute times, so the kernel keeps the grid; the expiries that pass
//! while the signal is still pending are its overrun count (`si_overrun`),
//! which are the deadlines the thread missed. The timer is deleted when
//! the value is dropped: at the end of the loop, on a panic, on any exit.

use std::io;

/// The timer's signal is SIGRTMIN + this. The switch probe's `signal`
/// mechanism uses SIGRTMIN + 7; each is directed at one thread that blocks
/// it, so they could not meet anyway.
pub const SIGNAL_OFFSET: libc::c_int = 8;

/// The head of a `siginfo_t` as the kernel fills it for a POSIX timer
/// (`si_signo`, `si_errno`, `si_code`, then the `_timer` member of the
/// union, which starts pointer-aligned): the libc crate has no accessor for
/// `si_overrun`, and reading it here saves the `timer_getoverrun` call
/// cyclictest makes after each wake-up.
#[repr(C)]
struct TimerSigInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    #[cfg(target_pointer_width = "64")]
    _pad: libc::c_int,
    timer_id: libc::c_int,
    overrun: libc::c_int,
}

// The mirror must fit in the kernel's 128-byte siginfo.
const _: () =
    assert!(std::mem::size_of::<TimerSigInfo>() <= std::mem::size_of::<libc::siginfo_t>());

/// A periodic POSIX timer signalling the thread that created it.
pub struct PosixTimer {
    id: libc::timer_t,
    signals: libc::sigset_t,
    signo: libc::c_int,
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

impl PosixTimer {
    /// For the calling thread: blocks the timer's signal in its mask (so
    /// it stays pending for `sigwaitinfo`: its default action would end
    /// the process), creates the timer directed at this thread and arms it
    /// to expire at `first_ns` (absolute CLOCK_MONOTONIC), then every
    /// `period_ns`.
    pub fn for_this_thread(first_ns: u64, period_ns: u64) -> io::Result<PosixTimer> {
        let signo = libc::SIGRTMIN() + SIGNAL_OFFSET;
        if signo > libc::SIGRTMAX() {
            return Err(io::Error::other(format!(
                "no real-time signal SIGRTMIN+{SIGNAL_OFFSET} on this system"
            )));
        }
        // SAFETY: sigset_t is plain data, initialised by sigemptyset.
        let mut signals: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set is ours; pthread_sigmask changes this thread only.
        let rc = unsafe {
            libc::sigemptyset(&mut signals);
            libc::sigaddset(&mut signals, signo);
            libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        // SAFETY: sigevent is plain data; the fields used are set below.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signo;
        event.sigev_notify_thread_id = rtlab_core::sched::gettid();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: event and id are valid for the call; the timer is owned
        // by the value returned, which deletes it.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let timer = PosixTimer { id, signals, signo };
        let spec = libc::itimerspec {
            it_interval: timespec(period_ns),
            it_value: timespec(first_ns),
        };
        // SAFETY: the timer is ours and spec is valid; no old value wanted.
        let rc = unsafe {
            libc::timer_settime(timer.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(timer)
    }

    /// Blocks until the timer's next expiry and returns how many further
    /// expiries passed while it was pending (0 when on time); the errno of
    /// a wait that failed other than by EINTR. The same signal sent by
    /// anything but the timer (a `tgkill`) is not an expiry and is passed
    /// over. Hot path: one `sigwaitinfo`, nothing else.
    #[inline]
    pub fn wait(&self) -> Result<u64, i32> {
        loop {
            // SAFETY: siginfo_t is plain data, filled by the kernel.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: the set is initialised and info is a valid out-pointer.
            let rc = unsafe { libc::sigwaitinfo(&self.signals, &mut info) };
            if rc == self.signo {
                // SAFETY: TimerSigInfo mirrors the head of siginfo_t and is
                // no larger (checked above); both are plain integers.
                let fields = unsafe { &*(&info as *const libc::siginfo_t).cast::<TimerSigInfo>() };
                if fields.code == libc::SI_TIMER {
                    return Ok(u64::try_from(fields.overrun).unwrap_or(0));
                }
                continue;
            }
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if errno != libc::EINTR {
                return Err(errno);
            }
        }
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the timer is owned by self and deleted once. A signal it
        // left pending stays blocked in a thread about to end.
        unsafe { libc::timer_delete(self.id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::clock;

    const PERIOD_NS: u64 = 1_000_000;

    /// In a thread of its own: the signal stays blocked in that thread only.
    fn in_own_thread<T: Send + 'static>(test: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(test).join().unwrap()
    }

    #[test]
    fn expiries_missed_while_pending_are_the_overruns_the_kernel_counts() {
        let (overruns, by_call) = in_own_thread(|| {
            let timer = PosixTimer::for_this_thread(clock::now_ns() + PERIOD_NS, PERIOD_NS)
                .expect("a POSIX timer");
            timer.wait().unwrap();
            // 10 periods without taking the signal: at least 9 expiries,
            // the first pending, the others overruns.
            std::thread::sleep(std::time::Duration::from_nanos(10 * PERIOD_NS));
            let overruns = timer.wait().unwrap();
            // SAFETY: the timer is alive; it reports the last delivery's overruns.
            let by_call = unsafe { libc::timer_getoverrun(timer.id) };
            (overruns, by_call)
        });
        assert!(overruns >= 8, "{overruns} overruns after 10 periods");
        assert_eq!(overruns, by_call as u64, "si_overrun = timer_getoverrun");
    }

    #[test]
    fn the_signal_sent_by_hand_is_not_an_expiry() {
        let waited = in_own_thread(|| {
            // First expiry 20 periods away: the tgkill comes first.
            let start = clock::now_ns();
            let timer = PosixTimer::for_this_thread(start + 20 * PERIOD_NS, PERIOD_NS).unwrap();
            // SAFETY: a signal to this very thread, which blocks it.
            unsafe {
                libc::syscall(
                    libc::SYS_tgkill,
                    libc::getpid(),
                    rtlab_core::sched::gettid(),
                    timer.signo,
                )
            };
            timer.wait().unwrap();
            clock::now_ns() - start
        });
        assert!(waited >= 20 * PERIOD_NS, "woke {waited} ns after the start");
    }

    #[test]
    fn the_timer_is_deleted_when_dropped() {
        let after_drop = in_own_thread(|| {
            let timer =
                PosixTimer::for_this_thread(clock::now_ns() + PERIOD_NS, PERIOD_NS).unwrap();
            let id = timer.id;
            drop(timer);
            // SAFETY: asking about a timer id is harmless; it is gone.
            let rc = unsafe { libc::timer_getoverrun(id) };
            (rc, io::Error::last_os_error().raw_os_error())
        });
        assert_eq!(after_drop, (-1, Some(libc::EINVAL)));
    }
}
