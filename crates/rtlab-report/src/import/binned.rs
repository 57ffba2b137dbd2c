//! Shared by both cyclictest importers: one thread as a binned histogram,
//! turned into a series' statistics.

use rtlab_core::result::{Overflows, Percentiles, SeriesStats};
use rtlab_stats::quantile::quantile_of;

/// One cyclictest thread as its output describes it: a histogram with a
/// fixed bin width and a limit, the samples beyond the limit counted but
/// not placed, and the exact min/avg/max when the output has them.
#[derive(Debug, Clone, Default)]
pub(crate) struct BinnedThread {
    /// `[bin, count]`, bins in units of `unit_ns`, increasing, counts > 0.
    pub bins: Vec<[u64; 2]>,
    /// Samples at or above the histogram limit (not in `bins`).
    pub overflow_count: u64,
    /// The histogram limit in units, when known.
    pub limit: Option<u64>,
    /// Cycle numbers of the first overflows, as cyclictest lists them.
    pub overflow_samples: Vec<u64>,
    /// Exact figures in units, when the output has them.
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub avg: Option<f64>,
    /// 1000 for cyclictest's µs, 1 for its `-N` ns.
    pub unit_ns: u64,
}

impl BinnedThread {
    /// The series statistics, with a warning for everything estimated.
    pub fn stats(&self, name: &str, warnings: &mut Vec<String>) -> SeriesStats {
        let unit = self.unit_ns.max(1);
        let in_range = self.bins.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
        let samples = in_range.saturating_add(self.overflow_count);
        if samples == 0 {
            return SeriesStats {
                overflows: self.overflows(),
                ..SeriesStats::default()
            };
        }
        let lowest_bin = self.bins.first().map(|b| b[0]);
        let highest_bin = self.bins.last().map(|b| b[0]);
        let max_units = match (self.max, self.overflow_count) {
            (Some(max), _) => max,
            (None, 0) => highest_bin.unwrap_or(0),
            (None, n) => {
                let at_least = self.limit.unwrap_or(highest_bin.map_or(0, |b| b + 1));
                warnings.push(format!(
                    "{name}: the maximum is unknown (no max in the file and {n} samples beyond \
                     the histogram); {at_least} {} (the histogram limit) is a lower bound",
                    unit_name(unit)
                ));
                at_least.max(highest_bin.unwrap_or(0))
            }
        };
        let min_units = self
            .min
            .or(lowest_bin)
            .unwrap_or(self.limit.unwrap_or(max_units))
            .min(max_units);

        // The histogram that percentiles, stdev and the bootstrap read:
        // samples beyond the limit are counted at the max, an upper bound.
        let mut effective = self.bins.clone();
        if self.overflow_count > 0 {
            match effective.last_mut() {
                Some(last) if last[0] == max_units => {
                    last[1] = last[1].saturating_add(self.overflow_count)
                }
                _ => effective.push([max_units, self.overflow_count]),
            }
            warnings.push(format!(
                "{name}: {} samples at or beyond the histogram limit have unknown values; they \
                 are counted at the max ({} {}) in the histograms, percentiles and stdev",
                self.overflow_count,
                max_units,
                unit_name(unit)
            ));
        }
        let histogram_ns: Vec<[u64; 2]> = effective
            .iter()
            .map(|&[v, c]| [v.saturating_mul(unit), c])
            .collect();
        let mut histogram_us: Vec<[u64; 2]> = Vec::new();
        for &[v_ns, c] in &histogram_ns {
            let bin = v_ns / 1000;
            match histogram_us.last_mut() {
                Some(last) if last[0] == bin => last[1] = last[1].saturating_add(c),
                _ => histogram_us.push([bin, c]),
            }
        }

        let min_ns = min_units.saturating_mul(unit);
        let max_ns = max_units.saturating_mul(unit);
        let q = |quantile| quantile_of(&histogram_ns, samples, quantile).clamp(min_ns, max_ns);
        let percentiles_ns = Percentiles {
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        };

        let (bins_mean, stdev_ns) = moments(&histogram_ns, samples);
        let mean_ns = match self.avg {
            // cyclictest's own average is exact when every sample is in a
            // bin: the bins give it unrounded.
            Some(avg) if self.overflow_count > 0 => (avg * unit as f64).round(),
            _ => bins_mean,
        };

        SeriesStats {
            samples,
            missed: 0,
            dropped: 0,
            min_ns,
            max_ns,
            mean_ns,
            stdev_ns,
            percentiles_ns,
            max_at: None,
            top: Vec::new(),
            histogram_ns,
            histogram_us,
            overflows: self.overflows(),
            // cyclictest keeps no order of its samples.
            block_maxima: None,
        }
    }

    fn overflows(&self) -> Option<Overflows> {
        // Overflows are a µs notion (cyclictest's -h in µs).
        if self.unit_ns != 1000 {
            return None;
        }
        self.limit.map(|limit_us| Overflows {
            limit_us,
            count: self.overflow_count,
            first_samples: self.overflow_samples.clone(),
        })
    }
}

/// Mean and sample standard deviation (n − 1) of a histogram holding
/// `samples` values: exact integer sums where they fit, f64 otherwise.
pub(crate) fn moments(histogram: &[[u64; 2]], samples: u64) -> (f64, f64) {
    if samples == 0 {
        return (0.0, 0.0);
    }
    let exact = histogram
        .iter()
        .try_fold((0u128, 0u128), |(s, sq), &[v, c]| {
            let (v, c) = (u128::from(v), u128::from(c));
            let vc = v.checked_mul(c)?;
            Some((s.checked_add(vc)?, sq.checked_add(vc.checked_mul(v)?)?))
        });
    let n = samples as f64;
    if let Some((sum, sum_sq)) = exact {
        let mean = sum as f64 / n;
        if samples < 2 {
            return (mean, 0.0);
        }
        let big_n = u128::from(samples);
        let variance = match (big_n.checked_mul(sum_sq), sum.checked_mul(sum)) {
            (Some(a), Some(b)) if a >= b => (a - b) as f64 / (n * (n - 1.0)),
            _ => (sum_sq as f64 / n - mean * mean) * n / (n - 1.0),
        };
        return (mean, variance.max(0.0).sqrt());
    }
    let mean = histogram
        .iter()
        .map(|&[v, c]| v as f64 * c as f64)
        .sum::<f64>()
        / n;
    let squares: f64 = histogram
        .iter()
        .map(|&[v, c]| (v as f64 - mean).powi(2) * c as f64)
        .sum();
    let stdev = if samples < 2 {
        0.0
    } else {
        (squares / (n - 1.0)).sqrt()
    };
    (mean, stdev)
}

fn unit_name(unit_ns: u64) -> &'static str {
    if unit_ns == 1 {
        "ns"
    } else {
        "µs"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflows_are_counted_at_the_max() {
        let t = BinnedThread {
            bins: vec![[1, 2], [3, 1]],
            overflow_count: 1,
            limit: Some(5),
            overflow_samples: vec![2],
            min: Some(1),
            max: Some(9),
            avg: Some(3.5),
            unit_ns: 1000,
        };
        let mut warnings = Vec::new();
        let s = t.stats("thread0", &mut warnings);
        assert_eq!(s.samples, 4);
        assert_eq!(s.histogram_us, vec![[1, 2], [3, 1], [9, 1]]);
        assert_eq!(s.histogram_ns, vec![[1000, 2], [3000, 1], [9000, 1]]);
        assert_eq!(s.percentiles_ns.p99, 9000);
        assert_eq!(s.percentiles_ns.p50, 1000);
        assert_eq!(s.mean_ns, 3500.0);
        assert_eq!(warnings.len(), 1);
        assert_eq!(s.overflows.unwrap().count, 1);
    }
}
