//! Peaks over threshold with a GPD fit, on samples in time order or on a
//! histogram: the thresholds tried, their checks, and the one used.

use super::checks::{decluster, extremal_index};
use super::gof::{ad_statistic, Model};
use super::gpd::{self, GpdFit};
use super::pipeline::{
    empty_report, estimate, even_rate_check, fmt_p, gof_check, hdr_buckets, refuse, regular_check,
    status, too_few, trend_check, us, verdict, Tail,
};
use super::report::{
    check, Check, CheckStatus, Declustering, EvtOptions, EvtReport, FitParams, Fitted, Method,
    Verdict,
};
use statrs::distribution::{ContinuousCDF, Normal};

/// What a threshold analysis starts from: the largest values, with their
/// sample indices when the time order is known.
pub(super) struct TopValues {
    /// Samples in the whole series.
    pub(super) n: u64,
    /// The lowest threshold tried: values above it are in `values`.
    pub(super) floor: f64,
    /// Values above `floor`, in time order when `times` is known.
    pub(super) values: Vec<f64>,
    pub(super) times: Option<Vec<u64>>,
}

/// One threshold tried.
pub(super) struct PotCandidate {
    pub(super) u: f64,
    pub(super) exceedances: usize,
    pub(super) theta: Option<f64>,
    /// Gaps longer than this (in the sequence's steps) separate clusters;
    /// None without a time order.
    pub(super) run: Option<u64>,
    /// Sample indices and values of the cluster maxima, in time order when
    /// known.
    pub(super) peak_times: Option<Vec<u64>>,
    pub(super) peak_values: Vec<f64>,
    pub(super) fit: Option<GpdFit>,
    pub(super) a2: f64,
    pub(super) ad_p: Option<f64>,
}

impl TopValues {
    /// The values of a sequence in time order above `floor`, with their
    /// indices.
    pub(super) fn above(sequence: &[u64], floor: f64) -> TopValues {
        let (times, values): (Vec<u64>, Vec<f64>) = sequence
            .iter()
            .enumerate()
            .filter(|(_, &v)| v as f64 > floor)
            .map(|(i, &v)| (i as u64, v as f64))
            .unzip();
        TopValues {
            n: sequence.len() as u64,
            floor,
            values,
            times: Some(times),
        }
    }
}

pub(super) fn pot_candidate(top: &TopValues, u: f64) -> PotCandidate {
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
            let (peaks, run) = decluster(t, &values, theta);
            (Some((theta, run)), peaks)
        }
        None => (None, (0..values.len()).collect()),
    };
    let (theta, run) = (theta.map(|t| t.0), theta.map(|t| t.1));
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
        run,
        peak_times,
        peak_values,
        fit,
        a2,
        ad_p,
    }
}

/// The thresholds to try: from the lowest (most exceedances) up, each
/// with 1/√2 as many exceedances as the one before, down to
/// `min_exceedances`. `desc`: the values above the floor, largest first.
pub(super) fn thresholds(desc: &[f64], floor: f64, opts: &EvtOptions) -> Vec<f64> {
    let mut thresholds: Vec<f64> = Vec::new();
    let mut k = desc.len() as f64;
    while k.round() as usize >= opts.min_exceedances {
        let kk = k.round() as usize;
        let u = if kk >= desc.len() { floor } else { desc[kk] };
        if thresholds.last() != Some(&u) {
            thresholds.push(u);
        }
        k /= std::f64::consts::SQRT_2;
    }
    thresholds
}

/// The thresholds tried and how stable ξ̂ is above each.
pub(super) struct Candidates {
    pub(super) all: Vec<PotCandidate>,
    /// Per candidate, the largest distance, in standard errors, between its
    /// ξ̂ and ξ̂ at a higher threshold (∞ without a fit).
    pub(super) instability: Vec<f64>,
    /// The largest instability accepted: the two-sided normal quantile at
    /// the significance level.
    pub(super) z: f64,
}

impl Candidates {
    /// Threshold stability (Coles 2001, §4.3.4, made automatic): above a
    /// threshold where the GPD holds, ξ̂ at every higher threshold estimates
    /// the same ξ, within its standard error.
    pub(super) fn new(all: Vec<PotCandidate>, alpha: f64) -> Candidates {
        let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
        let instability = (0..all.len())
            .map(|i| {
                let Some(fi) = &all[i].fit else {
                    return f64::INFINITY;
                };
                all[i + 1..]
                    .iter()
                    .filter_map(|c| c.fit.as_ref())
                    .filter_map(|f| f.xi_se().map(|se| (fi.gpd.xi - f.gpd.xi).abs() / se))
                    .fold(0.0, f64::max)
            })
            .collect();
        Candidates {
            all,
            instability,
            z,
        }
    }

    fn stable(&self, i: usize) -> bool {
        self.instability[i] <= self.z
    }

    /// The lowest threshold whose fit is regular, passes the
    /// Anderson–Darling test, has enough clusters and is stable; if none
    /// is, the best-fitting one (which then fails its checks).
    pub(super) fn chosen(&self, opts: &EvtOptions) -> usize {
        let alpha = opts.significance;
        let acceptable = |i: usize| {
            let c = &self.all[i];
            c.fit.as_ref().is_some_and(|f| f.gpd.xi > -0.5)
                && c.ad_p.is_some_and(|p| p >= alpha)
                && c.peak_values.len() >= opts.min_exceedances
                && self.stable(i)
        };
        (0..self.all.len())
            .find(|&i| acceptable(i))
            .unwrap_or_else(|| {
                // None acceptable: report the best-fitting one, which fails.
                (0..self.all.len())
                    .max_by(|&a, &b| {
                        let pa = self.all[a].ad_p.unwrap_or(-1.0);
                        let pb = self.all[b].ad_p.unwrap_or(-1.0);
                        pa.total_cmp(&pb)
                    })
                    .unwrap_or(0)
            })
    }

    /// One note per threshold tried, the one used marked.
    pub(super) fn notes(&self, chosen: usize) -> impl Iterator<Item = String> + '_ {
        self.all.iter().enumerate().map(move |(i, c)| {
            format!(
                "threshold {} ({} exceedances, {} clusters): ξ̂ = {}, Anderson–Darling p {}, \
                 ξ̂ stable above it: {}{}",
                us(c.u),
                c.exceedances,
                c.peak_values.len(),
                c.fit
                    .as_ref()
                    .map_or("-".into(), |f| format!("{:.3}", f.gpd.xi)),
                c.ad_p.map_or("not computed".into(), fmt_p),
                if self.stable(i) { "yes" } else { "no" },
                if i == chosen { "  <- used" } else { "" }
            )
        })
    }
}

fn pot_core(mut report: EvtReport, top: TopValues, opts: &EvtOptions) -> EvtReport {
    let mut desc = top.values.clone();
    desc.sort_by(|a, b| b.total_cmp(a));
    let thresholds = thresholds(&desc, top.floor, opts);
    if thresholds.is_empty() {
        let detail = format!(
            "{} samples give {} exceedances of the 90th percentile or above; a fit needs at \
             least {}",
            top.n,
            desc.len(),
            opts.min_exceedances
        );
        return too_few(report, desc.len(), detail);
    }
    let candidates = Candidates::new(
        thresholds.iter().map(|&u| pot_candidate(&top, u)).collect(),
        opts.significance,
    );
    let chosen_index = candidates.chosen(opts);
    report.notes.extend(candidates.notes(chosen_index));
    let c = &candidates.all[chosen_index];
    let clusters = c.peak_values.len();
    report.threshold_ns = Some(c.u);
    report.used = clusters;
    report.exceedance_rate = Some(c.exceedances as f64 / top.n as f64);
    report.extremal_index = c.theta;
    report.fitted = Some(if c.theta.is_some() {
        Fitted::ClusterMaxima
    } else {
        Fitted::Exceedances
    });
    if let (Some(theta), Some(run)) = (c.theta, c.run) {
        report.declustering = Some(Declustering {
            sequence_block_samples: 1,
            threshold_ns: c.u,
            exceedances: c.exceedances,
            sample_exceedances: Some(c.exceedances as f64),
            clusters,
            run_length: run,
            sequence_extremal_index: theta,
        });
    }
    let mut checks = vec![enough_clusters(c, opts)];
    checks.extend(time_order_checks(c, top.n, opts));
    checks.extend(gpd_checks(
        &mut report,
        c,
        &candidates,
        chosen_index,
        opts,
        "excesses",
    ));
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

/// Enough data: the clusters (exceedances without a time order) the fit
/// is made from.
fn enough_clusters(c: &PotCandidate, opts: &EvtOptions) -> Check {
    let clusters = c.peak_values.len();
    Check {
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
    }
}

/// The checks that need the time order of the `n` samples: independence,
/// trend, even rate; unknown for a histogram.
fn time_order_checks(c: &PotCandidate, n: u64, opts: &EvtOptions) -> Vec<Check> {
    let alpha = opts.significance;
    let clusters = c.peak_values.len();
    let mut checks = Vec::new();
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
            checks.extend(trend_check(&c.peak_values, "cluster maxima", alpha));
            let positions: Vec<f64> = times.iter().map(|&t| (t as f64 + 0.5) / n as f64).collect();
            checks.extend(even_rate_check(&positions, alpha));
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
    checks
}

/// The chosen threshold's fit into the report (its parameters) and its
/// checks; a failed regular-fit check where no GPD fits the `what`.
pub(super) fn gpd_checks(
    report: &mut EvtReport,
    c: &PotCandidate,
    candidates: &Candidates,
    chosen: usize,
    opts: &EvtOptions,
    what: &str,
) -> Vec<Check> {
    let Some(fit) = &c.fit else {
        return vec![Check {
            name: check::REGULAR_FIT.into(),
            status: CheckStatus::Failed,
            statistic: f64::NAN,
            p_value: None,
            detail: format!("the likelihood search found no GPD that fits the {what}"),
        }];
    };
    report.params = Some(FitParams {
        shape: fit.gpd.xi,
        shape_se: fit.xi_se(),
        scale_ns: fit.gpd.sigma,
        location_ns: c.u,
    });
    fit_checks(c, fit, candidates, chosen, opts)
}

/// The checks of the chosen threshold's fit: regular, good, stable
/// above it, and plausible against the observed maximum.
fn fit_checks(
    c: &PotCandidate,
    fit: &GpdFit,
    candidates: &Candidates,
    chosen: usize,
    opts: &EvtOptions,
) -> Vec<Check> {
    let alpha = opts.significance;
    let z = candidates.z;
    let clusters = c.peak_values.len();
    let mut checks = Vec::new();
    checks.push(regular_check(fit.gpd.xi, true));
    checks.push(gof_check(c.a2, c.ad_p, alpha, "GPD"));
    let worst = candidates.instability[chosen];
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
    checks
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
    report = pot_core(report, TopValues::above(samples_ns, floor), opts);
    report
}

/// Peaks over threshold from an HDR histogram (`[highest equivalent value,
/// count]` per bucket, as
/// [`rtlab_core::result::SeriesStats::histogram_ns`]) of `samples` samples.
/// The values of a bucket are spread evenly over its width (the
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
