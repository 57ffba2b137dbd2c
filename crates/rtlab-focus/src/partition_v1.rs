//! The partition on cgroup v1, as `cset shield` makes it: an exclusive
//! cpuset `rtlab-focus-PID` with the focused CPUs and load balancing off,
//! an exclusive `rtlab-rest-PID` with the others, load balancing off in
//! the root (so the scheduler builds one domain per child), and every
//! process of the root moved to the rest.

use std::fs;
use std::path::{Path, PathBuf};

use rtlab_core::cpuset::CpuSet;

use crate::changes::{journal_error, make_cgroup, write_cgroup_file, Changes};
use crate::model::{FocusError, FocusReport};
use crate::tasks::{move_all, Moves};

/// Creates the two cpusets under `root` and moves everything to the
/// rest; returns the partition's directory and what the moves did.
pub(crate) fn create(
    root: &Path,
    cpus: &CpuSet,
    rest: &CpuSet,
    changes: &mut Changes,
    report: &mut FocusReport,
) -> Result<(PathBuf, Moves), FocusError> {
    let pid = std::process::id();
    let mems = fs::read_to_string(root.join("cpuset.mems")).map_err(|e| {
        FocusError::Failed(format!(
            "cannot read {}: {e}",
            root.join("cpuset.mems").display()
        ))
    })?;
    let mems = mems.trim();
    let rest_dir = root.join(format!("rtlab-rest-{pid}"));
    let focus_dir = root.join(format!("rtlab-focus-{pid}"));
    let others = refuse_cpusets_with_cpus(root)?;

    make_cgroup(
        changes,
        &rest_dir,
        root,
        "rtlab focus: the CPUs left to everything else",
    )?;
    write_cgroup_file(&rest_dir.join("cpuset.cpus"), &rest.to_string())?;
    write_cgroup_file(&rest_dir.join("cpuset.mems"), mems)?;
    write_cgroup_file(&rest_dir.join("cpuset.cpu_exclusive"), "1")?;

    make_cgroup(changes, &focus_dir, root, "rtlab focus: the focused CPUs")?;
    write_cgroup_file(&focus_dir.join("cpuset.cpus"), &cpus.to_string())?;
    write_cgroup_file(&focus_dir.join("cpuset.mems"), mems)?;
    write_cgroup_file(&focus_dir.join("cpuset.cpu_exclusive"), "1")?;
    write_cgroup_file(&focus_dir.join("cpuset.sched_load_balance"), "0")?;

    let balance = root.join("cpuset.sched_load_balance");
    changes
        .record(|j| j.set_file(&balance, "0").map_err(Box::new))
        .map_err(journal_error)?;

    let moves = move_all(root, &rest_dir);
    for (name, their_cpus) in others {
        report.notes.push(format!(
            "cpuset {name} (CPUs {their_cpus}) and its processes were left as they are"
        ));
    }
    Ok((focus_dir, moves))
}

/// The cpusets already under the root (another tool's), all without CPUs;
/// refused, before anything changes, when one has some: the kernel
/// refuses an exclusive cpuset beside a sibling whose CPUs overlap it
/// (EINVAL), and the rest and the focused CPUs together are all of them.
pub(crate) fn refuse_cpusets_with_cpus(root: &Path) -> Result<Vec<(String, String)>, FocusError> {
    let others = child_cpusets(root);
    let with_cpus: Vec<String> = others
        .iter()
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(name, cpus)| format!("{name} (CPUs {cpus})"))
        .collect();
    if with_cpus.is_empty() {
        return Ok(others);
    }
    Err(FocusError::Unavailable(format!(
        "cpuset {} under {} holds CPUs: on cgroup v1 a focus needs exclusive cpusets, which the kernel refuses beside it; nothing was changed: remove it (or empty its cpuset.cpus), then run again",
        with_cpus.join(", "),
        root.display()
    )))
}

/// The cpusets already under the root (another tool's), with their CPUs.
fn child_cpusets(root: &Path) -> Vec<(String, String)> {
    let Ok(dir) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = dir
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let cpus = fs::read_to_string(e.path().join("cpuset.cpus")).unwrap_or_default();
            (
                rtlab_core::result::printable(&e.file_name().to_string_lossy(), 80),
                cpus.trim().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_cpuset_with_cpus_is_refused_before_anything_changes() {
        let root = tempfile::tempdir().unwrap();
        let other = root.path().join("docker");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("cpuset.cpus"), "0-1\n").unwrap();
        let e = refuse_cpusets_with_cpus(root.path()).unwrap_err();
        assert!(matches!(e, FocusError::Unavailable(_)), "{e:?}");
        assert!(e.to_string().contains("docker (CPUs 0-1)"), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        // One without CPUs cannot be in the way: left, and said.
        fs::write(other.join("cpuset.cpus"), "\n").unwrap();
        let left = refuse_cpusets_with_cpus(root.path()).unwrap();
        assert_eq!(left, [("docker".to_string(), String::new())]);
    }
}
