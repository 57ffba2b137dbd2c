//! The terminal rendering of an [`EvtReport`].

use crate::text::align;
use rtlab_stats::evt::{CheckStatus, EvtReport, Method, Verdict};
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
pub(crate) fn method_name(method: Method) -> &'static str {
    match method {
        Method::BlockMaxima => "GEV on block maxima",
        Method::PeaksOverThreshold => "GPD over a threshold",
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
    let method = match r.method {
        Method::BlockMaxima => "block maxima, GEV fit",
        Method::PeaksOverThreshold => "peaks over threshold, GPD fit",
    };
    let verdict = match &r.verdict {
        Verdict::Estimated => "",
        Verdict::Refused { .. } => ": REFUSED, no estimate",
    };
    let _ = writeln!(out, "worst-case estimate (pWCET), {method}{verdict}");
    let data = match (r.method, r.block_samples, r.threshold_ns) {
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
    if !r.notes.is_empty() {
        let _ = writeln!(out, "  notes:");
        for n in &r.notes {
            let _ = writeln!(out, "    - {n}");
        }
    }
    out
}
