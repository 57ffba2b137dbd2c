//! A socket file rtlab bound (`rtlab exec serve`'s): a killed server
//! leaves it behind, so it is journaled as soon as it exists and removed
//! on restore, but only while the path is still that socket (same device
//! and inode): a socket bound there since by someone else is left alone.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::entry::{Entry, Outcome, Restored};
use super::error::{io_message, JournalError};
use super::record::Journal;

impl Journal {
    /// Records the socket just bound at `path`. On error nothing is
    /// recorded (and the caller must remove the socket itself).
    pub fn note_socket(&mut self, path: &Path, note: &str) -> Result<(), JournalError> {
        let meta = std::fs::symlink_metadata(path).map_err(|source| JournalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let _lock = self.prepare()?;
        self.record(Entry::Socket {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            note: note.to_string(),
        })
    }

    /// The normal end of a socket recorded with [`Journal::note_socket`]:
    /// removes it (if still the same) and drops the entry.
    pub fn remove_socket(&mut self, path: &Path) -> Option<Restored> {
        self.undo_first(|e| matches!(e, Entry::Socket { path: p, .. } if p == path))
    }
}

/// Removes the socket at `path` if it is still the one recorded.
pub(super) fn remove_socket_file(path: &Path, dev: u64, ino: u64) -> Outcome {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Outcome::Skipped {
            reason: "it is already gone".into(),
        },
        Err(e) => Outcome::Failed {
            error: io_message(&e),
        },
        Ok(meta) if !meta.file_type().is_socket() || meta.dev() != dev || meta.ino() != ino => {
            Outcome::Skipped {
                reason: "the path now holds another file: left alone".into(),
            }
        }
        Ok(_) => match std::fs::remove_file(path) {
            Ok(()) => Outcome::Removed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Outcome::Skipped {
                reason: "it is already gone".into(),
            },
            Err(e) => Outcome::Failed {
                error: io_message(&e),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn a_socket_is_removed_only_while_it_is_the_same() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let path = tmp.path().join("exec.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let mut j = Journal::new(dir.clone());
        j.note_socket(&path, "test").unwrap();
        let restored = j.remove_socket(&path).unwrap();
        assert!(matches!(restored.outcome, Outcome::Removed), "{restored}");
        assert!(!path.exists());
        assert!(journal_files(&dir).is_empty());
        drop(listener);

        let _first = std::os::unix::net::UnixListener::bind(&path).unwrap();
        j.note_socket(&path, "test").unwrap();
        std::fs::remove_file(&path).unwrap();
        let _second = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let restored = j.remove_socket(&path).unwrap();
        assert!(
            matches!(restored.outcome, Outcome::Skipped { .. }),
            "{restored}"
        );
        assert!(path.exists(), "another socket bound since is left alone");
    }
}
