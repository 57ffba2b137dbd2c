//! A series against the baseline's: ratios, the p99 difference, its
//! bootstrap interval and the verdict in words.

use super::model::{CompareOptions, Figures, Ratios, Versus};
use rtlab_stats::bootstrap::difference_interval;

fn ratio(run: Option<u64>, base: Option<u64>) -> Option<f64> {
    match (run, base) {
        (Some(r), Some(b)) if b > 0 => Some(r as f64 / b as f64),
        _ => None,
    }
}

/// ns as µs with one decimal, sign kept.
fn us1(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

pub(super) fn versus(
    base: &Figures,
    run: &Figures,
    base_draws: Option<&[u64]>,
    run_draws: Option<&[u64]>,
    opts: &CompareOptions,
    base_tag: &str,
    run_tag: &str,
) -> Versus {
    let ratios = Ratios {
        p50: ratio(run.p50_ns, base.p50_ns),
        p90: ratio(run.p90_ns, base.p90_ns),
        p99: ratio(run.p99_ns, base.p99_ns),
        p99_9: ratio(run.p99_9_ns, base.p99_9_ns),
        p99_99: ratio(run.p99_99_ns, base.p99_99_ns),
        max: ratio(run.max_ns, base.max_ns),
    };
    let diff = match (run.p99_ns, base.p99_ns) {
        (Some(r), Some(b)) => Some(r as i64 - b as i64),
        _ => None,
    };
    let ci = match (base_draws, run_draws) {
        (Some(b), Some(r)) => Some(difference_interval(b, r, opts.confidence)),
        _ => None,
    };
    let significant = ci.is_some_and(|[lo, hi]| lo > 0 || hi < 0);
    let verdict = match (diff, ci) {
        _ if run.samples == 0 => format!("no samples in {run_tag}"),
        _ if base.samples == 0 => format!("no samples in {base_tag}"),
        (None, _) => {
            let which = if run.p99_ns.is_none() {
                run_tag
            } else {
                base_tag
            };
            format!("p99 unknown: no histogram in {which}")
        }
        (Some(d), ci) => {
            let size = if d == 0 {
                "p99 equal".to_string()
            } else {
                format!(
                    "p99 {} µs {}",
                    us1(d.abs()),
                    if d > 0 { "higher" } else { "lower" }
                )
            };
            match ci {
                Some([lo, hi]) => format!(
                    "{size} ({} CI {}…{} µs): {}",
                    percent(opts.confidence),
                    us1(lo),
                    us1(hi),
                    if significant {
                        "significant"
                    } else {
                        "not significant"
                    }
                ),
                None => format!("{size} (not tested: no resamples)"),
            }
        }
    };
    Versus {
        ratios,
        p99_diff_ns: diff,
        p99_diff_ci_ns: ci,
        significant,
        verdict,
    }
}

/// `0.95` → `95%`, `0.975` → `97.5%`.
pub(super) fn percent(confidence: f64) -> String {
    let text = format!("{:.3}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_prints_as_percent() {
        assert_eq!(percent(0.95), "95%");
        assert_eq!(percent(0.975), "97.5%");
    }
}
