//! Admission control (paper 002 §2.2: a planning scheduler refuses the
//! task sets it cannot honour): whether periodic tasks on their CPUs meet
//! every deadline, by which test, by how much they miss, and what would
//! fit instead.
//!
//! CONTRACT (issue 19): the types in [`model`] and the two functions
//! [`analyse`] and [`admit`] are the API the rest of rtlab builds on.
//!
//! Inside: `item` (a task as analysed, clamped), `bounds` (utilization,
//! Liu & Layland, hyperbolic), `rta` (fixed priorities) and `edf` (EDF
//! response bounds) on the `response-time-analysis` crate through
//! `response` and `arrivals`, `demand` (QPA), `meter` (the step budget
//! every analysis runs within), `cpu` (one CPU's verdict), `suggest` and
//! `refusal` (what a refused task hears), `text` (names and durations for
//! people).

pub mod model;

mod analysis;
mod arrivals;
mod bounds;
mod cpu;
mod demand;
mod edf;
mod item;
mod meter;
mod refusal;
mod response;
mod rta;
mod suggest;
mod text;

#[cfg(test)]
mod tests;

pub use analysis::{admit, analyse};
pub use model::{
    Analysis, CpuAnalysis, Overheads, Policy, Refusal, Suggestion, Task, TaskOutcome, Test,
    TestOutcome, Verdict,
};
