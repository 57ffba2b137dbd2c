//! What a focus would do, with nothing changed (`rtlab focus --dry-run`):
//! the same checks and the same plan as [`crate::Focus::start`], read
//! from the host as it is now. What the kernel refuses (an IRQ it
//! manages, a process that forks while it is moved) is known only when
//! tried, and said so.

use rtlab_core::cpuset::CpuSet;
use std::collections::BTreeMap;

use crate::cgroups::{self, Controller};
use crate::cpus::{intersects, rest_of};
use crate::irqs;
use crate::model::{FocusError, FocusReport};
use crate::tasks;

/// The report a focus of `cpus` would give now; the errors it would
/// give (bad CPUs, no cpuset controller, another focus holding).
pub fn preview(cpus: &CpuSet) -> Result<FocusReport, FocusError> {
    let online = CpuSet::online();
    let rest = rest_of(cpus, &online)?;
    let controller = cgroups::find()?;
    controller.refuse_other_focus()?;
    let threads = tasks::threads();
    let (partition, moved) = match &controller {
        Controller::V1 { root } => (
            crate::partition_v1::refuse_cpusets_with_cpus(root)
                .map(|_| root.join(format!("rtlab-focus-{}", std::process::id())))?,
            rtlab_core::journal::cgroup_procs(root).map_or(0, |p| p.len()),
        ),
        Controller::V2 { root } => (
            root.join(format!("rtlab-focus-{}", std::process::id())),
            threads
                .iter()
                .filter(|t| t.pid == t.tid && t.settable() && intersects(&t.affinity, cpus))
                .count(),
        ),
    };
    let bound: Vec<tasks::ThreadInfo> = threads.iter().filter(|t| !t.settable()).cloned().collect();
    let mut report = FocusReport {
        backend: controller.backend().to_string(),
        cpus: cpus.to_string(),
        rest: rest.to_string(),
        moved,
        pinned: tasks::pinned_notes(&threads, &online, cpus),
        unmoved: tasks::stragglers(&bound, cpus, &partition, &BTreeMap::new()),
        partition,
        irqs_moved: Vec::new(),
        irqs_unmoved: Vec::new(),
        notes: vec![
            "dry run: nothing was changed; IRQs the kernel manages refuse only when tried".into(),
        ],
    };
    for p in irqs::plan(cpus, &rest, &mut report.notes) {
        match p.irq {
            Some(irq) => report.irqs_moved.push(irq),
            None => report.notes.push(format!(
                "{} ({}) would be set to CPUs {} (mask {})",
                p.what,
                p.path.display(),
                p.new,
                p.value
            )),
        }
    }
    Ok(report)
}
