//! Hooks a front end gives a run: a progress line, a result file
//! rewritten while it measures.

use rtlab_core::result::RunResult;
use rtlab_probe::ProbeRun;

/// Hooks for the terminal (progress) and for files written during a run.
pub trait RunObserver {
    /// The probe is measuring.
    fn started(&mut self, _result: &RunResult, _run: &dyn ProbeRun) {}
    /// Called every [`TICK`](crate::TICK).
    fn tick(&mut self, _run: &dyn ProbeRun) {}
    /// Called every [`CHECKPOINT`](crate::CHECKPOINT) with the result so
    /// far (status `running`).
    fn checkpoint(&mut self, _result: &RunResult) {}
    /// A warning found while the probe measures (it is also in the
    /// result); those found before are in the result given to `started`.
    fn warning(&mut self, warning: &str) {
        eprintln!("warning: {warning}");
    }
}

/// An observer that observes nothing.
pub struct Unobserved;
impl RunObserver for Unobserved {}
