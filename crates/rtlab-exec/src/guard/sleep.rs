//! The executive's waits: an absolute sleep that reports how late it woke
//! and how long it meant to sleep (what the learner learns from), and the
//! spin to the nanosecond.

use rtlab_core::clock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Longest single sleep: a stop is seen within this even when the next
/// instant is far away. The chunks before the last end at least half a
/// chunk before the target, so the last one is a real absolute sleep to
/// the target, whatever the wake-up latency of the others.
pub(crate) const STOP_CHECK_NS: u64 = 50_000_000;

/// How a sleep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slept {
    /// The stop flag was seen.
    Stopped,
    /// The target had already passed: no sleep. `now_ns`: the clock read.
    Due { now_ns: u64 },
    /// Slept: `idle_ns` from its start to the target (the planned sleep),
    /// woke `late_ns` after the target, at `now_ns`.
    Woke {
        idle_ns: u64,
        late_ns: u64,
        now_ns: u64,
    },
}

/// Sleeps (absolute `clock_nanosleep`) from `now_ns` (the clock just read)
/// to `target_ns`, looking at `stop` before and at least every
/// [`STOP_CHECK_NS`]. Hot path: the clock and the sleep only.
#[inline]
pub(crate) fn sleep_to(target_ns: u64, now_ns: u64, stop: &AtomicBool) -> Slept {
    if stop.load(Ordering::Relaxed) {
        return Slept::Stopped;
    }
    if now_ns >= target_ns {
        return Slept::Due { now_ns };
    }
    let mut now = now_ns;
    while target_ns - now > STOP_CHECK_NS {
        clock::sleep_until((now + STOP_CHECK_NS).min(target_ns - STOP_CHECK_NS / 2));
        if stop.load(Ordering::Relaxed) {
            return Slept::Stopped;
        }
        now = clock::now_ns();
        if now >= target_ns {
            // A chunk woke past the target: late, though not by the last
            // sleep's own wake-up.
            return Slept::Due { now_ns: now };
        }
    }
    clock::sleep_until(target_ns);
    let woke = clock::now_ns();
    Slept::Woke {
        idle_ns: target_ns - now_ns,
        late_ns: woke.saturating_sub(target_ns),
        now_ns: woke,
    }
}

/// Spins until the clock reaches `instant_ns`; returns the time read last.
#[inline(always)]
pub(crate) fn spin_until(instant_ns: u64) -> u64 {
    loop {
        let now = clock::now_ns();
        if now >= instant_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_reports_its_length_and_lateness_and_sees_a_stop() {
        let stop = AtomicBool::new(false);
        let now = clock::now_ns();
        match sleep_to(now + 2_000_000, now, &stop) {
            Slept::Woke {
                idle_ns,
                late_ns,
                now_ns,
            } => {
                assert_eq!(idle_ns, 2_000_000);
                assert_eq!(now_ns, now + 2_000_000 + late_ns);
            }
            other => panic!("{other:?}"),
        }
        let now = clock::now_ns();
        assert_eq!(sleep_to(now, now, &stop), Slept::Due { now_ns: now });
        stop.store(true, Ordering::Relaxed);
        assert_eq!(sleep_to(now + 1_000_000_000, now, &stop), Slept::Stopped);
        assert!(spin_until(now + 1_000) >= now + 1_000);
    }
}
