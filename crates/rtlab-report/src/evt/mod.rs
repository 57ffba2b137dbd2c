//! The worst-case estimate (pWCET) as rtlab-report shows it. The analysis
//! itself is [`rtlab_stats::evt`], re-exported here so that callers find
//! the estimate and its rendering in one place.

mod render;

pub(crate) use render::method_name;
pub use render::EvtText;
pub use rtlab_stats::evt::*;
