//! How a measuring thread waits for its next deadline: the wait modes
//! users choose (`--mode`, a campaign's `mode`), and the waiter each one
//! becomes in the measuring loop.

use super::grid::Grid;
use super::posix::PosixTimer;
use rtlab_core::clock::{self, PeriodicTimer};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How a measuring thread waits for its next deadline: `--mode` of
/// `rtlab measure timer` and `mode` of a campaign's timer probe, written
/// `abs`, `rel`, `timerfd` or `posix` (in results too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// clock_nanosleep(TIMER_ABSTIME) on a fixed grid (default).
    #[default]
    Abs,
    /// clock_nanosleep relative to the time before sleeping (cyclictest -r).
    Rel,
    /// A periodic absolute timerfd; the kernel counts the overruns.
    Timerfd,
    /// A periodic absolute POSIX interval timer signalling the thread,
    /// taken with sigwaitinfo (cyclictest -x); the kernel counts the
    /// overruns.
    Posix,
}

impl WaitMode {
    pub const ALL: [WaitMode; 4] = [
        WaitMode::Abs,
        WaitMode::Rel,
        WaitMode::Timerfd,
        WaitMode::Posix,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WaitMode::Abs => "abs",
            WaitMode::Rel => "rel",
            WaitMode::Timerfd => "timerfd",
            WaitMode::Posix => "posix",
        }
    }
}

impl fmt::Display for WaitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for WaitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<WaitMode, String> {
        WaitMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown mode `{s}` (expected abs, rel, timerfd or posix)"))
    }
}

/// A wait mode ready in its measuring thread, its timer (if any) armed.
pub(super) enum Waiter {
    Abs,
    Rel,
    Timerfd(PeriodicTimer),
    Posix(PosixTimer),
}

impl Waiter {
    /// The waiter of `mode` for a grid whose first deadline is `first_ns`,
    /// every `interval_ns`, in the calling thread (a POSIX timer signals
    /// the thread that creates it). A timer the kernel refuses falls back
    /// to clock_nanosleep, with the warning that says so.
    pub fn new(
        mode: WaitMode,
        first_ns: u64,
        interval_ns: u64,
        series: &str,
    ) -> (Waiter, Option<String>) {
        let fallback = |what: &str, e: std::io::Error| {
            let warning = format!(
                "{series}: {what} unavailable ({e}), measured with clock_nanosleep instead"
            );
            (Waiter::Abs, Some(warning))
        };
        match mode {
            WaitMode::Abs => (Waiter::Abs, None),
            WaitMode::Rel => {
                // Relative periods still start on the common grid.
                clock::sleep_until(first_ns - interval_ns);
                (Waiter::Rel, None)
            }
            WaitMode::Timerfd => match PeriodicTimer::new(first_ns, interval_ns) {
                Ok(timer) => (Waiter::Timerfd(timer), None),
                Err(e) => fallback("timerfd", e),
            },
            WaitMode::Posix => match PosixTimer::for_this_thread(first_ns, interval_ns) {
                Ok(timer) => (Waiter::Posix(timer), None),
                Err(e) => fallback("a POSIX timer", e),
            },
        }
    }

    /// Waits for the grid's next deadline: when the thread woke and, for
    /// a kernel timer, the expiries that passed meanwhile; the errno of a
    /// wait that failed. Hot path: the wait and the clock, nothing else.
    #[inline]
    pub fn wait(&self, grid: &mut Grid) -> Result<(u64, Option<u64>), i32> {
        match self {
            Waiter::Abs => {
                clock::sleep_until(grid.next_ns);
                Ok((clock::now_ns(), None))
            }
            Waiter::Rel => {
                let before = clock::now_ns();
                grid.next_ns = before + grid.interval_ns;
                clock::sleep_for(grid.interval_ns);
                Ok((clock::now_ns(), None))
            }
            Waiter::Timerfd(timer) => {
                let expirations = timer.wait();
                Ok((clock::now_ns(), Some(expirations.saturating_sub(1))))
            }
            Waiter::Posix(timer) => {
                let overruns = timer.wait()?;
                Ok((clock::now_ns(), Some(overruns)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_modes_read_and_write_as_in_results() {
        for mode in WaitMode::ALL {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.as_str());
            assert_eq!(mode.as_str().parse::<WaitMode>(), Ok(mode));
        }
        assert_eq!(
            "sleep".parse::<WaitMode>(),
            Err("unknown mode `sleep` (expected abs, rel, timerfd or posix)".to_string())
        );
    }
}
