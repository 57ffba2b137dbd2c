//! Cgroups rtlab changed for `rtlab focus`: a directory it created, a
//! process it moved, a controller it enabled. Each is journaled before it
//! is made and undone here: tasks go back before a directory is removed,
//! and a process is moved back only while its pid still names it (start
//! time) and it is still where rtlab put it.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::entry::Outcome;
use super::error::io_message;
use crate::process::Stat;

/// How long a restore waits for a cgroup to empty and go: exiting tasks
/// and the kernel's lazy destruction of a cgroup take a moment.
const SETTLE: Duration = Duration::from_secs(3);

/// Moves the process (or thread group) `pid` into the cgroup `dir`.
pub fn move_to_cgroup(dir: &Path, pid: i32) -> io::Result<()> {
    let mut procs = OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))?;
    procs.write_all(format!("{pid}\n").as_bytes())
}

/// The process ids in cgroup `dir` (its `cgroup.procs`).
pub fn cgroup_procs(dir: &Path) -> io::Result<Vec<i32>> {
    Ok(fs::read_to_string(dir.join("cgroup.procs"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// Empties `path` into `return_to` (its parent when `return_to` is
/// gone), then removes it.
pub(super) fn remove_cgroup_dir(path: &Path, return_to: &Path) -> Outcome {
    if !path.is_dir() {
        return Outcome::Skipped {
            reason: "it is already gone".into(),
        };
    }
    // The cgroup the tasks came from may be gone since (a systemd scope
    // that ended with the rtlab killed in it): then to the parent.
    let return_to = match (return_to.is_dir(), path.parent()) {
        (false, Some(parent)) => parent,
        _ => return_to,
    };
    let deadline = Instant::now() + SETTLE;
    loop {
        let mut stuck = None;
        for pid in cgroup_procs(path).unwrap_or_default() {
            match move_to_cgroup(return_to, pid) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => stuck = Some(format!("process {pid}: {}", io_message(&e))),
            }
        }
        match fs::remove_dir(path) {
            Ok(()) => return Outcome::Removed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Removed,
            Err(e) if Instant::now() >= deadline => {
                let why = stuck.map_or_else(String::new, |s| format!(" (cannot move {s})"));
                return Outcome::Failed {
                    error: format!("cannot remove it: {}{why}", io_message(&e)),
                };
            }
            Err(_) => sleep(Duration::from_millis(50)),
        }
    }
}

/// The start time of process `pid` now, None when it is gone.
pub(super) fn starttime_of(pid: i32) -> Option<u64> {
    Stat::read(Path::new(&format!("/proc/{pid}/stat")))
        .ok()?
        .starttime()
}

/// Moves a recorded process back, if it is still that process and still
/// in `to`.
pub(super) fn move_process_back(pid: i32, starttime: u64, from: &Path, to: &Path) -> Outcome {
    if starttime_of(pid) != Some(starttime) {
        return Outcome::Skipped {
            reason: "the process is gone (or its pid was reused): left alone".into(),
        };
    }
    match cgroup_procs(to) {
        Ok(pids) if pids.contains(&pid) => {}
        _ => {
            return Outcome::Skipped {
                reason: format!("it is no longer in {}", to.display()),
            }
        }
    }
    match move_to_cgroup(from, pid) {
        Ok(()) => Outcome::Restored { was: None },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Outcome::Skipped {
            reason: "the process is gone".into(),
        },
        Err(e) => Outcome::Failed {
            error: format!("moving it to {}: {}", from.display(), io_message(&e)),
        },
    }
}

/// Disables `controller` in a `cgroup.subtree_control` file again.
pub(super) fn disable_controller(path: &Path, controller: &str) -> Outcome {
    let enabled = match fs::read_to_string(path) {
        Ok(text) => text.split_whitespace().any(|c| c == controller),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Outcome::Skipped {
                reason: "the cgroup is gone".into(),
            }
        }
        Err(e) => {
            return Outcome::Failed {
                error: io_message(&e),
            }
        }
    };
    if !enabled {
        return Outcome::Skipped {
            reason: format!("{controller} is already disabled"),
        };
    }
    // A child cgroup being destroyed lazily keeps the controller busy.
    let deadline = Instant::now() + SETTLE;
    loop {
        let written = OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(format!("-{controller}\n").as_bytes()));
        match written {
            Ok(()) => return Outcome::Restored { was: None },
            Err(e) if Instant::now() >= deadline => {
                return Outcome::Failed {
                    error: format!("writing -{controller}: {}", io_message(&e)),
                }
            }
            Err(_) => sleep(Duration::from_millis(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn a_missing_directory_is_skipped() {
        let tmp = TempDir::new().unwrap();
        let gone = tmp.path().join("rtlab-focus-1");
        assert!(matches!(
            remove_cgroup_dir(&gone, tmp.path()),
            Outcome::Skipped { .. }
        ));
    }

    #[test]
    fn a_reused_pid_is_left_alone() {
        let tmp = TempDir::new().unwrap();
        let me = std::process::id() as i32;
        let real = starttime_of(me).unwrap();
        let outcome = move_process_back(me, real + 1, tmp.path(), tmp.path());
        assert!(
            matches!(&outcome, Outcome::Skipped { reason } if reason.contains("reused")),
            "{outcome:?}"
        );
        // Still this process, but no longer where rtlab put it.
        fs::write(tmp.path().join("cgroup.procs"), "1\n").unwrap();
        let outcome = move_process_back(me, real, tmp.path(), tmp.path());
        assert!(
            matches!(&outcome, Outcome::Skipped { reason } if reason.contains("no longer in")),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_disabled_controller_is_skipped() {
        let tmp = TempDir::new().unwrap();
        let control = tmp.path().join("cgroup.subtree_control");
        fs::write(&control, "cpu memory\n").unwrap();
        assert!(matches!(
            disable_controller(&control, "cpuset"),
            Outcome::Skipped { .. }
        ));
        assert!(matches!(
            disable_controller(&tmp.path().join("gone"), "cpuset"),
            Outcome::Skipped { .. }
        ));
    }
}
