//! rtlab's probes: measuring threads that follow the hot-path rules of
//! DESIGN.md, and the recorder that turns their samples into series.

pub mod recorder;
pub mod setup;
pub mod timer;
pub mod trace;
