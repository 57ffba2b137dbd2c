//! The kernel's software packet stamps (transmit and receive) are
//! CLOCK_REALTIME; the schedule is CLOCK_MONOTONIC. [`ClockOffset`]
//! brings a stamp to CLOCK_MONOTONIC.
//!
//! The two clocks do not always run at the same rate: a time service that
//! steps the real-time clock in small, frequent steps (this VM's host
//! does: CLOCK_REALTIME gained 1.7-2.2 µs per second on CLOCK_MONOTONIC
//! here) makes their difference move. Converted with an offset measured
//! once a second, every stamp drifted by that much: a replay on an exact
//! schedule showed −1.97 µs/s of "drift", and its receiver −1.93 µs/s.
//! So the offset is measured again for every batch of stamps read
//! (`refresh`, a few vDSO clock reads): a stamp is then off by its age at
//! the batch times the rate difference, nanoseconds.

use rtlab_core::clock;

/// CLOCK_REALTIME (or another clock) − CLOCK_MONOTONIC, measured by
/// reading the other clock between two monotonic reads (the narrowest
/// bracket of a few tries): its error is half that bracket, tens of ns.
#[derive(Debug, Clone, Copy)]
pub struct ClockOffset {
    clock: libc::clockid_t,
    offset_ns: i128,
    measured_at: u64,
}

fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// How old an offset may be before [`ClockOffset::refresh`] measures it
/// again: at 2 ppm of rate difference, 10 ms is 20 ns.
const REMEASURE_NS: u64 = 10_000_000;

impl ClockOffset {
    /// CLOCK_REALTIME's offset (the packet stamps' clock).
    pub fn measure() -> ClockOffset {
        ClockOffset::of(libc::CLOCK_REALTIME)
    }

    /// `other` − CLOCK_MONOTONIC (CLOCK_TAI for an etf qdisc).
    pub fn of(other: libc::clockid_t) -> ClockOffset {
        let mut best = (u64::MAX, 0i128);
        for _ in 0..3 {
            let before = clock::now_ns();
            let real = read_clock(other);
            let after = clock::now_ns();
            let width = after - before;
            if width < best.0 {
                let middle = before + width / 2;
                best = (width, i128::from(real) - i128::from(middle));
            }
        }
        ClockOffset {
            clock: other,
            offset_ns: best.1,
            measured_at: clock::now_ns(),
        }
    }

    /// Measures again when the offset is older than 10 ms at `now_ns`
    /// (CLOCK_MONOTONIC): call it before converting each batch of stamps.
    pub fn refresh(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.measured_at) >= REMEASURE_NS {
            *self = ClockOffset::of(self.clock);
        }
    }

    /// An instant of the other clock on CLOCK_MONOTONIC.
    pub fn monotonic(&self, other_ns: u64) -> u64 {
        (i128::from(other_ns) - self.offset_ns).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The ns to add to a CLOCK_MONOTONIC instant to have it on the other
    /// clock.
    pub fn ahead_ns(&self) -> i64 {
        self.offset_ns
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_brings_the_real_time_clock_to_the_monotonic_one() {
        let offset = ClockOffset::measure();
        let mono = clock::now_ns();
        let back = offset.monotonic(read_clock(libc::CLOCK_REALTIME));
        // Only that it converts (no timing asserted): the converted read
        // comes after the monotonic one, within a generous minute.
        assert!(back + 1_000_000 >= mono && back < mono + 60_000_000_000);
    }

    #[test]
    fn refresh_keeps_the_clock_it_measures() {
        let mut tai = ClockOffset::of(libc::CLOCK_TAI);
        tai.refresh(clock::now_ns() + REMEASURE_NS);
        assert_eq!(tai.clock, libc::CLOCK_TAI);
    }
}
