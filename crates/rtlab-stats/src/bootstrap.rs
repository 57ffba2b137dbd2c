//! The bootstrap of a p99 difference between two runs.
//!
//! A stored run keeps no raw samples, but its HDR histogram (`histogram_ns`:
//! every sample in a bucket of 3 significant digits) is the empirical
//! distribution to resample from. The p99 of a resample of n draws (with
//! replacement) is its k-th smallest value, k = max(1, ⌈0.99·n⌉), the rule
//! rtlab's HDR histograms use. That order statistic is drawn *exactly*,
//! without drawing the n values: for n iid uniforms the k-th smallest is
//! Beta(k, n−k+1)-distributed, and the inverse CDF of the empirical
//! distribution maps it to the k-th smallest of n iid draws from the
//! histogram. So one resample costs two Gamma variates and a binary search,
//! whatever n is: no cap on the draws, no approximation of the resample size.
//!
//! Each resample draws the baseline's and the run's p99 independently; the
//! interval is the percentile interval of the B differences (run − baseline)
//! at the asked confidence ([`difference_interval`]), and the difference is
//! called significant when the interval excludes 0. The generator is a
//! hand-written xoshiro256** seeded by splitmix64 from the seed and the
//! series' name ([`Rng::for_series`]), so a comparison is reproducible and a
//! series' interval does not depend on which other series are compared.
//!
//! Limit: the bootstrap treats samples as independent. Latency spikes come
//! in bursts (a load phase, a host hiccup), so the interval is optimistic
//! for a single pair of runs; repeated runs are the stronger evidence.

/// An empirical distribution to resample: `[value_ns, cumulative count]`
/// buckets, increasing, with the series' min and max to clamp draws to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Empirical {
    pub cumulative: Vec<[u64; 2]>,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Empirical {
    /// The p99 of `resamples` bootstrap resamples (see the module's doc);
    /// None without a distribution to resample.
    pub fn resampled_p99(&self, rng: &mut Rng, resamples: usize) -> Option<Vec<u64>> {
        let n = self.cumulative.last()?[1];
        if n == 0 || resamples == 0 {
            return None;
        }
        let k = ((0.99 * n as f64).ceil() as u64).clamp(1, n);
        let (a, b) = (k as f64, (n - k + 1) as f64);
        let total = n as f64;
        Some(
            (0..resamples)
                .map(|_| {
                    let u = rng.beta(a, b);
                    // The empirical inverse CDF: the first bucket whose
                    // cumulative share reaches u.
                    let target = u * total;
                    let i = self
                        .cumulative
                        .partition_point(|&[_, cum]| (cum as f64) < target)
                        .min(self.cumulative.len() - 1);
                    self.cumulative[i][0].clamp(self.min_ns, self.max_ns.max(self.min_ns))
                })
                .collect(),
        )
    }
}

/// The percentile interval `[lo, hi]` at `confidence` of the differences
/// `run − base`, draw by draw.
pub fn difference_interval(base: &[u64], run: &[u64], confidence: f64) -> [i64; 2] {
    let mut d: Vec<i64> = run
        .iter()
        .zip(base)
        .map(|(r, b)| *r as i64 - *b as i64)
        .collect();
    d.sort_unstable();
    let alpha = 1.0 - confidence;
    let at = |q: f64| {
        let i = ((q * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1;
        d[i]
    };
    [at(alpha / 2.0), at(1.0 - alpha / 2.0)]
}

// ---------------------------------------------------------------------------
// Random numbers: small, seeded, reproducible
// ---------------------------------------------------------------------------

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        Rng {
            s: std::array::from_fn(|_| splitmix64(&mut state)),
        }
    }

    /// The generator of run number `index` (0: the baseline) of the series
    /// `name`: its draws depend on the seed, the series and the run only.
    pub fn for_series(seed: u64, name: &str, index: usize) -> Rng {
        let stream = fnv1a(name.as_bytes());
        Rng::new(seed ^ stream.rotate_left(17) ^ (index as u64 + 1))
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in the open interval (0, 1) (public for seeded tests).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma(shape, 1) by Marsaglia & Tsang (2000).
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform();
            if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }

    /// Beta(a, b) as Gamma(a) / (Gamma(a) + Gamma(b)).
    pub fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xoshiro_matches_the_reference() {
        // Reference: xoshiro256** with state {1, 2, 3, 4}.
        let mut rng = Rng { s: [1, 2, 3, 4] };
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, vec![11520, 0, 1509978240]);
    }

    #[test]
    fn gamma_and_beta_have_the_right_moments() {
        let mut rng = Rng::new(7);
        for shape in [0.5, 1.0, 3.0, 1e6] {
            let n = 20_000;
            let draws: Vec<f64> = (0..n).map(|_| rng.gamma(shape)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            // Mean and variance of Gamma(k, 1) are both k.
            assert!(
                (mean - shape).abs() < 5.0 * (shape / n as f64).sqrt(),
                "{shape}: {mean}"
            );
            assert!((var / shape - 1.0).abs() < 0.1, "{shape}: {var}");
        }
        // Beta(k, n-k+1) centres on k/(n+1).
        let (a, b) = (990.0, 11.0);
        let mean = (0..10_000).map(|_| rng.beta(a, b)).sum::<f64>() / 10_000.0;
        assert!((mean - a / (a + b)).abs() < 1e-3, "{mean}");
    }

    #[test]
    fn resampled_p99_centres_on_the_p99() {
        // 1000 samples: 1..=1000 µs, one each. The p99 is 990 µs.
        let distribution = Empirical {
            cumulative: (1..=1000).map(|v| [v * 1000, v]).collect(),
            min_ns: 1000,
            max_ns: 1_000_000,
        };
        let draws = distribution.resampled_p99(&mut Rng::new(3), 4000).unwrap();
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 990_000.0).abs() < 1500.0, "{mean}");
        // Every draw is a value of the distribution.
        assert!(draws.iter().all(|d| d % 1000 == 0 && *d <= 1_000_000));
    }

    #[test]
    fn the_interval_of_identical_draws_is_a_point() {
        assert_eq!(difference_interval(&[5, 5, 5], &[7, 7, 7], 0.95), [2, 2]);
    }
}
