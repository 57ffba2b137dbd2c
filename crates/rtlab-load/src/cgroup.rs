//! A private cgroup v2 per load (`rtlab-load-<pid>` under the worker's own
//! cgroup) where one is writable: everything the load starts stays in it,
//! even processes that leave the process group, and `cgroup.kill` ends
//! them all. Without a writable cgroup v2 a load has its process group only.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Prefix of the cgroups (and temporary directories) a load makes.
pub const NAME_PREFIX: &str = "rtlab-load-";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    pub path: PathBuf,
}

/// The cgroup v2 directory this process is in, if cgroup v2 is mounted.
pub fn own_v2_dir() -> Option<PathBuf> {
    let mount = super::sys::mounts()
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")?;
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    // A namespace-relative path shown from outside the mount's root cannot be used.
    if rel.contains("/..") {
        return None;
    }
    let dir = mount.cgroup_dir(rel);
    dir.join("cgroup.procs").exists().then_some(dir)
}

impl Cgroup {
    /// Makes `<own cgroup>/rtlab-load-<pid>` and moves this process into
    /// it. Err says why not (no cgroup v2, not writable, ...).
    pub fn create_for_self() -> Result<Cgroup, String> {
        let base = own_v2_dir().ok_or("no cgroup v2 mounted or this process's cgroup not found")?;
        remove_stale_siblings(&base);
        let pid = std::process::id();
        let cgroup = Cgroup {
            path: base.join(format!("{NAME_PREFIX}{pid}")),
        };
        std::fs::create_dir(&cgroup.path)
            .map_err(|e| format!("cannot create {}: {e}", cgroup.path.display()))?;
        if let Err(e) = std::fs::write(cgroup.path.join("cgroup.procs"), "0") {
            let _ = std::fs::remove_dir(&cgroup.path);
            return Err(format!("cannot move into {}: {e}", cgroup.path.display()));
        }
        Ok(cgroup)
    }

    /// A child cgroup (for the processes of a `cmd` load).
    pub fn create_child(&self, name: &str) -> io::Result<Cgroup> {
        let path = self.path.join(name);
        std::fs::create_dir(&path)?;
        Ok(Cgroup { path })
    }

    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// Pids in this cgroup and its descendants.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        collect_pids(&self.path, &mut pids);
        pids
    }

    /// Whether any process is in it or below it.
    pub fn populated(&self) -> bool {
        match std::fs::read_to_string(self.path.join("cgroup.events")) {
            Ok(text) => text.lines().any(|l| l == "populated 1"),
            Err(_) => !self.pids().is_empty(),
        }
    }

    /// SIGKILLs everything in it and below: `cgroup.kill` (Linux ≥ 5.14),
    /// else every pid listed, until none is left or `timeout` passes.
    /// The caller must not be inside.
    pub fn kill_all(&self, timeout: Duration) -> bool {
        if !self.path.exists() {
            return true;
        }
        let deadline = Instant::now() + timeout;
        let has_kill = std::fs::write(self.path.join("cgroup.kill"), "1").is_ok();
        loop {
            if !self.populated() {
                return true;
            }
            if !has_kill {
                self.signal_all(libc::SIGKILL);
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `signal` to every process in it and below (each pinned by
    /// pidfd and checked to still be a member, so a recycled pid is never
    /// hit). The caller must not be inside.
    pub fn signal_all(&self, signal: i32) {
        for pid in self.pids() {
            signal_pid_pinned(pid, &self.path, signal);
        }
    }

    /// Removes it and its (empty) children.
    pub fn remove(&self) -> io::Result<()> {
        remove_tree(&self.path)
    }

    /// Moves the calling process back to the parent cgroup, so that this
    /// one can be removed.
    pub fn leave(&self) -> io::Result<()> {
        let parent = self
            .path
            .parent()
            .ok_or_else(|| io::Error::other("cgroup without parent"))?;
        std::fs::write(parent.join("cgroup.procs"), "0")
    }
}

fn collect_pids(dir: &Path, pids: &mut Vec<i32>) {
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                collect_pids(&entry.path(), pids);
            }
        }
    }
}

fn remove_tree(dir: &Path) -> io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path())?;
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// `signal` to a pid that is (still) in the cgroup `dir`, pinned by pidfd
/// so a recycled pid is never hit.
fn signal_pid_pinned(pid: i32, dir: &Path, signal: i32) {
    super::sys::signal_pinned(pid, signal, || {
        let mut pids = Vec::new();
        collect_pids(dir, &mut pids);
        pids.contains(&pid)
    });
}

/// Removes `rtlab-load-<pid>` cgroups left by workers that were killed
/// with their parent: only when that pid is gone and the cgroup is empty
/// (rmdir refuses a populated cgroup).
fn remove_stale_siblings(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(NAME_PREFIX))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !super::sys::pid_alive(pid) {
            let _ = remove_tree(&entry.path());
        }
    }
}
