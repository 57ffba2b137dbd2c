//! The on-disk format: journal file names, reading one, and writing and
//! removing one durably.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::entry::Entry;
use super::owner::Owner;
use super::state_dir::euid;
use crate::fsutil;

/// Upper bound for a journal file; anything larger is not ours.
const MAX_JOURNAL_LEN: u64 = 16 * 1024 * 1024;

/// Value of the `schema` field of every journal file.
pub const SCHEMA: &str = "rtlab.journal/1";

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct JournalFile {
    pub(super) schema: String,
    pub(super) owner: Owner,
    pub(super) created_at: String,
    pub(super) entries: Vec<Entry>,
}

pub(super) fn journal_name(pid: u32, starttime: u64) -> String {
    format!("journal-{pid}-{starttime}.json")
}

fn is_journal_name(name: &str) -> bool {
    name.starts_with("journal-") && name.ends_with(".json")
}

/// The owner encoded in a journal (or journal.tmp) file name.
pub(super) fn owner_from_name(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_prefix("journal-")?;
    let stem = stem.strip_suffix(".tmp").unwrap_or(stem);
    let stem = stem.strip_suffix(".json")?;
    let (pid, starttime) = stem.split_once('-')?;
    Some((pid.parse().ok()?, starttime.parse().ok()?))
}

pub(super) fn list_journals(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut journals = Vec::new();
    for dirent in fs::read_dir(dir)? {
        let dirent = dirent?;
        if dirent.file_name().to_str().is_some_and(is_journal_name) {
            journals.push(dirent.path());
        }
    }
    journals.sort();
    Ok(journals)
}

pub(super) fn read_journal(path: &Path) -> Result<JournalFile, String> {
    let md = fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !md.is_file() {
        return Err("not a regular file".into());
    }
    if md.uid() != euid() {
        return Err(format!(
            "owned by uid {}, not by uid {}; not replaying a journal someone else wrote",
            md.uid(),
            euid()
        ));
    }
    let mut text = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_JOURNAL_LEN).read_to_end(&mut text))
        .map_err(|e| e.to_string())?;
    let journal: JournalFile =
        serde_json::from_slice(&text).map_err(|e| format!("not a valid journal: {e}"))?;
    if journal.schema != SCHEMA {
        return Err(format!(
            "unknown schema {:?} (this rtlab understands {SCHEMA:?})",
            journal.schema
        ));
    }
    Ok(journal)
}

/// The temporary name an rtlab before the shared writer used while
/// writing `path` (`<journal>.tmp`): one may still be left by a crash.
#[cfg(test)]
pub(super) fn old_tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The owner of the journal a temporary file in the state directory was
/// written for (a `.NAME.<hex>.tmp` of [`crate::fsutil`], or the
/// `<journal>.tmp` of an older rtlab), when it is one.
pub(super) fn owner_of_tmp(name: &str) -> Option<(u32, u64)> {
    match crate::fsutil::temporary_of(OsStr::new(name)) {
        Some(journal) => owner_from_name(journal.to_str()?),
        None if name.ends_with(".json.tmp") => owner_from_name(name),
        None => None,
    }
}

/// Write-to-temp, fsync, rename, fsync directory: after this returns the
/// file is on disk with either the old or the new content, never half;
/// readable by its owner only (0600, whatever the umask).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let private = fsutil::Options {
        mode: Some(0o600),
        ..fsutil::Options::default()
    };
    fsutil::write_atomic_bytes_with(path, bytes, private)
}

/// Removes a journal and fsyncs the state directory.
pub(super) fn remove_durably(path: &Path) -> io::Result<()> {
    fsutil::remove_durably(path)
}

impl JournalFile {
    pub(super) fn clone_header(&self) -> JournalFile {
        JournalFile {
            schema: self.schema.clone(),
            owner: self.owner.clone(),
            created_at: self.created_at.clone(),
            entries: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_names() {
        assert_eq!(owner_from_name("journal-12-345.json"), Some((12, 345)));
        assert_eq!(owner_from_name("journal-12-345.json.tmp"), Some((12, 345)));
        assert_eq!(owner_from_name("journal-x.json"), None);
        assert_eq!(owner_of_tmp("journal-12-345.json.tmp"), Some((12, 345)));
        assert_eq!(
            owner_of_tmp(".journal-12-345.json.0123456789abcdef.tmp"),
            Some((12, 345))
        );
        assert_eq!(owner_of_tmp("journal-12-345.json"), None);
    }
}
