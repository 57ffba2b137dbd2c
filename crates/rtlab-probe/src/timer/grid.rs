//! A measuring thread's absolute grid of deadlines and how each wake-up
//! is counted on it (`rtlab monitor` counts its bursts here too).

use crate::recorder::Sample;
use std::sync::atomic::{AtomicU64, Ordering};

/// A measuring thread's place on its absolute grid of deadlines, and how
/// a wake-up becomes a sample: the timer probe's loop and `rtlab
/// monitor`'s bursts count theirs here. A wake-up late by k periods missed
/// k − 1 deadlines of its own: they are skipped (never measured as fake
/// catch-up samples) and counted, at most those still planned, so that a
/// stall weighs what it cost (coordinated omission avoided).
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    /// Where [`Sample::at_ns`] counts from.
    pub origin_ns: u64,
    /// The deadline waited for (CLOCK_MONOTONIC ns).
    pub next_ns: u64,
    pub interval_ns: u64,
    /// Deadlines met or missed so far.
    pub done: u64,
    pub planned: u64,
}

impl Grid {
    /// `planned` deadlines every `interval_ns` from `first_ns` on.
    pub fn new(origin_ns: u64, first_ns: u64, interval_ns: u64, planned: u64) -> Grid {
        Grid {
            origin_ns,
            next_ns: first_ns,
            interval_ns,
            done: 0,
            planned,
        }
    }

    pub fn is_done(&self) -> bool {
        self.done >= self.planned
    }

    /// Counts the wake-up at `woke_ns` for the deadline `next_ns` (with
    /// the overruns the kernel counted, for a timerfd or a POSIX timer),
    /// pushes its sample into `ring` (or counts it in `dropped` when the
    /// ring is full) and moves to the next deadline of its own. Hot path:
    /// no allocation, no system call.
    #[inline]
    pub fn wake_up(
        &mut self,
        woke_ns: u64,
        missed_by_kernel: Option<u64>,
        ring: &mut rtrb::Producer<Sample>,
        dropped: &AtomicU64,
    ) -> Sample {
        let latency = woke_ns.saturating_sub(self.next_ns);
        let left = self.planned.saturating_sub(self.done + 1);
        let missed = missed_by_kernel
            .unwrap_or(latency / self.interval_ns)
            .min(left);
        let sample = Sample {
            at_ns: self.next_ns - self.origin_ns,
            latency_ns: latency,
            missed,
        };
        if ring.push(sample).is_err() {
            dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.done += 1 + missed;
        self.next_ns += (1 + missed) * self.interval_ns;
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_wake_up_counts_the_deadlines_it_swallowed_within_the_plan() {
        let (mut ring, mut out) = rtrb::RingBuffer::new(8);
        let dropped = AtomicU64::new(0);
        let mut grid = Grid::new(1_000, 2_000, 100, 10);
        // On time, then 350 late: the deadlines at 2_200, 2_300 and 2_400
        // passed meanwhile.
        assert_eq!(grid.wake_up(2_010, None, &mut ring, &dropped).missed, 0);
        let late = grid.wake_up(2_450, None, &mut ring, &dropped);
        assert_eq!((late.at_ns, late.latency_ns, late.missed), (1_100, 350, 3));
        assert_eq!((grid.done, grid.next_ns), (5, 2_500));
        // A stall longer than the rest of the plan counts the rest only.
        let stalled = grid.wake_up(9_000, None, &mut ring, &dropped);
        assert_eq!(stalled.missed, 4);
        assert!(grid.is_done());
        assert_eq!(grid.done, grid.planned);
        assert_eq!(out.pop().unwrap().latency_ns, 10);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_kernel_s_count_of_overruns_is_taken_as_it_is() {
        let (mut ring, _out) = rtrb::RingBuffer::new(8);
        let dropped = AtomicU64::new(0);
        let mut grid = Grid::new(0, 100, 100, 10);
        // Late by 2.5 periods, the kernel saw 2 expiries pass meanwhile.
        let late = grid.wake_up(350, Some(2), &mut ring, &dropped);
        assert_eq!((late.latency_ns, late.missed), (250, 2));
        assert_eq!((grid.done, grid.next_ns), (3, 400));
    }
}
