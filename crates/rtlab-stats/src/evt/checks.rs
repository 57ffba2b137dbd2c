//! The statistics behind the checks: serial dependence (Ljung–Box on
//! ranks), trend (Mann–Kendall), uniform spread in time (Kolmogorov–
//! Smirnov), clustering of exceedances (the extremal index by the intervals
//! estimator) and declustering.

use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// Average ranks (1-based; ties share the mean of their ranks).
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

/// Ljung–Box portmanteau test (Ljung & Box 1978) on the ranks of `x`, for
/// lags 1..=`lags`: `Q = n(n+2) Σ ρ̂ₖ²/(n−k)`, χ²(lags) under
/// independence. Ranks rather than values because latency maxima are heavy
/// tailed, where sample autocorrelations of the values are dominated by a
/// few spikes (rank autocorrelations: Dufour 1981). Returns `(Q, p)`, None
/// when all values are equal.
pub fn ljung_box_ranks(x: &[f64], lags: usize) -> Option<(f64, f64)> {
    let n = x.len();
    if lags == 0 || n <= lags + 1 {
        return None;
    }
    let r = ranks(x);
    let mean = (n as f64 + 1.0) / 2.0;
    let c: Vec<f64> = r.iter().map(|v| v - mean).collect();
    let denom: f64 = c.iter().map(|v| v * v).sum();
    if denom <= 0.0 {
        return None;
    }
    let nf = n as f64;
    let mut q = 0.0;
    for k in 1..=lags {
        let rho: f64 = c.iter().zip(&c[k..]).map(|(a, b)| a * b).sum::<f64>() / denom;
        q += rho * rho / (nf - k as f64);
    }
    q *= nf * (nf + 2.0);
    let p = ChiSquared::new(lags as f64).ok()?.sf(q);
    Some((q, p))
}

/// Mann–Kendall trend test (Mann 1945; Kendall 1975): `S = Σ_{i<j}
/// sign(xⱼ − xᵢ)` with the tie-corrected variance and a continuity
/// correction; returns `(S, Z, two-sided p)`. `S` is counted in
/// O(n log n) through the inversions of a merge sort (Knight 1966).
pub fn mann_kendall(x: &[f64]) -> Option<(f64, f64, f64)> {
    let n = x.len();
    if n < 3 {
        return None;
    }
    let mut v = x.to_vec();
    let mut buf = vec![0.0; n];
    let inversions = merge_count(&mut v, &mut buf) as f64;
    // v is now sorted: tie groups are runs.
    let (mut tie_pairs, mut tie_var) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && v[j + 1] == v[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_pairs += t * (t - 1.0) / 2.0;
        tie_var += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    let nf = n as f64;
    let pairs = nf * (nf - 1.0) / 2.0;
    let s = pairs - tie_pairs - 2.0 * inversions;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_var) / 18.0;
    if var <= 0.0 {
        return None;
    }
    let z = (s - s.signum()) / var.sqrt();
    let p = 2.0 * Normal::standard().sf(z.abs());
    Some((s, z, p.min(1.0)))
}

/// Sorts `v` ascending and returns the number of pairs i < j with
/// v[i] > v[j] (strictly).
fn merge_count(v: &mut [f64], buf: &mut [f64]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut count = merge_count(&mut v[..mid], &mut buf[..mid]);
    count += merge_count(&mut v[mid..], &mut buf[mid..]);
    let (mut i, mut j, mut k) = (0, mid, 0);
    while i < mid && j < n {
        if v[i] <= v[j] {
            buf[k] = v[i];
            i += 1;
        } else {
            buf[k] = v[j];
            count += (mid - i) as u64;
            j += 1;
        }
        k += 1;
    }
    buf[k..k + mid - i].copy_from_slice(&v[i..mid]);
    k += mid - i;
    buf[k..k + n - j].copy_from_slice(&v[j..n]);
    v.copy_from_slice(&buf[..n]);
    count
}

/// Kolmogorov's limiting distribution: `P(√n D > λ)`.
fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// One-sample Kolmogorov–Smirnov test of `positions` (in [0, 1], any
/// order) against the uniform distribution, with Stephens' (1970)
/// finite-sample correction of the limiting distribution. Returns `(D, p)`.
pub fn ks_uniform(positions: &[f64]) -> Option<(f64, f64)> {
    let n = positions.len();
    if n < 2 {
        return None;
    }
    let mut s = positions.to_vec();
    s.sort_by(f64::total_cmp);
    let nf = n as f64;
    let d = s
        .iter()
        .enumerate()
        .map(|(i, &x)| ((i as f64 + 1.0) / nf - x).max(x - i as f64 / nf))
        .fold(0.0, f64::max);
    let sq = nf.sqrt();
    Some((d, kolmogorov_sf((sq + 0.12 + 0.11 / sq) * d)))
}

/// The extremal index by the intervals estimator (Ferro & Segers 2003,
/// eq. 4), from the sample indices of the exceedances in time order:
/// θ̂ = 2(ΣTᵢ)²/((N−1)ΣTᵢ²) when every inter-exceedance time Tᵢ ≤ 2,
/// otherwise 2(Σ(Tᵢ−1))²/((N−1)Σ(Tᵢ−1)(Tᵢ−2)); capped at 1. 1/θ is the
/// mean number of exceedances in a cluster.
pub fn extremal_index(times: &[u64]) -> Option<f64> {
    if times.len() < 3 {
        return None;
    }
    let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let m = gaps.len() as f64;
    let max = gaps.iter().copied().fold(0.0, f64::max);
    let theta = if max <= 2.0 {
        let s: f64 = gaps.iter().sum();
        let s2: f64 = gaps.iter().map(|t| t * t).sum();
        2.0 * s * s / (m * s2)
    } else {
        let s: f64 = gaps.iter().map(|t| t - 1.0).sum();
        let s2: f64 = gaps.iter().map(|t| (t - 1.0) * (t - 2.0)).sum();
        if s2 <= 0.0 {
            return None;
        }
        2.0 * s * s / (m * s2)
    };
    theta.is_finite().then_some(theta.min(1.0))
}

/// The blocks estimator of the extremal index (Smith & Weissman 1994,
/// eq. 3.3): of `blocks` blocks of `block` samples, `above` have their
/// maximum above a level that a fraction `marginal` of all samples exceeds;
/// θ̂ = ln(1 − above/blocks) / (block · ln(1 − marginal)). It compares how
/// often blocks reach the level with how often samples do: clustered
/// exceedances reach it in fewer blocks. Capped at 1.
pub fn blocks_extremal_index(
    above: usize,
    blocks: usize,
    marginal: f64,
    block: u64,
) -> Option<f64> {
    if above == 0 || above >= blocks || !(marginal > 0.0 && marginal < 1.0) {
        return None;
    }
    let theta = (-(above as f64) / blocks as f64).ln_1p() / (block as f64 * (-marginal).ln_1p());
    theta.is_finite().then_some(theta.min(1.0))
}

/// Intervals declustering (Ferro & Segers 2003, §5.2): with C = ⌊θN⌋ + 1,
/// the C − 1 largest inter-exceedance times separate clusters. Gaps are
/// whole numbers and tie, so the rule is taken as a run length: of the
/// run lengths the gaps allow, the one whose number of clusters comes
/// nearest to C (the fewer clusters on a draw). Lowering C to the next
/// tie instead merged every pair of adjacent exceedances of independent
/// data at a low threshold, where a quarter of them can be adjacent.
/// Returns for each cluster the index of its largest value in
/// `times`/`values`, and the run length: the longest gap within a cluster.
pub fn decluster(times: &[u64], values: &[f64], theta: f64) -> (Vec<usize>, u64) {
    let n = times.len();
    if n == 0 {
        return (Vec::new(), 0);
    }
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let target = ((theta * n as f64).floor() as usize + 1).min(n);
    let mut sorted = gaps.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    // Gaps longer than `run` separate clusters: 1 + (how many) clusters.
    let clusters = |run: u64| 1 + sorted.partition_point(|&g| g > run);
    let mut runs: Vec<u64> = sorted.clone();
    runs.push(0);
    runs.dedup();
    let run = runs
        .into_iter()
        .min_by_key(|&r| (clusters(r).abs_diff(target), clusters(r)))
        .unwrap_or(0);
    let mut peaks = Vec::new();
    let mut best = 0usize;
    for i in 1..n {
        if gaps[i - 1] > run {
            peaks.push(best);
            best = i;
        } else if values[i] > values[best] {
            best = i;
        }
    }
    peaks.push(best);
    (peaks, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_kendall_counts_pairs_like_the_definition() {
        let x: [f64; 11] = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0];
        let mut s = 0.0;
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                s += (x[j] - x[i]).signum() * ((x[j] != x[i]) as u8 as f64);
            }
        }
        let (got, _, p) = mann_kendall(&x).unwrap();
        assert_eq!(got, s);
        assert!(p > 0.05);
        let rising: Vec<f64> = (0..50).map(|i| i as f64).collect();
        assert!(mann_kendall(&rising).unwrap().2 < 1e-6);
    }

    #[test]
    fn ljung_box_sees_runs_and_not_alternation_of_independent_values() {
        let runs: Vec<f64> = (0..200).map(|i| (i / 10) as f64 % 7.0).collect();
        assert!(ljung_box_ranks(&runs, 5).unwrap().1 < 1e-6);
        assert!(ljung_box_ranks(&[1.0; 30], 5).is_none());
    }

    #[test]
    fn extremal_index_of_pairs_is_a_half() {
        // Exceedances in pairs, the pairs at random (geometric) distances,
        // as the estimator assumes: clusters of two.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut at = 0u64;
        let times: Vec<u64> = (0..400)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let uniform = (state >> 11) as f64 / (1u64 << 53) as f64;
                at += 3 + (-(1.0 - uniform).ln() * 100.0) as u64;
                [at, at + 1]
            })
            .collect();
        let theta = extremal_index(&times).unwrap();
        assert!((theta - 0.5).abs() < 0.06, "{theta}");
        let values: Vec<f64> = (0..times.len()).map(|i| (i % 2) as f64).collect();
        let (peaks, _) = decluster(&times, &values, theta);
        assert!((390..=410).contains(&peaks.len()), "{}", peaks.len());
        assert!(peaks.iter().all(|&i| values[i] == 1.0));
    }

    #[test]
    fn ks_uniform_accepts_an_even_spread_and_rejects_a_lump() {
        let even: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
        assert!(ks_uniform(&even).unwrap().1 > 0.99);
        let lump: Vec<f64> = (0..100).map(|i| 0.9 + i as f64 / 1000.0).collect();
        assert!(ks_uniform(&lump).unwrap().1 < 1e-6);
    }
}
