//! A task set in memory.

use std::path::PathBuf;

/// A task set: its tasks in the order of the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskSet {
    pub tasks: Vec<TaskSpec>,
    /// The file it was read from (errors and the result's config name it).
    pub source: Option<PathBuf>,
}

/// One periodic task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskSpec {
    /// Unique in its set: the series are `<name>.lateness` and
    /// `<name>.response`; a process attaches to `exec serve` by it.
    pub name: String,
    pub period_ns: u64,
    /// Activations at start + offset + k × period.
    pub offset_ns: u64,
    /// Work per activation (`exec periodic`'s own tasks; a process's work
    /// is its own, so `exec serve` ignores it).
    pub work: Work,
    /// Relative deadline (default: the period).
    pub deadline_ns: u64,
    /// Execution budget per activation; None: none.
    pub budget_ns: Option<u64>,
    /// SCHED_FIFO priority of the task.
    pub priority: u32,
    /// CPU of the task; None: the run's default CPU.
    pub cpu: Option<usize>,
}

/// Spinning work per activation (wall clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// The same every activation.
    Fixed { ns: u64 },
    /// Uniform in `[min_ns, max_ns]`, drawn per activation.
    Uniform { min_ns: u64, max_ns: u64 },
}

impl Work {
    /// The longest work of an activation.
    pub fn max_ns(self) -> u64 {
        match self {
            Work::Fixed { ns } => ns,
            Work::Uniform { max_ns, .. } => max_ns,
        }
    }

    /// The mean work of an activation (for the utilization).
    pub fn mean_ns(self) -> f64 {
        match self {
            Work::Fixed { ns } => ns as f64,
            Work::Uniform { min_ns, max_ns } => (min_ns as f64 + max_ns as f64) / 2.0,
        }
    }
}

impl TaskSpec {
    /// The share of its CPU the task asks for: mean work / period.
    pub fn utilization(&self) -> f64 {
        self.work.mean_ns() / self.period_ns.max(1) as f64
    }
}
