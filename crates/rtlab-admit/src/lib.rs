//! Admission control (paper 002 §2.2: a planning scheduler refuses the
//! task sets it cannot honour): whether periodic tasks on their CPUs meet
//! every deadline, by which test, by how much they miss, and what would
//! fit instead.
//!
//! CONTRACT (issue 19): the types in [`model`] and the two functions
//! [`analyse`] and [`admit`] are the API the rest of rtlab builds on.
//!
//! What the answers mean, beyond the contract's docs:
//! - Fixed priorities are decided by exact response-time analysis (the
//!   `response-time-analysis` crate), with the executive's release jitter
//!   and release cost; the cost of releasing a lower task delays a higher
//!   one too (the executive releases at its top priority). EDF is decided
//!   by the processor demand (utilization when every deadline is its
//!   period and releases are on time, else QPA); its per-task response
//!   bounds come from the crate and only inform.
//! - Liu & Layland and the hyperbolic bound are reported for strictly
//!   rate-monotonic priorities (equal priorities run in release order
//!   under SCHED_FIFO), deadlines at periods, no jitter, no release cost;
//!   else not applicable, with why. They never decide.
//! - Every analysis of a CPU runs within a budget of steps (a hostile set
//!   could ask for millions): what it cannot decide in time is undecided
//!   (`meets: None`), never admitted, and said so.
//! - Odd numbers are analysed safely: periods above 2^40 ns as 2^40 ns, a
//!   deadline past its period as the period (verdicts only get harsher).
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
