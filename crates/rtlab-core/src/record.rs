//! Turns a stream of latency samples into a series' statistics: exact
//! count/min/max/mean/stdev, an HDR histogram for percentiles at ns
//! resolution, an exact 1 µs histogram without overflow bucket, the time of
//! the maximum and the largest spikes. Runs in the non-RT recorder thread,
//! so it may allocate.

use crate::result::{BlockMaxima, Overflows, Percentiles, SeriesStats, Spike};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// How many of the largest samples a series keeps with their times.
pub const TOP_SPIKES: usize = 16;

/// Live figures for a status line.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveStats {
    pub samples: u64,
    pub missed: u64,
    pub dropped: u64,
    pub min_ns: u64,
    pub last_ns: u64,
    pub mean_ns: u64,
    pub max_ns: u64,
}

pub struct SeriesRecorder {
    hdr: Histogram<u64>,
    /// Counts per 1 µs bin, only the bins that occurred: a single wild
    /// value (a clock gone wrong, a hostile `exec serve` client's sample)
    /// must not allocate a bin for every microsecond below it.
    us_bins: BTreeMap<u64, u64>,
    samples: u64,
    missed: u64,
    dropped: u64,
    min_ns: u64,
    max_ns: u64,
    last_ns: u64,
    sum: u128,
    sum_sq: u128,
    top: Vec<Spike>,
    overflows: Option<Overflows>,
    blocks: Blocks,
}

/// Block maxima as the samples arrive (see [`BlockMaxima`]).
struct Blocks {
    block_samples: u64,
    maxima_ns: Vec<u64>,
    /// The block being filled.
    current_max: u64,
    current_count: u64,
}

impl Blocks {
    fn new() -> Blocks {
        Blocks {
            block_samples: BlockMaxima::FIRST_BLOCK_SAMPLES,
            maxima_ns: Vec::with_capacity(BlockMaxima::MAX_BLOCKS),
            current_max: 0,
            current_count: 0,
        }
    }

    fn record(&mut self, latency_ns: u64) {
        self.current_max = self.current_max.max(latency_ns);
        self.current_count += 1;
        if self.current_count < self.block_samples {
            return;
        }
        self.maxima_ns.push(self.current_max);
        self.current_max = 0;
        self.current_count = 0;
        if self.maxima_ns.len() == BlockMaxima::MAX_BLOCKS {
            // Merge neighbours: half as many blocks, twice the size; the
            // list stays bounded and every block still covers equal time.
            let merged: Vec<u64> = self
                .maxima_ns
                .chunks(2)
                .map(|pair| pair.iter().copied().max().unwrap_or(0))
                .collect();
            self.maxima_ns = merged;
            self.block_samples *= 2;
        }
    }

    fn stats(&self) -> Option<BlockMaxima> {
        (!self.maxima_ns.is_empty()).then(|| BlockMaxima {
            block_samples: self.block_samples,
            maxima_ns: self.maxima_ns.clone(),
        })
    }
}

impl SeriesRecorder {
    /// `histfile_limit_us`: when set, samples of at least that many µs are
    /// listed as cyclictest lists histogram overflows.
    pub fn new(histfile_limit_us: Option<u64>) -> SeriesRecorder {
        SeriesRecorder {
            // 3 significant digits, auto-resizing: no value is ever refused.
            hdr: Histogram::new(3).expect("3 significant digits is a valid HDR setting"),
            us_bins: BTreeMap::new(),
            samples: 0,
            missed: 0,
            dropped: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            last_ns: 0,
            sum: 0,
            sum_sq: 0,
            top: Vec::with_capacity(TOP_SPIKES + 1),
            overflows: histfile_limit_us.map(|limit_us| Overflows {
                limit_us,
                ..Overflows::default()
            }),
            blocks: Blocks::new(),
        }
    }

    /// Records one sample: its latency, when it happened (ns since the run's
    /// first deadline) and how many deadlines were missed before it.
    pub fn record(&mut self, latency_ns: u64, at_ns: u64, missed: u64) {
        let index = self.samples;
        self.samples += 1;
        self.missed += missed;
        self.last_ns = latency_ns;
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.sum += u128::from(latency_ns);
        self.sum_sq += u128::from(latency_ns) * u128::from(latency_ns);
        // Auto-resize makes recording infallible for any u64 we can produce.
        let _ = self.hdr.record(latency_ns);
        self.blocks.record(latency_ns);

        *self.us_bins.entry(latency_ns / 1000).or_insert(0) += 1;

        if let Some(over) = &mut self.overflows {
            if latency_ns / 1000 >= over.limit_us {
                over.count += 1;
                if (over.first_samples.len() as u64) < over.limit_us {
                    over.first_samples.push(index);
                }
            }
        }

        let spike = Spike {
            sample: index,
            at_ns,
            latency_ns,
        };
        if self.top.len() < TOP_SPIKES || latency_ns > self.top[self.top.len() - 1].latency_ns {
            // Keep the list sorted largest first; the earliest wins a tie.
            let pos = self.top.partition_point(|s| s.latency_ns >= latency_ns);
            self.top.insert(pos, spike);
            self.top.truncate(TOP_SPIKES);
        }
    }

    /// Counts deadlines (or messages) that produced no sample at all.
    pub fn add_missed(&mut self, n: u64) {
        self.missed += n;
    }

    /// Samples the measuring thread could not hand over (ring full), as
    /// counted by that thread so far.
    pub fn set_dropped(&mut self, total: u64) {
        self.dropped = total;
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn live(&self) -> LiveStats {
        LiveStats {
            samples: self.samples,
            missed: self.missed,
            dropped: self.dropped,
            min_ns: if self.samples == 0 { 0 } else { self.min_ns },
            last_ns: self.last_ns,
            mean_ns: if self.samples == 0 {
                0
            } else {
                (self.sum / u128::from(self.samples)) as u64
            },
            max_ns: self.max_ns,
        }
    }

    fn percentile(&self, quantile: f64) -> u64 {
        // The HDR bucket's highest equivalent value can exceed the exact
        // maximum (or fall below the minimum); clamp to what was seen.
        self.hdr
            .value_at_quantile(quantile)
            .clamp(self.min_ns, self.max_ns)
    }

    fn stdev_ns(&self) -> f64 {
        if self.samples < 2 {
            return 0.0;
        }
        let n = u128::from(self.samples);
        // Exact integer variance where it fits: n·Σx² − (Σx)² never cancels
        // badly the way the f64 form does when the mean dwarfs the spread.
        let variance = match (n.checked_mul(self.sum_sq), self.sum.checked_mul(self.sum)) {
            (Some(a), Some(b)) => (a - b) as f64 / (n * (n - 1)) as f64,
            _ => {
                let mean = self.sum as f64 / n as f64;
                (self.sum_sq as f64 / n as f64 - mean * mean) * n as f64 / (n - 1) as f64
            }
        };
        variance.max(0.0).sqrt()
    }

    pub fn stats(&self) -> SeriesStats {
        if self.samples == 0 {
            return SeriesStats {
                missed: self.missed,
                dropped: self.dropped,
                overflows: self.overflows.clone(),
                ..SeriesStats::default()
            };
        }
        SeriesStats {
            samples: self.samples,
            missed: self.missed,
            dropped: self.dropped,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            mean_ns: self.sum as f64 / self.samples as f64,
            stdev_ns: self.stdev_ns(),
            percentiles_ns: Percentiles {
                p50: self.percentile(0.50),
                p90: self.percentile(0.90),
                p99: self.percentile(0.99),
                p99_9: self.percentile(0.999),
                p99_99: self.percentile(0.9999),
            },
            max_at: self.top.first().copied(),
            top: self.top.clone(),
            histogram_ns: self
                .hdr
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
            histogram_us: self
                .us_bins
                .iter()
                .map(|(&bin, &count)| [bin, count])
                .collect(),
            overflows: self.overflows.clone(),
            block_maxima: self.blocks.stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_extremes() {
        let mut rec = SeriesRecorder::new(None);
        for (i, v) in [10_000u64, 20_000, 30_000, 40_000].iter().enumerate() {
            rec.record(*v, i as u64 * 1_000_000, 0);
        }
        let s = rec.stats();
        assert_eq!((s.samples, s.min_ns, s.max_ns), (4, 10_000, 40_000));
        assert_eq!(s.mean_ns, 25_000.0);
        // Sample standard deviation of 10,20,30,40 µs.
        assert!((s.stdev_ns - 12_909.944).abs() < 0.01, "{}", s.stdev_ns);
        assert_eq!(s.max_at.unwrap().at_ns, 3_000_000);
    }

    #[test]
    fn percentiles_are_within_hdr_precision() {
        let mut rec = SeriesRecorder::new(None);
        for v in 1..=100_000u64 {
            rec.record(v * 10, 0, 0);
        }
        let p = rec.stats().percentiles_ns;
        for (got, want) in [
            (p.p50, 500_000.0),
            (p.p99, 990_000.0),
            (p.p99_99, 999_990.0),
        ] {
            assert!((got as f64 - want).abs() / want < 0.001, "{got} vs {want}");
        }
    }

    #[test]
    fn a_wild_value_costs_one_bin() {
        // A bin per µs below it would be 2^63 / 1000 bins: an abort.
        let mut rec = SeriesRecorder::new(None);
        rec.record(3_000, 0, 0);
        rec.record(u64::MAX / 2, 1, 0);
        rec.record(3_400, 2, 0);
        let s = rec.stats();
        assert_eq!(s.histogram_us, vec![[3, 2], [u64::MAX / 2 / 1000, 1]]);
    }

    #[test]
    fn missed_and_dropped_are_counted() {
        let mut rec = SeriesRecorder::new(None);
        rec.record(5_000, 0, 0);
        rec.record(3_200_000, 4_000_000, 3);
        rec.set_dropped(2);
        let s = rec.stats();
        assert_eq!((s.samples, s.missed, s.dropped), (2, 3, 2));
    }

    #[test]
    fn microsecond_bins_truncate_like_cyclictest_and_never_overflow() {
        let mut rec = SeriesRecorder::new(Some(2));
        for v in [999, 1_000, 1_999, 2_000, 10_000_000] {
            rec.record(v, 0, 0);
        }
        let s = rec.stats();
        assert_eq!(s.histogram_us, vec![[0, 1], [1, 2], [2, 1], [10_000, 1]]);
        let over = s.overflows.unwrap();
        assert_eq!((over.count, over.first_samples), (2, vec![3, 4]));
    }

    #[test]
    fn keeps_the_largest_spikes_in_order() {
        let mut rec = SeriesRecorder::new(None);
        for i in 0..1000u64 {
            rec.record((i * 7919) % 1000, i, 0);
        }
        let top = rec.stats().top;
        assert_eq!(top.len(), TOP_SPIKES);
        assert!(top.windows(2).all(|w| w[0].latency_ns >= w[1].latency_ns));
        assert_eq!(top[0].latency_ns, 999);
    }

    #[test]
    fn empty_series_has_zero_stats() {
        let s = SeriesRecorder::new(None).stats();
        assert_eq!((s.samples, s.max_ns), (0, 0));
    }

    #[test]
    fn block_maxima_keep_time_order_and_stay_bounded() {
        let mut rec = SeriesRecorder::new(None);
        // 100 samples of 1 µs, one 5 ms stall at sample 50, then 3 more:
        // blocks of 16, the incomplete last one left out.
        for i in 0..103u64 {
            rec.record(if i == 50 { 5_000_000 } else { 1_000 + i }, i * 1000, 0);
        }
        let blocks = rec.stats().block_maxima.unwrap();
        assert_eq!(blocks.block_samples, 16);
        assert_eq!(blocks.maxima_ns.len(), 6);
        assert_eq!(
            blocks.maxima_ns[3], 5_000_000,
            "the stall is in block 50 / 16 = 3"
        );
        assert_eq!(blocks.maxima_ns[0], 1_015);
        assert_eq!(blocks.maxima_ns[5], 1_095);

        // A long run: blocks merge in pairs, never more than MAX_BLOCKS.
        let mut long = SeriesRecorder::new(None);
        let n = BlockMaxima::FIRST_BLOCK_SAMPLES * BlockMaxima::MAX_BLOCKS as u64 * 3;
        for i in 0..n {
            long.record(i, i, 0);
        }
        let blocks = long.stats().block_maxima.unwrap();
        assert!(blocks.maxima_ns.len() <= BlockMaxima::MAX_BLOCKS);
        assert_eq!(blocks.block_samples, BlockMaxima::FIRST_BLOCK_SAMPLES * 4);
        assert_eq!(blocks.maxima_ns.len() as u64, n / blocks.block_samples);
        // Increasing samples: each block's maximum is its last sample.
        for (k, max) in blocks.maxima_ns.iter().enumerate() {
            assert_eq!(*max, (k as u64 + 1) * blocks.block_samples - 1);
        }
    }
}
