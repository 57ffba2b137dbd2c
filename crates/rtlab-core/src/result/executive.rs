//! What rtlab's executive learned about its own wake-ups during a run (the
//! periodic executive of each CPU, the plan dispatcher): the guard it used
//! per idle length, its release-early margin, and the CPU it spent
//! spinning. Written by rtlab-exec's `guard` learner, stored in a run's
//! result as `executive`.

use serde::{Deserialize, Serialize};

/// Every executive thread of a run, in the order of their CPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutiveReport {
    pub threads: Vec<ExecutiveThread>,
}

/// One executive thread (one CPU, one task set; or the dispatcher).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutiveThread {
    /// `executive` (a periodic run's, one per CPU) or `dispatcher`.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// `auto` (learned online) or `fixed` (`--guard DURATION`).
    pub guard_mode: String,
    /// `auto`, `fixed`, or `none` (the dispatcher releases no task).
    pub release_early_mode: String,
    /// The lateness quantile a learned guard covers (0.995: 99.5 %).
    pub quantile: f64,
    /// The most CPU the spinning may take, % of the time between two
    /// activations (`--spin-budget`).
    pub spin_budget_percent: u32,
    /// Per idle length: the wake-ups seen and the guard used.
    pub guards: Vec<GuardBucket>,
    /// The task's wake-up delay after its release, and the margin used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_early: Option<GuardBucket>,
    /// Sleeps whose guard the spin budget made shorter than learned.
    pub capped: u64,
    /// Time spent spinning to the instants (the executive's spin after it
    /// woke, and its tasks' spin from their wake-up to their instant), ns.
    pub spin_ns: u64,
    /// The thread's measured time, ns.
    pub elapsed_ns: u64,
    /// `spin_ns` as a percentage of `elapsed_ns` (of one CPU).
    pub spin_percent: f64,
}

/// What one idle length (or the release) saw and chose.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardBucket {
    /// The idle lengths of this bucket (the time from going to sleep to the
    /// instant, the guard included), ns, from this (inclusive) to
    /// `idle_below_ns` (exclusive; None: no upper end).
    pub idle_from_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_below_ns: Option<u64>,
    /// Wake-ups (or releases) observed.
    pub observations: u64,
    /// The learned lateness quantile (the upper edge of its histogram
    /// bin), ns; None before the bucket had enough observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantile_ns: Option<u64>,
    /// The largest lateness seen, ns.
    pub max_ns: u64,
    /// The guard (or margin) of the last sleep of this bucket, ns.
    pub guard_ns: u64,
    /// Sleeps of this bucket whose guard the spin budget capped.
    #[serde(default)]
    pub capped: u64,
}
