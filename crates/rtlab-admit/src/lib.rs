//! Admission control (paper 002 §2.2: a planning scheduler refuses the
//! task sets it cannot honour): whether periodic tasks on their CPUs meet
//! every deadline, by which test, by how much they miss, and what would
//! fit instead.
//!
//! CONTRACT (issue 19): the types in [`model`] and the two functions
//! [`analyse`] and [`admit`] are the API the rest of rtlab builds on.

pub mod model;

mod analysis;

pub use analysis::{admit, analyse};
pub use model::{
    Analysis, CpuAnalysis, Overheads, Policy, Refusal, Suggestion, Task, TaskOutcome, Test,
    TestOutcome, Verdict,
};
