//! A socket file rtlab bound (`rtlab exec serve`'s): a killed server
//! leaves it behind, so it is journaled as soon as it exists and removed
//! on restore, but only while the path is still that socket (same device
//! and inode): a socket bound there since by someone else is left alone.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::entry::Outcome;
use super::error::io_message;

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
