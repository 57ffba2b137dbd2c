//! The partition on cgroup v2: a top-level cgroup `rtlab-focus-PID` with
//! the focused CPUs made an isolated partition
//! (`cpuset.cpus.partition=isolated`). The kernel itself takes the CPUs
//! from every other cgroup (systemd's tree included: none of its files is
//! written) and keeps them out of load balancing.

use std::fs;
use std::path::{Path, PathBuf};

use rtlab_core::cpuset::CpuSet;

use crate::cgroups::Controller;
use crate::changes::{journal_error, make_cgroup, write_cgroup_file, Changes};
use crate::model::{FocusError, FocusReport};

/// Creates the isolated partition under the v2 root; returns its directory.
pub(crate) fn create(
    controller: &Controller,
    cpus: &CpuSet,
    changes: &mut Changes,
    report: &mut FocusReport,
) -> Result<PathBuf, FocusError> {
    let root = controller.root();
    let pid = std::process::id();
    let subtree = root.join("cgroup.subtree_control");
    let enabled = fs::read_to_string(&subtree)
        .map_err(|e| FocusError::Failed(format!("cannot read {}: {e}", subtree.display())))?
        .split_whitespace()
        .any(|c| c == "cpuset");
    if !enabled {
        changes
            .record(|j| {
                j.note_cgroup_controller(&subtree, "cpuset", "rtlab focus")
                    .map_err(Box::new)
            })
            .map_err(journal_error)?;
        write_cgroup_file(&subtree, "+cpuset")?;
    }
    // Tasks left in the partition at the end (a command's children) go
    // back where this process is.
    let own = controller
        .cgroup_of(pid as i32)
        .map_err(|e| FocusError::Failed(format!("cannot find this process's cgroup: {e}")))?;
    let dir = root.join(format!("rtlab-focus-{pid}"));
    make_cgroup(changes, &dir, &own, "rtlab focus: the focused CPUs")?;
    let list = cpus.to_string();
    write_cgroup_file(&dir.join("cpuset.cpus"), &list)?;
    let exclusive = dir.join("cpuset.cpus.exclusive");
    if exclusive.exists() {
        write_cgroup_file(&exclusive, &list)?;
    }
    let partition = dir.join("cpuset.cpus.partition");
    write_cgroup_file(&partition, "isolated")?;
    let state = read_partition(&partition)?;
    if state != "isolated" {
        return Err(FocusError::Failed(format!(
            "the kernel did not make {} an isolated partition: {} reads {state:?}",
            dir.display(),
            partition.display()
        )));
    }
    report.notes.push(format!(
        "every other cgroup (systemd's included) lost CPUs {list} by the kernel's own hand: none of their files was written"
    ));
    Ok(dir)
}

fn read_partition(path: &Path) -> Result<String, FocusError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| FocusError::Failed(format!("cannot read {}: {e}", path.display())))
}
