//! The worst-case estimate of dependent series, whose large values come in
//! clusters, from what a stored series keeps (block maxima in time order
//! and the histogram): the extremal index and the pWCET of a process with
//! known extremes are recovered within stated tolerances, an independent
//! series answers as it did, and a trend is still refused.
//!
//! The process is ARMAX, `X_t = max(a·X_{t−1}, (1−a)·Z_t)` with Z unit
//! Fréchet (Davis & Resnick 1989): X is unit Fréchet again, and its
//! extremal index is exactly θ = 1 − a (a large value decays by a factor a
//! per step, clusters hold 1/θ samples on average). The latency is the
//! increasing map `20 µs + 2 µs·ln X` of it: maxima commute with an
//! increasing map, so θ is unchanged, and the marginal becomes Gumbel
//! (ξ = 0), whose quantiles are known exactly:
//! `q(p) = 20 µs + 2 µs·ln(−1/ln(1 − p))`.
//!
//! Seeded (xoshiro256**): the same numbers on every run. No timing is
//! asserted.

use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::SeriesStats;
use rtlab_stats::bootstrap::Rng;
use rtlab_stats::evt::{
    self, check, EvtOptions, EvtReport, Fitted, Method, PwcetEstimate, Verdict,
};

/// Unit Fréchet: P(Z ≤ z) = exp(−1/z).
fn frechet(rng: &mut Rng) -> f64 {
    -1.0 / rng.uniform().ln()
}

/// 2²⁰ samples: the recorder keeps 2048 maxima of blocks of 512.
const N: usize = 1 << 20;
const BODY_NS: f64 = 20_000.0;
const SCALE_NS: f64 = 2_000.0;

fn armax(a: f64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    let mut x = frechet(&mut rng);
    (0..N)
        .map(|_| {
            x = (a * x).max((1.0 - a) * frechet(&mut rng));
            (BODY_NS + SCALE_NS * x.ln()).max(1.0) as u64
        })
        .collect()
}

/// The exact per-sample quantile at exceedance probability p.
fn truth(p: f64) -> f64 {
    BODY_NS + SCALE_NS * (-1.0 / (-p).ln_1p()).ln()
}

fn recorded(samples: &[u64]) -> SeriesStats {
    let mut rec = SeriesRecorder::new(None);
    for (i, &latency) in samples.iter().enumerate() {
        rec.record(latency, i as u64 * 1_000_000, 0);
    }
    rec.stats()
}

fn at(report: &EvtReport, p: f64) -> PwcetEstimate {
    *report
        .pwcet
        .iter()
        .find(|e| e.exceedance_per_sample == p)
        .unwrap_or_else(|| panic!("no estimate at {p}: {report:#?}"))
}

fn opts() -> EvtOptions {
    EvtOptions {
        probabilities: vec![1e-6],
        ..EvtOptions::default()
    }
}

/// The declustered estimate from the stored series of ARMAX(a): θ̂ within
/// its tolerance of 1 − a, and the pWCET at 1e-6 within 15 % of the truth.
///
/// Tolerances, from the estimators' variance, not from the results:
/// * θ̂ = −ln(1 − k/m)·(C/k)/(b·ζᵤ) is a ratio of counts driven by the C
///   clusters; with geometric cluster sizes (ARMAX) the relative standard
///   error of 1/(mean cluster size) is √(1−θ)/√C, and the count of blocks
///   adds at most as much again, so ≤ √2/√C: four of those,
///   |θ̂ − θ| ≤ 4√2·θ/√C.
/// * The pWCET at 1e-6: ξ̂'s standard error ≈ 1/√C for ξ = 0 carried over
///   ln(ζᵤ/p) ≈ 8 moves the level by about σ·8²/2·se(ξ) ≈ 5 % of it; 15 %
///   is three of those (and the tolerance of the independent tests in
///   rtlab-report).
fn declustered(a: f64, seed: u64) -> EvtReport {
    let stats = recorded(&armax(a, seed));
    let blocks = stats.block_maxima.as_ref().unwrap();
    assert_eq!((blocks.block_samples, blocks.maxima_ns.len()), (512, 2048));
    let report = evt::declustered_block_maxima(
        &blocks.maxima_ns,
        blocks.block_samples,
        Some(&stats.histogram_ns),
        &opts(),
    );
    assert!(report.is_estimated(), "a = {a}: {report:#?}");
    assert_eq!(report.method, Method::PeaksOverThreshold);
    assert_eq!(report.fitted, Some(Fitted::ClusterMaxima));
    let d = report.declustering.as_ref().unwrap();
    assert_eq!(d.sequence_block_samples, 512);
    assert_eq!(d.clusters, report.used);
    assert!(d.clusters <= d.exceedances);
    let theta = 1.0 - a;
    let got = report.extremal_index.unwrap();
    let tolerance = 4.0 * 2f64.sqrt() * theta / (d.clusters as f64).sqrt();
    assert!(
        (got - theta).abs() <= tolerance,
        "a = {a}: θ̂ = {got}, θ = {theta} ± {tolerance} ({} clusters)",
        d.clusters
    );
    let e = at(&report, 1e-6);
    let want = truth(1e-6);
    // The figures docs/pwcet.md quotes (shown with --nocapture).
    eprintln!(
        "ARMAX a = {a}: θ̂ = {got:.3} (θ = {theta}, ± {tolerance:.3}, {} clusters of {} \
         blocks above {:.0} ns); pWCET(1e-6) = {:.0} ns [{:.0}, {:.0}], truth {want:.0} ns",
        d.clusters, d.exceedances, d.threshold_ns, e.value_ns, e.ci_low_ns, e.ci_high_ns
    );
    assert!(
        (e.value_ns / want - 1.0).abs() < 0.15,
        "a = {a}: pWCET {} ns against {want} ns",
        e.value_ns
    );
    report
}

#[test]
fn independent_armax_gives_theta_one() {
    declustered(0.0, 1);
}

#[test]
fn armax_half_gives_theta_a_half() {
    declustered(0.5, 2);
}

#[test]
fn armax_point_eight_gives_theta_a_fifth() {
    declustered(0.8, 3);
}

/// The whole path a stored series takes: clustered series the GEV refuses
/// are answered by declustering, with the GEV's refusal in the notes; the
/// independent one answers by block maxima as before. Every answer carries
/// the distribution-free bound, which agrees with it.
#[test]
fn stored_series_answer_where_the_theory_allows() {
    for (a, seed) in [(0.0, 11), (0.5, 12), (0.8, 13)] {
        let stats = recorded(&armax(a, seed));
        let report = evt::for_series(&stats, &opts());
        assert!(report.is_estimated(), "a = {a}: {report:#?}");
        eprintln!(
            "for_series ARMAX a = {a}: {:?}, θ̂ = {:?}, pWCET(1e-6) = {:.0} ns, bound {:.0} ns \
             at {:.2e} per block of {}",
            report.method,
            report.extremal_index,
            at(&report, 1e-6).value_ns,
            report.bound.as_ref().map_or(f64::NAN, |b| b.value_ns),
            report
                .bound
                .as_ref()
                .map_or(f64::NAN, |b| b.exceedance_per_block),
            report.bound.as_ref().map_or(0, |b| b.block_samples),
        );
        if a == 0.0 {
            assert_eq!(report.method, Method::BlockMaxima, "{report:#?}");
        }
        if report.method == Method::PeaksOverThreshold {
            assert!(
                report.notes[0].starts_with("block maxima with a GEV fit"),
                "{:?}",
                report.notes
            );
        }
        let bound = report.bound.as_ref().unwrap();
        assert_eq!(
            bound.value_ns,
            stats
                .block_maxima
                .as_ref()
                .unwrap()
                .maxima_ns
                .iter()
                .copied()
                .max()
                .unwrap() as f64
        );
        assert!(bound.blocks * bound.block_samples as usize <= N);
        assert!(bound.exceedance_per_block > 0.0 && bound.exceedance_per_block < 0.05);
        assert!(!bound.comparisons.is_empty());
        assert!(
            bound.comparisons.iter().all(|c| c.evt.is_some()),
            "{bound:#?}"
        );
        assert!(!bound.disagrees, "a = {a}: {bound:#?}");
    }
}

/// The independent series through block maxima gives the same answer with
/// or without the declustered path: that path runs only where the GEV is
/// refused.
#[test]
fn an_independent_series_answers_as_before() {
    let stats = recorded(&armax(0.0, 21));
    let blocks = stats.block_maxima.as_ref().unwrap();
    let gev = evt::block_maxima(
        &blocks.maxima_ns,
        blocks.block_samples,
        Some(&stats.histogram_ns),
        &opts(),
    );
    assert!(gev.is_estimated());
    let series = evt::for_series(&stats, &opts());
    assert_eq!(series.pwcet, gev.pwcet);
    assert_eq!(series.params, gev.params);
}

/// Latencies growing over the run (10 µs → 20 µs, plus Exp(1 µs)): refused
/// by both methods for stationarity, the GEV naming the trend.
#[test]
fn a_trending_series_is_refused_for_its_trend() {
    let mut rng = Rng::new(31);
    let samples: Vec<u64> = (0..N)
        .map(|i| (10_000.0 + 10_000.0 * i as f64 / N as f64 - 1_000.0 * rng.uniform().ln()) as u64)
        .collect();
    let report = evt::for_series(&recorded(&samples), &opts());
    let Verdict::Refused { reasons } = &report.verdict else {
        panic!("a trend was estimated: {report:#?}")
    };
    assert!(report.pwcet.is_empty());
    // On the cluster maxima a trend shows in their values (Mann–Kendall)
    // or, when only the late part of the run reaches the threshold, in
    // their times (even rate): either is a failed stationarity check.
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with(check::TREND) || r.starts_with(check::EVEN_RATE)),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("GEV") && r.contains("trend")),
        "{reasons:?}"
    );
}

/// Too few blocks for 50 cluster maxima (half of 90 blocks may exceed a
/// threshold): refused, naming the data.
#[test]
fn too_few_blocks_are_refused() {
    let mut rng = Rng::new(41);
    let maxima: Vec<u64> = (0..90)
        .map(|_| 20_000 + (frechet(&mut rng) * 100.0) as u64)
        .collect();
    let report = evt::declustered_block_maxima(&maxima, 16, None, &opts());
    let Verdict::Refused { reasons } = &report.verdict else {
        panic!("90 blocks were estimated")
    };
    assert!(
        reasons.iter().any(|r| r.starts_with(check::ENOUGH_DATA)),
        "{reasons:?}"
    );
}

/// Without the histogram the per-sample rate is unknown: refused unless
/// accepted, then estimated with one sample per exceeding block.
#[test]
fn without_the_histogram_the_rate_is_unchecked() {
    let stats = recorded(&armax(0.5, 51));
    let blocks = stats.block_maxima.as_ref().unwrap();
    let run = |o: &EvtOptions| {
        evt::declustered_block_maxima(&blocks.maxima_ns, blocks.block_samples, None, o)
    };
    let refused = run(&opts());
    assert!(!refused.is_estimated());
    assert!(refused
        .check(check::SAMPLE_RATE)
        .is_some_and(|c| !c.passed()));
    let accepted = run(&EvtOptions {
        accept_unchecked: true,
        ..opts()
    });
    assert!(accepted.is_estimated(), "{accepted:#?}");
    assert!(accepted
        .notes
        .iter()
        .any(|n| n.contains("accept_unchecked")));
}
