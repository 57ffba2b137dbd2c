//! Runs the store cannot take (disk full, a read-only file) are kept as
//! files, so that results are never lost (docs/store.md).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rtlab_core::fsutil;
use rtlab_core::result::{check_run_id, RunResult};

/// A directory a run the store could not take may be kept in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsavedDir {
    pub dir: PathBuf,
    /// Emptied at reboot (`/run`, `$XDG_RUNTIME_DIR`): used only when the
    /// places before it could not be written.
    pub volatile: bool,
}

/// Where a run was kept: the file, and when it is in a volatile directory
/// because the persistent one failed, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub file: PathBuf,
    /// Set when the file is in a directory emptied at reboot: what
    /// happened to the persistent places tried first (if any).
    pub volatile: Option<String>,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(why) = &self.volatile {
            write!(f, " ({why})")?;
        }
        Ok(())
    }
}

/// Where runs the store could not take are kept, in the order tried:
/// `$RTLAB_STATE_DIR/unsaved` alone when that is set; for root
/// `/var/lib/rtlab/unsaved`, then `/run/rtlab/unsaved` (emptied at
/// reboot) when the first cannot be written (the disk that is full may be
/// that one); for others `$XDG_STATE_HOME/rtlab/unsaved` (else
/// `~/.local/state/rtlab/unsaved`), then `unsaved/` in the state directory
/// (`rtlab_core::journal::state_dir`).
pub fn unsaved_dirs() -> Vec<UnsavedDir> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    choose_unsaved_dirs(
        std::env::var_os("RTLAB_STATE_DIR"),
        euid,
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
        rtlab_core::journal::state_dir(),
    )
}

/// The first of [`unsaved_dirs`] (where a run is kept when it can be).
pub fn unsaved_dir() -> PathBuf {
    unsaved_dirs()
        .into_iter()
        .next()
        .map(|d| d.dir)
        .unwrap_or_else(|| rtlab_core::journal::state_dir().join("unsaved"))
}

#[doc(hidden)]
pub fn choose_unsaved_dirs(
    explicit_state: Option<OsString>,
    euid: u32,
    xdg_state_home: Option<OsString>,
    home: Option<OsString>,
    state_dir: PathBuf,
) -> Vec<UnsavedDir> {
    let volatile = UnsavedDir {
        dir: state_dir.join("unsaved"),
        volatile: true,
    };
    if explicit_state.is_some_and(|d| !d.is_empty()) {
        // Where the user put rtlab's state: persistent or not, their choice.
        return vec![UnsavedDir {
            volatile: false,
            ..volatile
        }];
    }
    let absolute = |d: Option<OsString>| d.map(PathBuf::from).filter(|d| d.is_absolute());
    let persistent = match euid {
        0 => Some(PathBuf::from("/var/lib/rtlab")),
        _ => absolute(xdg_state_home)
            .map(|d| d.join("rtlab"))
            .or_else(|| absolute(home).map(|h| h.join(".local/state/rtlab"))),
    };
    persistent
        .map(|d| UnsavedDir {
            dir: d.join("unsaved"),
            volatile: false,
        })
        .into_iter()
        .chain([volatile])
        .collect()
}

/// Keeps `run` in the first of `dirs` that takes it ([`keep_unsaved`]).
/// Returns the file, with why it is in a volatile directory when it is; or
/// why no directory took it.
pub fn keep_unsaved_in(run: &RunResult, dirs: &[UnsavedDir]) -> Result<Kept, String> {
    let mut failed = Vec::new();
    for place in dirs {
        match keep_unsaved(run, &place.dir) {
            Ok(file) => {
                let volatile = place.volatile.then(|| {
                    let mut why =
                        "emptied at reboot: import it or copy it elsewhere before".to_string();
                    if !failed.is_empty() {
                        why.push_str(&format!("; {}", failed.join("; ")));
                    }
                    why
                });
                return Ok(Kept { file, volatile });
            }
            Err(e) => failed.push(format!("{} could not be written: {e}", place.dir.display())),
        }
    }
    Err(failed.join("; "))
}

/// Writes `run` as rtlab.run/1 JSON to `dir/ID.json` so that no reader
/// (nor a crash) sees half of it: through `rtlab_core::fsutil` (a
/// temporary file beside it, flushed to disk, linked to its name, never
/// over another file: a run kept before under the same id stays, and this
/// one becomes `ID.2.json`, ...; then the directory flushed), 0600.
/// Returns the file's path.
pub fn keep_unsaved(run: &RunResult, dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // As for the journal beside it: under /tmp another user may have made
    // the directory (or a link) first, to read or replace what we write.
    for checked in [Some(dir), dir.parent()].into_iter().flatten() {
        trusted_dir(checked)?;
    }
    // The id names the file only when it is a valid id (no `/`, no `..`).
    let stem = match check_run_id(&run.id) {
        Ok(()) => run.id.clone(),
        Err(_) => format!("run-{}", RunResult::new_id()),
    };
    let mut json = serde_json::to_vec_pretty(run)?;
    json.push(b'\n');
    let new_private = fsutil::Options {
        mode: Some(0o600),
        create_new: true,
    };
    let mut n = 1;
    loop {
        let name = match n {
            1 => format!("{stem}.json"),
            _ => format!("{stem}.{n}.json"),
        };
        let path = dir.join(name);
        match fsutil::write_atomic_bytes_with(&path, &json, new_private) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Refuses a directory that is a symbolic link, is not ours, or that
/// group or others may write.
pub(crate) fn trusted_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let why = if md.file_type().is_symlink() {
        "it is a symbolic link".to_string()
    } else if !md.is_dir() {
        "it is not a directory".to_string()
    } else if md.uid() != euid {
        format!("it is owned by uid {}, not by uid {euid}", md.uid())
    } else if md.mode() & 0o022 != 0 {
        format!(
            "group or others may write it (mode {:o})",
            md.mode() & 0o7777
        )
    } else {
        return Ok(());
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{}: {why}", dir.display()),
    ))
}
