//! What the run's witness saw on the measured CPUs, and the attribution of
//! each series' largest samples to it (`RunResult.witness`).

use serde::{Deserialize, Serialize};

/// The witness of a run: a SCHED_OTHER thread beside the probe that read
/// the host's counters every `period_ns`, and what it made of each
/// series' top spikes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WitnessReport {
    /// How often the witness read the counters, ns: a spike is explained
    /// by what happened in the windows of this length around it.
    pub period_ns: u64,
    /// Windows read during the run.
    pub windows: u64,
    /// CPU time the witness thread used, ns (its cost).
    pub cpu_ns: u64,
    /// The top spikes of every series on one CPU, largest first per series.
    #[serde(default)]
    pub spikes: Vec<ExplainedSpike>,
    /// What the witness could not see (a file it could not read, a tracer
    /// that is absent), for the reader of the verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One large sample with what happened on its CPU around it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainedSpike {
    pub series: String,
    pub cpu: usize,
    /// The spike as in the series' `top`.
    pub sample: u64,
    pub at_ns: u64,
    pub latency_ns: u64,
    /// The stretch of the run the counts below cover (the witness's
    /// windows around the spike), ns since the run's first deadline.
    pub from_ns: u64,
    pub to_ns: u64,
    /// The likeliest cause in one line, e.g. `RT thread rtl-hog (fifo 95)
    /// ran 2.0 ms`, `irq:CAL ×40 (usually 2)`, `unexplained: ...`.
    pub verdict: String,
    /// Where the verdict comes from: `proc` (counters read from /proc),
    /// `timerlat` or `osnoise` (the kernel's tracers).
    pub source: String,
    /// Interrupts on the CPU in the stretch, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupts: Vec<SourceCount>,
    /// Softirqs on the CPU in the stretch, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub softirqs: Vec<SourceCount>,
    /// Other threads that ran on the CPU in the stretch, longest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadRan>,
    /// Time the hypervisor ran something else instead of this CPU, ns
    /// (/proc/stat steal, in clock ticks).
    #[serde(default)]
    pub steal_ns: u64,
    /// Time the CPU spent in hard and soft interrupts, ns (/proc/stat).
    #[serde(default)]
    pub irq_ns: u64,
    #[serde(default)]
    pub softirq_ns: u64,
    /// Involuntary context switches of the probe's own threads on the CPU.
    #[serde(default)]
    pub probe_preempted: u64,
    /// A real-time thread at or above the probe's priority ran or waited
    /// to run on the CPU.
    #[serde(default)]
    pub rt_at_or_above: bool,
}

/// How often an interrupt or softirq fired in a stretch, and how often it
/// fires in a stretch that long on average over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceCount {
    /// `irq:LOC`, `irq:25 virtio0-requests`, `softirq:TIMER`.
    pub name: String,
    pub count: u64,
    pub usual: u64,
}

/// A thread other than the probe's that ran on the CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadRan {
    /// Its name, control and invisible characters escaped (another user
    /// names their threads).
    pub name: String,
    pub pid: u32,
    pub tid: u32,
    /// `fifo`, `rr`, `other`, ...
    pub policy: String,
    /// 1-99 for fifo/rr, 0 otherwise.
    pub priority: u32,
    /// CPU time it used in the stretch, ns (schedstat).
    pub ran_ns: u64,
    /// Time it waited runnable in the stretch, ns (schedstat).
    pub waited_ns: u64,
}
