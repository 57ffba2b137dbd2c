//! How close packets came to their plan, summed online (no per-packet
//! storage, so a replay of 10 M packets costs the same memory as one of
//! ten): signed extremes and mean, the share within 1 µs and 5 µs, the
//! share of gaps within 1 % of the planned gap (paper 002's figure) and
//! the least-squares drift of the error over time.

use rtlab_core::result::TrafficAccuracy;

/// The online sums of one error series.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    samples: u64,
    min_ns: i64,
    max_ns: i64,
    sum_ns: f64,
    within_1us: u64,
    within_5us: u64,
    /// Gaps within 1 % of their planned gap (gap series only).
    within_1pct: u64,
    /// Least squares of error (ns) on time (s): Σx, Σy, Σxx, Σxy.
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Accuracy {
    /// One packet's error `error_ns` at `at_ns` (ns since the start).
    pub fn add(&mut self, at_ns: u64, error_ns: i64) {
        if self.samples == 0 {
            (self.min_ns, self.max_ns) = (error_ns, error_ns);
        }
        self.samples += 1;
        self.min_ns = self.min_ns.min(error_ns);
        self.max_ns = self.max_ns.max(error_ns);
        let y = error_ns as f64;
        self.sum_ns += y;
        let size = error_ns.unsigned_abs();
        self.within_1us += u64::from(size <= 1_000);
        self.within_5us += u64::from(size <= 5_000);
        let x = at_ns as f64 / 1e9;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// A gap's error against its planned gap `planned_gap_ns`.
    pub fn add_gap(&mut self, at_ns: u64, error_ns: i64, planned_gap_ns: u64) {
        self.add(at_ns, error_ns);
        // 1 % of the planned gap, in integers: |error| * 100 <= gap.
        let within = u128::from(error_ns.unsigned_abs()) * 100 <= u128::from(planned_gap_ns);
        self.within_1pct += u64::from(within);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The least-squares slope, ns of error per s of run; None with fewer
    /// than two distinct instants.
    fn drift(&self) -> Option<f64> {
        let n = self.samples as f64;
        let denominator = n * self.sxx - self.sx * self.sx;
        (self.samples >= 2 && denominator > f64::EPSILON * n * self.sxx.max(1.0))
            .then(|| (n * self.sxy - self.sx * self.sy) / denominator)
    }

    /// The report's figures for `series` (`gap`: with the 1 % share and
    /// without a drift, which only an instant series has).
    pub fn report(&self, series: &str, meaning: &str, gap: bool) -> TrafficAccuracy {
        let pct = |count: u64| {
            if self.samples == 0 {
                0.0
            } else {
                100.0 * count as f64 / self.samples as f64
            }
        };
        TrafficAccuracy {
            series: series.into(),
            meaning: meaning.into(),
            samples: self.samples,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            mean_ns: if self.samples == 0 {
                0.0
            } else {
                self.sum_ns / self.samples as f64
            },
            within_1us_pct: pct(self.within_1us),
            within_5us_pct: pct(self.within_5us),
            within_1pct_of_gap_pct: gap.then(|| pct(self.within_1pct)),
            drift_ns_per_s: if gap { None } else { self.drift() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_mean_and_shares_are_counted() {
        let mut a = Accuracy::default();
        for (at, e) in [(0, -500), (1, 2_000), (2, 7_000), (3, 1_000)] {
            a.add(at, e);
        }
        let r = a.report("departure", "d", false);
        assert_eq!((r.samples, r.min_ns, r.max_ns), (4, -500, 7_000));
        assert_eq!(r.mean_ns, 2_375.0);
        assert_eq!(r.within_1us_pct, 50.0);
        assert_eq!(r.within_5us_pct, 75.0);
        assert_eq!(r.within_1pct_of_gap_pct, None);
    }

    #[test]
    fn a_linear_error_gives_its_slope_and_a_constant_one_none() {
        let mut drifting = Accuracy::default();
        let mut constant = Accuracy::default();
        for s in 0..10u64 {
            // 100 ns more error every second.
            drifting.add(s * 1_000_000_000, 50 + 100 * s as i64);
            constant.add(s * 1_000_000_000, 300);
        }
        let slope = drifting
            .report("departure", "d", false)
            .drift_ns_per_s
            .unwrap();
        assert!((slope - 100.0).abs() < 1e-6, "{slope}");
        let flat = constant
            .report("departure", "d", false)
            .drift_ns_per_s
            .unwrap();
        assert!(flat.abs() < 1e-6, "{flat}");
        let mut one = Accuracy::default();
        one.add(5, 5);
        assert_eq!(one.report("departure", "d", false).drift_ns_per_s, None);
    }

    #[test]
    fn gaps_within_one_percent_of_the_planned_gap() {
        let mut g = Accuracy::default();
        g.add_gap(0, 5_000, 500_000); // exactly 1 %
        g.add_gap(1, -5_001, 500_000);
        g.add_gap(2, 0, 0);
        let r = g.report("gap", "g", true);
        assert_eq!(r.within_1pct_of_gap_pct.map(|p| p.round()), Some(67.0));
        assert_eq!(r.drift_ns_per_s, None);
    }
}
