//! Starting a focus, in the order the journal's reverse replay needs:
//! the pinned threads' CPUs first (put back last, once their threads are
//! back), then the cpusets (their tasks return before they go), then the
//! IRQs. A step that fails undoes what the ones before did.

use std::collections::{BTreeMap, BTreeSet};

use rtlab_core::cpuset::CpuSet;

use crate::cgroups::Controller;
use crate::changes::{journal_error, Changes};
use crate::cpus::intersects;
use crate::model::{FocusError, FocusReport};
use crate::tasks::{self, ThreadInfo};
use crate::{irqs, partition_v1, partition_v2};

pub(crate) struct Plan<'a> {
    pub controller: &'a Controller,
    pub cpus: &'a CpuSet,
    pub rest: &'a CpuSet,
    pub online: &'a CpuSet,
}

impl Plan<'_> {
    pub(crate) fn establish(
        &self,
        changes: &mut Changes,
        report: &mut FocusReport,
    ) -> Result<(), FocusError> {
        let before = tasks::threads();
        let pinned = tasks::pinned(&before, self.online);
        if !pinned.is_empty() {
            changes
                .record(|j| {
                    j.note_thread_affinities(pinned, "rtlab focus: the CPUs of pinned threads")
                        .map_err(Box::new)
                })
                .map_err(journal_error)?;
        }
        let refused = match self.controller {
            Controller::V1 { root } => {
                let (dir, moves) =
                    partition_v1::create(root, self.cpus, self.rest, changes, report)?;
                report.partition = dir;
                report.moved = moves.moved.len();
                moves.refused
            }
            Controller::V2 { .. } => {
                report.partition =
                    partition_v2::create(self.controller, self.cpus, changes, report)?;
                BTreeMap::new()
            }
        };
        irqs::move_off(changes, self.cpus, self.rest, report)?;
        let after = tasks::threads();
        if matches!(self.controller, Controller::V2 { .. }) {
            report.moved = moved_off(&before, &after, self.cpus);
        }
        report.pinned = tasks::pinned_notes(&before, self.online, self.cpus);
        report.unmoved = tasks::stragglers(&after, self.cpus, &report.partition, &refused);
        Ok(())
    }
}

/// The processes that could run on `cpus` before and no longer can.
fn moved_off(before: &[ThreadInfo], after: &[ThreadInfo], cpus: &CpuSet) -> usize {
    let on = |threads: &[ThreadInfo]| -> BTreeSet<(i32, u64)> {
        threads
            .iter()
            .filter(|t| t.pid == t.tid && intersects(&t.affinity, cpus))
            .map(|t| (t.pid, t.starttime))
            .collect()
    };
    let now = on(after);
    let alive: BTreeSet<(i32, u64)> = after.iter().map(|t| (t.pid, t.starttime)).collect();
    on(before)
        .into_iter()
        .filter(|p| alive.contains(p) && !now.contains(p))
        .count()
}

/// Undoes what a failed start did; the error says what could not be
/// undone (left for `rtlab restore`).
pub(crate) fn undo_after(error: FocusError, changes: &mut Changes) -> FocusError {
    let failed: Vec<String> = changes
        .undo()
        .iter()
        .filter(|r| !r.ok())
        .map(ToString::to_string)
        .collect();
    if failed.is_empty() {
        return error;
    }
    let also = format!("; undoing it: {}", failed.join("; "));
    match error {
        FocusError::Invalid(m) => FocusError::Invalid(m + &also),
        FocusError::Unavailable(m) => FocusError::Unavailable(m + &also),
        FocusError::Failed(m) => FocusError::Failed(m + &also),
    }
}
