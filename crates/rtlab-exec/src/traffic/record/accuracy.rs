//! One error series summed up as [`TrafficAccuracy`]: signed extremes
//! and mean, the share within 1 µs and 5 µs (and, for gaps, within 1 % of
//! the planned gap), and for instants the least-squares drift (an
//! absolute schedule has none; one computed from the previous packet
//! drifts).

use rtlab_core::result::TrafficAccuracy;

/// Running sums of one series; constant memory.
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
    /// Least squares of error (ns) over time (s since the first sample).
    fit: Fit,
}

#[derive(Debug, Clone, Copy, Default)]
struct Fit {
    n: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
}

impl Fit {
    fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.x += x;
        self.y += y;
        self.xx += x * x;
        self.xy += x * y;
    }

    fn slope(&self) -> Option<f64> {
        let denominator = self.n * self.xx - self.x * self.x;
        (self.n >= 2.0 && denominator.abs() > f64::EPSILON)
            .then(|| (self.n * self.xy - self.x * self.y) / denominator)
    }
}

impl Accuracy {
    /// An error of an instant series, `at_s` seconds into the stream.
    pub fn add_instant(&mut self, error_ns: i128, at_s: f64) {
        self.add(error_ns);
        self.fit.add(at_s, error_ns as f64);
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

    /// The summary of series `series`.
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
            drift_ns_per_s: self.fit.slope(),
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
        // 1 % of 100 µs is 1 µs.
        assert_eq!(s.within_1pct_of_gap_pct, Some(50.0));
        assert_eq!(s.drift_ns_per_s, None);
    }

    #[test]
    fn a_steady_drift_is_its_slope() {
        let mut a = Accuracy::default();
        for i in 0..100 {
            a.add_instant(i128::from(i) * 30, f64::from(i) / 1_000.0);
        }
        let drift = a.summary("arrival", "instant").drift_ns_per_s.unwrap();
        assert!((drift - 30_000.0).abs() < 1e-6, "{drift}");
        let extreme = {
            let mut a = Accuracy::default();
            a.add_instant(i128::from(u64::MAX) * 4, 0.0);
            a.summary("arrival", "instant")
        };
        assert_eq!(extreme.max_ns, i64::MAX);
    }
}
