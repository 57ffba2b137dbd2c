//! Block maxima with a GEV fit: the block sizes tried, their checks, and
//! the one used.

use super::checks::blocks_extremal_index;
use super::gev::{self, GevFit};
use super::gof::{ad_statistic, Model};
use super::pipeline::{
    empty_report, estimate, fmt_p, fraction_above, gof_check, hdr_buckets, independence_check,
    refuse, regular_check, status, trend_check, us, verdict, Tail,
};
use super::report::{
    check, Check, CheckStatus, EvtOptions, EvtReport, FitParams, Fitted, Method, Verdict,
};

/// One block size tried.
struct BmCandidate {
    block: u64,
    blocks: usize,
    checks: Vec<Check>,
    fit: Option<GevFit>,
    theta: Option<f64>,
}

/// The clustering check of block maxima against the marginal distribution
/// (the series' histogram): the blocks estimator of the extremal index at
/// the median block maximum, a level about 0.7/b of the samples exceed.
fn clustering_check(
    data: &[f64],
    block: u64,
    marginal: Option<&[(u64, u64, u64)]>,
    opts: &EvtOptions,
) -> (Check, Option<f64>) {
    let unknown = |detail: String| {
        (
            Check {
                name: check::CLUSTERING.into(),
                status: CheckStatus::Unknown,
                statistic: f64::NAN,
                p_value: None,
                detail,
            },
            None,
        )
    };
    let Some(buckets) = marginal else {
        return unknown(
            "block maxima alone do not show whether exceedances cluster within a block \
             (the series' histogram is needed to compare)"
                .into(),
        );
    };
    let mut sorted = data.to_vec();
    sorted.sort_by(f64::total_cmp);
    let level = sorted[sorted.len() / 2];
    let above = sorted.iter().filter(|&&x| x > level).count();
    let marginal_fraction = fraction_above(buckets, level);
    let Some(theta) = blocks_extremal_index(above, data.len(), marginal_fraction, block) else {
        return unknown(format!(
            "the blocks estimator of the extremal index is undefined at {} ({above} of {} \
             blocks above it, a fraction {marginal_fraction:.2e} of the samples)",
            us(level),
            data.len()
        ));
    };
    let check = Check {
        name: check::CLUSTERING.into(),
        status: status(theta >= opts.min_extremal_index),
        statistic: theta,
        p_value: None,
        detail: format!(
            "extremal index θ̂ = {theta:.3} (blocks estimator at {}: {above} of {} blocks \
             reach it, {marginal_fraction:.2e} of the samples do): exceedances come in \
             clusters of {:.2} samples on average; at least θ = {} is accepted",
            us(level),
            data.len(),
            1.0 / theta,
            opts.min_extremal_index
        ),
    };
    (check, Some(theta))
}

fn bm_candidate(
    data: &[f64],
    block: u64,
    marginal: Option<&[(u64, u64, u64)]>,
    opts: &EvtOptions,
) -> BmCandidate {
    let alpha = opts.significance;
    let k = data.len();
    let mut out = BmCandidate {
        block,
        blocks: k,
        checks: Vec::new(),
        fit: None,
        theta: None,
    };
    out.checks.push(Check {
        name: check::ENOUGH_DATA.into(),
        status: status(k >= opts.min_blocks),
        statistic: k as f64,
        p_value: None,
        detail: format!(
            "{k} block maxima of {block} samples; a fit needs at least {}",
            opts.min_blocks
        ),
    });
    if k < opts.min_blocks {
        return out;
    }
    out.checks
        .push(independence_check(data, "block maxima", alpha));
    let (clustering, theta) = clustering_check(data, block, marginal, opts);
    out.checks.push(clustering);
    out.theta = theta;
    out.checks.extend(trend_check(data, "block maxima", alpha));
    let Some(fit) = gev::fit(data) else {
        out.checks.push(Check {
            name: check::REGULAR_FIT.into(),
            status: CheckStatus::Failed,
            statistic: f64::NAN,
            p_value: None,
            detail: "the likelihood search found no GEV that fits the block maxima".into(),
        });
        return out;
    };
    let xi = fit.gev.xi;
    out.checks.push(regular_check(xi, fit.converged));
    let mut sorted = data.to_vec();
    sorted.sort_by(f64::total_cmp);
    let parts: Vec<(f64, f64)> = sorted.iter().map(|&x| fit.gev.ln_cdf_sf(x)).collect();
    let a2 = ad_statistic(&parts);
    out.checks.push(gof_check(
        a2,
        Model::Gev { xi }.ad_p_value(a2),
        alpha,
        "GEV",
    ));
    let m = sorted[k - 1];
    let (ln_g, _) = fit.gev.ln_cdf_sf(m);
    let p_max = -(k as f64 * ln_g).exp_m1();
    out.checks.push(Check {
        name: check::MAXIMUM.into(),
        status: status(p_max >= alpha),
        statistic: -(k as f64) * ln_g.exp_m1(),
        p_value: Some(p_max),
        detail: format!(
            "the fit expects {:.3} of the {k} blocks to reach the observed maximum {}; \
             P(max ≥ observed) {}",
            -(k as f64) * ln_g.exp_m1(),
            us(m),
            fmt_p(p_max)
        ),
    });
    out.fit = Some(fit);
    out
}

/// Block maxima with a GEV fit. `maxima_ns` are the maxima of consecutive
/// blocks of `block_samples` samples, in time order (as
/// [`rtlab_core::result::BlockMaxima`] keeps them). `histogram_ns` is the
/// series' histogram (`[highest value, count]` per bucket, as
/// [`rtlab_core::result::SeriesStats::histogram_ns`]): with it the analysis
/// measures whether exceedances cluster within blocks (the extremal index θ) and turns
/// per-block into per-sample probabilities with it; without it that check is
/// unknown and the report refuses unless `accept_unchecked` (then θ = 1 is
/// assumed).
///
/// When the maxima fail the independence, fit or regularity checks at the
/// recorded block size, neighbouring blocks are merged in pairs (up to
/// `max_block_merges` times, while at least `min_blocks` remain): larger
/// blocks make maxima more independent and closer to their GEV limit. The
/// first block size that passes every check is used; the notes list the
/// sizes tried. Choosing among a few sizes makes the checks' real level
/// somewhat higher than `significance`.
pub fn block_maxima(
    maxima_ns: &[u64],
    block_samples: u64,
    histogram_ns: Option<&[[u64; 2]]>,
    opts: &EvtOptions,
) -> EvtReport {
    let observed = maxima_ns.iter().copied().max().unwrap_or(0) as f64;
    let samples = (maxima_ns.len() as u64).saturating_mul(block_samples);
    let mut report = empty_report(Method::BlockMaxima, samples, observed, opts);
    report.block_samples = Some(block_samples);
    report.used = maxima_ns.len();
    if let Err(e) = opts.validate() {
        return refuse(report, vec![e]);
    }
    if block_samples == 0 {
        return refuse(report, vec!["block maxima: block size is 0 samples".into()]);
    }
    let buckets = histogram_ns.map(hdr_buckets).filter(|b| !b.is_empty());
    let mut data: Vec<f64> = maxima_ns.iter().map(|&v| v as f64).collect();
    let mut block = block_samples;
    let mut tried: Vec<BmCandidate> = Vec::new();
    for merge in 0..=opts.max_block_merges {
        if merge > 0 {
            if data.len() / 2 < opts.min_blocks {
                break;
            }
            // An odd last block has no partner: it is left out, as the
            // recorder leaves out an incomplete block.
            data = data.chunks_exact(2).map(|c| c[0].max(c[1])).collect();
            block = block.saturating_mul(2);
        }
        let candidate = bm_candidate(&data, block, buckets.as_deref(), opts);
        // Larger blocks help where maxima of neighbouring blocks depend on
        // each other or the GEV limit is not reached yet; they do not make a
        // trend or clustering within blocks go away (a trend is only hidden,
        // with fewer maxima), so those, or too few blocks, end the search.
        let helps = candidate
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Failed)
            .all(|c| {
                [
                    check::INDEPENDENCE,
                    check::GOODNESS_OF_FIT,
                    check::REGULAR_FIT,
                    check::MAXIMUM,
                ]
                .contains(&c.name.as_str())
            });
        let ok = verdict(&candidate.checks, opts.accept_unchecked) == Verdict::Estimated;
        tried.push(candidate);
        if ok || !helps {
            break;
        }
    }
    let chosen = tried
        .pop()
        .expect("the recorded block size is always tried");
    for earlier in &tried {
        let failed: Vec<&str> = earlier
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Failed)
            .map(|c| c.name.as_str())
            .collect();
        report.notes.push(format!(
            "blocks of {} samples ({} blocks) failed: {}; merged neighbouring blocks",
            earlier.block,
            earlier.blocks,
            failed.join(", ")
        ));
    }
    report.block_samples = Some(chosen.block);
    report.used = chosen.blocks;
    report.samples = (chosen.blocks as u64).saturating_mul(chosen.block);
    report.extremal_index = chosen.theta;
    report.params = chosen.fit.as_ref().map(|f| FitParams {
        shape: f.gev.xi,
        shape_se: f.xi_se(),
        scale_ns: f.gev.sigma,
        location_ns: f.gev.mu,
    });
    report.fitted = chosen.fit.as_ref().map(|_| Fitted::BlockMaxima);
    report.checks = chosen.checks;
    report.verdict = verdict(&report.checks, opts.accept_unchecked);
    if let (Verdict::Estimated, Some(fit)) = (&report.verdict, chosen.fit.as_ref()) {
        let theta = chosen.theta.unwrap_or(1.0);
        report.notes.push(match chosen.theta {
            Some(t) => format!(
                "per-sample probability 1 − G(x)^(1/(bθ)) with b = {} samples per block \
                 and θ = {t:.3}",
                chosen.block
            ),
            None => format!(
                "estimated without the histogram as asked (accept_unchecked): θ = 1 \
                 assumed, so the probability is per block spread over its {} samples; \
                 where exceedances cluster it is the probability that a sample starts \
                 an excursion",
                chosen.block
            ),
        });
        let tail = Tail::Gev {
            fit,
            block: chosen.block as f64 * theta,
            blocks: chosen.blocks,
        };
        estimate(&mut report, &tail, opts);
    } else if !tried.is_empty() {
        if let Verdict::Refused { reasons } = &mut report.verdict {
            reasons.push(format!(
                "every block size from {} to {} samples was tried",
                block_samples, chosen.block
            ));
        }
    }
    report
}
