//! What the two analyses share: the checks' wording, the verdict, the
//! estimate from a fitted tail, and reading an HDR histogram's buckets.

use super::checks::{ks_uniform, ljung_box_ranks, mann_kendall};
use super::gev::{self, GevFit};
use super::gpd::GpdFit;
use super::optim::End;
use super::report::{
    check, Check, CheckStatus, EvtOptions, EvtReport, Method, PwcetEstimate, Verdict,
};
use statrs::distribution::{ContinuousCDF, Normal};

/// Points on the fitted tail handed out for plotting.
const CURVE_POINTS: usize = 48;

pub(super) fn status(ok: bool) -> CheckStatus {
    if ok {
        CheckStatus::Passed
    } else {
        CheckStatus::Failed
    }
}

/// A p-value in prose with its relation: `= 0.343`, `= 2.7e-9`, and
/// `< 1e-300` where it underflowed to 0.
pub(super) fn fmt_p(p: f64) -> String {
    if p >= 1e-3 {
        format!("= {p:.3}")
    } else if p >= 1e-300 {
        format!("= {p:.1e}")
    } else {
        "< 1e-300".into()
    }
}

pub(super) fn us(ns: f64) -> String {
    format!("{:.3} µs", ns / 1000.0)
}

pub(super) fn empty_report(
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
        fitted: None,
        declustering: None,
        bound: None,
        notes: Vec::new(),
    }
}

pub(super) fn refuse(mut report: EvtReport, reasons: Vec<String>) -> EvtReport {
    report.verdict = Verdict::Refused { reasons };
    report.pwcet.clear();
    report.curve.clear();
    report
}

/// A refusal for too little data: the failed "enough data" check with
/// the `count` there is and what it falls short of (`detail` ends with "at
/// least N …", which the one-line summary reads).
pub(super) fn too_few(mut report: EvtReport, count: usize, detail: String) -> EvtReport {
    report.checks.push(Check {
        name: check::ENOUGH_DATA.into(),
        status: CheckStatus::Failed,
        statistic: count as f64,
        p_value: None,
        detail,
    });
    report.verdict = verdict(&report.checks, false);
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
pub(super) fn verdict(checks: &[Check], accept_unknown: bool) -> Verdict {
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

/// Independence of the `what` ("block maxima", …) in time order:
/// Ljung–Box on their ranks, lags 1 to n/5 (at most 10).
pub(super) fn independence_check(values: &[f64], what: &str, alpha: f64) -> Check {
    let n = values.len();
    let lags = (n / 5).clamp(1, 10);
    match ljung_box_ranks(values, lags) {
        Some((q, p)) => Check {
            name: check::INDEPENDENCE.into(),
            status: status(p >= alpha),
            statistic: q,
            p_value: Some(p),
            detail: format!(
                "Ljung–Box on the ranks of the {n} {what}, lags 1–{lags}: Q = {q:.2}, p {}",
                fmt_p(p)
            ),
        },
        None => Check {
            name: check::INDEPENDENCE.into(),
            status: CheckStatus::Failed,
            statistic: f64::NAN,
            p_value: None,
            detail: match values.first() {
                // None at all (no threshold exceeded): no value to print.
                None => format!("there are no {what} to test: there is no variation to model"),
                Some(&first) => format!(
                    "the {n} {what} are all equal ({}) or too few to test: there is no \
                     variation to model",
                    us(first)
                ),
            },
        },
    }
}

/// No trend in the `what` in time order: Mann–Kendall.
pub(super) fn trend_check(values: &[f64], what: &str, alpha: f64) -> Option<Check> {
    let (s, z, p) = mann_kendall(values)?;
    Some(Check {
        name: check::TREND.into(),
        status: status(p >= alpha),
        statistic: z,
        p_value: Some(p),
        detail: format!(
            "Mann–Kendall on the {what} in time order: S = {s}, Z = {z:.2}, p {}",
            fmt_p(p)
        ),
    })
}

/// Clusters spread evenly over the run: Kolmogorov–Smirnov of their
/// `positions` (in (0, 1)) against the uniform distribution.
pub(super) fn even_rate_check(positions: &[f64], alpha: f64) -> Option<Check> {
    let (d, p) = ks_uniform(positions)?;
    Some(Check {
        name: check::EVEN_RATE.into(),
        status: status(p >= alpha),
        statistic: d,
        p_value: Some(p),
        detail: format!(
            "Kolmogorov–Smirnov of the cluster times against an even spread over the run: \
             D = {d:.4}, p {}",
            fmt_p(p)
        ),
    })
}

pub(super) fn regular_check(xi: f64, converged: bool) -> Check {
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

pub(super) fn gof_check(a2: f64, p: Option<f64>, alpha: f64, family: &str) -> Check {
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
pub(super) enum Tail<'a> {
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
pub(super) fn estimate(report: &mut EvtReport, tail: &Tail, opts: &EvtOptions) {
    let cut = deviance_cut(opts.confidence);
    let mut probabilities = opts.probabilities.clone();
    probabilities.sort_by(|a, b| b.total_cmp(a));
    probabilities.dedup();
    let conf = opts.confidence * 100.0;
    if let Some(xi) = report.params.map(|p| p.shape).filter(|&xi| xi >= 1.0) {
        report.notes.push(format!(
            "ξ̂ = {xi:.2} ≥ 1: a tail without a finite mean, where each factor 10 in p \
             multiplies the pWCET by 10^ξ or more; far beyond the data it means that the \
             data do not bound the tail (typically a few large spikes among many small \
             values), not a budget"
        ));
    }
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
pub(super) fn hdr_buckets(histogram_ns: &[[u64; 2]]) -> Vec<(u64, u64, u64)> {
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
pub(super) fn fraction_above(buckets: &[(u64, u64, u64)], level: f64) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independence_of_no_values_says_so_without_a_nan() {
        let none = independence_check(&[], "cluster maxima", 0.05);
        assert_eq!(none.status, CheckStatus::Failed);
        assert_eq!(
            none.detail,
            "there are no cluster maxima to test: there is no variation to model"
        );
        let equal = independence_check(&[5000.0; 3], "cluster maxima", 0.05);
        assert!(
            equal
                .detail
                .starts_with("the 3 cluster maxima are all equal (5.000 µs)"),
            "{}",
            equal.detail
        );
    }
}
