//! `--guard auto`: how early the dispatcher must wake to be awake at the
//! event, measured on this machine before the plan starts.

use rtlab_core::clock;

/// Warm-up wake-ups, 1 ms apart (a fifth of a second).
const WAKEUPS: usize = 200;
const WARMUP_PERIOD_NS: u64 = 1_000_000;
/// The guard never goes below this (a machine that wakes on time still
/// needs the spin to reach the nanosecond) nor above this (host stalls of
/// several ms are not worth burning a CPU for at every event).
const MIN_GUARD_NS: u64 = 20_000;
const MAX_GUARD_NS: u64 = 2_000_000;

/// What the warm-up saw and the guard it chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    pub wakeups: usize,
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub guard_ns: u64,
}

/// Sleeps to WAKEUPS absolute deadlines on the calling (already promoted)
/// thread and measures how late it woke.
pub fn calibrate() -> Calibration {
    let mut late = Vec::with_capacity(WAKEUPS);
    let mut next = clock::now_ns() + WARMUP_PERIOD_NS;
    for _ in 0..WAKEUPS {
        clock::sleep_until(next);
        late.push(clock::now_ns().saturating_sub(next));
        next += WARMUP_PERIOD_NS;
    }
    from_latencies(late)
}

/// The guard for these wake-up latencies: 1.5 × the 95th percentile plus
/// 10 µs, within [MIN_GUARD_NS, MAX_GUARD_NS]. The 95th percentile, not
/// the maximum nor the 99th: up to ten host stalls of milliseconds in the
/// warm-up would otherwise make every event spin for milliseconds.
pub fn from_latencies(mut late: Vec<u64>) -> Calibration {
    late.sort_unstable();
    let at = |q: f64| late[((late.len() - 1) as f64 * q) as usize];
    let (p50, p95, p99, max) = (at(0.5), at(0.95), at(0.99), *late.last().unwrap_or(&0));
    let guard = (p95 + p95 / 2 + 10_000).clamp(MIN_GUARD_NS, MAX_GUARD_NS);
    Calibration {
        wakeups: late.len(),
        p50_ns: p50,
        p95_ns: p95,
        p99_ns: p99,
        max_ns: max,
        guard_ns: guard,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_is_above_the_observed_wakeup_latency_and_bounded() {
        let typical: Vec<u64> = (0..200).map(|i| 30_000 + (i % 10) * 1_000).collect();
        let c = from_latencies(typical);
        assert!(c.guard_ns > c.p99_ns && c.guard_ns > c.p50_ns, "{c:?}");
        // Host stalls in the warm-up (here five) do not set the guard.
        let mut stalled: Vec<u64> = vec![25_000; 195];
        stalled.extend([7_000_000; 5]);
        let c = from_latencies(stalled);
        assert!(c.guard_ns < 1_000_000 && c.max_ns == 7_000_000, "{c:?}");
        // A perfect machine still gets the floor.
        assert_eq!(from_latencies(vec![0; 200]).guard_ns, MIN_GUARD_NS);
        assert_eq!(from_latencies(vec![10_000_000; 200]).guard_ns, MAX_GUARD_NS);
    }

    #[test]
    fn calibrating_here_picks_a_guard_above_what_it_measured() {
        let c = calibrate();
        assert_eq!(c.wakeups, WAKEUPS);
        assert!(c.guard_ns > c.p95_ns.min(MAX_GUARD_NS - 1), "{c:?}");
    }
}
