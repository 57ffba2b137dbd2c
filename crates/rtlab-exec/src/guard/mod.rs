//! An executive that learns its guard (paper 002 §4.1.1's wake early and
//! spin, with the "early" measured rather than chosen once): every sleep of
//! the periodic executive and of the dispatcher reports how long it meant
//! to sleep and how late it woke; the guard of the next sleep is a high
//! quantile ([`QUANTILE`]) of that lateness at that idle length, plus a
//! margin, within [`MIN_LEARNED_GUARD_NS`]-[`MAX_LEARNED_GUARD_NS`] and within a CPU budget
//! for spinning (`--spin-budget`, [`DEFAULT_SPIN_BUDGET_PERCENT`]). The
//! release-early margin of the periodic executive is learned the same way
//! from its tasks' wake-up delay after their release.
//!
//! `settings` holds the choices and their check, `histogram` the
//! fixed-size lateness histogram, `learner` one executive thread's state,
//! `sleep` the waits that observe; they import each other, never this
//! file (no import circle).

pub(crate) mod histogram;
pub mod learner;
pub mod settings;
pub(crate) mod sleep;

pub use learner::{Learner, IDLE_EDGES_NS};
pub use settings::{
    parse_percent, Guard, Learning, DEFAULT_SPIN_BUDGET_PERCENT, MARGIN_NS, MAX_LEARNED_GUARD_NS,
    MAX_RELEASE_EARLY_NS, MIN_LEARNED_GUARD_NS, MIN_OBSERVATIONS, MIN_RELEASE_EARLY_NS, QUANTILE,
};

use rtlab_core::result::ExecutiveThread;
use rtlab_core::units::human_duration;

/// The run's warning when the spin budget cut an executive's guard: the
/// guard it learned would have cost more CPU than `--spin-budget` allows.
pub fn capped_warning(thread: &ExecutiveThread) -> Option<String> {
    let sleeps: u64 = thread.guards.iter().map(|b| b.observations).sum();
    (thread.capped > 0).then(|| {
        let cpu = thread.cpu.map_or(String::new(), |cpu| format!(" of CPU {cpu}"));
        let longest = thread.guards.iter().map(|b| b.guard_ns).max().unwrap_or(0);
        format!(
            "the {}{cpu}: the spin budget ({} %) capped the learned guard at {} sleeps of {} (guard up to {}): raise --spin-budget to let it wake earlier",
            thread.role,
            thread.spin_budget_percent,
            thread.capped,
            sleeps,
            human_duration(longest)
        )
    })
}
