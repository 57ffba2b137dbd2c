//! The worst-case estimate (pWCET) as rtlab-report shows it. The analysis
//! itself is [`rtlab_stats::evt`], re-exported here so that callers find
//! the estimate and its rendering in one place.

mod render;

pub use render::EvtText;
pub(crate) use render::{bound_sentence, method_name};
pub use rtlab_stats::evt::*;
