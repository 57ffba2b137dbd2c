//! The two analyses end to end: candidate block sizes or thresholds, fits,
//! checks, verdict, and the pWCET table with its intervals.

use super::checks::{
    blocks_extremal_index, decluster, extremal_index, ks_uniform, ljung_box_ranks, mann_kendall,
};
use super::gev::{self, GevFit};
use super::gof::{ad_statistic, Model};
use super::gpd::{self, GpdFit};
use super::optim::End;
use super::{
    check, Check, CheckStatus, EvtOptions, EvtReport, FitParams, Method, PwcetEstimate, Verdict,
};
use rtlab_core::result::SeriesStats;
use statrs::distribution::{ContinuousCDF, Normal};

/// Points on the fitted tail handed out for plotting.
const CURVE_POINTS: usize = 48;

fn status(ok: bool) -> CheckStatus {
    if ok {
        CheckStatus::Passed
    } else {
        CheckStatus::Failed
    }
}

/// A p-value in prose with its relation: `= 0.343`, `= 2.7e-9`, and
/// `< 1e-300` where it underflowed to 0.
fn fmt_p(p: f64) -> String {
    if p >= 1e-3 {
        format!("= {p:.3}")
    } else if p >= 1e-300 {
        format!("= {p:.1e}")
    } else {
        "< 1e-300".into()
    }
}

fn us(ns: f64) -> String {
    format!("{:.3} µs", ns / 1000.0)
}

fn empty_report(
    method: Method,
    samples: u64,
    observed_max_ns: f64,
    opts: &EvtOptions,
) -> EvtReport {
    EvtReport {
        method,
        samples,
        used: 0,
        block_samples: None,
        threshold_ns: None,
        exceedance_rate: None,
        extremal_index: None,
        params: None,
        confidence: opts.confidence,
        checks: Vec::new(),
        verdict: Verdict::Refused {
            reasons: Vec::new(),
        },
        pwcet: Vec::new(),
        curve: Vec::new(),
        observed_max_ns,
        notes: Vec::new(),
    }
}

fn refuse(mut report: EvtReport, reasons: Vec<String>) -> EvtReport {
    report.verdict = Verdict::Refused { reasons };
    report.pwcet.clear();
    report.curve.clear();
    report
}

/// `χ²₁(confidence)/2`: how far the log-likelihood may drop inside a
/// profile-likelihood interval.
fn deviance_cut(confidence: f64) -> f64 {
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    z * z / 2.0
}

/// The check outcomes turned into a verdict: every failed check (and every
/// unknown one, unless the caller accepts them) is a reason to refuse.
fn verdict(checks: &[Check], accept_unknown: bool) -> Verdict {
    let reasons: Vec<String> = checks
        .iter()
        .filter(|c| match c.status {
            CheckStatus::Passed => false,
            CheckStatus::Failed => true,
            CheckStatus::Unknown => !accept_unknown,
        })
        .map(|c| {
            let what = if c.status == CheckStatus::Unknown {
                "cannot be checked"
            } else {
                "failed"
            };
            format!("{} {what}: {}", c.name, c.detail)
        })
        .collect();
    if reasons.is_empty() {
        Verdict::Estimated
    } else {
        Verdict::Refused { reasons }
    }
}

fn regular_check(xi: f64, converged: bool) -> Check {
    let ok = xi > -0.5 && xi < gev::XI_MAX - 0.01 && converged;
    Check {
        name: check::REGULAR_FIT.into(),
        status: status(ok),
        statistic: xi,
        p_value: None,
        detail: format!(
            "ξ̂ = {xi:.3}; the likelihood theory behind the intervals and the fit test \
             needs −0.5 < ξ < {} (Smith 1985){}",
            gev::XI_MAX,
            if converged {
                ""
            } else {
                "; the likelihood search did not converge"
            }
        ),
    }
}

fn gof_check(a2: f64, p: Option<f64>, alpha: f64, family: &str) -> Check {
    let (status, detail) = match p {
        Some(p) => (
            status(p >= alpha),
            format!(
                "Anderson–Darling against the fitted {family}: A² = {a2:.3}, p {} \
                 (asymptotic null distribution with the parameters estimated)",
                fmt_p(p)
            ),
        ),
        None => (
            CheckStatus::Unknown,
            format!(
                "Anderson–Darling against the fitted {family}: A² = {a2:.3}; no null \
                 distribution for an irregular fit (ξ ≤ −0.5)"
            ),
        ),
    };
    Check {
        name: check::GOODNESS_OF_FIT.into(),
        status,
        statistic: a2,
        p_value: p,
        detail,
    }
}

/// The fitted tail in per-sample terms, for either method.
enum Tail<'a> {
    /// `block` is the effective block size: samples per block × θ.
    Gev {
        fit: &'a GevFit,
        block: f64,
        blocks: usize,
    },
    Gpd {
        fit: &'a GpdFit,
        u: f64,
        zeta: f64,
    },
}

impl Tail<'_> {
    /// Why `p` is outside what this tail describes, if it is.
    fn uncovered(&self, p: f64) -> Option<String> {
        match *self {
            Tail::Gev { block, blocks, .. } => {
                let g = (block * (-p).ln_1p()).exp();
                (g < 1.0 / (blocks as f64 + 1.0)).then(|| {
                    format!(
                        "p = {p:.0e} per sample is exceeded in nearly every block: it lies \
                         below the block maxima, inside the measured data; read it from the \
                         measured percentiles"
                    )
                })
            }
            Tail::Gpd { zeta, .. } => (p >= zeta).then(|| {
                format!(
                    "p = {p:.0e} per sample is not rarer than the threshold's exceedance \
                     rate ζ = {zeta:.2e}: it lies inside the measured data; read it from the \
                     measured percentiles"
                )
            }),
        }
    }

    fn value(&self, p: f64) -> f64 {
        match *self {
            Tail::Gev { fit, block, .. } => fit.level(-block * (-p).ln_1p()),
            Tail::Gpd { fit, u, zeta } => u + fit.gpd.excess_at((zeta / p).ln()),
        }
    }

    fn interval(&self, p: f64, cut: f64, ceiling: f64) -> (End, End) {
        match *self {
            Tail::Gev { fit, block, .. } => {
                fit.level_interval(-block * (-p).ln_1p(), cut, 0.0, ceiling)
            }
            Tail::Gpd { fit, u, zeta } => {
                let shift = |e: End| match e {
                    End::Found(v) => End::Found(u + v),
                    End::Open(v) => End::Open(u + v),
                };
                let (lo, hi) = fit.excess_interval((zeta / p).ln(), cut, 0.0, ceiling - u);
                (shift(lo), shift(hi))
            }
        }
    }

    /// The most common per-sample probability the curve starts at.
    fn curve_start(&self) -> f64 {
        match *self {
            Tail::Gev { block, .. } => (1.0 / block).min(1e-2),
            Tail::Gpd { zeta, .. } => zeta,
        }
    }
}

/// The pWCET table and the plotting curve for an accepted fit.
fn estimate(report: &mut EvtReport, tail: &Tail, opts: &EvtOptions) {
    let cut = deviance_cut(opts.confidence);
    let mut probabilities = opts.probabilities.clone();
    probabilities.sort_by(|a, b| b.total_cmp(a));
    probabilities.dedup();
    let conf = opts.confidence * 100.0;
    for &p in &probabilities {
        if let Some(why) = tail.uncovered(p) {
            report.notes.push(why);
            continue;
        }
        let value = tail.value(p);
        // Past 10⁴ times the larger of the estimate and the observed
        // maximum an upper end is reported as unbounded.
        let ceiling = 1e4 * value.max(report.observed_max_ns);
        let (lo, hi) = tail.interval(p, cut, ceiling);
        let ci_low_ns = match lo {
            End::Found(v) => v.min(value),
            End::Open(v) => {
                report.notes.push(format!(
                    "p = {p:.0e}: the {conf}% interval reaches down to {} without closing",
                    us(v)
                ));
                v
            }
        };
        let ci_high_ns = match hi {
            End::Found(v) => v.max(value),
            End::Open(_) => {
                report.notes.push(format!(
                    "p = {p:.0e}: the data do not bound the pWCET from above at {conf}% \
                     confidence (upper end unbounded: the tail may be heavier than the \
                     estimate)"
                ));
                f64::INFINITY
            }
        };
        report.pwcet.push(PwcetEstimate {
            exceedance_per_sample: p,
            value_ns: value,
            ci_low_ns,
            ci_high_ns,
        });
    }
    let start = tail.curve_start();
    let end = probabilities.last().copied().unwrap_or(1e-9).min(start) / 10.0;
    let (ls, le) = (start.ln(), end.ln());
    report.curve = (0..CURVE_POINTS)
        .map(|i| {
            let p = (ls + (le - ls) * i as f64 / (CURVE_POINTS - 1) as f64).exp();
            (tail.value(p), p)
        })
        .filter(|(x, _)| x.is_finite())
        .collect();
}

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
    let lags = (k / 5).clamp(1, 10);
    out.checks.push(match ljung_box_ranks(data, lags) {
        Some((q, p)) => Check {
            name: check::INDEPENDENCE.into(),
            status: status(p >= alpha),
            statistic: q,
            p_value: Some(p),
            detail: format!(
                "Ljung–Box on the ranks of the block maxima, lags 1–{lags}: Q = {q:.2}, p {}",
                fmt_p(p)
            ),
        },
        None => Check {
            name: check::INDEPENDENCE.into(),
            status: CheckStatus::Failed,
            statistic: f64::NAN,
            p_value: None,
            detail: format!(
                "all {k} block maxima are equal ({}): there is no variation to model",
                us(data[0])
            ),
        },
    });
    let (clustering, theta) = clustering_check(data, block, marginal, opts);
    out.checks.push(clustering);
    out.theta = theta;
    if let Some((s, z, p)) = mann_kendall(data) {
        out.checks.push(Check {
            name: check::TREND.into(),
            status: status(p >= alpha),
            statistic: z,
            p_value: Some(p),
            detail: format!(
                "Mann–Kendall on the block maxima in time order: S = {s}, Z = {z:.2}, p {}",
                fmt_p(p)
            ),
        });
    }
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
/// [`SeriesStats::histogram_ns`]): with it the analysis measures whether
/// exceedances cluster within blocks (the extremal index θ) and turns
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

/// What a threshold analysis starts from: the largest values, with their
/// sample indices when the time order is known.
struct TopValues {
    /// Samples in the whole series.
    n: u64,
    /// The lowest threshold tried: values above it are in `values`.
    floor: f64,
    /// Values above `floor`, in time order when `times` is known.
    values: Vec<f64>,
    times: Option<Vec<u64>>,
}

/// One threshold tried.
struct PotCandidate {
    u: f64,
    exceedances: usize,
    theta: Option<f64>,
    /// Sample indices and values of the cluster maxima, in time order when
    /// known.
    peak_times: Option<Vec<u64>>,
    peak_values: Vec<f64>,
    fit: Option<GpdFit>,
    a2: f64,
    ad_p: Option<f64>,
}

fn pot_candidate(top: &TopValues, u: f64) -> PotCandidate {
    let keep: Vec<usize> = (0..top.values.len())
        .filter(|&i| top.values[i] > u)
        .collect();
    let values: Vec<f64> = keep.iter().map(|&i| top.values[i]).collect();
    let times: Option<Vec<u64>> = top
        .times
        .as_ref()
        .map(|t| keep.iter().map(|&i| t[i]).collect());
    let (theta, peaks) = match &times {
        Some(t) => {
            let theta = extremal_index(t).unwrap_or(1.0);
            (Some(theta), decluster(t, &values, theta))
        }
        None => (None, (0..values.len()).collect()),
    };
    let peak_values: Vec<f64> = peaks.iter().map(|&i| values[i]).collect();
    let peak_times = times.map(|t| peaks.iter().map(|&i| t[i]).collect());
    let excesses: Vec<f64> = peak_values.iter().map(|v| v - u).collect();
    let fit = gpd::fit(&excesses);
    let (a2, ad_p) = match &fit {
        Some(f) => {
            let mut sorted = excesses.clone();
            sorted.sort_by(f64::total_cmp);
            let parts: Vec<(f64, f64)> = sorted.iter().map(|&y| f.gpd.ln_cdf_sf(y)).collect();
            let a2 = ad_statistic(&parts);
            (a2, Model::Gpd { xi: f.gpd.xi }.ad_p_value(a2))
        }
        None => (f64::NAN, None),
    };
    PotCandidate {
        u,
        exceedances: values.len(),
        theta,
        peak_times,
        peak_values,
        fit,
        a2,
        ad_p,
    }
}

fn pot_core(mut report: EvtReport, top: TopValues, opts: &EvtOptions) -> EvtReport {
    let alpha = opts.significance;
    let mut desc = top.values.clone();
    desc.sort_by(|a, b| b.total_cmp(a));
    // Thresholds from the lowest (most exceedances) up, each with 1/√2 as
    // many exceedances as the one before, down to `min_exceedances`.
    let mut thresholds: Vec<f64> = Vec::new();
    let mut k = desc.len() as f64;
    while k.round() as usize >= opts.min_exceedances {
        let kk = k.round() as usize;
        let u = if kk >= desc.len() {
            top.floor
        } else {
            desc[kk]
        };
        if thresholds.last() != Some(&u) {
            thresholds.push(u);
        }
        k /= std::f64::consts::SQRT_2;
    }
    if thresholds.is_empty() {
        report.checks.push(Check {
            name: check::ENOUGH_DATA.into(),
            status: CheckStatus::Failed,
            statistic: desc.len() as f64,
            p_value: None,
            detail: format!(
                "{} samples give {} exceedances of the 90th percentile or above; a fit \
                 needs at least {}",
                top.n,
                desc.len(),
                opts.min_exceedances
            ),
        });
        report.verdict = verdict(&report.checks, false);
        return report;
    }
    let candidates: Vec<PotCandidate> =
        thresholds.iter().map(|&u| pot_candidate(&top, u)).collect();
    // Threshold stability (Coles 2001, §4.3.4, made automatic): above a
    // threshold where the GPD holds, ξ̂ at every higher threshold estimates
    // the same ξ, within its standard error.
    let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    let instability = |i: usize| -> f64 {
        let Some(fi) = &candidates[i].fit else {
            return f64::INFINITY;
        };
        candidates[i + 1..]
            .iter()
            .filter_map(|c| c.fit.as_ref())
            .filter_map(|f| f.xi_se().map(|se| (fi.gpd.xi - f.gpd.xi).abs() / se))
            .fold(0.0, f64::max)
    };
    let acceptable = |i: usize| {
        let c = &candidates[i];
        c.fit.as_ref().is_some_and(|f| f.gpd.xi > -0.5)
            && c.ad_p.is_some_and(|p| p >= alpha)
            && c.peak_values.len() >= opts.min_exceedances
            && instability(i) <= z
    };
    let chosen_index = (0..candidates.len())
        .find(|&i| acceptable(i))
        .unwrap_or_else(|| {
            // None acceptable: report the best-fitting one, which fails.
            (0..candidates.len())
                .max_by(|&a, &b| {
                    let pa = candidates[a].ad_p.unwrap_or(-1.0);
                    let pb = candidates[b].ad_p.unwrap_or(-1.0);
                    pa.total_cmp(&pb)
                })
                .unwrap_or(0)
        });
    for (i, c) in candidates.iter().enumerate() {
        report.notes.push(format!(
            "threshold {} ({} exceedances, {} clusters): ξ̂ = {}, Anderson–Darling p {}, \
             ξ̂ stable above it: {}{}",
            us(c.u),
            c.exceedances,
            c.peak_values.len(),
            c.fit
                .as_ref()
                .map_or("-".into(), |f| format!("{:.3}", f.gpd.xi)),
            c.ad_p.map_or("not computed".into(), fmt_p),
            if instability(i) <= z { "yes" } else { "no" },
            if i == chosen_index { "  <- used" } else { "" }
        ));
    }
    let c = &candidates[chosen_index];
    let clusters = c.peak_values.len();
    report.threshold_ns = Some(c.u);
    report.used = clusters;
    report.exceedance_rate = Some(c.exceedances as f64 / top.n as f64);
    report.extremal_index = c.theta;
    let mut checks = vec![Check {
        name: check::ENOUGH_DATA.into(),
        status: status(clusters >= opts.min_exceedances),
        statistic: clusters as f64,
        p_value: None,
        detail: match c.theta {
            Some(_) => format!(
                "{} exceedances of {} in {} clusters; a fit needs at least {} clusters",
                c.exceedances,
                us(c.u),
                clusters,
                opts.min_exceedances
            ),
            None => format!(
                "{} exceedances of {} (no time order: each one counts as a cluster); a fit \
                 needs at least {}",
                c.exceedances,
                us(c.u),
                opts.min_exceedances
            ),
        },
    }];
    match (&c.theta, &c.peak_times) {
        (Some(theta), Some(times)) => {
            checks.push(Check {
                name: check::INDEPENDENCE.into(),
                status: status(*theta >= opts.min_extremal_index),
                statistic: *theta,
                p_value: None,
                detail: format!(
                    "extremal index θ̂ = {theta:.3} (Ferro–Segers intervals estimator): \
                     exceedances come in clusters of {:.2} samples on average, declustered \
                     into {clusters} clusters; at least θ = {} is accepted",
                    1.0 / theta,
                    opts.min_extremal_index
                ),
            });
            if let Some((s, zs, p)) = mann_kendall(&c.peak_values) {
                checks.push(Check {
                    name: check::TREND.into(),
                    status: status(p >= alpha),
                    statistic: zs,
                    p_value: Some(p),
                    detail: format!(
                        "Mann–Kendall on the cluster maxima in time order: S = {s}, Z = \
                         {zs:.2}, p {}",
                        fmt_p(p)
                    ),
                });
            }
            let positions: Vec<f64> = times
                .iter()
                .map(|&t| (t as f64 + 0.5) / top.n as f64)
                .collect();
            if let Some((d, p)) = ks_uniform(&positions) {
                checks.push(Check {
                    name: check::EVEN_RATE.into(),
                    status: status(p >= alpha),
                    statistic: d,
                    p_value: Some(p),
                    detail: format!(
                        "Kolmogorov–Smirnov of the cluster times against an even spread over \
                         the run: D = {d:.4}, p {}",
                        fmt_p(p)
                    ),
                });
            }
        }
        _ => {
            let why = "a histogram has no time order";
            for (name, what) in [
                (check::INDEPENDENCE, "whether exceedances cluster"),
                (check::TREND, "whether the tail drifts during the run"),
                (
                    check::EVEN_RATE,
                    "whether exceedances are spread evenly in time",
                ),
            ] {
                checks.push(Check {
                    name: name.into(),
                    status: CheckStatus::Unknown,
                    statistic: f64::NAN,
                    p_value: None,
                    detail: format!("{why}: {what} cannot be seen"),
                });
            }
        }
    }
    match &c.fit {
        Some(fit) => {
            report.params = Some(FitParams {
                shape: fit.gpd.xi,
                shape_se: fit.xi_se(),
                scale_ns: fit.gpd.sigma,
                location_ns: c.u,
            });
            checks.push(regular_check(fit.gpd.xi, true));
            checks.push(gof_check(c.a2, c.ad_p, alpha, "GPD"));
            let worst = instability(chosen_index);
            checks.push(Check {
                name: check::THRESHOLD_STABILITY.into(),
                status: status(worst <= z),
                statistic: worst,
                p_value: None,
                detail: format!(
                    "ξ̂ at every higher threshold tried lies within {worst:.2} of its standard \
                     errors from ξ̂ here; at most {z:.2} ({}% two-sided) accepted",
                    (1.0 - alpha) * 100.0
                ),
            });
            let m = c.peak_values.iter().copied().fold(f64::MIN, f64::max);
            let (ln_f, _) = fit.gpd.ln_cdf_sf(m - c.u);
            let p_max = -(clusters as f64 * ln_f).exp_m1();
            let expected = -(clusters as f64) * ln_f.exp_m1();
            checks.push(Check {
                name: check::MAXIMUM.into(),
                status: status(p_max >= alpha),
                statistic: expected,
                p_value: Some(p_max),
                detail: format!(
                    "the fit expects {expected:.3} of the {clusters} clusters to reach the \
                     observed maximum {}; P(max ≥ observed) {}",
                    us(m),
                    fmt_p(p_max)
                ),
            });
        }
        None => checks.push(Check {
            name: check::REGULAR_FIT.into(),
            status: CheckStatus::Failed,
            statistic: f64::NAN,
            p_value: None,
            detail: "the likelihood search found no GPD that fits the excesses".into(),
        }),
    }
    report.checks = checks;
    report.verdict = verdict(&report.checks, opts.accept_unchecked);
    if let (Verdict::Estimated, Some(fit)) = (&report.verdict, &c.fit) {
        if c.theta.is_none() {
            report.notes.push(
                "estimated from a histogram as asked (accept_unchecked): independence and \
                 stationarity were assumed, not checked; the intervals are too narrow if \
                 exceedances cluster"
                    .into(),
            );
        }
        let tail = Tail::Gpd {
            fit,
            u: c.u,
            zeta: c.exceedances as f64 / top.n as f64,
        };
        estimate(&mut report, &tail, opts);
    }
    report
}

/// The most exceedances a threshold may have: `max_exceedances`, and no
/// lower than the 90th percentile.
fn most_exceedances(n: u64, opts: &EvtOptions) -> usize {
    (opts.max_exceedances as u64).min(n / 10) as usize
}

/// Peaks over threshold with a GPD fit, on samples in time order.
///
/// Thresholds are tried from the one with `max_exceedances` exceedances
/// (or the 90th percentile, if higher) upwards, each with 1/√2 as many
/// exceedances as the last, down to `min_exceedances`. At each, exceedances
/// are declustered (Ferro & Segers 2003) and a GPD is fitted to the cluster
/// maxima. The lowest threshold whose fit passes the Anderson–Darling test
/// and whose ξ̂ agrees with ξ̂ at every higher threshold is used
/// (parameter stability, Coles 2001 §4.3.4). The per-sample exceedance of
/// `x > u` is `ζᵤ·S(x − u)`, ζᵤ counting all exceedances: with a stable
/// extremal index, cluster rate × mean cluster size.
pub fn peaks_over_threshold(samples_ns: &[u64], opts: &EvtOptions) -> EvtReport {
    let n = samples_ns.len() as u64;
    let observed = samples_ns.iter().copied().max().unwrap_or(0) as f64;
    let mut report = empty_report(Method::PeaksOverThreshold, n, observed, opts);
    if let Err(e) = opts.validate() {
        return refuse(report, vec![e]);
    }
    let most = most_exceedances(n, opts);
    let floor = if most == 0 {
        f64::INFINITY
    } else {
        let mut copy = samples_ns.to_vec();
        let at = samples_ns.len() - most - 1;
        *copy.select_nth_unstable(at).1 as f64
    };
    let (times, values): (Vec<u64>, Vec<f64>) = samples_ns
        .iter()
        .enumerate()
        .filter(|(_, &v)| v as f64 > floor)
        .map(|(i, &v)| (i as u64, v as f64))
        .unzip();
    let top = TopValues {
        n,
        floor,
        values,
        times: Some(times),
    };
    report = pot_core(report, top, opts);
    report
}

/// The width of the HDR bucket (3 significant digits) whose highest
/// equivalent value is `value`: 1 ns below 2048 ns, then doubling with each
/// power of two (2048 sub-buckets per power of two).
fn hdr_bucket_width(value: u64) -> u64 {
    if value < 2048 {
        1
    } else {
        1 << (63 - value.leading_zeros() - 10)
    }
}

/// The non-empty buckets of an HDR histogram as `(lowest, highest, count)`,
/// ascending. A bucket reaches down by its HDR width, but never into the
/// bucket below it (so an exact histogram, one value per entry, reads as
/// exact too).
fn hdr_buckets(histogram_ns: &[[u64; 2]]) -> Vec<(u64, u64, u64)> {
    let mut entries: Vec<[u64; 2]> = histogram_ns.iter().copied().filter(|b| b[1] > 0).collect();
    entries.sort_by_key(|b| b[0]);
    let mut out: Vec<(u64, u64, u64)> = Vec::with_capacity(entries.len());
    let mut free = 0u64;
    for [high, count] in entries {
        let low = (high + 1)
            .saturating_sub(hdr_bucket_width(high))
            .max(free)
            .min(high);
        out.push((low, high, count));
        free = high + 1;
    }
    out
}

/// The fraction of the histogram's samples above `level`; a bucket that
/// straddles it counts in proportion, its values taken as spread evenly.
fn fraction_above(buckets: &[(u64, u64, u64)], level: f64) -> f64 {
    let total: u64 = buckets.iter().map(|b| b.2).sum();
    if total == 0 {
        return f64::NAN;
    }
    let above: f64 = buckets
        .iter()
        .map(|&(low, high, count)| {
            let (low, top) = (low as f64, high as f64 + 1.0);
            count as f64 * ((top - level.max(low)) / (top - low)).clamp(0.0, 1.0)
        })
        .sum();
    above / total as f64
}

/// Peaks over threshold from an HDR histogram (`[highest equivalent value,
/// count]` per bucket, as [`SeriesStats::histogram_ns`]) of `samples`
/// samples. The values of a bucket are spread evenly over its width (the
/// histogram keeps 3 significant digits, so this moves a value by at most
/// 0.1 %). The time order is lost: independence and stationarity cannot be
/// checked, so the report refuses unless `accept_unchecked` is set.
pub fn peaks_over_threshold_from_histogram(
    histogram_ns: &[[u64; 2]],
    samples: u64,
    opts: &EvtOptions,
) -> EvtReport {
    let total: u64 = histogram_ns.iter().map(|b| b[1]).sum();
    let observed = histogram_ns
        .iter()
        .filter(|b| b[1] > 0)
        .map(|b| b[0])
        .max()
        .unwrap_or(0) as f64;
    let mut report = empty_report(Method::PeaksOverThreshold, total, observed, opts);
    if let Err(e) = opts.validate() {
        return refuse(report, vec![e]);
    }
    if samples != total {
        report.notes.push(format!(
            "the histogram holds {total} samples, the series says {samples}: the \
             histogram's count is used"
        ));
    }
    let most = most_exceedances(total, opts);
    let mut values: Vec<f64> = Vec::with_capacity(most + 1);
    for &(low, high, count) in hdr_buckets(histogram_ns).iter().rev() {
        if values.len() > most {
            break;
        }
        let width = (high + 1 - low) as f64;
        // Largest first, so a partly needed bucket gives its top values.
        for j in (0..count).rev() {
            values.push(low as f64 + (j as f64 + 0.5) * width / count as f64);
            if values.len() > most {
                break;
            }
        }
    }
    let floor = if most == 0 || values.len() <= most {
        f64::INFINITY
    } else {
        values[most]
    };
    values.retain(|&v| v > floor);
    let top = TopValues {
        n: total,
        floor,
        values,
        times: None,
    };
    report = pot_core(report, top, opts);
    report
}

/// The estimate for one recorded series: block maxima when the result has
/// them (the time order is kept there), otherwise peaks over threshold on
/// the HDR histogram; a refusal that says why when neither is usable.
pub fn for_series(stats: &SeriesStats, opts: &EvtOptions) -> EvtReport {
    let mut report = match &stats.block_maxima {
        Some(bm) if !bm.maxima_ns.is_empty() => {
            let histogram = (!stats.histogram_ns.is_empty()).then_some(&stats.histogram_ns[..]);
            block_maxima(&bm.maxima_ns, bm.block_samples, histogram, opts)
        }
        _ if !stats.histogram_ns.is_empty() => {
            let mut r =
                peaks_over_threshold_from_histogram(&stats.histogram_ns, stats.samples, opts);
            r.notes.insert(
                0,
                "this result keeps no block maxima (recorded before they were kept, or \
                 imported): the histogram was used"
                    .into(),
            );
            // The histogram knows the maximum only to its bucket; the
            // series knows it exactly.
            if stats.max_ns > 0 {
                r.observed_max_ns = stats.max_ns as f64;
            }
            r
        }
        _ => {
            let r = empty_report(
                Method::BlockMaxima,
                stats.samples,
                stats.max_ns as f64,
                opts,
            );
            return refuse(
                r,
                vec!["the series has neither block maxima nor a histogram: no data".into()],
            );
        }
    };
    if (stats.max_ns as f64) > report.observed_max_ns {
        report.notes.push(format!(
            "the series maximum {} lies in the last, incomplete block, which block maxima \
             leave out",
            us(stats.max_ns as f64)
        ));
        report.observed_max_ns = stats.max_ns as f64;
    }
    if stats.missed > 0 {
        report.notes.push(format!(
            "{} deadlines passed without a sample of their own (wake-ups more than a period \
             late): the probabilities are per recorded sample",
            stats.missed
        ));
    }
    if stats.dropped > 0 {
        report.notes.push(format!(
            "{} samples were dropped between the measuring thread and the recorder and are \
             not in the data",
            stats.dropped
        ));
    }
    report
}
