//! CONTRACT: the focused mode's public API (implemented by the focus helper).

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::{Journal, Restored};
use serde::Serialize;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

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

/// The CPUs given to real-time work, until [`Focus::end`] or drop.
pub struct Focus {
    _private: (),
}

impl Focus {
    /// Partitions `cpus` off (journaled in `journal`, the old state first)
    /// and moves every other movable task and IRQ to the remaining CPUs.
    pub fn start(cpus: &CpuSet, journal: Arc<Mutex<Journal>>) -> Result<Focus, FocusError> {
        let _ = (cpus, journal);
        todo!("issue 19: focus")
    }

    pub fn report(&self) -> &FocusReport {
        todo!("issue 19: focus")
    }

    /// The focused CPUs.
    pub fn cpus(&self) -> &CpuSet {
        todo!("issue 19: focus")
    }

    /// Moves process `pid` (all its threads) into the partition,
    /// journaled with where it came from.
    pub fn join(&self, pid: i32) -> Result<(), FocusError> {
        let _ = pid;
        todo!("issue 19: focus")
    }

    /// Puts process `pid` back where it came from (it detached).
    pub fn leave(&self, pid: i32) -> Result<(), FocusError> {
        let _ = pid;
        todo!("issue 19: focus")
    }

    /// Makes `command`'s process start in the partition (it joins
    /// between fork and exec, before it runs a line of its own).
    pub fn prepare_command(&self, command: &mut Command) {
        let _ = command;
        todo!("issue 19: focus")
    }

    /// Puts everything back (moved tasks, their affinities, IRQs, the
    /// cpuset tree) and says how each change was undone.
    pub fn end(self) -> Vec<Restored> {
        todo!("issue 19: focus")
    }
}

/// Where every task and IRQ may run, and the cpuset tree: taken before
/// and after focusing, the two must be equal (the tests compare them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    _private: (),
}

impl Snapshot {
    pub fn capture() -> Snapshot {
        todo!("issue 19: focus")
    }

    /// What differs from `before`, a line each (empty: the same), tasks
    /// that started or ended in between left out.
    pub fn differences(&self, before: &Snapshot) -> Vec<String> {
        let _ = before;
        todo!("issue 19: focus")
    }
}
