//! Whether a file could have been written, or swapped for another, by a
//! user other than root: the question behind a rules file root applies, a
//! rule's `exe =` and the binary a systemd unit runs as root.
//!
//! The path is walked one name at a time as the kernel resolves it, so every
//! directory crossed counts, the ones a symlink lives in as well as the ones
//! it points into: `/tmp/x/rules.toml -> /etc/rtlab/rules.toml` in a
//! directory others may write is refused although its target is safe (the
//! link itself can be replaced).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// More symlinks than the kernel follows (MAXSYMLINKS) is a loop.
const MAX_LINKS: usize = 40;

/// Refuses `path` unless every directory crossed to reach it belongs to
/// root and is writable by no one else (or is sticky, as /tmp is, and what
/// it holds on the way belongs to root: then only root may rename or remove
/// it), every symlink on the way is as safe, and the file it names belongs
/// to root and is writable by neither group nor others. `meta` is the file's
/// own metadata when the caller has it open (checked instead of a fresh
/// look-up, so a file swapped after it was opened cannot slip in).
pub fn check_root_only(path: &Path, meta: Option<&fs::Metadata>) -> Result<(), String> {
    let target = walk(path)?;
    let found =
        fs::metadata(&target).map_err(|e| format!("cannot read {}: {e}", target.display()))?;
    match meta {
        // What the walk found must be what the caller opened.
        Some(opened) if (opened.dev(), opened.ino()) != (found.dev(), found.ino()) => Err(format!(
            "was replaced while being read ({} is another file now)",
            target.display()
        )),
        Some(opened) => check_file(&target, opened),
        None => check_file(&target, &found),
    }
}

/// [`check_root_only`] for a directory: every directory crossed to reach
/// it, and itself, belong to root and are writable by no one else (or are
/// sticky).
pub fn check_directory(dir: &Path) -> Result<(), String> {
    let resolved = walk(dir)?;
    check_dir(&resolved)
}

/// The owner and mode checks of the file itself.
pub fn check_file(path: &Path, meta: &fs::Metadata) -> Result<(), String> {
    if meta.uid() != 0 {
        return Err(format!(
            "is owned by uid {}, not root (fix: chown root: {})",
            meta.uid(),
            path.display()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "is writable by {} (mode {:o}) (fix: chmod go-w {})",
            if meta.mode() & 0o002 != 0 {
                "everyone"
            } else {
                "its group"
            },
            meta.mode() & 0o7777,
            path.display()
        ));
    }
    Ok(())
}

/// Resolves `path` name by name, checking each directory crossed and each
/// symlink followed; returns the resolved path.
fn walk(path: &Path) -> Result<PathBuf, String> {
    let absolute =
        std::path::absolute(path).map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    let mut pending: Vec<PathBuf> = Vec::new();
    push_components(&absolute, &mut pending);
    let mut current = PathBuf::from("/");
    check_dir(&current)?;
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name.as_os_str() == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&name);
        let meta = fs::symlink_metadata(&next)
            .map_err(|e| format!("cannot read {}: {e}", next.display()))?;
        // `current` was checked when it was entered; what it holds may be
        // replaced only if it is writable by others (sticky or not).
        let parent = fs::metadata(&current)
            .map_err(|e| format!("cannot read {}: {e}", current.display()))?;
        if parent.mode() & 0o022 != 0 && meta.uid() != 0 {
            return Err(format!(
                "is reached through {}, which belongs to uid {} inside {} that others may write \
                 (mode {:o}), so it could be replaced",
                next.display(),
                meta.uid(),
                current.display(),
                parent.mode() & 0o7777
            ));
        }
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(format!("{}: too many levels of symlinks", path.display()));
            }
            let target =
                fs::read_link(&next).map_err(|e| format!("cannot read {}: {e}", next.display()))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            push_components(&target, &mut pending);
            continue;
        }
        current = next;
        if !pending.is_empty() {
            check_dir(&current)?;
        }
    }
    Ok(current)
}

/// Pushes `path`'s names in reverse, so popping yields them in order.
fn push_components(path: &Path, pending: &mut Vec<PathBuf>) {
    let names: Vec<PathBuf> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(names.into_iter().rev());
}

/// A directory on the way: root's, and writable by no one else unless
/// sticky.
fn check_dir(dir: &Path) -> Result<(), String> {
    let meta = fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let sticky = meta.mode() & 0o1000 != 0;
    let others_may_write = meta.mode() & 0o022 != 0;
    if meta.uid() != 0 || (others_may_write && !sticky) {
        return Err(format!(
            "is inside {}, which a user other than root can change (owner uid {}, mode {:o}), \
             so the file could be replaced",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn system_files_are_trusted() {
        if !is_root() {
            eprintln!("skipped: ownership checks are meaningful only for root-owned files");
            return;
        }
        check_root_only(Path::new("/etc/passwd"), None).unwrap();
    }

    #[test]
    fn a_symlink_in_a_directory_others_may_write_is_refused() {
        if !is_root() {
            eprintln!("skipped: needs root to chown");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let safe = dir.path().join("safe");
        fs::create_dir(&safe).unwrap();
        fs::write(safe.join("f"), "x").unwrap();
        fs::set_permissions(safe.join("f"), fs::Permissions::from_mode(0o644)).unwrap();
        check_root_only(&safe.join("f"), None).unwrap();

        // The link's directory is open to all (not sticky): the link could
        // be swapped, whatever it points to.
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        symlink(safe.join("f"), open.join("link")).unwrap();
        let e = check_root_only(&open.join("link"), None).unwrap_err();
        assert!(e.contains("open") && e.contains("777"), "{e}");

        // Sticky, like /tmp: a root-owned link stays; another user's does not.
        let sticky = dir.path().join("sticky");
        fs::create_dir(&sticky).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        symlink(safe.join("f"), sticky.join("root-link")).unwrap();
        check_root_only(&sticky.join("root-link"), None).unwrap();
        symlink(safe.join("f"), sticky.join("user-link")).unwrap();
        std::os::unix::fs::lchown(sticky.join("user-link"), Some(65534), None).unwrap();
        let e = check_root_only(&sticky.join("user-link"), None).unwrap_err();
        assert!(e.contains("uid 65534"), "{e}");

        // A link in a safe place to a file in an unsafe one.
        fs::write(open.join("g"), "x").unwrap();
        fs::set_permissions(open.join("g"), fs::Permissions::from_mode(0o644)).unwrap();
        symlink(open.join("g"), safe.join("to-open")).unwrap();
        let e = check_root_only(&safe.join("to-open"), None).unwrap_err();
        assert!(e.contains("could be replaced"), "{e}");

        // Relative links and `..` resolve as the kernel does.
        symlink("../safe/f", sticky.join("rel")).unwrap();
        check_root_only(&sticky.join("rel"), None).unwrap();
    }
}
