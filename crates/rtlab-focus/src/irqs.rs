//! Interrupts off the focused CPUs: every IRQ's `smp_affinity_list`, the
//! affinity new IRQs get (`/proc/irq/default_smp_affinity`) and the CPUs
//! of unbound workqueues (`/sys/devices/virtual/workqueue/cpumask`), each
//! a journaled File entry (the old value first).

use std::fs;
use std::path::{Path, PathBuf};

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::JournalError;

use crate::changes::{journal_error, Changes};
use crate::cpus::{intersects, minus};
use crate::model::{FocusError, FocusReport};

pub(crate) const IRQ_DIR: &str = "/proc/irq";
pub(crate) const DEFAULT_AFFINITY: &str = "/proc/irq/default_smp_affinity";
pub(crate) const WORKQUEUE_MASK: &str = "/sys/devices/virtual/workqueue/cpumask";

/// The IRQ numbers of /proc/irq, ascending.
pub(crate) fn irq_numbers() -> Vec<u32> {
    let mut irqs: Vec<u32> = fs::read_dir(IRQ_DIR)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    irqs.sort_unstable();
    irqs
}

/// `current` without the focused CPUs, or the rest when nothing is left.
fn without(current: &CpuSet, cpus: &CpuSet, rest: &CpuSet) -> CpuSet {
    let left = minus(current, cpus);
    if left.is_empty() {
        rest.clone()
    } else {
        left
    }
}

/// The kernel's refusal of a value (a failed write: said and gone on
/// from), or the journal's error that ends the focus.
fn refusal(e: JournalError) -> Result<std::io::Error, FocusError> {
    match e {
        JournalError::Write { source, .. } => Ok(source),
        other => Err(journal_error(Box::new(other))),
    }
}

/// One value to change: an IRQ's CPU list, or a mask file.
pub(crate) struct Planned {
    pub path: PathBuf,
    /// The IRQ, or None for a mask file.
    pub irq: Option<u32>,
    /// What the file is, for a person.
    pub what: &'static str,
    pub old: String,
    pub new: CpuSet,
    /// `new` in the file's notation.
    pub value: String,
}

/// What moving every IRQ, the default IRQ affinity and the workqueue
/// mask off `cpus` would write (notes on what cannot be read).
pub(crate) fn plan(cpus: &CpuSet, rest: &CpuSet, notes: &mut Vec<String>) -> Vec<Planned> {
    let mut out = Vec::new();
    for irq in irq_numbers() {
        let path = Path::new(IRQ_DIR)
            .join(irq.to_string())
            .join("smp_affinity_list");
        let Ok(current) = CpuSet::from_sysfs(&path) else {
            continue;
        };
        if intersects(&current, cpus) {
            let new = without(&current, cpus, rest);
            out.push(Planned {
                path,
                irq: Some(irq),
                what: "IRQ",
                old: current.to_string(),
                value: new.to_string(),
                new,
            });
        }
    }
    for (file, what) in [
        (DEFAULT_AFFINITY, "the default IRQ affinity"),
        (WORKQUEUE_MASK, "the unbound workqueues' CPUs"),
    ] {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let Some(current) = CpuSet::from_hex_mask(&text) else {
            notes.push(format!(
                "{file}: cannot read mask {:?}, left alone",
                text.trim()
            ));
            continue;
        };
        if intersects(&current, cpus) {
            let new = without(&current, cpus, rest);
            out.push(Planned {
                path: PathBuf::from(file),
                irq: None,
                what,
                old: text.trim().to_string(),
                value: new.to_hex_mask(),
                new,
            });
        }
    }
    out
}

/// Moves every IRQ, the default IRQ affinity and the workqueue mask off
/// `cpus`, saying in `report` what moved and what refused.
pub(crate) fn move_off(
    changes: &mut Changes,
    cpus: &CpuSet,
    rest: &CpuSet,
    report: &mut FocusReport,
) -> Result<(), FocusError> {
    for p in plan(cpus, rest, &mut report.notes) {
        let file = p.path.display();
        let (new, value) = (&p.new, &p.value);
        match changes.record(|j| j.set_file(&p.path, value).map_err(Box::new)) {
            Ok(()) => match p.irq {
                Some(irq) => report.irqs_moved.push(irq),
                None => report.notes.push(format!(
                    "{} ({file}) set to CPUs {new} (mask {value})",
                    p.what
                )),
            },
            // Per-CPU and kernel-managed IRQs refuse (EIO, EINVAL).
            Err(e) => {
                let source = refusal(*e)?;
                match p.irq {
                    Some(irq) => report
                        .irqs_unmoved
                        .push((irq, format!("the kernel refused CPUs {new}: {source}"))),
                    None => report.notes.push(format!(
                        "{} ({file}) left at mask {}: {source}",
                        p.what, p.old
                    )),
                }
            }
        }
    }
    Ok(())
}
