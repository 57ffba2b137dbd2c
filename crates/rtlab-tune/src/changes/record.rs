//! The record on disk: where it lives, reading and writing it under its
//! lock, and writing the files it records.

use super::entry::Entry;
use super::error::ChangeError;
use rtlab_core::fsutil;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "rtlab.tune-changes/1";
pub(super) const FILE_NAME: &str = "tune-changes.json";
/// The start of the name of the temporary files of the record that an
/// rtlab before `rtlab_core::fsutil` wrote (one may still be left).
pub(super) const TEMP_PREFIX: &str = ".tune-changes.json.tmp";
const LOCK_NAME: &str = "tune-changes.lock";

/// Where the record lives: `$RTLAB_STATE_DIR`, else `/var/lib/rtlab` for
/// root (it must survive a reboot, for the files it records), else
/// `$XDG_STATE_HOME/rtlab`, else `~/.local/state/rtlab`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RTLAB_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/rtlab");
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Path::new(&dir).join("rtlab");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Path::new(&home).join(".local/state/rtlab"),
        // SAFETY: as above.
        None => PathBuf::from(format!("/tmp/rtlab-state-{}", unsafe { libc::geteuid() })),
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) schema: String,
    pub(super) next_txn: u64,
    pub(super) entries: Vec<Entry>,
}

/// The change record in one directory.
#[derive(Debug, Clone)]
pub struct ChangeLog {
    dir: PathBuf,
}

impl ChangeLog {
    pub fn at(dir: impl Into<PathBuf>) -> ChangeLog {
        ChangeLog { dir: dir.into() }
    }

    pub fn default_location() -> ChangeLog {
        ChangeLog::at(default_dir())
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// Every recorded change, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>, ChangeError> {
        let _lock = self.lock()?;
        Ok(self.read()?.entries)
    }

    fn record_error(&self, source: io::Error) -> ChangeError {
        ChangeError::Record {
            path: self.path(),
            source,
        }
    }

    pub(super) fn lock(&self) -> Result<Lock, ChangeError> {
        fs::create_dir_all(&self.dir).map_err(|e| self.record_error(e))?;
        self.check_dir().map_err(|reason| {
            self.record_error(io::Error::new(io::ErrorKind::PermissionDenied, reason))
        })?;
        Lock::take(&self.dir.join(LOCK_NAME)).map_err(|e| self.record_error(e))
    }

    /// As root, undo writes files and changes threads on the record's say
    /// so: a record someone else could have written is refused.
    fn check_dir(&self) -> Result<(), String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(());
        }
        let meta = fs::metadata(&self.dir).map_err(|e| e.to_string())?;
        if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "the state directory {} belongs to uid {} (mode {:o}); as root rtlab keeps its \
                 change record only where no one else can write",
                self.dir.display(),
                meta.uid(),
                meta.mode() & 0o7777
            ));
        }
        Ok(())
    }

    pub(super) fn read(&self) -> Result<Record, ChangeError> {
        let path = self.path();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Record {
                    schema: SCHEMA.into(),
                    ..Record::default()
                })
            }
            Err(e) => return Err(self.record_error(e)),
        };
        let record: Record = serde_json::from_str(&text).map_err(|e| {
            self.record_error(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a change record ({e}); move it aside to start afresh"),
            ))
        })?;
        if record.schema != SCHEMA {
            return Err(self.record_error(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("schema '{}', this rtlab reads '{SCHEMA}'", record.schema),
            )));
        }
        Ok(record)
    }

    /// Writes the record durably (`rtlab_core::fsutil`: a temporary file
    /// beside it, fsynced, renamed, the directory fsynced), 0600. Called
    /// under the lock only, so a temporary file of ours found there is one
    /// a killed rtlab left part way (`kill -9` during `tune apply`):
    /// removed, where it was left for good in rtlab's state directory.
    pub(super) fn write(&self, record: &Record) -> Result<(), ChangeError> {
        let json = serde_json::to_vec_pretty(record).expect("the record serializes");
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if is_temporary(&entry.file_name()) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        let private = fsutil::Options {
            mode: Some(0o600),
            ..fsutil::Options::default()
        };
        fsutil::write_atomic_bytes_with(&self.path(), &json, private)
            .map_err(|e| self.record_error(e))
    }

    /// Read, modify and write the record under the lock.
    pub(super) fn update<T>(
        &self,
        f: impl FnOnce(&mut Record) -> Result<T, ChangeError>,
    ) -> Result<T, ChangeError> {
        let _lock = self.lock()?;
        let mut record = self.read()?;
        let value = f(&mut record)?;
        self.write(&record)?;
        Ok(value)
    }
}

/// Whether `name` is a temporary file of the record's (fsutil's, or an
/// older rtlab's).
pub(super) fn is_temporary(name: &OsStr) -> bool {
    name.to_string_lossy().starts_with(TEMP_PREFIX)
        || fsutil::temporary_of(name) == Some(OsStr::new(FILE_NAME))
}

/// Writes a file `rtlab tune` manages (a systemd drop-in or unit) durably
/// (`rtlab_core::fsutil`), creating its directory: 0644, as units are read
/// by systemd (root) and listed by users.
pub(super) fn write_atomically(path: &Path, contents: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let public = fsutil::Options {
        mode: Some(0o644),
        ..fsutil::Options::default()
    };
    fsutil::write_atomic_bytes_with(path, contents.as_bytes(), public)
}

/// An exclusive flock held until dropped: one rtlab at a time edits the
/// record (a `watch` and a `set` may run together).
pub(super) struct Lock(File);

impl Lock {
    fn take(path: &Path) -> io::Result<Lock> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        // SAFETY: a valid descriptor; flock has no memory effects.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Lock(file))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: as above; closing would release it too.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}
