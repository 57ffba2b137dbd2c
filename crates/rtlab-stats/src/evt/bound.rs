//! The distribution-free bound beside the EVT estimate: what the largest
//! block maxima say about the tail without assuming its shape.
//!
//! For m independent, identically distributed block maxima from any
//! continuous distribution, the probability that one more block exceeds
//! the k-th largest of them is itself random and follows Beta(k, m − k + 1)
//! (the coverage of an order statistic; David & Nagaraja 2003). So
//! with confidence c a new block exceeds the largest of m with probability
//! at most `1 − (1 − c)^(1/m)`, and since a sample is one of its block's
//! samples, so does any one sample, whatever the samples' dependence
//! within a block. The same law gives, at each of a few ranks, the range
//! the EVT fit's probability must fall in: outside it the fit and the data
//! disagree.

use super::checks::ljung_box_ranks;
use super::gev::Gev;
use super::gpd::Gpd;
use super::report::{BoundComparison, DistributionFreeBound, EvtOptions, EvtReport, Method};
use statrs::distribution::{Beta, ContinuousCDF};

/// The ranks at which the fit is compared with the order statistics.
const RANKS: [usize; 4] = [1, 3, 10, 30];

/// Most pairwise merges tried to reach independent block maxima.
const MAX_MERGES: u32 = 8;

/// Block maxima merged in pairs until their ranks pass Ljung–Box at the
/// significance level (or too few remain): `(maxima, block size, p)`.
fn independent_blocks(
    maxima_ns: &[u64],
    block_samples: u64,
    opts: &EvtOptions,
) -> (Vec<f64>, u64, Option<f64>) {
    let mut data: Vec<f64> = maxima_ns.iter().map(|&v| v as f64).collect();
    let mut block = block_samples;
    for merge in 0..=MAX_MERGES {
        if merge > 0 {
            if data.len() / 2 < opts.min_blocks {
                break;
            }
            data = data.chunks_exact(2).map(|c| c[0].max(c[1])).collect();
            block = block.saturating_mul(2);
        }
        let p = ljung_box_ranks(&data, (data.len() / 5).clamp(1, 10)).map(|(_, p)| p);
        if p.is_some_and(|p| p >= opts.significance) || data.len() / 2 < opts.min_blocks {
            return (data, block, p);
        }
    }
    let p = ljung_box_ranks(&data, (data.len() / 5).clamp(1, 10)).map(|(_, p)| p);
    (data, block, p)
}

/// The estimate's probability that a block of `block` samples exceeds
/// `x`, from its fitted parameters; None where the fit says nothing (no
/// estimate, or below a threshold).
fn evt_block_exceedance(report: &EvtReport, block: u64, x: f64) -> Option<f64> {
    if !report.is_estimated() {
        return None;
    }
    let params = report.params?;
    match report.method {
        Method::BlockMaxima => {
            let fitted_block = report.block_samples? as f64;
            let gev = Gev {
                mu: params.location_ns,
                sigma: params.scale_ns,
                xi: params.shape,
            };
            // G = F^(bθ), so a block of B samples has F^(Bθ) = G^(B/b).
            let (ln_g, _) = gev.ln_cdf_sf(x);
            Some(-(ln_g * block as f64 / fitted_block).exp_m1())
        }
        Method::PeaksOverThreshold => {
            let u = params.location_ns;
            if x <= u {
                return None;
            }
            let zeta = report.exceedance_rate?;
            let theta = report.extremal_index.unwrap_or(1.0);
            let gpd = Gpd {
                sigma: params.scale_ns,
                xi: params.shape,
            };
            let p = zeta * gpd.ln_sf(x - u).exp();
            // P(max of B) = F^(Bθ) (Leadbetter 1983).
            Some(-(block as f64 * theta * (-p).ln_1p()).exp_m1())
        }
    }
}

/// The distribution-free bound from the series' block maxima (in time
/// order, `block_samples` samples each), compared with `report`'s fit.
/// None with fewer than `min_blocks` maxima.
pub fn distribution_free_bound(
    maxima_ns: &[u64],
    block_samples: u64,
    report: &EvtReport,
    opts: &EvtOptions,
) -> Option<DistributionFreeBound> {
    if maxima_ns.len() < opts.min_blocks || block_samples == 0 {
        return None;
    }
    let (data, block, independence_p) = independent_blocks(maxima_ns, block_samples, opts);
    let m = data.len();
    let mut desc = data;
    desc.sort_by(|a, b| b.total_cmp(a));
    let alpha = opts.significance;
    let comparisons: Vec<BoundComparison> = RANKS
        .iter()
        .filter(|&&k| k * 10 <= m)
        .filter_map(|&k| {
            let coverage = Beta::new(k as f64, (m - k + 1) as f64).ok()?;
            let value_ns = desc[k - 1];
            Some(BoundComparison {
                rank: k,
                value_ns,
                low: coverage.inverse_cdf(alpha / 2.0),
                high: coverage.inverse_cdf(1.0 - alpha / 2.0),
                evt: evt_block_exceedance(report, block, value_ns),
            })
        })
        .collect();
    let disagrees = comparisons
        .iter()
        .any(|c| c.evt.is_some_and(|e| e < c.low || e > c.high));
    Some(DistributionFreeBound {
        block_samples: block,
        blocks: m,
        independence_p,
        independent: independence_p.is_some_and(|p| p >= alpha),
        confidence: opts.confidence,
        value_ns: desc[0],
        exceedance_per_block: -((1.0 - opts.confidence).ln() / m as f64).exp_m1(),
        comparisons,
        range_confidence: 1.0 - alpha,
        disagrees,
    })
}

#[cfg(test)]
mod tests {
    /// The coverage law itself: over many i.i.d. sets of m uniforms, a new
    /// value exceeds the largest with probability 1/(m+1) on average, and
    /// the one-sided bound holds for ≥ 95 % of the sets.
    #[test]
    fn the_largest_of_m_is_exceeded_as_the_beta_law_says() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (m, sets) = (100usize, 2000usize);
        let bound = -((0.05f64).ln() / m as f64).exp_m1();
        let (mut mean, mut held) = (0.0, 0usize);
        for _ in 0..sets {
            let max = (0..m).map(|_| uniform()).fold(0.0, f64::max);
            // A uniform exceeds `max` with probability 1 − max.
            mean += (1.0 - max) / sets as f64;
            held += usize::from(1.0 - max <= bound);
        }
        assert!((mean * (m + 1) as f64 - 1.0).abs() < 0.1, "{mean}");
        // 5 % may fail; three standard deviations (0.5 % each) of slack.
        assert!(held as f64 / sets as f64 >= 0.935, "{held}");
    }
}
