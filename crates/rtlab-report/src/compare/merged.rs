//! A row's entry for one run: the run's series in it merged into one
//! distribution, its figures and what the bootstrap resamples.

use super::model::Figures;
use rtlab_core::result::SeriesStats;
use rtlab_stats::bootstrap::Empirical;
use rtlab_stats::quantile::{percentiles_known, quantile_of};
use std::collections::BTreeMap;

/// A row's entry for one run: the run's series in it, merged.
pub(super) type Cell = (Vec<String>, Merged);

/// A series (or several merged) ready to compare: its figures and the
/// empirical distribution to resample.
pub(super) struct Merged {
    pub(super) figures: Figures,
    /// Empty when the percentiles are unknown: nothing to resample.
    pub(super) distribution: Empirical,
}

impl Merged {
    pub(super) fn of(stats: &[&SeriesStats]) -> Merged {
        let with_samples: Vec<&&SeriesStats> = stats.iter().filter(|s| s.samples > 0).collect();
        let samples: u64 = stats.iter().map(|s| s.samples).sum();
        let missed: u64 = stats.iter().map(|s| s.missed).sum();
        // The distribution: HDR buckets, or the µs bins of an import that
        // has no HDR histogram.
        let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
        for s in &with_samples {
            if !s.histogram_ns.is_empty() {
                for &[v, c] in &s.histogram_ns {
                    *buckets.entry(v).or_default() += c;
                }
            } else {
                for &[bin, c] in &s.histogram_us {
                    *buckets.entry(bin.saturating_mul(1000)).or_default() += c;
                }
            }
        }
        let known = !with_samples.is_empty() && with_samples.iter().all(|s| percentiles_known(s));
        let min_ns = with_samples.iter().map(|s| s.min_ns).min().unwrap_or(0);
        let max_ns = with_samples.iter().map(|s| s.max_ns).max().unwrap_or(0);
        let mut cumulative = Vec::with_capacity(buckets.len());
        let mut total = 0u64;
        for (v, c) in buckets {
            total = total.saturating_add(c);
            cumulative.push([v, total]);
        }
        let percentiles = if !known {
            None
        } else if let [single] = with_samples[..] {
            let p = single.percentiles_ns;
            Some([p.p50, p.p90, p.p99, p.p99_9, p.p99_99])
        } else {
            let histogram: Vec<[u64; 2]> = cumulative
                .iter()
                .scan(0u64, |prev, &[v, cum]| {
                    let count = cum - *prev;
                    *prev = cum;
                    Some([v, count])
                })
                .collect();
            let q = |quantile| quantile_of(&histogram, total, quantile).clamp(min_ns, max_ns);
            Some([q(0.50), q(0.90), q(0.99), q(0.999), q(0.9999)])
        };
        let mean_ns = (samples > 0).then(|| {
            with_samples
                .iter()
                .map(|s| s.mean_ns * s.samples as f64)
                .sum::<f64>()
                / samples as f64
        });
        let has = samples > 0;
        Merged {
            figures: Figures {
                samples,
                missed,
                min_ns: has.then_some(min_ns),
                p50_ns: percentiles.map(|p| p[0]),
                p90_ns: percentiles.map(|p| p[1]),
                p99_ns: percentiles.map(|p| p[2]),
                p99_9_ns: percentiles.map(|p| p[3]),
                p99_99_ns: percentiles.map(|p| p[4]),
                max_ns: has.then_some(max_ns),
                mean_ns,
            },
            distribution: Empirical {
                cumulative: if known { cumulative } else { Vec::new() },
                min_ns,
                max_ns,
            },
        }
    }
}
