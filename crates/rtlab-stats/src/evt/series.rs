//! The estimate for a stored series: whichever analysis its data allow.

use super::block_maxima::block_maxima;
use super::bound::distribution_free_bound;
use super::declustered::declustered_block_maxima;
use super::pipeline::{empty_report, refuse, us};
use super::pot::peaks_over_threshold_from_histogram;
use super::report::{CheckStatus, EvtOptions, EvtReport, Method, Verdict};
use rtlab_core::result::{BlockMaxima, SeriesStats};

/// Block maxima with a GEV fit; where that is refused, declustered peaks
/// over threshold on the same maxima (the answer for a series whose large
/// values come in bursts), the GEV's refusal kept in its notes and
/// reasons. The distribution-free bound goes beside whichever is returned.
fn from_block_maxima(
    bm: &BlockMaxima,
    histogram: Option<&[[u64; 2]]>,
    opts: &EvtOptions,
) -> EvtReport {
    let gev = block_maxima(&bm.maxima_ns, bm.block_samples, histogram, opts);
    let mut report = if gev.is_estimated() {
        gev
    } else {
        let mut pot = declustered_block_maxima(&bm.maxima_ns, bm.block_samples, histogram, opts);
        let failed: Vec<String> = gev
            .checks
            .iter()
            .filter(|c| c.status != CheckStatus::Passed)
            .map(|c| c.failure_summary())
            .collect();
        let gev_refusal = format!(
            "block maxima with a GEV fit (blocks of {} samples) were refused: {}",
            gev.block_samples.unwrap_or(bm.block_samples),
            if failed.is_empty() {
                "invalid input".into()
            } else {
                failed.join(", ")
            }
        );
        match &mut pot.verdict {
            Verdict::Estimated => pot.notes.insert(
                0,
                format!("{gev_refusal}; declustered peaks over threshold answer instead"),
            ),
            Verdict::Refused { reasons } => reasons.push(gev_refusal),
        }
        pot
    };
    report.bound = distribution_free_bound(&bm.maxima_ns, bm.block_samples, &report, opts);
    if report.bound.as_ref().is_some_and(|b| b.disagrees) {
        report.notes.push(
            "the fit and the distribution-free bound disagree: at some rank the fitted              probability lies outside the range any distribution allows (see the bound)"
                .into(),
        );
    }
    report
}

/// The estimate for one recorded series: block maxima when the result has
/// them (the time order is kept there), by a GEV fit or, where that is
/// refused, declustered peaks over threshold; otherwise peaks over
/// threshold on the HDR histogram; a refusal that says why when neither is
/// usable.
pub fn for_series(stats: &SeriesStats, opts: &EvtOptions) -> EvtReport {
    let mut report = match &stats.block_maxima {
        Some(bm) if !bm.maxima_ns.is_empty() => {
            let histogram = (!stats.histogram_ns.is_empty()).then_some(&stats.histogram_ns[..]);
            from_block_maxima(bm, histogram, opts)
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
