//! How close packets came to their plan, summed online (a stream of 10 M
//! packets costs the memory of one of ten), for both sides: the replay's
//! departures and the recorder's arrivals. Signed extremes and mean, the
//! share within 1 µs and 5 µs, for gaps the share within 1 % of the
//! planned gap (paper 002's figure), and for instants the drift.
//!
//! **Drift** is the least-squares slope, over time, of the error's floor:
//! the smallest error of each block of packets. A fit of every packet is
//! tilted by wherever the host's stalls happen to fall (one 850 µs stall
//! near the end of a 1 s run read as ±3.5 µs/s on an exact schedule
//! here); a stall only adds delay, so it leaves a block's minimum alone,
//! while a schedule that drifts moves every packet, the floor too. Blocks
//! start at [`FIRST_BLOCK`] packets; at [`MAX_BLOCKS`] neighbours merge,
//! doubling the block, so memory stays constant.

use rtlab_core::result::TrafficAccuracy;

/// Packets per block of the floor at first.
pub const FIRST_BLOCK: u64 = 32;
/// Blocks kept at most (then merged in pairs).
pub const MAX_BLOCKS: usize = 1024;

/// Running sums of one error series; constant memory.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    samples: u64,
    min: i128,
    max: i128,
    sum: i128,
    within_1us: u64,
    within_5us: u64,
    /// Gap series only: within 1 % of the planned gap.
    within_1pct: Option<u64>,
    floor: Floor,
}

/// The smallest error of each block: (seconds, error ns) of its minimum.
#[derive(Debug, Clone, Default)]
struct Floor {
    block: u64,
    in_block: u64,
    current: Option<(f64, i128)>,
    blocks: Vec<(f64, i128)>,
}

impl Floor {
    fn add(&mut self, at_s: f64, error_ns: i128) {
        if self.block == 0 {
            self.block = FIRST_BLOCK;
        }
        if self.current.is_none_or(|(_, low)| error_ns < low) {
            self.current = Some((at_s, error_ns));
        }
        self.in_block += 1;
        if self.in_block == self.block {
            self.close();
        }
    }

    fn close(&mut self) {
        if let Some(low) = self.current.take() {
            self.blocks.push(low);
        }
        self.in_block = 0;
        if self.blocks.len() == MAX_BLOCKS {
            self.blocks = self
                .blocks
                .chunks(2)
                .map(|pair| *pair.iter().min_by_key(|b| b.1).expect("a pair"))
                .collect();
            self.block *= 2;
        }
    }

    /// The least-squares slope of the blocks' minima (the last, partial
    /// block included), ns per s; None with fewer than two distinct instants.
    fn slope(&self) -> Option<f64> {
        let (mut n, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(x, y) in self.blocks.iter().chain(self.current.iter()) {
            let y = y as f64;
            n += 1.0;
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        let denominator = n * sxx - sx * sx;
        (n >= 2.0 && denominator.abs() > f64::EPSILON * n * sxx.max(1.0))
            .then(|| (n * sxy - sx * sy) / denominator)
    }
}

impl Accuracy {
    /// An error of an instant series (departure or arrival − planned),
    /// `at_s` seconds into the stream.
    pub fn add_instant(&mut self, error_ns: i128, at_s: f64) {
        self.add(error_ns);
        self.floor.add(at_s, error_ns);
    }

    /// An error of a gap series whose planned gap was `planned_gap_ns`.
    pub fn add_gap(&mut self, error_ns: i128, planned_gap_ns: u128) {
        self.add(error_ns);
        let within = error_ns.unsigned_abs().saturating_mul(100) <= planned_gap_ns;
        *self.within_1pct.get_or_insert(0) += u64::from(within);
    }

    fn add(&mut self, error_ns: i128) {
        if self.samples == 0 {
            (self.min, self.max) = (error_ns, error_ns);
        }
        self.samples += 1;
        self.min = self.min.min(error_ns);
        self.max = self.max.max(error_ns);
        self.sum = self.sum.saturating_add(error_ns);
        let size = error_ns.unsigned_abs();
        self.within_1us += u64::from(size <= 1_000);
        self.within_5us += u64::from(size <= 5_000);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The report's figures for `series`.
    pub fn summary(&self, series: &str, meaning: &str) -> TrafficAccuracy {
        let pct = |n: u64| {
            if self.samples == 0 {
                0.0
            } else {
                n as f64 * 100.0 / self.samples as f64
            }
        };
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        TrafficAccuracy {
            series: series.into(),
            meaning: meaning.into(),
            samples: self.samples,
            min_ns: clamp(self.min),
            max_ns: clamp(self.max),
            mean_ns: if self.samples == 0 {
                0.0
            } else {
                self.sum as f64 / self.samples as f64
            },
            within_1us_pct: pct(self.within_1us),
            within_5us_pct: pct(self.within_5us),
            within_1pct_of_gap_pct: self.within_1pct.map(pct),
            drift_ns_per_s: self.floor.slope(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_extremes_and_mean_are_signed_and_exact() {
        let mut a = Accuracy::default();
        for e in [-500, 800, 3_000, -7_000] {
            a.add_gap(e, 100_000);
        }
        let s = a.summary("arrival_gap", "gap");
        assert_eq!((s.samples, s.min_ns, s.max_ns), (4, -7_000, 3_000));
        assert_eq!(s.mean_ns, -925.0);
        assert_eq!((s.within_1us_pct, s.within_5us_pct), (50.0, 75.0));
        // 1 % of 100 µs is 1 µs; exactly 1 % counts.
        assert_eq!(s.within_1pct_of_gap_pct, Some(50.0));
        assert_eq!(s.drift_ns_per_s, None);
    }

    #[test]
    fn a_steady_drift_is_its_slope_and_a_flat_floor_none_of_it() {
        let mut drifting = Accuracy::default();
        let mut flat = Accuracy::default();
        for i in 0..10_000u32 {
            let at = f64::from(i) / 1_000.0;
            // 30 ns more every ms: 30 µs/s.
            drifting.add_instant(i128::from(i) * 30, at);
            flat.add_instant(300, at);
        }
        let drift = drifting.summary("arrival", "i").drift_ns_per_s.unwrap();
        assert!((drift - 30_000.0).abs() < 1.0, "{drift}");
        let none = flat.summary("arrival", "i").drift_ns_per_s.unwrap();
        assert!(none.abs() < 1e-6, "{none}");
    }

    #[test]
    fn stalls_do_not_tilt_the_drift() {
        // An exact schedule (2 µs of error) with a 850 µs stall in the last
        // tenth of the run, and one in a block of its own at the start.
        let mut a = Accuracy::default();
        for i in 0..2_000u32 {
            let error = if i == 1_900 || i == 3 { 850_000 } else { 2_000 };
            a.add_instant(error, f64::from(i) / 2_000.0);
        }
        let drift = a.summary("departure", "d").drift_ns_per_s.unwrap();
        assert!(drift.abs() < 1e-6, "{drift}");
        assert_eq!(a.summary("departure", "d").max_ns, 850_000);
    }

    #[test]
    fn the_floor_merges_blocks_and_keeps_its_memory() {
        let mut a = Accuracy::default();
        let n = FIRST_BLOCK * MAX_BLOCKS as u64 * 4;
        for i in 0..n {
            a.add_instant(i128::from(i as i64 % 7), i as f64 * 1e-3);
        }
        // Full at 1024 blocks of 32, then at 512 + 512 of 64, then of 128:
        // 4 × 32 768 packets end on a merge into blocks of 256.
        assert_eq!(a.floor.blocks.len(), MAX_BLOCKS / 2);
        assert_eq!(a.floor.block, FIRST_BLOCK * 8);
        let extreme = {
            let mut a = Accuracy::default();
            a.add_instant(i128::from(u64::MAX) * 4, 0.0);
            a.summary("arrival", "i")
        };
        assert_eq!(extreme.max_ns, i64::MAX);
    }
}
