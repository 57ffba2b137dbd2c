//! What a journal records (one entry per change) and what restoring or
//! recovering one gives, with how each is shown to a person.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::owner::Owner;
use crate::sched::ThreadSched;

/// One recorded change. Tagged by `kind` in the journal file; new kinds
/// (e.g. the scheduling policy of another pid+starttime) are new variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Entry {
    /// A sysfs/procfs value; restoring writes `old` back.
    File {
        path: PathBuf,
        old: String,
        new: String,
    },
    /// A change the kernel undoes when our file descriptor closes (PM QoS);
    /// restoring only reports it.
    Held {
        path: PathBuf,
        value: String,
        note: String,
    },
    /// A SysV semaphore set rtlab created (it outlives its creator).
    /// Restoring removes it (`IPC_RMID`), but only while the set with that
    /// id still has the recorded creation time (`sem_ctime`) and creator
    /// uid: an id reused by someone else's set is left alone.
    SysvSem {
        semid: i32,
        ctime: i64,
        cuid: u32,
        note: String,
    },
    /// The scheduling and CPUs of thread `tid` of process `pid`, changed
    /// by rtlab (`exec serve` promotes the threads that attach). Restoring
    /// puts `old` and `affinity` back, but only while the thread still has
    /// the recorded start time: a reused id is left alone.
    ThreadSched {
        pid: i32,
        tid: i32,
        starttime: u64,
        old: ThreadSched,
        /// CPU list in the kernel's notation.
        affinity: String,
        note: String,
    },
    /// A socket file rtlab bound. Restoring removes it, but only while the
    /// path is still that socket (device and inode).
    Socket {
        path: PathBuf,
        dev: u64,
        ino: u64,
        note: String,
    },
    /// A cgroup directory rtlab created (`rtlab focus`'s cpusets).
    /// Restoring moves every task still in it to `return_to` (the cgroup
    /// its tasks came from), then removes it; Skipped when it is gone.
    CgroupDir {
        path: PathBuf,
        return_to: PathBuf,
        note: String,
    },
    /// Process `pid` (with that start time) moved from cgroup `from` to
    /// cgroup `to`. Restoring moves it back, but only while it is still
    /// that process and still in `to`: a reused pid is left alone.
    CgroupProcess {
        pid: i32,
        starttime: u64,
        from: PathBuf,
        to: PathBuf,
        note: String,
    },
    /// A controller rtlab enabled in a cgroup v2 `cgroup.subtree_control`
    /// (`path`); restoring disables it again (`-controller`).
    CgroupController {
        path: PathBuf,
        controller: String,
        note: String,
    },
    /// The CPU affinities of threads as they were before rtlab moved them
    /// between cpusets (the kernel resets a thread's affinity when its
    /// cpuset changes). Restoring sets each back, only for threads that
    /// are still the recorded ones.
    ThreadAffinities {
        threads: Vec<ThreadAffinity>,
        note: String,
    },
}

/// One thread's CPUs, recorded in [`Entry::ThreadAffinities`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadAffinity {
    pub pid: i32,
    pub tid: i32,
    pub starttime: u64,
    /// CPU list in the kernel's notation.
    pub affinity: String,
}

impl Entry {
    /// The file this entry changes, for conflict detection. `Held` entries
    /// never conflict: the kernel aggregates concurrent holders itself.
    pub(super) fn changed_file(&self) -> Option<&Path> {
        match self {
            Entry::File { path, .. } => Some(path),
            Entry::Held { .. }
            | Entry::SysvSem { .. }
            | Entry::ThreadSched { .. }
            | Entry::Socket { .. }
            | Entry::CgroupDir { .. }
            | Entry::CgroupProcess { .. }
            | Entry::CgroupController { .. }
            | Entry::ThreadAffinities { .. } => None,
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::File { path, old, new } => {
                write!(
                    f,
                    "{} changed from {} to {}",
                    path.display(),
                    shown(old),
                    shown(new)
                )
            }
            Entry::Held { path, value, note } => {
                write!(f, "{} held at {} ({note})", path.display(), shown(value))
            }
            Entry::SysvSem {
                semid, ctime, note, ..
            } => write!(
                f,
                "SysV semaphore set {semid} created at {} ({note})",
                unix_time(*ctime)
            ),
            Entry::ThreadSched {
                pid,
                tid,
                old,
                affinity,
                note,
                ..
            } => write!(
                f,
                "thread {tid} of process {pid} changed from {} on CPUs {affinity} ({note})",
                old.params
            ),
            Entry::Socket { path, note, .. } => {
                write!(f, "socket {} ({note})", path.display())
            }
            Entry::CgroupDir {
                path,
                return_to,
                note,
            } => write!(
                f,
                "cgroup {} created, its tasks to go back to {} ({note})",
                path.display(),
                return_to.display()
            ),
            Entry::CgroupProcess {
                pid,
                from,
                to,
                note,
                ..
            } => write!(
                f,
                "process {pid} moved from cgroup {} to {} ({note})",
                from.display(),
                to.display()
            ),
            Entry::CgroupController {
                path,
                controller,
                note,
            } => write!(f, "+{controller} written to {} ({note})", path.display()),
            Entry::ThreadAffinities { threads, note } => write!(
                f,
                "the CPUs of {} ({note})",
                plural(threads.len(), "thread", "threads")
            ),
        }
    }
}

/// A Unix time in seconds as RFC 3339 (the number itself if out of range).
pub(super) fn unix_time(seconds: i64) -> String {
    u64::try_from(seconds)
        .ok()
        .and_then(|s| SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(s)))
        .map_or_else(
            || seconds.to_string(),
            |t| humantime::format_rfc3339_seconds(t).to_string(),
        )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Quotes values that would be ambiguous in a human line.
pub(super) fn shown(v: &str) -> String {
    if v.is_empty() || v.contains(char::is_whitespace) {
        format!("{v:?}")
    } else {
        v.to_string()
    }
}

/// `text` without control characters nor the invisible marks that turn
/// text around on a terminal (bidi overrides, embeddings and isolates),
/// each shown as `?`, cut at 200 characters: for text another process
/// chose, such as its command line.
pub(super) fn printable(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let mut out: String = text
        .chars()
        .take(200)
        .map(|c| if hidden(c) { '?' } else { c })
        .collect();
    if text.chars().nth(200).is_some() {
        out.push('…');
    }
    out
}

/// What happened to one entry on restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The old value was written back; `was` is what the file held just before.
    Restored {
        #[serde(skip_serializing_if = "Option::is_none")]
        was: Option<String>,
    },
    /// A `held` entry: the kernel releases it, nothing to do.
    Released,
    /// A `sysv_sem` entry: the set was removed.
    Removed,
    /// Nothing to undo (e.g. the SysV set is already gone, or its id now
    /// belongs to another set, which is left alone); the entry is done.
    Skipped { reason: String },
    /// Restoring failed; the entry stays in the journal file.
    Failed { error: String },
}

/// The result of restoring one entry. Serializes flat:
/// `{"kind":"file","path":..,"old":..,"new":..,"status":"restored","was":..}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    #[serde(flatten)]
    pub entry: Entry,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Restored {
    pub fn ok(&self) -> bool {
        !matches!(self.outcome, Outcome::Failed { .. })
    }
}

impl fmt::Display for Restored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.entry, &self.outcome) {
            (Entry::File { path, old, .. }, Outcome::Restored { was }) => {
                write!(f, "restored {} to {}", path.display(), shown(old))?;
                if let Some(was) = was {
                    write!(f, " (was {})", shown(was))?;
                }
                Ok(())
            }
            (Entry::File { path, old, .. }, Outcome::Failed { error }) => write!(
                f,
                "could not restore {} to {}: {error}; the entry stays in the journal, retry with `rtlab restore`",
                path.display(),
                shown(old)
            ),
            (Entry::Held { path, value, note }, Outcome::Released) => {
                write!(f, "{} was held at {}: {note}", path.display(), shown(value))
            }
            (entry, Outcome::Removed) => write!(f, "removed {entry}"),
            (entry, Outcome::Skipped { reason }) => {
                write!(f, "nothing to do for {entry}: {reason}")
            }
            (entry, Outcome::Failed { error }) => write!(f, "could not restore {entry}: {error}"),
            (entry, _) => write!(f, "restored {entry}"),
        }
    }
}

/// The result of recovering one stale (or unreadable) journal file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovered {
    pub journal: PathBuf,
    /// `None` when the file could not be read.
    pub owner: Option<Owner>,
    pub created_at: Option<String>,
    pub restored: Vec<Restored>,
    /// Whether the journal file was deleted (all entries restored).
    pub removed: bool,
    /// Why the file could not be read, rewritten or deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Recovered {
    pub fn ok(&self) -> bool {
        self.removed && self.error.is_none()
    }

    pub(super) fn unreadable(journal: &Path, error: String) -> Recovered {
        Recovered {
            journal: journal.to_path_buf(),
            owner: None,
            created_at: None,
            restored: Vec::new(),
            removed: false,
            error: Some(error),
        }
    }
}

impl fmt::Display for Recovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let journal = self.journal.display();
        let Some(owner) = &self.owner else {
            let error = self.error.as_deref().unwrap_or("unknown error");
            return write!(
                f,
                "cannot use journal {journal}: {error}; left in place, inspect it and delete it by hand"
            );
        };
        let total = self.restored.len();
        let failed = self.restored.iter().filter(|r| !r.ok()).count();
        write!(
            f,
            "journal {journal} of dead rtlab pid {} ({}): ",
            owner.pid,
            printable(&owner.command)
        )?;
        if self.removed {
            write!(
                f,
                "{} restored, journal deleted",
                plural(total, "entry", "entries")
            )?;
        } else {
            write!(f, "{failed} of {total} entries could not be restored; journal kept, retry with `rtlab restore`")?;
        }
        if let Some(error) = &self.error {
            write!(f, " ({error})")?;
        }
        Ok(())
    }
}
