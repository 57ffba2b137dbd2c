//! The files a command writes besides stdout (`--json`, `--samples`,
//! `--histfile`, ...): opened before measuring, so a bad path fails in the
//! first second, and removed again when nothing was written to them.

use crate::input::InputError;
use rtlab_core::fsutil;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether `path` may take snapshots of a running command's JSON, each
/// replacing the last: a regular file or none yet, not a FIFO or a device
/// (`--json >(jq .)`, `/dev/null`), which gets one document only.
pub fn rewritable(path: &Path) -> bool {
    std::fs::metadata(path).map_or(true, |m| m.is_file())
}

/// An output file opened before measuring, so a bad path fails in the
/// first second and not after a ten-minute run.
///
/// Nothing is emptied yet: a run refused before it measures (a --sysctl
/// another rtlab holds) or a command that fails before it writes leaves a
/// file that was there as it was, and the file created here is removed
/// again when the `Output` is dropped without [`Output::keep`], if it is
/// still the empty file created (nothing was written or renamed over it).
pub struct Output {
    path: PathBuf,
    file: File,
    created: bool,
    kept: bool,
    /// Set once the writer of [`Output::writer`] has emptied the file.
    emptied: Option<Arc<AtomicBool>>,
}

/// Opens `path` (named `what` in errors) as an [`Output`], without
/// following a symlink another user could have planted (see
/// [`rtlab_core::fsutil`]).
pub fn create_output(path: &Path, what: &str) -> anyhow::Result<Output> {
    let (file, created) = fsutil::open_output(path).map_err(|e| {
        anyhow::Error::new(InputError(format!(
            "{what} {}: cannot create: {e}",
            path.display()
        )))
    })?;
    Ok(Output {
        path: path.to_path_buf(),
        file,
        created,
        kept: false,
        emptied: None,
    })
}

impl Output {
    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A writer into the file that empties it at its first write (a pipe
    /// or a device is written as it is).
    pub fn writer(&mut self) -> io::Result<Box<dyn Write + Send>> {
        let emptied = Arc::new(AtomicBool::new(false));
        self.emptied = Some(Arc::clone(&emptied));
        Ok(Box::new(EmptiedAtFirstWrite {
            file: self.file.try_clone()?,
            emptied,
        }))
    }

    /// The command went on to write it: never removed. A file given to
    /// [`Output::writer`] that nothing was written to is emptied (the run
    /// measured, so what it held is not this run's).
    pub fn keep(&mut self) -> io::Result<()> {
        self.kept = true;
        match &self.emptied {
            Some(emptied) if !emptied.load(Ordering::SeqCst) => empty(&self.file),
            _ => Ok(()),
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if self.kept || !self.created {
            return;
        }
        // Only the empty file created here: not one written since, nor
        // whatever was renamed over it.
        let (Ok(ours), Ok(there)) = (self.file.metadata(), std::fs::symlink_metadata(&self.path))
        else {
            return;
        };
        if ours.dev() == there.dev() && ours.ino() == there.ino() && there.len() == 0 {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Fails now, as bad input, when `path` cannot be written, without
/// truncating a file that is there (it is replaced atomically at the end)
/// nor following a symlink another user could have planted; a file
/// created to find out is removed again.
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    create_output(path, flag).map(drop)
}

/// Empties a regular file (a pipe or a device has nothing to empty).
fn empty(file: &File) -> io::Result<()> {
    if file.metadata()?.is_file() {
        file.set_len(0)?;
    }
    Ok(())
}

/// See [`Output::writer`].
struct EmptiedAtFirstWrite {
    file: File,
    emptied: Arc<AtomicBool>,
}

impl Write for EmptiedAtFirstWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.emptied.load(Ordering::SeqCst) {
            empty(&self.file)?;
            self.emptied.store(true, Ordering::SeqCst);
        }
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
