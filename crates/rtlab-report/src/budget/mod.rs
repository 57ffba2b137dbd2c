//! Budgets: limits a run must keep, written as comma-separated clauses,
//! e.g. `p99.9<100us,max<2ms,missed=0` (docs/budgets.md).
//!
//! ```text
//! "cpu*:p99.9<100us,missed=0" ──Budget::parse──► Budget ──evaluate(&RunResult)──► Evaluation
//!                                                            (one Check per series and clause)
//! ```
//!
//! A clause is `[SERIES:]METRIC OP VALUE`: SERIES a glob on the series'
//! names (`*` any run of characters, `?` one character; default: every
//! series of the run), METRIC one of [`Metric`], OP `<`, `<=`, `=`, `>=`,
//! `>`, VALUE a duration with its unit for a time metric (`100us`) or a
//! whole number for a count. Parsing never panics; every error names the
//! clause, its number and its place in the spec ([`BudgetError`]).
//!
//! [`Evaluation`]s print as a table, serialize into the `--json` outputs
//! and become JUnit XML through [`crate::junit`].
//!
//! This file only declares and re-exports: `spec.rs` is the language,
//! `eval.rs` its evaluation against runs (no import circle).

mod eval;
mod spec;

pub use eval::{
    failures_table, reconcile, summary_line, Check, Evaluation, JsonWithBudget, Outcome,
    RunWithBudget,
};
pub use spec::{glob_match, Budget, BudgetError, Clause, Metric, Op};
