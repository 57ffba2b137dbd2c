//! Plans: a header naming modules and their settings, then events, each
//! an offset from the plan's start, a module id, flags and 12 bytes of
//! module data (paper 002 §4.1.4). Two forms, one model: text for people
//! ([`text`]) and fixed 24-byte records read through mmap ([`binary`]).
//! The format is specified in docs/plan-format.md.

pub mod binary;
pub mod check;
pub mod gen;
pub mod load;
pub(crate) mod model;
pub mod text;

pub use binary::{write_binary, write_binary_iter, MappedPlan, BINARY_MAGIC};
pub use check::{check, Finding, Report, Severity, MIN_SPACING_NS};
pub use load::{load, LoadedPlan};
pub use model::{
    Event, EventSource, ModuleDecl, PlanError, PlanHeader, DATA_BYTES, MAX_MODULES, MAX_NAME_BYTES,
};
pub use text::{parse, write};
