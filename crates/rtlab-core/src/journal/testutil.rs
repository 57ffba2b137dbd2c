//! Helpers shared by the journal's unit tests.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

pub(super) use super::owner::{read_starttime, read_stat};
pub(super) use crate::process::boot_id;

use super::entry::Entry;
use super::file::{journal_name, list_journals, JournalFile, SCHEMA};
use super::owner::Owner;

pub(super) fn target(dir: &TempDir, name: &str, value: &str) -> PathBuf {
    let path = dir.path().join(name);
    fs::write(&path, format!("{value}\n")).unwrap();
    path
}

pub(super) fn content(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

pub(super) fn journal_files(dir: &Path) -> Vec<PathBuf> {
    list_journals(dir).unwrap()
}

pub(super) fn state(tmp: &TempDir) -> PathBuf {
    let dir = tmp.path().join("state");
    DirBuilder::new().mode(0o700).create(&dir).unwrap();
    dir
}

pub(super) fn fabricate(dir: &Path, owner: Owner, entries: Vec<Entry>) -> PathBuf {
    let path = dir.join(journal_name(owner.pid, owner.starttime));
    let file = JournalFile {
        schema: SCHEMA.into(),
        owner,
        created_at: "2024-01-01T00:00:00Z".into(),
        entries,
    };
    fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

pub(super) fn dead_owner() -> Owner {
    let pid_max: u32 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Owner {
        pid: pid_max + 1,
        starttime: 1,
        command: "rtlab run".into(),
        boot_id: None,
    }
}

pub(super) fn file_entry(path: &Path, old: &str, new: &str) -> Entry {
    Entry::File {
        path: fs::canonicalize(path).unwrap(),
        old: old.into(),
        new: new.into(),
    }
}

/// A child that has exited and is not reaped yet (a zombie), reaped
/// when dropped.
pub(super) struct Zombie(libc::pid_t);

impl Zombie {
    pub(super) fn new() -> Zombie {
        // SAFETY: the child only calls _exit, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: ends the child at once, without running anything
            // of the parent's (no atexit, no destructors).
            unsafe { libc::_exit(0) };
        }
        let zombie = Zombie(pid);
        // Wait (without reaping) until it has exited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while read_stat(pid as u32).ok().map(|s| s.state) != Some('Z') {
            assert!(
                std::time::Instant::now() < deadline,
                "{pid} never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        zombie
    }

    pub(super) fn owner(&self) -> Owner {
        Owner {
            pid: self.0 as u32,
            starttime: read_starttime(self.0 as u32).unwrap(),
            command: "rtlab measure timer".into(),
            boot_id: boot_id(),
        }
    }
}

impl Drop for Zombie {
    fn drop(&mut self) {
        // SAFETY: reaps our own child; a null status pointer is allowed.
        unsafe { libc::waitpid(self.0, std::ptr::null_mut(), 0) };
    }
}
