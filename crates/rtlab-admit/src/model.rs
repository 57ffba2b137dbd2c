//! What admission reads (tasks, overheads, a policy) and what it says
//! (per CPU the tests and each task's response bound; a refusal with the
//! failed test, by how much, and what would fit).

use serde::Serialize;

/// One periodic task as the analysis sees it (times in ns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub name: String,
    /// The CPU it is pinned to (tasks are partitioned: one CPU each).
    pub cpu: usize,
    pub period_ns: u64,
    /// Relative deadline, 1 ns to the period (constrained deadlines).
    pub deadline_ns: u64,
    /// Worst-case execution per activation: a budget, a task's longest
    /// work, or a stored run's pWCET. None: unknown (a process that gave
    /// no budget): its own response is unbounded, and so is that of every
    /// task at or below its priority on its CPU.
    pub wcet_ns: Option<u64>,
    /// SCHED_FIFO priority (higher first; equal priorities interfere with
    /// each other). EDF ignores it.
    pub priority: u32,
}

/// What the executive costs on this machine, added to every task: each
/// release may come `release_jitter_ns` late (release jitter J), and
/// costs its CPU `release_cost_ns` at the executive's top priority
/// (added to each activation's execution).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overheads {
    pub release_jitter_ns: u64,
    pub release_cost_ns: u64,
    /// Where the figures come from ("none", "measured on CPU 1: p99 of
    /// 400 wake-ups", "--jitter", ...), shown with every verdict.
    pub source: String,
}

impl Overheads {
    /// No overheads: the textbook model.
    pub fn none() -> Overheads {
        Overheads {
            release_jitter_ns: 0,
            release_cost_ns: 0,
            source: "none".into(),
        }
    }
}

/// The scheduling policy the verdict is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Preemptive fixed priorities (SCHED_FIFO: `exec serve`, `exec
    /// periodic`): decided by exact response-time analysis.
    FixedPriority,
    /// Preemptive EDF (SCHED_DEADLINE): decided by processor demand (QPA;
    /// utilization ≤ 1 when every deadline is the period).
    Edf,
}

/// One schedulability test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Σ C/T ≤ 1 (necessary for both policies).
    Utilization,
    /// Liu & Layland (1973): Σ C/T ≤ n(2^(1/n) − 1), sufficient for
    /// rate-monotonic priorities with deadlines equal to periods.
    LiuLayland,
    /// Bini, Buttazzo & Buttazzo (2003): Π (C/T + 1) ≤ 2, sufficient for
    /// rate-monotonic priorities with deadlines equal to periods.
    Hyperbolic,
    /// Exact response-time analysis for fixed priorities (Joseph & Pandya
    /// 1986; Audsley et al. 1993), with release jitter.
    ResponseTime,
    /// Processor demand for EDF by Quick convergence Processor-demand
    /// Analysis (Zhang & Burns 2009).
    ProcessorDemand,
}

/// A test's word on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "why", rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    /// For a sufficient-only test (the two bounds) a failure decides
    /// nothing: the exact test does.
    Fail,
    /// The test's assumptions do not hold (priorities not rate-monotonic,
    /// a deadline shorter than its period, a WCET unknown): why.
    NotApplicable(String),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestOutcome {
    pub test: Test,
    pub verdict: Verdict,
    /// The test's left side (utilization, product, worst response / its
    /// deadline, ...) and its bound; NaN when not applicable.
    pub value: f64,
    pub bound: f64,
    /// One line for a person: "U = 0.753 ≤ 0.780 (n = 3)".
    pub detail: String,
}

/// One task's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskOutcome {
    pub name: String,
    pub cpu: usize,
    /// The execution analysed: WCET + release cost.
    pub wcet_ns: Option<u64>,
    pub deadline_ns: u64,
    /// Worst-case response from the nominal activation instant (jitter
    /// included) under the policy; None: unbounded or unknown.
    pub response_ns: Option<u64>,
    /// Whether the response bound is within the deadline (None: unknown).
    pub meets: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuAnalysis {
    pub cpu: usize,
    /// Σ (WCET + release cost) / period of the tasks with a known WCET.
    pub utilization: f64,
    /// Every test, in the order of [`Test`].
    pub tests: Vec<TestOutcome>,
    /// Its tasks in priority order (highest first; EDF: deadline order).
    pub tasks: Vec<TaskOutcome>,
}

/// The analysis of a task set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub policy: Policy,
    pub overheads: Overheads,
    /// One per CPU that has tasks, in CPU order.
    pub cpus: Vec<CpuAnalysis>,
    /// Every task with a known WCET meets its deadline under `policy`, and
    /// no task's guarantee is voided by an unknown WCET above it.
    pub schedulable: bool,
}

/// What would make a refused task fit (each alone, the rest unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Suggestion {
    /// Its period (and a deadline equal to it) at least this long.
    Period { min_ns: u64 },
    /// Its budget at most this.
    Budget { max_ns: u64 },
    /// Another of the given CPUs, where it fits as asked.
    Cpu { cpu: usize },
}

/// Why a task is refused: the test that failed on which CPU, the task
/// that would miss (the candidate or one admitted before), by how much,
/// and what would fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub test: Test,
    pub cpu: usize,
    /// The task whose deadline would be missed (or whose guarantee an
    /// unknown WCET would void).
    pub victim: String,
    /// "response 12 ms > deadline 10 ms (2 ms late)" or "U = 1.12 > 1".
    pub shortfall: String,
    pub suggestions: Vec<Suggestion>,
    /// The whole refusal in one line for a person (test, CPU, victim,
    /// shortfall, suggestions), as `exec serve` replies it.
    pub message: String,
}
