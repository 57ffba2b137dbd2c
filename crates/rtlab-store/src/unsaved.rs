//! Runs the store cannot take (disk full, a read-only file) are kept as
//! files, so that results are never lost (docs/store.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use rtlab_core::result::{check_run_id, printable, RunResult};

use crate::{Store, StoreError};

/// Where runs the store could not take are kept: `unsaved/` in rtlab's
/// state directory (`$RTLAB_STATE_DIR`, `/run/rtlab` for root: see
/// `rtlab_core::journal::state_dir`).
pub fn unsaved_dir() -> PathBuf {
    rtlab_core::journal::state_dir().join("unsaved")
}

/// Writes `run` as rtlab.run/1 JSON to `dir/ID.json` so that no reader
/// (nor a crash) sees half of it: a temporary file beside it, flushed to
/// disk, renamed, and the directory flushed. Returns the file's path.
pub fn keep_unsaved(run: &RunResult, dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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
    let name = match check_run_id(&run.id) {
        Ok(()) => format!("{}.json", run.id),
        Err(_) => format!("run-{}.json", RunResult::new_id()),
    };
    let path = dir.join(&name);
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        serde_json::to_writer_pretty(&mut file, run)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map(|()| path)
}

impl Store {
    /// [`Store::save`], and when that fails, the run kept as a file in
    /// [`unsaved_dir`] so that it is not lost: the error
    /// ([`StoreError::Unsaved`]) names the file and how to store it later.
    pub fn save_or_keep(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.save_or_keep_in(run, &unsaved_dir())
    }

    /// [`Store::save_or_keep`] with the fallback directory given.
    pub fn save_or_keep_in(&mut self, run: &RunResult, dir: &Path) -> Result<(), StoreError> {
        let cause = match self.save(run) {
            Ok(()) => return Ok(()),
            Err(cause) => cause,
        };
        let kept = keep_unsaved(run, dir).map_err(|e| format!("{}: {e}", dir.display()));
        Err(StoreError::Unsaved {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            cause: Box::new(cause),
            kept,
        })
    }
}

/// Refuses a directory that is a symbolic link, is not ours, or that
/// group or others may write.
fn trusted_dir(dir: &Path) -> std::io::Result<()> {
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
