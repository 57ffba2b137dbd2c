//! Where journal files live, who may write there, and the lock held on that
//! directory while checking for conflicts and making a change.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::error::JournalError;

pub(super) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Where journal files live: `$RTLAB_STATE_DIR`, else `/run/rtlab` for root,
/// else `$XDG_RUNTIME_DIR/rtlab`, else `/tmp/rtlab-<euid>`.
pub fn state_dir() -> PathBuf {
    choose_state_dir(
        std::env::var_os("RTLAB_STATE_DIR"),
        euid(),
        std::env::var_os("XDG_RUNTIME_DIR"),
    )
}

fn choose_state_dir(explicit: Option<OsString>, euid: u32, xdg: Option<OsString>) -> PathBuf {
    if let Some(dir) = explicit.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if euid == 0 {
        return PathBuf::from("/run/rtlab");
    }
    if let Some(xdg) = xdg.filter(|d| !d.is_empty()) {
        return Path::new(&xdg).join("rtlab");
    }
    PathBuf::from(format!("/tmp/rtlab-{euid}"))
}

pub(super) fn ensure_state_dir(dir: &Path) -> Result<(), JournalError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| JournalError::StateDir {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
    check_state_dir(dir).map_err(|reason| JournalError::StateDir {
        path: dir.to_path_buf(),
        reason,
    })
}

/// Root replays whatever journals it finds here, so nobody else may be able
/// to plant one: the directory must be ours and not writable by others
/// (this also defeats a pre-created `/tmp/rtlab-<uid>`).
pub(super) fn check_state_dir(dir: &Path) -> Result<(), String> {
    let md = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if md.file_type().is_symlink() {
        return Err("it is a symbolic link".into());
    }
    if !md.is_dir() {
        return Err("not a directory".into());
    }
    if md.uid() != euid() {
        return Err(format!("owned by uid {}, not by uid {}", md.uid(), euid()));
    }
    if md.mode() & 0o022 != 0 {
        return Err(format!(
            "writable by group or others (mode {:o})",
            md.mode() & 0o7777
        ));
    }
    Ok(())
}

/// An exclusive flock on a directory (the state directory, held while
/// checking for conflicts and making a change, and while recovering; a
/// cpuset root while a focus starts); released on drop.
pub struct DirLock {
    _dir: File,
}

pub fn lock_dir(dir: &Path) -> io::Result<DirLock> {
    let file = File::open(dir)?;
    loop {
        // SAFETY: the fd is valid for the lifetime of `file`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(DirLock { _dir: file });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{recover_stale, Journal};
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn insecure_state_dir_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path().join("open");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        let err = j.set_file(&knob, "0").unwrap_err();
        assert!(matches!(err, JournalError::StateDir { .. }), "{err}");
        assert_eq!(content(&knob), "1\n");
        assert_eq!(recover_stale(&dir).len(), 1);
    }

    #[test]
    fn state_dir_is_created_private() {
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path().join("a/b");
        let mut j = Journal::new(dir.clone());
        j.set_file(&target(&tmp, "knob", "1"), "0").unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn state_dir_choice() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            choose_state_dir(os("/x"), 0, os("/run/user/1")),
            PathBuf::from("/x")
        );
        assert_eq!(
            choose_state_dir(None, 0, os("/run/user/1")),
            PathBuf::from("/run/rtlab")
        );
        assert_eq!(
            choose_state_dir(os(""), 1000, os("/run/user/1000")),
            PathBuf::from("/run/user/1000/rtlab")
        );
        assert_eq!(
            choose_state_dir(None, 1000, None),
            PathBuf::from("/tmp/rtlab-1000")
        );
    }
}
