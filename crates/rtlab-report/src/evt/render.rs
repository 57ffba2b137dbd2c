//! The terminal rendering of an [`EvtReport`].

use crate::text::align;
use rtlab_stats::evt::{CheckStatus, DistributionFreeBound, EvtReport, Fitted, Method, Verdict};
use std::fmt::Write;

/// A worst-case estimate as terminal text.
pub trait EvtText {
    /// A terminal report: method, fit, checks, the pWCET table with its
    /// intervals or the reasons for refusing.
    fn render_text(&self) -> String;
}

impl EvtText for EvtReport {
    fn render_text(&self) -> String {
        text(self)
    }
}

/// An estimate's method in the few words the tables and the charts show.
pub(crate) fn method_name(report: &EvtReport) -> &'static str {
    match (report.method, report.fitted) {
        (Method::BlockMaxima, _) => "GEV on block maxima",
        (Method::PeaksOverThreshold, Some(Fitted::ClusterMaxima)) => "GPD on cluster maxima",
        (Method::PeaksOverThreshold, _) => "GPD over a threshold",
    }
}

fn us(ns: f64) -> String {
    if ns.is_finite() {
        format!("{:.3}", ns / 1000.0)
    } else {
        "unbounded".into()
    }
}

pub fn text(r: &EvtReport) -> String {
    let mut out = String::new();
    let declustered_blocks = r
        .declustering
        .as_ref()
        .map(|d| d.sequence_block_samples)
        .filter(|&b| b > 1);
    let method = match (r.method, declustered_blocks) {
        (Method::BlockMaxima, _) => "block maxima, GEV fit",
        (Method::PeaksOverThreshold, Some(_)) => {
            "declustered block maxima, GPD fit to the cluster maxima"
        }
        (Method::PeaksOverThreshold, None) => "peaks over threshold, GPD fit",
    };
    let verdict = match &r.verdict {
        Verdict::Estimated => "",
        Verdict::Refused { .. } => ": REFUSED, no estimate",
    };
    let _ = writeln!(out, "worst-case estimate (pWCET), {method}{verdict}");
    let data = match (r.method, r.block_samples, r.threshold_ns) {
        (Method::PeaksOverThreshold, _, Some(u)) if declustered_blocks.is_some() => {
            let d = r.declustering.as_ref().expect("declustered");
            format!(
                "{} samples as {} maxima of blocks of {}; threshold {} µs exceeded by {} \
                 blocks{}, in {} clusters (run length {} blocks)",
                r.samples,
                r.samples / d.sequence_block_samples.max(1),
                d.sequence_block_samples,
                us(u),
                d.exceedances,
                d.sample_exceedances
                    .map_or(String::new(), |n| format!(" ({n:.0} samples)")),
                d.clusters,
                d.run_length
            )
        }
        (Method::BlockMaxima, Some(b), _) => {
            format!("{} blocks of {b} samples ({} samples)", r.used, r.samples)
        }
        (_, _, Some(u)) => format!(
            "{} samples, threshold {} µs exceeded by {:.2e} of them, {} {}",
            r.samples,
            us(u),
            r.exceedance_rate.unwrap_or(f64::NAN),
            r.used,
            if r.extremal_index.is_some() {
                "clusters"
            } else {
                "exceedances (no time order)"
            }
        ),
        _ => format!("{} samples", r.samples),
    };
    let _ = writeln!(
        out,
        "  data: {data}; observed max {} µs",
        us(r.observed_max_ns)
    );
    if let Some(p) = &r.params {
        let se = p.shape_se.map_or(String::new(), |s| format!(" ± {s:.3}"));
        let loc = match r.method {
            Method::BlockMaxima => "location μ",
            Method::PeaksOverThreshold => "threshold u",
        };
        let _ = writeln!(
            out,
            "  fit: shape ξ = {:.3}{se}, scale σ = {} µs, {loc} = {} µs{}",
            p.shape,
            us(p.scale_ns),
            us(p.location_ns),
            r.extremal_index
                .map_or(String::new(), |t| format!(", extremal index θ = {t:.3}"))
        );
    }
    if let Verdict::Refused { reasons } = &r.verdict {
        let _ = writeln!(out, "  refused because:");
        for reason in reasons {
            let _ = writeln!(out, "    - {reason}");
        }
    }
    if !r.checks.is_empty() {
        let _ = writeln!(out, "  checks:");
        for c in &r.checks {
            let mark = match c.status {
                CheckStatus::Passed => "pass",
                CheckStatus::Failed => "FAIL",
                CheckStatus::Unknown => "????",
            };
            let _ = writeln!(out, "    {mark}  {}: {}", c.name, c.detail);
        }
    }
    if !r.pwcet.is_empty() {
        let conf = format!("{}% interval (µs)", r.confidence * 100.0);
        let mut rows = vec![vec![
            "exceedance/sample".to_string(),
            "pWCET (µs)".to_string(),
            conf,
        ]];
        for e in &r.pwcet {
            rows.push(vec![
                format!("{:.0e}", e.exceedance_per_sample),
                us(e.value_ns),
                format!("{} – {}", us(e.ci_low_ns), us(e.ci_high_ns)),
            ]);
        }
        for line in align(&rows, |col, _| col == 0, true).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(bound) = &r.bound {
        bound_text(&mut out, bound);
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "  notes:");
        for n in &r.notes {
            let _ = writeln!(out, "    - {n}");
        }
    }
    out
}

/// The distribution-free bound in one sentence (the text and the HTML
/// report).
pub(crate) fn bound_sentence(b: &DistributionFreeBound) -> String {
    let independence = match (b.independent, b.independence_p) {
        (true, Some(p)) => format!("independent: Ljung–Box p = {p:.3}"),
        (false, Some(p)) => {
            format!("NOT independent (Ljung–Box p = {p:.1e}): the bound is nominal")
        }
        (_, None) => "independence not testable: the bound is nominal".into(),
    };
    format!(
        "distribution-free bound: with {}% confidence a block of {} samples, and so any one \
         sample, exceeds {} µs (the largest of {} blocks; {independence}) with probability \
         ≤ {:.2e}{}",
        b.confidence * 100.0,
        b.block_samples,
        us(b.value_ns),
        b.blocks,
        b.exceedance_per_block,
        if b.disagrees {
            "; the fit DISAGREES with the order statistics of these blocks"
        } else {
            ""
        }
    )
}

/// The distribution-free bound and the fit against it at a few ranks.
fn bound_text(out: &mut String, b: &DistributionFreeBound) {
    let _ = writeln!(out, "  {}", bound_sentence(b));
    if b.comparisons.is_empty() {
        return;
    }
    let mut rows = vec![vec![
        "k-th largest block".to_string(),
        "µs".to_string(),
        format!(
            "P(a block exceeds it), any distribution ({}%)",
            b.range_confidence * 100.0
        ),
        "the fit".to_string(),
    ]];
    for c in &b.comparisons {
        let evt = c.evt.map_or("-".to_string(), |e| {
            let mark = if e < c.low {
                "  LIGHTER than the data"
            } else if e > c.high {
                "  heavier than the data"
            } else {
                ""
            };
            format!("{e:.2e}{mark}")
        });
        rows.push(vec![
            c.rank.to_string(),
            us(c.value_ns),
            format!("{:.2e} – {:.2e}", c.low, c.high),
            evt,
        ]);
    }
    for line in align(&rows, |col, _| col <= 1, true).lines() {
        let _ = writeln!(out, "    {line}");
    }
    if b.disagrees {
        let _ = writeln!(
            out,
            "  WARNING: the fit and the distribution-free bound disagree (a fitted \
             probability outside the range above): read the estimate with care"
        );
    }
}
