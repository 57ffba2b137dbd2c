//! What a focus says: its report, the notes on tasks and IRQs, and its
//! errors (the data of the API in `api.rs`, apart so that every step's
//! file can use it without importing the steps).

use serde::Serialize;
use std::path::PathBuf;

/// Why focusing failed (nothing is left changed: what was done is undone).
#[derive(Debug, thiserror::Error)]
pub enum FocusError {
    /// The CPUs asked are wrong (not online, all of them, none): exit 2.
    #[error("{0}")]
    Invalid(String),
    /// No way to partition here (no cpuset controller, not root, another
    /// rtlab already focused): what and why.
    #[error("{0}")]
    Unavailable(String),
    /// A step failed: which file or process, and the error.
    #[error("{0}")]
    Failed(String),
}

/// A task or IRQ that stayed, or a pinned task that was moved: who and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskNote {
    pub pid: i32,
    /// Its name (another user's choice: printable only).
    pub comm: String,
    pub reason: String,
}

/// What focusing did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FocusReport {
    /// "cgroup-v2" or "cgroup-v1".
    pub backend: String,
    /// The CPUs given to real-time work, and the rest.
    pub cpus: String,
    pub rest: String,
    /// The partition's cgroup directory.
    pub partition: PathBuf,
    /// Processes moved to the rest.
    pub moved: usize,
    /// Moved processes that had been pinned to some of the focused CPUs
    /// (their affinity is put back at the end).
    pub pinned: Vec<TaskNote>,
    /// Tasks that could not move (kernel threads bound to a CPU, ...).
    pub unmoved: Vec<TaskNote>,
    /// IRQs whose affinity now excludes the focused CPUs.
    pub irqs_moved: Vec<u32>,
    /// IRQs that refused (per-CPU or kernel-managed), with why.
    pub irqs_unmoved: Vec<(u32, String)>,
    /// Anything else said (workqueue mask, default IRQ affinity, ...).
    pub notes: Vec<String>,
}
