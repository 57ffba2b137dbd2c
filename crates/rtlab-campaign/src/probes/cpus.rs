//! CPU settings as the probe kinds show them: `all` or a CPU list in
//! settings and JSON, `all CPUs` or `CPUs 0-3` for humans.

use rtlab_core::cpuset::CpuSelection;
use serde::Serializer;

/// `all` or the CPU list in kernel notation.
pub fn cpus_text(cpus: &CpuSelection) -> String {
    match cpus {
        CpuSelection::All => "all".to_string(),
        CpuSelection::List(set) => set.to_string(),
    }
}

/// Serializes a CPU selection as its text (`serialize_with`).
pub(super) fn cpus_as_text<S: Serializer>(cpus: &CpuSelection, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cpus_text(cpus))
}

/// `all CPUs`, `CPU 2`, `CPUs 0-3`.
pub(super) fn cpus_phrase(cpus: &CpuSelection) -> String {
    match cpus {
        CpuSelection::All => "all CPUs".to_string(),
        CpuSelection::List(set) if set.len() == 1 => format!("CPU {set}"),
        CpuSelection::List(set) => format!("CPUs {set}"),
    }
}

/// `CPU 3`, or `default` when none is given.
pub(super) fn cpu_or(cpu: Option<usize>, default: &str) -> String {
    cpu.map_or(default.to_string(), |c| format!("CPU {c}"))
}
