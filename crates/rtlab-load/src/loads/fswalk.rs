//! The `fswalk` load: `ls -lR` (or `ls -RU`) of a tree, again and again.

use super::super::ctx::Ctx;
use super::started::Started;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Filesystems a walk never enters: kernel pseudo filesystems (whose
/// files are not files) and network filesystems (not ours to hammer).
const SKIPPED_FS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "mqueue",
    "hugetlbfs",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "selinuxfs",
    "nsfs",
    "rpc_pipefs",
    "nfsd",
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "glusterfs",
    "9p",
    "afs",
    "sshfs",
];

fn skipped_mounts(root: &Path) -> Vec<PathBuf> {
    let mut skip: Vec<PathBuf> = super::super::sys::mounts()
        .into_iter()
        .filter(|m| SKIPPED_FS.contains(&m.fs_type.as_str()) || m.fs_type.starts_with("fuse."))
        .map(|m| m.mount_point)
        .collect();
    for pseudo in ["/proc", "/sys", "/dev"] {
        skip.push(PathBuf::from(pseudo));
    }
    // The root itself is walked when asked for explicitly.
    skip.retain(|m| m != root);
    skip.sort();
    skip.dedup();
    skip
}

pub(super) fn start_fswalk(
    ctx: &Ctx,
    started: &mut Started,
    root: &Path,
    workers: u32,
    stat: bool,
) -> Result<(), String> {
    let meta = std::fs::metadata(root)
        .map_err(|e| format!("fswalk: cannot walk {}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("fswalk: {} is not a directory", root.display()));
    }
    let skip = Arc::new(skipped_mounts(root));
    for i in 0..workers {
        let c = ctx.clone();
        let r = root.to_path_buf();
        let s = Arc::clone(&skip);
        started.spawn(ctx, format!("fswalk-{i}"), move || {
            fswalk_loop(&c, &r, &s, stat)
        })?;
    }
    Ok(())
}

/// `ls -lR ROOT` (lstat of every entry, symlinks not followed) or, with
/// no-stat, `ls -RU ROOT` (names and d_type only), again and again.
fn fswalk_loop(ctx: &Ctx, root: &Path, skip: &[PathBuf], stat: bool) {
    let entries = ctx.counters.get("entries");
    let stats = ctx.counters.get("lstats");
    let dirs = ctx.counters.get("dirs");
    let walks = ctx.counters.get("walks");
    let errors = ctx.counters.get("errors");
    while !ctx.stopping() {
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if ctx.stopping() {
                return;
            }
            let Ok(list) = std::fs::read_dir(&dir) else {
                errors.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            dirs.fetch_add(1, Ordering::Relaxed);
            for entry in list {
                if ctx.stopping() {
                    return;
                }
                let Ok(entry) = entry else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                entries.fetch_add(1, Ordering::Relaxed);
                let path = entry.path();
                let is_dir = if stat {
                    // lstat: a symlink is reported as a symlink, never followed.
                    match std::fs::symlink_metadata(&path) {
                        Ok(m) => {
                            stats.fetch_add(1, Ordering::Relaxed);
                            m.file_type().is_dir()
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            false
                        }
                    }
                } else {
                    entry.file_type().is_ok_and(|t| t.is_dir())
                };
                if is_dir && !skip.contains(&path) {
                    stack.push(path);
                }
            }
        }
        walks.fetch_add(1, Ordering::Relaxed);
    }
}
