//! A fixed-size histogram of lateness that forgets slowly, and its high
//! quantile: one per idle length of an executive. No allocation, O(1) to
//! add a value (amortized: the quantile is recomputed every
//! [`RECOMPUTE_EVERY`] values, the counts halved every [`WINDOW`]).

/// Bins of 1 µs up to 16 µs, then 8 bins per doubling up to 2^22 µs
/// (about 4 s; anything longer falls in the last bin).
pub(crate) const BINS: usize = 16 + 18 * 8;
/// The counts are halved when they reach this many values: the histogram
/// follows the machine as it changes (the last 2048-4096 wake-ups count).
pub(crate) const WINDOW: u32 = 4096;
/// The quantile is recomputed after this many new values.
pub(crate) const RECOMPUTE_EVERY: u32 = 8;

/// The bin of a lateness of `ns`.
#[inline]
pub(crate) fn bin_of(ns: u64) -> usize {
    let us = ns / 1_000;
    if us < 16 {
        return us as usize;
    }
    // us >= 16: its doubling (4 or more) and the 3 bits below its top bit.
    let octave = 63 - us.leading_zeros() as usize;
    let sub = ((us >> (octave - 3)) & 7) as usize;
    (16 + (octave - 4) * 8 + sub).min(BINS - 1)
}

/// The upper edge of bin `bin` (the first lateness of the next bin), ns:
/// a quantile read from the histogram is never below the true one.
pub(crate) fn upper_ns(bin: usize) -> u64 {
    if bin < 16 {
        return (bin as u64 + 1) * 1_000;
    }
    let octave = (bin - 16) / 8 + 4;
    let sub = ((bin - 16) % 8) as u64;
    ((8 + sub + 1) << (octave - 3)) * 1_000
}

/// The lateness values of one idle length.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: [u32; BINS],
    /// Values in `counts` (after the halvings).
    held: u32,
    /// Every value ever added.
    pub total: u64,
    pub max_ns: u64,
    /// Values since the quantile was last computed.
    since: u32,
    quantile_ns: u64,
    /// The quantile kept: 0.995 = 99.5 % of the values are at or below it.
    quantile: f64,
}

impl Histogram {
    pub(crate) fn new(quantile: f64) -> Histogram {
        Histogram {
            counts: [0; BINS],
            held: 0,
            total: 0,
            max_ns: 0,
            since: 0,
            quantile_ns: 0,
            quantile,
        }
    }

    /// Adds one value. Hot path: no allocation; O(1) but every
    /// [`RECOMPUTE_EVERY`]-th value (a walk of [`BINS`] counters) and every
    /// [`WINDOW`]-th (halving them).
    #[inline]
    pub(crate) fn add(&mut self, ns: u64) {
        if self.held >= WINDOW {
            self.halve();
        }
        self.counts[bin_of(ns)] += 1;
        self.held += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
        self.since += 1;
        if self.since >= RECOMPUTE_EVERY || self.total <= u64::from(RECOMPUTE_EVERY) {
            self.quantile_ns = self.compute();
            self.since = 0;
        }
    }

    /// The kept quantile of the values (0 before any), as of the last
    /// recomputation.
    #[inline]
    pub(crate) fn quantile_ns(&self) -> u64 {
        self.quantile_ns
    }

    fn halve(&mut self) {
        let mut held = 0;
        for count in self.counts.iter_mut() {
            // Rounded down: a single old value is forgotten.
            *count /= 2;
            held += *count;
        }
        self.held = held;
    }

    /// The smallest bin edge with at least `quantile` of the values at or
    /// below it.
    fn compute(&self) -> u64 {
        if self.held == 0 {
            return 0;
        }
        let rank = (self.quantile * f64::from(self.held)).ceil().max(1.0) as u32;
        let mut seen = 0;
        for (bin, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return upper_ns(bin);
            }
        }
        upper_ns(BINS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_value_in_order_and_their_edges_bound_them() {
        let mut last = 0;
        for us in 0..5_000_000u64 {
            let ns = us * 1_000 + 999;
            let bin = bin_of(ns);
            assert!(bin >= last, "{ns} ns in bin {bin} after bin {last}");
            last = bin;
            if bin < BINS - 1 {
                assert!(
                    ns < upper_ns(bin),
                    "{ns} ns is not below the edge of bin {bin}"
                );
            }
            if bin > 0 {
                assert!(ns >= upper_ns(bin - 1), "{ns} ns belongs below bin {bin}");
            }
        }
        assert_eq!(bin_of(u64::MAX), BINS - 1);
        // An edge is at most 1/8 above the values of its bin (from 16 µs).
        assert_eq!(upper_ns(bin_of(16_000)), 18_000);
        assert_eq!(upper_ns(bin_of(100_000)), 104_000);
    }

    #[test]
    fn the_quantile_is_the_edge_above_that_share_of_the_values() {
        let mut h = Histogram::new(0.99);
        assert_eq!(h.quantile_ns(), 0);
        // 990 values of 5 µs, 10 of 300 µs: the 99 % quantile is 5 µs's edge.
        for i in 0..1000 {
            h.add(if i % 100 == 0 { 300_000 } else { 5_000 });
        }
        assert_eq!(h.quantile_ns(), 6_000);
        assert_eq!((h.total, h.max_ns), (1000, 300_000));
        // One more in a hundred late: now the late ones set it.
        for i in 0..1000 {
            h.add(if i % 50 == 0 { 300_000 } else { 5_000 });
        }
        assert_eq!(h.quantile_ns(), upper_ns(bin_of(300_000)));
    }

    #[test]
    fn it_forgets_old_values_over_a_few_windows() {
        let mut h = Histogram::new(0.995);
        for _ in 0..WINDOW {
            h.add(200_000);
        }
        assert_eq!(h.quantile_ns(), upper_ns(bin_of(200_000)));
        for _ in 0..(6 * WINDOW) {
            h.add(10_000);
        }
        assert_eq!(h.quantile_ns(), 11_000);
        assert_eq!(h.total, 7 * u64::from(WINDOW));
    }
}
