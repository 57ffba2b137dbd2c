//! Where the cpuset controller lives: on the cgroup v2 hierarchy when its
//! root lists `cpuset` in `cgroup.controllers`, else on a v1 hierarchy of
//! its own. Paths come only from the kernel's /proc/self/mountinfo and
//! fixed names, never from anything another user chose.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rtlab_core::journal::{lock_dir, DirLock};

use crate::model::FocusError;

/// A cpuset hierarchy's root, and which cgroup version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Controller {
    V1 { root: PathBuf },
    V2 { root: PathBuf },
}

/// The cgroup mounts of this system: (file system type, options, mount
/// point), from /proc/self/mountinfo.
pub(crate) fn cgroup_mounts() -> Vec<(String, String, PathBuf)> {
    let Ok(text) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut right = right.split(' ');
            let fstype = right.next()?;
            let superopts = right.nth(1)?;
            if !fstype.starts_with("cgroup") {
                return None;
            }
            Some((
                fstype.to_string(),
                superopts.to_string(),
                PathBuf::from(unescape(point)),
            ))
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The v2 mount point, if cgroup2 is mounted.
pub(crate) fn v2_root() -> Option<PathBuf> {
    cgroup_mounts()
        .into_iter()
        .find(|(fstype, _, _)| fstype == "cgroup2")
        .map(|(_, _, point)| point)
}

/// The v1 hierarchy mounted with the cpuset controller, if any.
pub(crate) fn v1_cpuset_root() -> Option<PathBuf> {
    cgroup_mounts()
        .into_iter()
        .find(|(fstype, opts, _)| fstype == "cgroup" && opts.split(',').any(|o| o == "cpuset"))
        .map(|(_, _, point)| point)
}

/// Finds the cpuset controller, v2 first.
pub(crate) fn find() -> Result<Controller, FocusError> {
    if let Some(root) = v2_root() {
        let controllers = fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "cpuset") {
            return Ok(Controller::V2 { root });
        }
    }
    if let Some(root) = v1_cpuset_root() {
        return Ok(Controller::V1 { root });
    }
    Err(FocusError::Unavailable(
        "no cpuset controller: neither the cgroup v2 root's cgroup.controllers lists cpuset nor is a v1 cpuset hierarchy mounted (see /proc/self/mountinfo); the kernel needs CONFIG_CPUSETS".into(),
    ))
}

impl Controller {
    pub(crate) fn root(&self) -> &Path {
        match self {
            Controller::V1 { root } | Controller::V2 { root } => root,
        }
    }

    pub(crate) fn backend(&self) -> &'static str {
        match self {
            Controller::V1 { .. } => "cgroup-v1",
            Controller::V2 { .. } => "cgroup-v2",
        }
    }

    /// The cgroup directory process `pid` is in on this hierarchy.
    pub(crate) fn cgroup_of(&self, pid: i32) -> io::Result<PathBuf> {
        let text = fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
        let wanted = |controllers: &str, id: &str| match self {
            Controller::V1 { .. } => controllers.split(',').any(|c| c == "cpuset"),
            Controller::V2 { .. } => id == "0" && controllers.is_empty(),
        };
        let relative = text
            .lines()
            .find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                wanted(controllers, id).then(|| path.to_string())
            })
            .ok_or_else(|| io::Error::other("not in this cpuset hierarchy"))?;
        let relative = relative.trim_start_matches('/');
        // A path from another cgroup namespace, or with `..`, is not one
        // rtlab will write to.
        if relative.split('/').any(|s| s == ".." || s == ".") || relative.contains(" (deleted)") {
            return Err(io::Error::other(format!(
                "unusable cgroup path /{relative}"
            )));
        }
        Ok(self.root().join(relative))
    }

    /// Held while a focus starts (an exclusive flock on the hierarchy's
    /// root): the check for another focus and the partition made after it
    /// are one step for every other rtlab, so two started at once cannot
    /// both pass the check and then undo each other's cpusets.
    pub(crate) fn lock(&self) -> Result<DirLock, FocusError> {
        lock_dir(self.root())
            .map_err(|e| FocusError::Failed(format!("cannot lock {}: {e}", self.root().display())))
    }

    /// Refuses when a focus of another rtlab (`rtlab-focus-PID`) exists.
    pub(crate) fn refuse_other_focus(&self) -> Result<(), FocusError> {
        let Ok(dir) = fs::read_dir(self.root()) else {
            return Ok(());
        };
        for dirent in dir.flatten() {
            let name = dirent.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("rtlab-focus-"))
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let path = dirent.path();
            if Path::new(&format!("/proc/{pid}")).exists() {
                return Err(FocusError::Unavailable(format!(
                    "another rtlab (pid {pid}) holds a focus ({}); nothing was changed: wait for it to end (or stop it), then run again",
                    path.display()
                )));
            }
            return Err(FocusError::Unavailable(format!(
                "{} was left by an rtlab that died (pid {pid}); run `rtlab restore` first",
                path.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape(r"/sys/fs/cgroup/a\040b"), "/sys/fs/cgroup/a b");
        assert_eq!(unescape(r"/x\134y"), r"/x\y");
        assert_eq!(unescape(r"/plain\04"), r"/plain\04");
    }

    #[test]
    fn this_process_is_in_the_hierarchy_found() {
        // Every Linux with cgroups mounted has some hierarchy; where the
        // cpuset controller is missing, find says why.
        match find() {
            Ok(controller) => {
                let own = controller.cgroup_of(std::process::id() as i32).unwrap();
                assert!(own.starts_with(controller.root()), "{own:?}");
                assert!(own.join("cgroup.procs").exists(), "{own:?}");
            }
            Err(e) => assert!(e.to_string().contains("cpuset"), "{e}"),
        }
    }
}
