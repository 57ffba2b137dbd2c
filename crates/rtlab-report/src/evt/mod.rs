//! The worst-case estimate (pWCET) as rtlab-report shows it. The analysis
//! itself is [`rtlab_stats::evt`], re-exported here so that callers find
//! the estimate and its rendering in one place.

mod render;

pub use rtlab_stats::evt::*;

/// A worst-case estimate as terminal text.
pub trait EvtText {
    /// A terminal report: method, fit, checks, the pWCET table with its
    /// intervals or the reasons for refusing.
    fn render_text(&self) -> String;
}

impl EvtText for EvtReport {
    fn render_text(&self) -> String {
        render::text(self)
    }
}
