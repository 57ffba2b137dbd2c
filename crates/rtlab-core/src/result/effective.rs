//! What was in effect while a run measured: process-wide settings and
//! each measuring thread's.

use crate::sched::SchedParams;
use serde::{Deserialize, Serialize};

/// Process-wide settings as they were in effect during the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Effective {
    pub mlockall: bool,
    /// The PM QoS target held on /dev/cpu_dma_latency, None when not held.
    pub dma_latency_us: Option<i32>,
    pub prefaulted_stack_bytes: usize,
    /// Changes made through the journal (and restored afterwards).
    #[serde(default)]
    pub system_changes: Vec<String>,
}

/// How one measuring thread ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSettings {
    pub tid: i32,
    /// The CPU the thread was pinned to; None when it was not pinned.
    pub pinned_cpu: Option<usize>,
    pub requested: SchedParams,
    /// What the kernel reported after the request (the request may have
    /// been refused).
    pub actual: Option<SchedParams>,
    pub timer_slack_ns: Option<u64>,
}
