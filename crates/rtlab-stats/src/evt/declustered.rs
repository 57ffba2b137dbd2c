//! Peaks over threshold on the block maxima in time order, declustered:
//! the estimate for a series whose large values come in clusters.
//!
//! A stored series keeps the maxima of consecutive blocks of b samples and
//! the histogram of all samples, not the samples. The block maxima above a
//! threshold u, in time order, are grouped into clusters by intervals
//! declustering (Ferro & Segers 2003 §5.2: the extremal index of the
//! sequence by their intervals estimator sets the run length); a GPD is
//! fitted to the cluster maxima, which are near-independent where the
//! block maxima are not. At high levels the excess of a cluster maximum and
//! of any one exceedance follow the same law (the extremal index is the
//! same at u and above), so a sample exceeds `x > u` with probability
//! `ζᵤ·S(x − u)`, with ζᵤ the fraction of all samples above u — which the
//! histogram gives. The extremal index of the samples is then
//! `θ̂ = clusters / samples above u` (Leadbetter 1983: 1/θ samples per
//! cluster), and a run of n samples exceeds the level of per-sample
//! probability p with probability `1 − (1 − p)^(nθ)`.
//!
//! Every check is on what is fitted (MBPTA practice): independence and
//! trend on the cluster maxima, an even rate of the clusters in time, the
//! GPD's goodness of fit on the cluster maxima, stability above the
//! threshold, and the observed maximum.

use super::pipeline::{
    empty_report, estimate, even_rate_check, fraction_above, hdr_buckets, independence_check,
    refuse, status, too_few, trend_check, us, verdict, Tail,
};
use super::pot::{gpd_checks, pot_candidate, thresholds, Candidates, PotCandidate, TopValues};
use super::report::{
    check, Check, CheckStatus, Declustering, EvtOptions, EvtReport, Fitted, Method, Verdict,
};

/// The largest fraction of the samples a threshold may leave above it.
const TAIL_FRACTION: f64 = 0.1;

/// The histogram's word on the threshold: the fraction of samples above
/// it and how many samples that is, and what follows for the extremal
/// index and the per-sample rate of the far tail.
struct SampleRate {
    zeta: f64,
    samples_above: f64,
    /// θ̂: sample clusters per sample above the threshold.
    theta: f64,
    /// The ζ of the far tail: `ζᵤ·(k/m)/(−ln(1 − k/m))`.
    tail_zeta: f64,
}

/// Clusters of samples fall into blocks as a Poisson stream, so that a
/// fraction k/m of the m blocks holding one or more means `−ln(1 − k/m)`
/// clusters per block (Smith & Weissman 1994's blocks estimator), of which
/// the declustering counted C in k blocks (C/k < 1 where a cluster spans
/// neighbouring blocks). Per sample that is `θ·ζᵤ = −ln(1 − k/m)·(C/k)/b`.
/// Where the fitted tail is rare, a cluster above x is alone in its block:
/// sample clusters above x come at `(C/m)·S(x−u)/b` per sample, above u at
/// `θ·ζᵤ`, so a sample exceeds x with probability `ζᵤ·S(x−u)` times
/// `(C/m)/(b·θ·ζᵤ) = (k/m)/(−ln(1 − k/m))`: without that factor, several
/// clusters in one block at a low threshold would count as one and inflate
/// S.
fn sample_rate(buckets: &[(u64, u64, u64)], c: &PotCandidate, m: usize, block: u64) -> SampleRate {
    let total: u64 = buckets.iter().map(|b| b.2).sum();
    let zeta = fraction_above(buckets, c.u);
    let k = c.exceedances as f64;
    let per_block = -(-k / m as f64).ln_1p();
    let clusters = c.peak_values.len() as f64;
    let theta = (per_block * clusters / k / (block as f64 * zeta)).min(1.0);
    SampleRate {
        zeta,
        samples_above: zeta * total as f64,
        theta,
        tail_zeta: zeta * (k / m as f64) / per_block,
    }
}

/// The checks that need the time order, on the cluster maxima that are
/// fitted: independence (Ljung–Box on their ranks), no trend (Mann–
/// Kendall), clusters spread evenly over the `m` blocks (Kolmogorov–
/// Smirnov).
fn fitted_sample_checks(c: &PotCandidate, m: usize, opts: &EvtOptions) -> Vec<Check> {
    let alpha = opts.significance;
    let mut checks = vec![independence_check(
        &c.peak_values,
        "cluster maxima (what is fitted)",
        alpha,
    )];
    checks.extend(trend_check(&c.peak_values, "cluster maxima", alpha));
    let times = c.peak_times.as_deref().unwrap_or_default();
    let positions: Vec<f64> = times.iter().map(|&t| (t as f64 + 0.5) / m as f64).collect();
    checks.extend(even_rate_check(&positions, alpha));
    checks
}

/// The per-sample rate above the threshold, from the histogram; unknown
/// without it.
fn sample_rate_check(c: &PotCandidate, rate: Option<&SampleRate>) -> Check {
    let Some(rate) = rate else {
        return Check {
            name: check::SAMPLE_RATE.into(),
            status: CheckStatus::Unknown,
            statistic: f64::NAN,
            p_value: None,
            detail: format!(
                "without the series' histogram, how many samples exceed {} (not only how \
                 many blocks do) is not known",
                us(c.u)
            ),
        };
    };
    let clusters = c.peak_values.len();
    Check {
        name: check::SAMPLE_RATE.into(),
        status: status(rate.samples_above >= clusters as f64 && rate.zeta > 0.0),
        statistic: rate.zeta,
        p_value: None,
        detail: format!(
            "the histogram puts {:.3e} of the samples ({:.0}) above {}, in {} of the \
             blocks: extremal index θ̂ = {:.3}, clusters of {:.1} samples on average \
             (blocks estimator, Smith & Weissman 1994, with the {clusters} clusters \
             declustered)",
            rate.zeta,
            rate.samples_above,
            us(c.u),
            c.exceedances,
            rate.theta,
            1.0 / rate.theta
        ),
    }
}

/// Peaks over threshold on block maxima in time order (`block_samples`
/// samples each, as [`rtlab_core::result::BlockMaxima`] keeps them),
/// declustered, with the per-sample rate from the series' histogram
/// (`[highest value, count]` per bucket). Thresholds are tried from the
/// median block maximum (or the one with `max_exceedances` blocks above
/// it, if higher) upwards, each with 1/√2 as many blocks above it, while
/// `min_blocks` remain (what is fitted are maxima, as in the GEV fit); the lowest whose GPD passes Anderson–Darling
/// and whose ξ̂ agrees with ξ̂ at every higher one is used. Without the
/// histogram the per-sample rate is unknown: refused unless
/// `accept_unchecked` (then one sample per exceeding block is assumed, the
/// probability of a sample starting an excursion).
pub fn declustered_block_maxima(
    maxima_ns: &[u64],
    block_samples: u64,
    histogram_ns: Option<&[[u64; 2]]>,
    opts: &EvtOptions,
) -> EvtReport {
    let m = maxima_ns.len();
    let observed = maxima_ns.iter().copied().max().unwrap_or(0) as f64;
    let samples = (m as u64).saturating_mul(block_samples);
    let mut report = empty_report(Method::PeaksOverThreshold, samples, observed, opts);
    report.block_samples = Some(block_samples);
    if let Err(e) = opts.validate() {
        return refuse(report, vec![e]);
    }
    if block_samples == 0 {
        return refuse(report, vec!["block maxima: block size is 0 samples".into()]);
    }
    // What is fitted are maxima (of clusters of blocks), as in the GEV
    // fit: the same fewest number, `min_blocks`, is enough.
    let opts = &EvtOptions {
        min_exceedances: opts.min_blocks,
        ..opts.clone()
    };
    let most = opts.max_exceedances.min(m / 2);
    let mut desc: Vec<f64> = maxima_ns.iter().map(|&v| v as f64).collect();
    desc.sort_by(|a, b| b.total_cmp(a));
    let floor = desc.get(most).copied().unwrap_or(f64::INFINITY);
    desc.retain(|&v| v > floor);
    let top = TopValues::above(maxima_ns, floor);
    let buckets = histogram_ns.map(hdr_buckets).filter(|b| !b.is_empty());
    // The GPD is a tail model: as on samples, no threshold below the 90th
    // percentile of the samples (where the histogram says where that is).
    let in_tail = |u: f64| {
        buckets
            .as_deref()
            .is_none_or(|b| fraction_above(b, u) <= TAIL_FRACTION)
    };
    let tried: Vec<PotCandidate> = thresholds(&desc, floor, opts)
        .into_iter()
        .filter(|&u| in_tail(u))
        .map(|u| pot_candidate(&top, u))
        .collect();
    if tried.is_empty() {
        let detail = format!(
            "{m} block maxima of {block_samples} samples: {} of them lie above the median, \
             too few above the 90th percentile of the samples for the fit's at least {} \
             clusters",
            desc.len(),
            opts.min_exceedances
        );
        return too_few(report, desc.len(), detail);
    }
    let candidates = Candidates::new(tried, opts.significance);
    let chosen = candidates.chosen(opts);
    report.notes.push(format!(
        "declustered peaks over threshold on the {m} maxima of blocks of {block_samples} \
         samples in time order; thresholds tried:"
    ));
    report.notes.extend(candidates.notes(chosen));
    let c = &candidates.all[chosen];
    judge(
        &mut report,
        c,
        &candidates,
        chosen,
        m,
        buckets.as_deref(),
        opts,
    );
    report
}

/// The checks, the verdict and the estimate at the chosen threshold, of
/// `m` block maxima.
fn judge(
    report: &mut EvtReport,
    c: &PotCandidate,
    candidates: &Candidates,
    chosen: usize,
    m: usize,
    buckets: Option<&[(u64, u64, u64)]>,
    opts: &EvtOptions,
) {
    let block = report.block_samples.unwrap_or(1);
    let clusters = c.peak_values.len();
    let rate = buckets.map(|b| sample_rate(b, c, m, block));
    let theta = rate.as_ref().map(|r| r.theta);
    report.threshold_ns = Some(c.u);
    report.used = clusters;
    report.exceedance_rate = rate.as_ref().map(|r| r.tail_zeta);
    report.extremal_index = theta;
    report.fitted = Some(Fitted::ClusterMaxima);
    report.declustering = Some(Declustering {
        sequence_block_samples: block,
        threshold_ns: c.u,
        exceedances: c.exceedances,
        sample_exceedances: rate.as_ref().map(|r| r.samples_above),
        clusters,
        run_length: c.run.unwrap_or(0),
        sequence_extremal_index: c.theta.unwrap_or(1.0),
    });
    let mut checks = vec![Check {
        name: check::ENOUGH_DATA.into(),
        status: status(clusters >= opts.min_exceedances),
        statistic: clusters as f64,
        p_value: None,
        detail: format!(
            "{} of {m} block maxima exceed {}, in {clusters} clusters (run length {} \
             blocks); a fit needs at least {} clusters",
            c.exceedances,
            us(c.u),
            c.run.unwrap_or(0),
            opts.min_exceedances
        ),
    }];
    checks.extend(fitted_sample_checks(c, m, opts));
    checks.push(sample_rate_check(c, rate.as_ref()));
    checks.extend(gpd_checks(
        report,
        c,
        candidates,
        chosen,
        opts,
        "cluster maxima",
    ));
    report.checks = checks;
    report.verdict = verdict(&report.checks, opts.accept_unchecked);
    let (Verdict::Estimated, Some(fit)) = (&report.verdict, &c.fit) else {
        return;
    };
    let zeta = match &rate {
        Some(r) => {
            report.notes.push(format!(
                "per-sample probability ζᵤ·(1 + ξ(x−u)/σ)^(−1/ξ), the GPD fitted to the \
                 {clusters} cluster maxima, ζᵤ = {:.3e} ({:.3e} of the samples lie above u, \
                 × {:.3} for several clusters in one block); with θ = {:.3}, a run of n \
                 samples exceeds the pWCET at p with probability 1 − (1 − p)^(nθ) ≈ nθp",
                r.tail_zeta,
                r.zeta,
                r.tail_zeta / r.zeta,
                r.theta
            ));
            r.tail_zeta
        }
        _ => {
            let zeta = c.exceedances as f64 / report.samples as f64;
            report.exceedance_rate = Some(zeta);
            report.notes.push(format!(
                "estimated without the histogram as asked (accept_unchecked): one sample \
                 per exceeding block assumed (ζᵤ = {zeta:.3e}), so the probability is that \
                 of a sample starting an excursion"
            ));
            zeta
        }
    };
    let tail = Tail::Gpd { fit, u: c.u, zeta };
    estimate(report, &tail, opts);
}
