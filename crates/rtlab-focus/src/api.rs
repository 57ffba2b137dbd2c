//! The focused mode's public API (issue 19's contract): [`Focus`], started on
//! some CPUs and ended (or dropped) to put everything back, and its report
//! ([`FocusReport`], in `model.rs`); each step it takes is a file of its own.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::{move_to_cgroup, Journal, Restored};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cgroups::{self, Controller};
use crate::changes::{journal_error, Changes};
use crate::cpus::rest_of;
use crate::start::{undo_after, Plan};

pub use crate::model::{FocusError, FocusReport, TaskNote};

/// The CPUs given to real-time work, until [`Focus::end`] or drop.
pub struct Focus {
    cpus: CpuSet,
    report: FocusReport,
    controller: Controller,
    changes: Mutex<Changes>,
    ended: bool,
}

impl Focus {
    /// Partitions `cpus` off (journaled in `journal`, the old state first)
    /// and moves every other movable task and IRQ to the remaining CPUs.
    pub fn start(cpus: &CpuSet, journal: Arc<Mutex<Journal>>) -> Result<Focus, FocusError> {
        let online = CpuSet::online();
        let rest = rest_of(cpus, &online)?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(FocusError::Unavailable(
                "focusing needs root: it writes cgroup and /proc/irq files".into(),
            ));
        }
        let controller = cgroups::find()?;
        // Until the partition exists (it is what refuses the next focus).
        let _starting = controller.lock()?;
        controller.refuse_other_focus()?;
        let mut changes = Changes::new(journal);
        let mut report = FocusReport {
            backend: controller.backend().to_string(),
            cpus: cpus.to_string(),
            rest: rest.to_string(),
            partition: PathBuf::new(),
            moved: 0,
            pinned: Vec::new(),
            unmoved: Vec::new(),
            irqs_moved: Vec::new(),
            irqs_unmoved: Vec::new(),
            notes: Vec::new(),
        };
        let plan = Plan {
            controller: &controller,
            cpus,
            rest: &rest,
            online: &online,
        };
        if let Err(e) = plan.establish(&mut changes, &mut report) {
            return Err(undo_after(e, &mut changes));
        }
        Ok(Focus {
            cpus: cpus.clone(),
            report,
            controller,
            changes: Mutex::new(changes),
            ended: false,
        })
    }

    pub fn report(&self) -> &FocusReport {
        &self.report
    }

    /// The focused CPUs.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// Moves process `pid` (all its threads) into the partition,
    /// journaled with where it came from.
    pub fn join(&self, pid: i32) -> Result<(), FocusError> {
        let partition = &self.report.partition;
        let from = self
            .controller
            .cgroup_of(pid)
            .map_err(|e| FocusError::Failed(format!("process {pid}: {e}")))?;
        if from == *partition {
            return Ok(());
        }
        let mut changes = self.changes();
        changes
            .record(|j| {
                j.note_cgroup_process(pid, &from, partition, "joined the focus")
                    .map_err(Box::new)
            })
            .map_err(journal_error)?;
        if let Err(e) = move_to_cgroup(partition, pid) {
            changes.end_one(|j| j.restore_cgroup_process(pid));
            return Err(FocusError::Failed(format!(
                "cannot move process {pid} into {}: {e}",
                partition.display()
            )));
        }
        Ok(())
    }

    /// Puts process `pid` back where it came from (it detached), with the
    /// processes it left in the partition: those it forked there, and
    /// any whose joined ancestor is gone (orphans). Processes of members
    /// still joined stay.
    pub fn leave(&self, pid: i32) -> Result<(), FocusError> {
        let mut changes = self.changes();
        let origin = changes.origin_of(pid);
        let undone = changes.end_one(|j| j.restore_cgroup_process(pid));
        let members = changes.joined();
        drop(changes);
        if let Some(origin) = origin {
            for stray in crate::strays::strays(&self.report.partition, &members) {
                // Gone meanwhile, or moved by someone else: nothing to do.
                let _ = move_to_cgroup(&origin, stray);
            }
        }
        match undone {
            Some(r) if !r.ok() => Err(FocusError::Failed(r.to_string())),
            _ => Ok(()),
        }
    }

    /// Makes `command`'s process start in the partition (it joins
    /// between fork and exec, before it runs a line of its own).
    pub fn prepare_command(&self, command: &mut Command) {
        // Opened now: between fork and exec only async-signal-safe calls
        // (one write) are allowed. std opens it close-on-exec.
        let procs = OpenOptions::new()
            .write(true)
            .open(self.report.partition.join("cgroup.procs"))
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO));
        let join = move || -> std::io::Result<()> {
            let file = procs
                .as_ref()
                .map_err(|&errno| std::io::Error::from_raw_os_error(errno))?;
            // "0" is the writing process itself.
            // SAFETY: a valid descriptor and a one-byte buffer.
            let written = unsafe { libc::write(file.as_raw_fd(), b"0".as_ptr().cast(), 1) };
            if written == 1 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        };
        // SAFETY: the closure only calls write(2) and builds io::Errors
        // from numbers, which allocate nothing.
        unsafe {
            command.pre_exec(join);
        }
    }

    /// Puts everything back (moved tasks, their affinities, IRQs, the
    /// cpuset tree) and says how each change was undone.
    pub fn end(mut self) -> Vec<Restored> {
        self.finish()
    }

    fn changes(&self) -> MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&mut self) -> Vec<Restored> {
        self.ended = true;
        self.changes().undo()
    }
}

impl Drop for Focus {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        for r in self.finish() {
            if !r.ok() {
                eprintln!("rtlab: {r}");
            }
        }
    }
}

pub use crate::snapshot::Snapshot;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_focus_can_be_shared_between_threads() {
        // `exec serve --focus` joins attaching processes from its threads.
        fn shared<T: Send + Sync>() {}
        shared::<Focus>();
        shared::<Snapshot>();
    }
}
