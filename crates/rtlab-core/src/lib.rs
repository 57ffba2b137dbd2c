//! rtlab's timing core: everything a probe, the executive or a report needs
//! that is not specific to one of them.

pub mod clock;
pub mod cpuset;
pub mod env;
pub mod fsutil;
pub mod journal;
pub mod json_position;
pub mod pmqos;
pub mod process;
pub mod record;
pub mod result;
pub mod rivals;
pub mod sched;
pub mod settings;
pub mod text;
pub mod units;

/// rtlab's version, recorded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
