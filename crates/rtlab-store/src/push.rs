//! Runs kept as files because a PostgreSQL store could not be reached,
//! and `rtlab store push`, which stores them once it can (docs/store.md).
//!
//! A run meant for a PostgreSQL database is kept in a directory of that
//! database's own under the unsaved directory (`pg-DB-HASH`, the hash of
//! the URL as shown, without its password), so a push for one database
//! never stores another's runs. Each file is removed only after the
//! transaction that stored its run committed; a run already stored (the
//! commit landed before the connection dropped, a push run twice) is not
//! stored again, and its file is removed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use rtlab_core::result::{parse_run_json, printable};

use crate::error::StoreError;
use crate::location::Location;
use crate::open::Store;
use crate::unsaved::{trusted_dir, UnsavedDir};

/// What a write found of a run with the same id already stored.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// A stored run with this id is [`StoreError::Duplicate`].
    Refuse,
    /// Exactly this run (the same JSON) is taken as stored: a retry whose
    /// first commit landed before the connection dropped, a kept run
    /// pushed twice.
    AcceptSame,
}

/// The directory under the unsaved directory `base` where runs meant for
/// the store at `location` are kept: `base` itself for a file (as
/// always: `rtlab import` stores them), `base/pg-DB-HASH` for PostgreSQL.
pub fn kept_dir(base: &Path, location: &Location) -> PathBuf {
    match location {
        Location::File(_) => base.to_path_buf(),
        Location::Postgres(_) => {
            let shown = location.to_string();
            let db: String = shown
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
                .take(40)
                .collect();
            base.join(format!("pg-{db}-{:016x}", fnv1a(shown.as_bytes())))
        }
    }
}

/// FNV-1a, 64 bits: a name that stays the same from one rtlab to the next
/// (std's hasher may change).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What [`Store::push_kept`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PushReport {
    /// Runs stored now (ids).
    pub stored: Vec<String>,
    /// Runs that were stored already (their files removed).
    pub already: Vec<String>,
    /// Files left where they are, each with why.
    pub failed: Vec<PushFailure>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PushFailure {
    pub file: PathBuf,
    pub reason: String,
}

impl Store {
    /// Stores every run kept for this store in `dirs` (the unsaved
    /// directories: [`crate::unsaved_dirs`]), oldest file name first,
    /// each in its own transaction, removing each file once its run is
    /// committed. A file that does not read as a run, or whose run clashes
    /// with another stored under its id, stays and is reported. Losing
    /// the server stops the push (what is left stays for the next one).
    pub fn push_kept(&mut self, dirs: &[UnsavedDir]) -> Result<PushReport, StoreError> {
        let mut report = PushReport::default();
        for base in dirs {
            let dir = kept_dir(&base.dir, &self.location);
            // A directory another user may write could hold a run they
            // made up: never pushed (as root, into a shared store).
            let untrusted = [&dir, &base.dir]
                .into_iter()
                .filter(|d| d.exists())
                .find_map(|d| trusted_dir(d).err());
            if let Some(e) = untrusted {
                report.failed.push(PushFailure {
                    file: dir.clone(),
                    reason: format!("not pushed from it: {e}"),
                });
                continue;
            }
            let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
                Ok(entries) => entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    report.failed.push(PushFailure {
                        file: dir.clone(),
                        reason: format!("cannot read the directory: {e}"),
                    });
                    continue;
                }
            };
            files.sort();
            if !files.is_empty() {
                self.ensure_connected()?;
            }
            for file in files {
                let fail = |reason: String| PushFailure {
                    file: file.clone(),
                    reason,
                };
                let text = match read_kept(&file) {
                    Ok(text) => text,
                    Err(e) => {
                        report.failed.push(fail(format!("cannot read it: {e}")));
                        continue;
                    }
                };
                let run = match parse_run_json(&text) {
                    Ok(run) => run,
                    Err(e) => {
                        report.failed.push(fail(format!("it is not a run: {e}")));
                        continue;
                    }
                };
                let before = self.contains(&run.id)?;
                match self.write_all(std::slice::from_ref(&run), false, Existing::AcceptSame) {
                    Ok(()) => {
                        std::fs::remove_file(&file).map_err(|e| {
                            StoreError::Invalid(format!(
                                "run {} was stored in {}, but its kept file {} could not be \
                                 removed: {e}; remove it by hand",
                                printable(&run.id, 80),
                                self.path.display(),
                                file.display()
                            ))
                        })?;
                        match before {
                            true => report.already.push(run.id),
                            false => report.stored.push(run.id),
                        }
                    }
                    Err(e) if e.is_connection() => return Err(e),
                    Err(e) => report.failed.push(fail(e.to_string())),
                }
            }
        }
        Ok(report)
    }
}

/// A kept file's text, when it is a regular file of ours that no one
/// else may write (not a link to another file: rtlab keeps runs 0600).
fn read_kept(file: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ))
    };
    let mut opened = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
    {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return refuse("it is a symbolic link".into())
        }
        other => other?,
    };
    let md = opened.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !md.is_file() {
        return refuse("it is not a regular file".into());
    }
    if md.uid() != euid {
        return refuse(format!(
            "it is owned by uid {}, not by uid {euid}",
            md.uid()
        ));
    }
    if md.mode() & 0o022 != 0 {
        return refuse(format!(
            "group or others may write it (mode {:o})",
            md.mode() & 0o7777
        ));
    }
    let mut text = String::new();
    opened.read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_keeps_its_runs_apart() {
        let parse = |url: &str| Location::parse(Path::new(url)).unwrap();
        let base = Path::new("/var/lib/rtlab/unsaved");
        let a = kept_dir(base, &parse("postgresql://u@%2Frun%2Fpg/lab"));
        let b = kept_dir(base, &parse("postgresql://u@%2Frun%2Fpg/fleet"));
        let a_again = kept_dir(base, &parse("postgres://u:pw@/lab?host=/run/pg"));
        assert_ne!(a, b);
        assert_eq!(a, a_again, "the password and the URL's form do not matter");
        assert!(a.starts_with(base) && a.to_string_lossy().contains("pg-lab-"));
        assert_eq!(kept_dir(base, &parse("results.db")), base);
    }
}
