//! Figures read off a series' histogram: quantiles by the HDR rule, and
//! how many samples fall within a bound.

use rtlab_core::result::{Series, SeriesStats};

/// The value at `quantile` of a histogram of `[value, count]` buckets
/// (increasing values) holding `total` samples, by the rule rtlab's HDR
/// histograms use: the smallest value whose cumulative count reaches
/// `max(1, ceil(quantile · total))`.
pub fn quantile_of(histogram: &[[u64; 2]], total: u64, quantile: f64) -> u64 {
    let target = ((quantile.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut cumulative = 0u64;
    for &[value, count] in histogram {
        cumulative = cumulative.saturating_add(count);
        if cumulative >= target {
            return value;
        }
    }
    histogram.last().map_or(0, |b| b[0])
}

/// Whether a series' percentiles were measured: it has samples and a
/// histogram (a cyclictest JSON written without -h has neither
/// histogram nor percentiles, and its zeros mean "unknown").
pub fn percentiles_known(stats: &SeriesStats) -> bool {
    stats.samples > 0 && (!stats.histogram_ns.is_empty() || !stats.histogram_us.is_empty())
}

/// Paper 002's Tables 4.1 and 4.2 columns: % of activations within this
/// many µs of their expected time.
pub const WITHIN_US: [u64; 5] = [10, 50, 100, 500, 1000];

/// How many of a series' samples fall within each of [`WITHIN_US`], from
/// its HDR histogram: a bucket counts when its highest equivalent value is
/// at most the bound (exact but for the bucket that straddles the bound,
/// which counts as outside: 3 significant digits, under 0.1 % of the
/// bound).
pub fn within_counts(stats: &SeriesStats) -> [u64; 5] {
    WITHIN_US.map(|bound_us| {
        stats
            .histogram_ns
            .iter()
            .filter(|bin| bin[0] <= bound_us * 1000)
            .map(|bin| bin[1])
            .sum()
    })
}

/// The % of a periodic run's activations (every `activation_lateness`
/// series together) that started within each of [`WITHIN_US`] of their
/// instant (see [`within_counts`]). Missed activations count as outside.
/// None without any activation.
pub fn within_percentages(series: &[Series]) -> Option<[f64; 5]> {
    let lateness: Vec<&Series> = series
        .iter()
        .filter(|s| s.metric == "activation_lateness")
        .collect();
    let activations: u64 = lateness
        .iter()
        .map(|s| s.stats.samples + s.stats.missed)
        .sum();
    if activations == 0 {
        return None;
    }
    let mut within = [0u64; 5];
    for s in &lateness {
        for (total, count) in within.iter_mut().zip(within_counts(&s.stats)) {
            *total += count;
        }
    }
    Some(within.map(|count| 100.0 * count as f64 / activations as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_rule_matches_hdr() {
        let h = [[10, 1], [20, 98], [30, 1]];
        assert_eq!(quantile_of(&h, 100, 0.0), 10);
        assert_eq!(quantile_of(&h, 100, 0.01), 10);
        assert_eq!(quantile_of(&h, 100, 0.02), 20);
        assert_eq!(quantile_of(&h, 100, 0.99), 20);
        assert_eq!(quantile_of(&h, 100, 0.999), 30);
        assert_eq!(quantile_of(&[], 0, 0.5), 0);
    }
}
