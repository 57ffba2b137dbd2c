//! The system-change journal.
//!
//! Every change rtlab makes to the host (sysctls, sysfs values, ...) is first
//! recorded durably in a per-process journal file, then made. Objects
//! rtlab creates that would outlive it (a SysV semaphore set) are recorded
//! as soon as they exist, before they are used. The journal is
//! replayed backwards on normal exit (`Drop`), on panic
//! ([`install_panic_restore`]) and, after SIGKILL or power loss, by
//! [`recover_stale`] (`rtlab restore`, also run at every start).

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::panic;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once, PoisonError, TryLockError, Weak};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::process::{boot_id, Stat};

/// Value of the `schema` field of every journal file.
pub const SCHEMA: &str = "rtlab.journal/1";

/// Upper bound for a value read from a sysfs/procfs file: a journal is not
/// the place for `/dev/zero`.
const MAX_VALUE_LEN: u64 = 64 * 1024;
/// Upper bound for a journal file; anything larger is not ours.
const MAX_JOURNAL_LEN: u64 = 16 * 1024 * 1024;

/// Errors of the journal. Every message names the path or key and, where
/// there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "invalid sysctl {input:?}: {reason} (expected key=value, e.g. kernel.timer_migration=0)"
    )]
    InvalidSysctl { input: String, reason: String },

    #[error("unknown sysctl {key:?} in {input:?}: {} does not exist on this kernel", path.display())]
    UnknownSysctl {
        input: String,
        key: String,
        path: PathBuf,
    },

    #[error("refusing to write {value:?} to {}: {reason}", path.display())]
    InvalidValue {
        path: PathBuf,
        value: String,
        reason: String,
    },

    #[error("cannot read {}: {source}{}; nothing was changed", path.display(), read_hint(source))]
    Read { path: PathBuf, source: io::Error },

    #[error("cannot write {value:?} to {}: {source}{}; nothing was changed", path.display(), write_hint(source))]
    Write {
        path: PathBuf,
        value: String,
        source: io::Error,
    },

    #[error("state directory {} is unusable: {reason}; set RTLAB_STATE_DIR to a private directory", path.display())]
    StateDir { path: PathBuf, reason: String },

    #[error("cannot write the journal {}: {source}; nothing was changed", path.display())]
    Journal { path: PathBuf, source: io::Error },

    #[error("cannot identify this process in /proc: {0}")]
    Owner(io::Error),

    #[error("journal {} already exists: only one Journal per process may use a state directory", path.display())]
    InUse { path: PathBuf },

    /// Refused even when `held` is the value asked for: the other rtlab
    /// puts `old` back when it ends, which may be in the middle of this
    /// run, and would then measure on without its setting.
    #[error("{} is held at {} by another rtlab (pid {pid}: {command}, journal {}), which puts it back to {} when it ends; nothing was changed: wait for it to finish (or stop it), then run again", path.display(), shown(held), journal.display(), shown(old))]
    Conflict {
        path: PathBuf,
        pid: u32,
        command: String,
        held: String,
        old: String,
        journal: PathBuf,
    },

    #[error("{} is still changed by an rtlab that died (pid {pid}, journal {}); run `rtlab restore` first", path.display(), journal.display())]
    StaleConflict {
        path: PathBuf,
        pid: u32,
        journal: PathBuf,
    },

    #[error("cannot look at SysV semaphore set {semid} (semctl IPC_STAT): {source}; it is not used and is removed again")]
    SysvSem { semid: i32, source: io::Error },
}

fn read_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::PermissionDenied => " (needs root)",
        _ => "",
    }
}

fn write_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => " (needs root or CAP_SYS_ADMIN)",
        Some(libc::EINVAL) => " (the kernel rejected the value)",
        Some(libc::EROFS) => {
            " (read-only file system; in a container /proc/sys and /sys are often read-only)"
        }
        _ => "",
    }
}

fn io_message(e: &io::Error) -> String {
    format!("{e}{}", write_hint(e))
}

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
}

impl Entry {
    /// The file this entry changes, for conflict detection. `Held` entries
    /// never conflict: the kernel aggregates concurrent holders itself.
    fn changed_file(&self) -> Option<&Path> {
        match self {
            Entry::File { path, .. } => Some(path),
            Entry::Held { .. } | Entry::SysvSem { .. } => None,
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
        }
    }
}

/// A Unix time in seconds as RFC 3339 (the number itself if out of range).
fn unix_time(seconds: i64) -> String {
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
fn shown(v: &str) -> String {
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
fn printable(text: &str) -> String {
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

    fn unreadable(journal: &Path, error: String) -> Recovered {
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

/// The process a journal belongs to. `starttime` (field 22 of
/// /proc/<pid>/stat) tells a reused pid from the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    pub starttime: u64,
    pub command: String,
    /// /proc/sys/kernel/random/boot_id: starttimes repeat across boots, so
    /// an owner from another boot is dead even if pid and starttime match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

impl Owner {
    pub fn this_process() -> io::Result<Owner> {
        let pid = std::process::id();
        let starttime = read_starttime(pid)?;
        let command = fs::read("/proc/self/cmdline")
            .map(|raw| {
                raw.split(|&b| b == 0)
                    .filter(|arg| !arg.is_empty())
                    .map(|arg| String::from_utf8_lossy(arg).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        Ok(Owner {
            pid,
            starttime,
            command,
            boot_id: boot_id(),
        })
    }

    /// Alive iff /proc/<pid>/stat exists, its starttime matches, it is not
    /// a zombie (all its threads have exited) and we are in the same boot.
    ///
    /// A zombie (state `Z`, or `X` while it is being reaped) has exited:
    /// its parent just has not collected its status yet, which may never
    /// happen (a parent that does not reap). Nothing of it runs any more,
    /// and its journal is as dead as one whose pid is gone.
    pub fn is_alive(&self) -> bool {
        if let (Some(theirs), Some(ours)) = (&self.boot_id, boot_id()) {
            if *theirs != ours {
                return false;
            }
        }
        match read_stat(self.pid) {
            Ok(stat) if stat.starttime != self.starttime => false,
            // The main thread shows Z as soon as it has exited, while the
            // process's other threads may still run (or finish a write
            // under a SIGKILL): dead once they have all exited.
            Ok(stat) if stat.has_exited() => other_task_runs(self.pid),
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => false,
            // The process exists but we cannot look at it: never restore
            // under a possibly live owner.
            Err(_) => true,
        }
    }
}

fn read_starttime(pid: u32) -> io::Result<u64> {
    read_stat(pid).map(|stat| stat.starttime)
}

/// What tells the owner of a journal from anything else with its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcStat {
    /// Field 3: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    state: char,
    /// Field 22, in clock ticks since boot.
    starttime: u64,
}

impl ProcStat {
    /// Fields 3 and 22 of a stat line, None if either is missing.
    fn from_stat(stat: &Stat) -> Option<ProcStat> {
        Some(ProcStat {
            state: stat.state()?,
            starttime: stat.starttime()?,
        })
    }

    /// The process has exited: a zombie waiting for its parent, or dead.
    fn has_exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Whether a thread of process `pid` other than its main one has not
/// exited (one that cannot be read is taken as running).
fn other_task_runs(pid: u32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        let name = task.file_name();
        if name.to_str() == Some(pid.to_string().as_str()) {
            return false;
        }
        match fs::read(task.path().join("stat")) {
            Ok(stat) => Stat::parse(&stat)
                .as_ref()
                .and_then(ProcStat::from_stat)
                .is_none_or(|s| !s.has_exited()),
            // Gone since the listing.
            Err(e) => e.kind() != io::ErrorKind::NotFound && e.raw_os_error() != Some(libc::ESRCH),
        }
    })
}

fn read_stat(pid: u32) -> io::Result<ProcStat> {
    // Read as bytes (process::Stat does): the name (field 2) is whatever
    // its process chose, or 15 bytes of it cut inside a character, and
    // need not be UTF-8; a read that failed on it would make any process
    // look alive.
    ProcStat::from_stat(&Stat::of(pid)?).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse /proc/{pid}/stat"),
        )
    })
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Where journal files live: `$RTLAB_STATE_DIR`, else `/run/rtlab` for root,
/// else `$XDG_RUNTIME_DIR/rtlab`, else `/tmp/rtlab-<euid>`.
pub fn state_dir() -> PathBuf {
    choose_state_dir(
        std::env::var_os("RTLAB_STATE_DIR"),
        euid(),
        std::env::var_os("XDG_RUNTIME_DIR"),
    )
}

fn choose_state_dir(explicit: Option<OsString>, euid: u32, xdg: Option<OsString>) -> PathBuf {
    if let Some(dir) = explicit.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if euid == 0 {
        return PathBuf::from("/run/rtlab");
    }
    if let Some(xdg) = xdg.filter(|d| !d.is_empty()) {
        return Path::new(&xdg).join("rtlab");
    }
    PathBuf::from(format!("/tmp/rtlab-{euid}"))
}

fn ensure_state_dir(dir: &Path) -> Result<(), JournalError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| JournalError::StateDir {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
    check_state_dir(dir).map_err(|reason| JournalError::StateDir {
        path: dir.to_path_buf(),
        reason,
    })
}

/// Root replays whatever journals it finds here, so nobody else may be able
/// to plant one: the directory must be ours and not writable by others
/// (this also defeats a pre-created `/tmp/rtlab-<uid>`).
fn check_state_dir(dir: &Path) -> Result<(), String> {
    let md = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if md.file_type().is_symlink() {
        return Err("it is a symbolic link".into());
    }
    if !md.is_dir() {
        return Err("not a directory".into());
    }
    if md.uid() != euid() {
        return Err(format!("owned by uid {}, not by uid {}", md.uid(), euid()));
    }
    if md.mode() & 0o022 != 0 {
        return Err(format!(
            "writable by group or others (mode {:o})",
            md.mode() & 0o7777
        ));
    }
    Ok(())
}

/// An exclusive flock on the state directory, held while checking for
/// conflicts and making a change, and while recovering; released on drop.
struct DirLock {
    _dir: File,
}

fn lock_dir(dir: &Path) -> io::Result<DirLock> {
    let file = File::open(dir)?;
    loop {
        // SAFETY: the fd is valid for the lifetime of `file`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(DirLock { _dir: file });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct JournalFile {
    schema: String,
    owner: Owner,
    created_at: String,
    entries: Vec<Entry>,
}

fn journal_name(pid: u32, starttime: u64) -> String {
    format!("journal-{pid}-{starttime}.json")
}

fn is_journal_name(name: &str) -> bool {
    name.starts_with("journal-") && name.ends_with(".json")
}

/// The owner encoded in a journal (or journal.tmp) file name.
fn owner_from_name(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_prefix("journal-")?;
    let stem = stem.strip_suffix(".tmp").unwrap_or(stem);
    let stem = stem.strip_suffix(".json")?;
    let (pid, starttime) = stem.split_once('-')?;
    Some((pid.parse().ok()?, starttime.parse().ok()?))
}

fn list_journals(dir: &Path) -> io::Result<Vec<PathBuf>> {
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

fn read_journal(path: &Path) -> Result<JournalFile, String> {
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

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Write-to-temp, fsync, rename, fsync directory: after this returns the
/// file is on disk with either the old or the new content, never half.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        sync_dir(parent_dir(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn remove_durably(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => sync_dir(parent_dir(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Reads a sysfs/procfs value without its trailing newline. Multiple-choice
/// files (`always [madvise] never`) yield the selected choice, which is what
/// must be written back.
fn read_value(path: &Path) -> io::Result<String> {
    let mut raw = Vec::new();
    File::open(path)?
        .take(MAX_VALUE_LEN + 1)
        .read_to_end(&mut raw)?;
    if raw.len() as u64 > MAX_VALUE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("more than {MAX_VALUE_LEN} bytes, not a setting"),
        ));
    }
    let text = String::from_utf8(raw)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))?;
    Ok(selected_choice(text.trim_end_matches('\n')))
}

fn selected_choice(value: &str) -> String {
    let mut selected = None;
    for token in value.split_whitespace() {
        if let Some(choice) = token.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            if selected.is_some() || choice.is_empty() || choice.contains(['[', ']']) {
                return value.to_string();
            }
            selected = Some(choice);
        } else if token.contains(['[', ']']) {
            return value.to_string();
        }
    }
    selected.map_or_else(|| value.to_string(), str::to_string)
}

fn is_kernel_fs(file: &File) -> bool {
    // SAFETY: statfs is plain data; the fd is valid for the lifetime of `file`.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        // Unknown: do not truncate, the safe choice for kernel files.
        return true;
    }
    let magic = st.f_type as u32;
    [
        libc::PROC_SUPER_MAGIC as u32,
        libc::SYSFS_MAGIC as u32,
        libc::CGROUP_SUPER_MAGIC as u32,
        libc::CGROUP2_SUPER_MAGIC as u32,
        libc::DEBUGFS_MAGIC as u32,
        libc::TRACEFS_MAGIC as u32,
        libc::SECURITYFS_MAGIC as u32,
    ]
    .contains(&magic)
}

/// Writes `value\n` the way `echo value > path` does, without O_TRUNC
/// (some /proc/sys files refuse it). An ordinary file (tests, or a setting
/// kept on a real file system) is cut after the value so that a shorter
/// value leaves no tail of the longer one.
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    let line = format!("{value}\n");
    file.write_all(line.as_bytes())?;
    if file.metadata()?.is_file() && !is_kernel_fs(&file) {
        file.set_len(line.len() as u64)?;
    }
    Ok(())
}

fn check_value(path: &Path, value: &str) -> Result<(), JournalError> {
    if value.contains(['\n', '\0']) {
        return Err(JournalError::InvalidValue {
            path: path.to_path_buf(),
            value: value.to_string(),
            reason: "a value must be one line without NUL bytes".into(),
        });
    }
    Ok(())
}

fn restore_entry(entry: &Entry) -> Outcome {
    match entry {
        Entry::File { path, old, .. } => {
            let was = read_value(path).ok();
            match write_value(path, old) {
                Ok(()) => Outcome::Restored { was },
                Err(e) => Outcome::Failed {
                    error: io_message(&e),
                },
            }
        }
        Entry::Held { .. } => Outcome::Released,
        Entry::SysvSem {
            semid, ctime, cuid, ..
        } => remove_sysv_sem_set(SysvSemSet {
            semid: *semid,
            ctime: *ctime,
            cuid: *cuid,
        }),
    }
}

/// A SysV semaphore set as `semctl(IPC_STAT)` shows it: its id, and what
/// tells it from a later set that reuses the id (the kernel recycles ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysvSemSet {
    pub semid: i32,
    /// `sem_ctime`: set when the set is created, and only changed by
    /// `semctl` IPC_SET/SETVAL/SETALL (never by `semop`).
    pub ctime: i64,
    /// The creator's uid.
    pub cuid: u32,
}

impl SysvSemSet {
    /// The set `semid` as it is now.
    pub fn stat(semid: i32) -> io::Result<SysvSemSet> {
        // SAFETY: semid_ds is plain data, filled in by the kernel.
        let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT takes a pointer to a semid_ds (union semun's buf).
        if unsafe { libc::semctl(semid, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SysvSemSet {
            semid,
            ctime: ds.sem_ctime as i64,
            cuid: ds.sem_perm.cuid,
        })
    }
}

/// Removes `set` if a set with its id still exists and is the same set
/// (same creation time and creator); an id that is gone or now belongs to
/// another set is left alone.
pub fn remove_sysv_sem_set(set: SysvSemSet) -> Outcome {
    let now = match SysvSemSet::stat(set.semid) {
        Ok(now) => now,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIDRM)) => {
            return Outcome::Skipped {
                reason: "it is already gone".into(),
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            return Outcome::Skipped {
                reason: "a set with that id exists but is not ours (permission denied): left alone"
                    .into(),
            }
        }
        Err(e) => {
            return Outcome::Failed {
                error: format!("semctl IPC_STAT: {e}"),
            }
        }
    };
    if now != set {
        return Outcome::Skipped {
            reason: format!(
                "the id now belongs to another set (created at {} by uid {}): left alone",
                unix_time(now.ctime),
                now.cuid
            ),
        };
    }
    // SAFETY: plain syscall on a set we just identified as ours.
    if unsafe { libc::semctl(set.semid, 0, libc::IPC_RMID) } != 0 {
        let e = io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIDRM)) {
            return Outcome::Skipped {
                reason: "it is already gone".into(),
            };
        }
        return Outcome::Failed {
            error: format!("semctl IPC_RMID: {}", io_message(&e)),
        };
    }
    Outcome::Removed
}

/// Restores in reverse order; returns the results and the entries that
/// could not be restored (in their original order).
fn restore_entries(entries: &[Entry]) -> (Vec<Restored>, Vec<Entry>) {
    let mut results = Vec::with_capacity(entries.len());
    let mut remaining = Vec::new();
    for entry in entries.iter().rev() {
        let outcome = restore_entry(entry);
        if matches!(outcome, Outcome::Failed { .. }) {
            remaining.push(entry.clone());
        }
        results.push(Restored {
            entry: entry.clone(),
            outcome,
        });
    }
    remaining.reverse();
    (results, remaining)
}

/// The journal of this process. Record changes through it; they are undone
/// by [`Journal::restore`] or when it is dropped.
#[derive(Debug)]
pub struct Journal {
    state_dir: PathBuf,
    owner: Option<Owner>,
    created_at: String,
    entries: Vec<Entry>,
    /// Path of the journal file once the owner is known.
    file: Option<PathBuf>,
    /// Whether the journal file exists on disk (as far as we know).
    on_disk: bool,
}

impl Journal {
    /// Creates nothing until the first change.
    pub fn new(state_dir: PathBuf) -> Journal {
        Journal {
            state_dir,
            owner: None,
            created_at: String::new(),
            entries: Vec::new(),
            file: None,
            on_disk: false,
        }
    }

    pub fn for_this_process() -> Journal {
        Journal::new(state_dir())
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The journal file, once the first change has been recorded.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Sets a sysctl from `key=value`, see [`parse_sysctl`].
    pub fn set_sysctl(&mut self, assignment: &str) -> Result<(), JournalError> {
        let (path, value) = parse_sysctl(assignment)?;
        self.set_file(&path, &value)
    }

    /// Writes `value` to a sysfs/procfs file after journaling its old value.
    pub fn set_file(&mut self, path: &Path, value: &str) -> Result<(), JournalError> {
        check_value(path, value)?;
        // Journal the real file: /sys is full of symlinks, and conflicts
        // must be found whichever name another rtlab used.
        let target = fs::canonicalize(path).map_err(|source| JournalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let _lock = self.prepare()?;
        self.check_conflicts(&target)?;

        // A second change of the same file keeps the first old value, so
        // the reverse replay can never end on an intermediate value.
        let existing = self
            .entries
            .iter()
            .position(|e| e.changed_file() == Some(target.as_path()));
        let undo = match existing {
            Some(i) => {
                let previous = self.replace_new(i, value.to_string());
                if let Err(e) = self.persist() {
                    self.replace_new(i, previous);
                    return Err(e);
                }
                Some((i, previous))
            }
            None => {
                let old = read_value(&target).map_err(|source| JournalError::Read {
                    path: target.clone(),
                    source,
                })?;
                self.record(Entry::File {
                    path: target.clone(),
                    old,
                    new: value.to_string(),
                })?;
                None
            }
        };

        if let Err(source) = write_value(&target, value) {
            match undo {
                Some((i, previous)) => {
                    self.replace_new(i, previous);
                }
                None => {
                    self.entries.pop();
                }
            }
            // If this rewrite fails the stale entry only makes a later
            // restore write back the value the file still has.
            let _ = self.persist();
            return Err(JournalError::Write {
                path: target,
                value: value.to_string(),
                source,
            });
        }
        Ok(())
    }

    /// Records a change the kernel undoes by itself when our descriptor
    /// closes (e.g. a PM QoS request), so `rtlab restore` can report it.
    pub fn note_held(&mut self, path: &Path, value: &str, note: &str) -> Result<(), JournalError> {
        let _lock = self.prepare()?;
        self.record(Entry::Held {
            path: path.to_path_buf(),
            value: value.to_string(),
            note: note.to_string(),
        })
    }

    /// Records a SysV semaphore set this process has just created, before
    /// it is used: after a SIGKILL, `rtlab restore` removes it. On error
    /// nothing is recorded (and the caller must remove the set itself).
    pub fn note_sysv_sem(&mut self, semid: i32, note: &str) -> Result<SysvSemSet, JournalError> {
        let set =
            SysvSemSet::stat(semid).map_err(|source| JournalError::SysvSem { semid, source })?;
        let _lock = self.prepare()?;
        self.record(Entry::SysvSem {
            semid,
            ctime: set.ctime,
            cuid: set.cuid,
            note: note.to_string(),
        })?;
        Ok(set)
    }

    /// The normal end of a set recorded with [`Journal::note_sysv_sem`]:
    /// removes it (if it is still the recorded set) and drops its entry.
    /// `None` when the journal holds no entry for it (already restored);
    /// a removal that fails keeps the entry for `rtlab restore`.
    pub fn remove_sysv_sem(&mut self, semid: i32) -> Option<Restored> {
        let index = self
            .entries
            .iter()
            .position(|e| matches!(e, Entry::SysvSem { semid: id, .. } if *id == semid))?;
        let entry = self.entries[index].clone();
        let outcome = restore_entry(&entry);
        if !matches!(outcome, Outcome::Failed { .. }) {
            self.entries.remove(index);
            // If this rewrite fails the stale entry only makes a later
            // restore find the set gone.
            let _ = self.persist();
        }
        Some(Restored { entry, outcome })
    }

    /// Undoes all entries in reverse order. Entries that cannot be restored
    /// stay in the journal file (for `rtlab restore`); when all are restored
    /// the file is deleted. Calling it again only retries what failed.
    pub fn restore(&mut self) -> Vec<Restored> {
        // A forked child inherits the journal but owns none of its changes.
        if let Some(owner) = &self.owner {
            if owner.pid != std::process::id() {
                return Vec::new();
            }
        }
        let (results, remaining) = restore_entries(&self.entries);
        self.entries = remaining;
        // On failure the file keeps more entries than memory; restoring
        // those again later is harmless.
        let _ = self.persist();
        results
    }

    /// Replaces the `new` value of the File entry at `i`, returning the
    /// previous one.
    fn replace_new(&mut self, i: usize, value: String) -> String {
        match &mut self.entries[i] {
            Entry::File { new, .. } => std::mem::replace(new, value),
            _ => value,
        }
    }

    /// Creates the state directory, locks it and settles the journal's
    /// file name.
    fn prepare(&mut self) -> Result<DirLock, JournalError> {
        ensure_state_dir(&self.state_dir)?;
        let lock = lock_dir(&self.state_dir).map_err(|e| JournalError::StateDir {
            path: self.state_dir.clone(),
            reason: format!("cannot lock it: {e}"),
        })?;
        if self.owner.is_none() {
            let owner = Owner::this_process().map_err(JournalError::Owner)?;
            self.file = Some(
                self.state_dir
                    .join(journal_name(owner.pid, owner.starttime)),
            );
            self.owner = Some(owner);
        }
        if !self.on_disk {
            if let Some(file) = &self.file {
                if fs::symlink_metadata(file).is_ok() {
                    return Err(JournalError::InUse { path: file.clone() });
                }
            }
        }
        Ok(lock)
    }

    fn check_conflicts(&self, target: &Path) -> Result<(), JournalError> {
        let journals = list_journals(&self.state_dir).map_err(|e| JournalError::StateDir {
            path: self.state_dir.clone(),
            reason: format!("cannot list it: {e}"),
        })?;
        for journal in journals {
            if Some(journal.as_path()) == self.file.as_deref() {
                continue;
            }
            // Unreadable journals are reported by recover_stale; they are
            // not ours to interpret here.
            let Ok(other) = read_journal(&journal) else {
                continue;
            };
            let Some(entry) = other
                .entries
                .iter()
                .find(|e| e.changed_file() == Some(target))
            else {
                continue;
            };
            let (path, pid) = (target.to_path_buf(), other.owner.pid);
            if !other.owner.is_alive() {
                return Err(JournalError::StaleConflict { path, pid, journal });
            }
            let (held, old) = match entry {
                Entry::File { old, new, .. } => (new.clone(), old.clone()),
                _ => (String::new(), String::new()),
            };
            return Err(JournalError::Conflict {
                path,
                pid,
                // Its command line is the other process's to choose.
                command: printable(&other.owner.command),
                held,
                old,
                journal,
            });
        }
        Ok(())
    }

    /// Appends an entry and puts it on disk; on failure the entry is gone
    /// again and nothing may be changed.
    fn record(&mut self, entry: Entry) -> Result<(), JournalError> {
        self.entries.push(entry);
        if let Err(e) = self.persist() {
            self.entries.pop();
            return Err(e);
        }
        Ok(())
    }

    fn persist(&mut self) -> Result<(), JournalError> {
        let (Some(file), Some(owner)) = (self.file.clone(), self.owner.clone()) else {
            return Ok(());
        };
        let journal_err = |source| JournalError::Journal {
            path: file.clone(),
            source,
        };
        if self.entries.is_empty() {
            if self.on_disk {
                remove_durably(&file).map_err(journal_err)?;
                self.on_disk = false;
            }
            return Ok(());
        }
        if self.created_at.is_empty() {
            self.created_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        }
        let content = JournalFile {
            schema: SCHEMA.to_string(),
            owner,
            created_at: self.created_at.clone(),
            entries: self.entries.clone(),
        };
        let mut bytes =
            serde_json::to_vec_pretty(&content).map_err(|e| journal_err(io::Error::other(e)))?;
        bytes.push(b'\n');
        write_atomic(&file, &bytes).map_err(journal_err)?;
        self.on_disk = true;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if self.entries.is_empty() && !self.on_disk {
            return;
        }
        // Nobody can look at the results any more, so failures go to stderr
        // rather than leave the host silently changed.
        for result in self.restore() {
            if !result.ok() {
                eprintln!("rtlab: {result}");
            }
        }
    }
}

/// Restores every journal in `state_dir` whose owner is dead (reverse
/// order) and deletes it. Journals of live owners are left alone and not
/// reported; unreadable ones are reported and left in place.
pub fn recover_stale(state_dir: &Path) -> Vec<Recovered> {
    let mut out = Vec::new();
    match fs::symlink_metadata(state_dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
        _ => {}
    }
    if let Err(reason) = check_state_dir(state_dir) {
        out.push(Recovered::unreadable(
            state_dir,
            format!("state directory {reason}"),
        ));
        return out;
    }
    let _lock = match lock_dir(state_dir) {
        Ok(lock) => lock,
        Err(e) => {
            out.push(Recovered::unreadable(
                state_dir,
                format!("cannot lock state directory: {e}"),
            ));
            return out;
        }
    };
    remove_stale_tmp_files(state_dir);
    let journals = match list_journals(state_dir) {
        Ok(journals) => journals,
        Err(e) => {
            out.push(Recovered::unreadable(
                state_dir,
                format!("cannot list state directory: {e}"),
            ));
            return out;
        }
    };
    for path in journals {
        let journal = match read_journal(&path) {
            Ok(journal) => journal,
            Err(error) => {
                out.push(Recovered::unreadable(&path, error));
                continue;
            }
        };
        if journal.owner.is_alive() {
            continue;
        }
        let (restored, remaining) = restore_entries(&journal.entries);
        let (removed, error) = if remaining.is_empty() {
            match remove_durably(&path) {
                Ok(()) => (true, None),
                Err(e) => (false, Some(format!("cannot delete the journal: {e}"))),
            }
        } else {
            let rest = JournalFile {
                entries: remaining,
                ..journal.clone_header()
            };
            let error = serde_json::to_vec_pretty(&rest)
                .map_err(io::Error::other)
                .and_then(|mut bytes| {
                    bytes.push(b'\n');
                    write_atomic(&path, &bytes)
                })
                .err()
                .map(|e| format!("cannot rewrite the journal: {e}"));
            (false, error)
        };
        out.push(Recovered {
            journal: path,
            owner: Some(journal.owner),
            created_at: Some(journal.created_at),
            restored,
            removed,
            error,
        });
    }
    out
}

impl JournalFile {
    fn clone_header(&self) -> JournalFile {
        JournalFile {
            schema: self.schema.clone(),
            owner: self.owner.clone(),
            created_at: self.created_at.clone(),
            entries: Vec::new(),
        }
    }
}

/// A crash between writing `<journal>.tmp` and renaming it leaves a temp
/// file whose extra entry was never applied; drop those of dead owners.
fn remove_stale_tmp_files(state_dir: &Path) {
    let Ok(dir) = fs::read_dir(state_dir) else {
        return;
    };
    for dirent in dir.flatten() {
        let name = dirent.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.ends_with(".json.tmp") {
            continue;
        }
        let Some((pid, starttime)) = owner_from_name(name) else {
            continue;
        };
        let owner = Owner {
            pid,
            starttime,
            command: String::new(),
            boot_id: None,
        };
        if !owner.is_alive() {
            let _ = fs::remove_file(dirent.path());
        }
    }
}

/// Parses `kernel.timer_migration=0` or `kernel/timer_migration = 0` into
/// (`/proc/sys/kernel/timer_migration`, `"0"`). As with sysctl(8), a key
/// containing '/' keeps its dots (`net/ipv4/conf/eth0.100/forwarding`).
pub fn parse_sysctl(assignment: &str) -> Result<(PathBuf, String), JournalError> {
    let invalid = |reason: String| JournalError::InvalidSysctl {
        input: assignment.to_string(),
        reason,
    };
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| invalid("missing '='".into()))?;
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty() {
        return Err(invalid("empty key".into()));
    }
    if value.is_empty() {
        return Err(invalid("empty value".into()));
    }
    if key.contains("..") {
        return Err(invalid("'..' is not allowed in a key".into()));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')))
    {
        return Err(invalid(format!("character {c:?} is not allowed in a key")));
    }
    let relative = if key.contains('/') {
        key.to_string()
    } else {
        key.replace('.', "/")
    };
    if relative
        .split('/')
        .any(|segment| segment.is_empty() || segment == ".")
    {
        return Err(invalid("empty path segment in the key".into()));
    }
    let path = Path::new("/proc/sys").join(&relative);
    match fs::metadata(&path) {
        Ok(md) if md.is_file() => Ok((path, value.to_string())),
        Ok(_) => Err(invalid(format!(
            "{} is a directory, not a setting",
            path.display()
        ))),
        Err(_) => Err(JournalError::UnknownSysctl {
            input: assignment.to_string(),
            key: key.to_string(),
            path,
        }),
    }
}

static PANIC_JOURNALS: Mutex<Vec<Weak<Mutex<Journal>>>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

/// Makes any panic restore `journal` before the previous panic hook runs.
/// Only a weak reference is kept, so dropping the last `Arc` still restores
/// through `Drop` on a normal exit.
pub fn install_panic_restore(journal: Arc<Mutex<Journal>>) {
    {
        let mut journals = PANIC_JOURNALS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        journals.retain(|j| j.strong_count() > 0);
        journals.push(Arc::downgrade(&journal));
    }
    PANIC_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            restore_for_panic();
            previous(info);
        }));
    });
}

fn restore_for_panic() {
    let journals: Vec<Arc<Mutex<Journal>>> = match PANIC_JOURNALS.try_lock() {
        Ok(journals) => journals.iter().filter_map(Weak::upgrade).collect(),
        Err(TryLockError::Poisoned(p)) => p.into_inner().iter().filter_map(Weak::upgrade).collect(),
        Err(TryLockError::WouldBlock) => {
            eprintln!("rtlab: panic while registering a journal; run `rtlab restore`");
            return;
        }
    };
    for journal in journals {
        // The panicking thread may hold this lock; blocking would hang.
        let mut guard = match journal.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                eprintln!(
                    "rtlab: journal busy during panic; it is restored when dropped, otherwise run `rtlab restore`"
                );
                continue;
            }
        };
        for result in guard.restore() {
            eprintln!("rtlab: {result}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn target(dir: &TempDir, name: &str, value: &str) -> PathBuf {
        let path = dir.path().join(name);
        fs::write(&path, format!("{value}\n")).unwrap();
        path
    }

    fn content(path: &Path) -> String {
        fs::read_to_string(path).unwrap()
    }

    fn journal_files(dir: &Path) -> Vec<PathBuf> {
        list_journals(dir).unwrap()
    }

    fn state(tmp: &TempDir) -> PathBuf {
        let dir = tmp.path().join("state");
        DirBuilder::new().mode(0o700).create(&dir).unwrap();
        dir
    }

    fn fabricate(dir: &Path, owner: Owner, entries: Vec<Entry>) -> PathBuf {
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

    fn dead_owner() -> Owner {
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

    fn file_entry(path: &Path, old: &str, new: &str) -> Entry {
        Entry::File {
            path: fs::canonicalize(path).unwrap(),
            old: old.into(),
            new: new.into(),
        }
    }

    #[test]
    fn set_file_journals_before_and_restore_puts_back() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        assert!(
            journal_files(&dir).is_empty(),
            "nothing before the first change"
        );

        j.set_file(&knob, "0").unwrap();
        assert_eq!(content(&knob), "0\n");
        let files = journal_files(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(Some(files[0].as_path()), j.file());
        let on_disk = read_journal(&files[0]).unwrap();
        assert_eq!(on_disk.entries, vec![file_entry(&knob, "1", "0")]);
        assert_eq!(on_disk.owner.pid, std::process::id());
        assert!(on_disk.owner.is_alive());
        let text = content(&files[0]);
        assert!(text.contains("\"kind\": \"file\""), "{text}");
        assert!(text.contains("\"schema\": \"rtlab.journal/1\""), "{text}");

        let results = j.restore();
        assert_eq!(results.len(), 1);
        assert!(results[0].ok());
        assert_eq!(content(&knob), "1\n");
        assert!(journal_files(&dir).is_empty());
        let line = results[0].to_string();
        assert!(
            line.starts_with("restored ") && line.ends_with(" to 1 (was 0)"),
            "{line}"
        );
        let json = serde_json::to_value(&results[0]).unwrap();
        assert_eq!(json["kind"], "file");
        assert_eq!(json["status"], "restored");
        assert_eq!(json["was"], "0");
    }

    #[test]
    fn shorter_value_leaves_no_tail() {
        let tmp = TempDir::new().unwrap();
        let knob = target(&tmp, "knob", "100");
        let mut j = Journal::new(state(&tmp));
        j.set_file(&knob, "7").unwrap();
        assert_eq!(content(&knob), "7\n");
        j.restore();
        assert_eq!(content(&knob), "100\n");
    }

    #[test]
    fn restore_is_reverse_and_idempotent() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "1");
        let b = target(&tmp, "b", "x");
        let mut j = Journal::new(dir.clone());
        j.set_file(&a, "2").unwrap();
        j.set_file(&b, "y").unwrap();
        j.set_file(&a, "3").unwrap();
        assert_eq!(j.entries().len(), 2, "a second change of a keeps one entry");
        j.note_held(
            Path::new("/dev/cpu_dma_latency"),
            "0",
            "released by the kernel when the holder exits",
        )
        .unwrap();
        assert_eq!(content(&a), "3\n");

        let results = j.restore();
        assert_eq!(results.len(), 3);
        assert!(matches!(results[0].outcome, Outcome::Released));
        assert!(results[0].to_string().contains("released by the kernel"));
        assert!(matches!(&results[1].entry, Entry::File { path, .. } if path.ends_with("b")));
        assert!(matches!(&results[2].entry, Entry::File { path, .. } if path.ends_with("a")));
        assert_eq!(content(&a), "1\n");
        assert_eq!(content(&b), "x\n");
        assert!(journal_files(&dir).is_empty());
        assert!(j.entries().is_empty());

        fs::write(&a, "9\n").unwrap();
        assert!(j.restore().is_empty());
        assert_eq!(content(&a), "9\n", "a second restore does nothing");
    }

    #[test]
    fn drop_restores() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "performance");
        {
            let mut j = Journal::new(dir.clone());
            j.set_file(&knob, "powersave").unwrap();
            assert_eq!(content(&knob), "powersave\n");
        }
        assert_eq!(content(&knob), "performance\n");
        assert!(journal_files(&dir).is_empty());
    }

    #[test]
    fn failing_change_leaves_no_entry() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let mut j = Journal::new(dir.clone());

        let missing = tmp.path().join("missing");
        let err = j.set_file(&missing, "1").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");

        let err = j.set_file(tmp.path(), "1").unwrap_err();
        assert!(matches!(err, JournalError::Read { .. }), "{err}");

        // Readable but not writable, even for root: the entry is journaled,
        // the write fails, the entry is removed again.
        let err = j.set_file(Path::new("/proc/self/stat"), "1").unwrap_err();
        assert!(matches!(err, JournalError::Write { .. }), "{err}");
        assert!(err.to_string().contains("/proc/"), "{err}");

        let err = j.set_file(&target(&tmp, "knob", "1"), "a\nb").unwrap_err();
        assert!(matches!(err, JournalError::InvalidValue { .. }), "{err}");

        assert!(j.entries().is_empty());
        assert!(journal_files(&dir).is_empty());
        assert!(j.restore().is_empty());
    }

    #[test]
    fn recover_stale_restores_dead_owner() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "0");
        let b = target(&tmp, "b", "5");
        let dead = fabricate(&dir, dead_owner(), vec![file_entry(&a, "1", "0")]);

        // A live pid with the wrong starttime is a reused pid, not the owner.
        let mut reused = Owner::this_process().unwrap();
        reused.starttime += 12345;
        let reused_pid = reused.pid;
        let reused_file = fabricate(&dir, reused, vec![file_entry(&b, "4", "5")]);
        fs::write(tmp_path(&dead), "garbage").unwrap();

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 2, "{recovered:?}");
        assert!(recovered.iter().all(Recovered::ok), "{recovered:?}");
        assert_eq!(content(&a), "1\n");
        assert_eq!(content(&b), "4\n");
        assert!(!dead.exists() && !reused_file.exists());
        assert!(!tmp_path(&dead).exists(), "stale temp file removed");
        let line = recovered
            .iter()
            .find(|r| r.owner.as_ref().unwrap().pid == reused_pid)
            .unwrap()
            .to_string();
        assert!(line.contains("1 entry restored, journal deleted"), "{line}");

        assert!(recover_stale(&dir).is_empty());
    }

    /// A child that has exited and is not reaped yet (a zombie), reaped
    /// when dropped.
    struct Zombie(libc::pid_t);

    impl Zombie {
        fn new() -> Zombie {
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

        fn owner(&self) -> Owner {
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

    /// A child whose main thread has exited (with exit(2), not
    /// exit_group) while another of its threads runs on; killed and reaped
    /// when dropped.
    struct LeaderGone(libc::pid_t);

    impl LeaderGone {
        fn new() -> LeaderGone {
            extern "C" fn sleep_on(_: *mut libc::c_void) -> libc::c_int {
                loop {
                    // SAFETY: a raw system call, nothing of libc's state.
                    unsafe { libc::syscall(libc::SYS_pause) };
                }
            }
            // The thread's stack, allocated before the fork: the child
            // may not allocate.
            let mut stack = vec![0u8; 64 * 1024];
            // SAFETY: the child only makes raw system calls on memory it
            // owns (its copy of `stack`) before it ends.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
            if pid == 0 {
                // SAFETY: a thread of this process on its own stack, which
                // stays valid (its leader never frees it); then the main
                // thread alone exits.
                unsafe {
                    let top = stack.as_mut_ptr().add(stack.len()) as *mut libc::c_void;
                    let flags = libc::CLONE_VM
                        | libc::CLONE_FS
                        | libc::CLONE_FILES
                        | libc::CLONE_SIGHAND
                        | libc::CLONE_THREAD
                        | libc::CLONE_SYSVSEM;
                    if libc::clone(sleep_on, top, flags, std::ptr::null_mut()) < 0 {
                        libc::_exit(1);
                    }
                    libc::syscall(libc::SYS_exit, 0);
                }
                unreachable!();
            }
            let gone = LeaderGone(pid);
            let tasks = format!("/proc/{pid}/task");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while read_stat(pid as u32).ok().map(|s| s.state) != Some('Z')
                || fs::read_dir(&tasks).map(|d| d.count()).unwrap_or(0) != 2
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{pid}: its main thread never ended with another running"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            gone
        }
    }

    impl Drop for LeaderGone {
        fn drop(&mut self) {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }

    #[test]
    fn an_owner_whose_main_thread_ended_while_others_run_is_alive() {
        // Its /proc/PID/stat says Z, but a thread of it may still be
        // writing a file its journal records (a SIGKILL takes the threads
        // down one after the other): its journal is not to be replayed.
        let gone = LeaderGone::new();
        let owner = Owner {
            pid: gone.0 as u32,
            starttime: read_starttime(gone.0 as u32).unwrap(),
            command: "rtlab measure timer".into(),
            boot_id: boot_id(),
        };
        assert!(owner.is_alive());
        drop(gone);
        assert!(!owner.is_alive());
    }

    #[test]
    fn a_zombie_owner_is_dead() {
        let zombie = Zombie::new();
        let owner = zombie.owner();
        assert!(!owner.is_alive(), "a zombie runs nothing any more");
        // A live process with the same kind of record is alive.
        assert!(Owner::this_process().unwrap().is_alive());
    }

    #[test]
    fn a_reused_pid_with_a_name_that_is_not_utf8_is_not_the_owner() {
        // Anyone can name a process (exec through a link, PR_SET_NAME) and
        // the kernel cuts names at 15 bytes, even inside a character: a
        // process that took a dead owner's pid with such a name must not
        // pass for it, which would keep its journal from being restored
        // and refuse every later change of its files.
        use std::os::unix::ffi::OsStrExt;
        let tmp = TempDir::new().unwrap();
        let link = tmp.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link).arg("60").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // Until it has exec'd under its new name.
        let named = |stat: Vec<u8>| stat.windows(8).any(|w| w == b"(sl\xffeep)");
        while !named(fs::read(format!("/proc/{pid}/stat")).unwrap()) {
            assert!(std::time::Instant::now() < deadline, "{pid} never ran");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let starttime = read_starttime(pid);
        let reused = Owner {
            pid,
            starttime: 1,
            command: "rtlab measure timer".into(),
            boot_id: boot_id(),
        };
        let alive = reused.is_alive();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            !alive,
            "another process with the owner's pid is not the owner"
        );
        assert!(starttime.unwrap() > 1);
    }

    #[test]
    fn an_owner_from_another_boot_is_dead() {
        // This very process, as a journal written before a reboot that
        // reused its pid and start time would record it.
        let mut owner = Owner::this_process().unwrap();
        assert!(owner.is_alive());
        owner.boot_id = Some("00000000-0000-0000-0000-000000000000".into());
        assert!(!owner.is_alive());
        // A journal without a boot id falls back to pid and start time.
        owner.boot_id = None;
        assert!(owner.is_alive());
    }

    #[test]
    fn recover_stale_restores_a_zombie_owners_journal() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "0");
        let zombie = Zombie::new();
        let path = fabricate(&dir, zombie.owner(), vec![file_entry(&knob, "1", "0")]);

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{recovered:?}");
        assert_eq!(content(&knob), "1\n");
        assert!(!path.exists());

        // Its value is stale, not held by a live rtlab: a new change is
        // told to restore first, not to wait for it.
        fabricate(&dir, zombie.owner(), vec![file_entry(&knob, "1", "0")]);
        let err = Journal::new(dir.clone()).set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::StaleConflict { .. }), "{err}");
        drop(zombie);
    }

    #[test]
    fn recover_stale_leaves_live_and_reports_corrupt() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        j.set_file(&knob, "0").unwrap();

        let corrupt = dir.join("journal-1-1.json");
        fs::write(&corrupt, "{not json").unwrap();
        let future = fabricate(&dir, dead_owner(), vec![]);
        let text = content(&future).replace(SCHEMA, "rtlab.journal/99");
        fs::write(&future, text).unwrap();

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 2, "{recovered:?}");
        for r in &recovered {
            assert!(!r.ok() && r.owner.is_none());
            assert!(r.to_string().contains("left in place"), "{r}");
        }
        assert!(corrupt.exists() && future.exists());
        assert_eq!(content(&knob), "0\n", "live journal left alone");
        assert!(j.file().unwrap().exists());

        j.restore();
        assert_eq!(content(&knob), "1\n");
    }

    #[test]
    fn recover_stale_keeps_what_it_cannot_restore() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let a = target(&tmp, "a", "0");
        let gone = Entry::File {
            path: tmp.path().join("gone"),
            old: "1".into(),
            new: "0".into(),
        };
        let path = fabricate(
            &dir,
            dead_owner(),
            vec![gone.clone(), file_entry(&a, "1", "0")],
        );
        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1);
        assert!(!recovered[0].ok());
        assert!(recovered[0]
            .to_string()
            .contains("1 of 2 entries could not be restored"));
        assert_eq!(content(&a), "1\n");
        assert_eq!(read_journal(&path).unwrap().entries, vec![gone]);
    }

    #[test]
    fn conflict_with_other_journal_is_refused() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let parent = std::os::unix::process::parent_id();
        let live = Owner {
            pid: parent,
            starttime: read_starttime(parent).unwrap(),
            command: "rtlab run".into(),
            boot_id: boot_id(),
        };
        let other = fabricate(&dir, live, vec![file_entry(&knob, "1", "0")]);

        let mut j = Journal::new(dir.clone());
        let err = j.set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("pid {parent}: rtlab run")), "{msg}");
        assert!(
            msg.contains("is held at 0") && msg.contains("puts it back to 1 when it ends"),
            "{msg}"
        );
        // The value the other one holds is refused too: it would be put
        // back under this run when the other one ends.
        let err = j.set_file(&knob, "0").unwrap_err();
        assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
        assert_eq!(content(&knob), "1\n");
        assert!(j.entries().is_empty());

        fs::remove_file(&other).unwrap();
        fabricate(&dir, dead_owner(), vec![file_entry(&knob, "1", "0")]);
        let err = j.set_file(&knob, "2").unwrap_err();
        assert!(matches!(err, JournalError::StaleConflict { .. }), "{err}");
        assert!(err.to_string().contains("rtlab restore"), "{err}");
        assert_eq!(content(&knob), "1\n");
    }

    #[test]
    fn another_rtlabs_command_line_is_shown_without_controls() {
        // The command line of the other rtlab is whatever its user typed
        // (a --json path, say): no escape sequence nor a right-to-left
        // override that turns the rest of the line around on a terminal.
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let knob = target(&tmp, "knob", "1");
        let parent = std::os::unix::process::parent_id();
        let command = "rtlab measure timer --json \u{1b}[2Jx\u{202e}nosj.\u{2066}";
        let live = Owner {
            pid: parent,
            starttime: read_starttime(parent).unwrap(),
            command: command.into(),
            boot_id: boot_id(),
        };
        let clean = |text: &str| {
            !text.chars().any(|c| {
                c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c) || c == '\u{2066}'
            })
        };
        let other = fabricate(&dir, live, vec![file_entry(&knob, "1", "0")]);
        let err = Journal::new(dir.clone()).set_file(&knob, "2").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("rtlab measure timer --json ?[2Jx?nosj.?"),
            "{msg}"
        );
        assert!(clean(&msg), "{msg:?}");
        // Nor in what `rtlab restore` says of a dead one's journal.
        fs::remove_file(&other).unwrap();
        let mut dead = dead_owner();
        dead.command = command.into();
        fabricate(&dir, dead, vec![file_entry(&knob, "1", "0")]);
        let recovered = recover_stale(&dir);
        let text = recovered[0].to_string();
        assert!(
            text.contains("(rtlab measure timer --json ?[2Jx?nosj.?)"),
            "{text}"
        );
        assert!(clean(&text), "{text:?}");
    }

    #[test]
    fn second_journal_in_same_dir_is_refused() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let mut first = Journal::new(dir.clone());
        first.set_file(&target(&tmp, "a", "1"), "0").unwrap();
        let mut second = Journal::new(dir);
        let err = second.set_file(&target(&tmp, "b", "1"), "0").unwrap_err();
        assert!(matches!(err, JournalError::InUse { .. }), "{err}");
    }

    #[test]
    fn insecure_state_dir_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path().join("open");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let knob = target(&tmp, "knob", "1");
        let mut j = Journal::new(dir.clone());
        let err = j.set_file(&knob, "0").unwrap_err();
        assert!(matches!(err, JournalError::StateDir { .. }), "{err}");
        assert_eq!(content(&knob), "1\n");
        assert_eq!(recover_stale(&dir).len(), 1);
    }

    #[test]
    fn state_dir_is_created_private() {
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path().join("a/b");
        let mut j = Journal::new(dir.clone());
        j.set_file(&target(&tmp, "knob", "1"), "0").unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn state_dir_choice() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            choose_state_dir(os("/x"), 0, os("/run/user/1")),
            PathBuf::from("/x")
        );
        assert_eq!(
            choose_state_dir(None, 0, os("/run/user/1")),
            PathBuf::from("/run/rtlab")
        );
        assert_eq!(
            choose_state_dir(os(""), 1000, os("/run/user/1000")),
            PathBuf::from("/run/user/1000/rtlab")
        );
        assert_eq!(
            choose_state_dir(None, 1000, None),
            PathBuf::from("/tmp/rtlab-1000")
        );
    }

    #[test]
    fn starttime_parsing() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let view = |line: &str| {
            Stat::parse(line.as_bytes())
                .as_ref()
                .and_then(ProcStat::from_stat)
        };
        assert_eq!(
            view(stat),
            Some(ProcStat {
                state: 'S',
                starttime: 98765
            })
        );
        assert_eq!(view("42 (x"), None);
        assert_eq!(view("42 (x) Z 1"), None);
        assert!(view(&stat.replace(" S ", " Z ")).unwrap().has_exited());
        assert!(read_starttime(std::process::id()).unwrap() > 0);
        assert_eq!(owner_from_name("journal-12-345.json"), Some((12, 345)));
        assert_eq!(owner_from_name("journal-12-345.json.tmp"), Some((12, 345)));
        assert_eq!(owner_from_name("journal-x.json"), None);
    }

    #[test]
    fn multiple_choice_values() {
        assert_eq!(selected_choice("always [madvise] never"), "madvise");
        assert_eq!(selected_choice("[none] mq-deadline"), "none");
        assert_eq!(selected_choice("1"), "1");
        assert_eq!(selected_choice("4\t4\t1\t7"), "4\t4\t1\t7");
        assert_eq!(selected_choice("[a] [b]"), "[a] [b]");
    }

    #[test]
    fn parse_sysctl_accepts_and_rejects() {
        let expected = PathBuf::from("/proc/sys/kernel/pid_max");
        assert_eq!(
            parse_sysctl("kernel.pid_max=4096").unwrap(),
            (expected.clone(), "4096".to_string())
        );
        assert_eq!(
            parse_sysctl("kernel/pid_max = 4096").unwrap(),
            (expected, "4096".to_string())
        );
        if Path::new("/proc/sys/kernel/timer_migration").exists() {
            assert_eq!(
                parse_sysctl("kernel.timer_migration=0").unwrap(),
                (
                    PathBuf::from("/proc/sys/kernel/timer_migration"),
                    "0".to_string()
                )
            );
            assert_eq!(
                parse_sysctl("kernel/timer_migration = 0").unwrap().0,
                PathBuf::from("/proc/sys/kernel/timer_migration")
            );
        }
        for bad in [
            "../etc/passwd=1",
            "=1",
            "kernel.x",
            "nonexistent.key=1",
            "kernel.pid_max=",
            "kernel=1",
            "kernel.pid max=1",
        ] {
            let err = parse_sysctl(bad).unwrap_err();
            assert!(
                err.to_string().contains(&format!("{bad:?}")),
                "{bad}: {err}"
            );
        }
        let err = parse_sysctl("nonexistent.key=1").unwrap_err();
        assert!(matches!(err, JournalError::UnknownSysctl { .. }), "{err}");
        assert!(
            err.to_string().contains("/proc/sys/nonexistent/key"),
            "{err}"
        );
        let err = parse_sysctl("kernel.x").unwrap_err();
        assert!(err.to_string().contains("missing '='"), "{err}");
    }

    #[test]
    fn error_messages_say_what_to_do() {
        let err = JournalError::Write {
            path: "/proc/sys/kernel/x".into(),
            value: "0".into(),
            source: io::Error::from_raw_os_error(libc::EACCES),
        };
        let msg = err.to_string();
        assert!(
            msg.contains("/proc/sys/kernel/x") && msg.contains("needs root or CAP_SYS_ADMIN"),
            "{msg}"
        );
    }

    /// A new private SysV semaphore set, removed when dropped if a test
    /// left it behind.
    struct TestSet(i32);

    impl TestSet {
        fn new() -> TestSet {
            // SAFETY: plain syscall.
            let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
            assert!(id >= 0, "semget: {}", io::Error::last_os_error());
            TestSet(id)
        }

        fn exists(&self) -> bool {
            SysvSemSet::stat(self.0).is_ok()
        }
    }

    impl Drop for TestSet {
        fn drop(&mut self) {
            // SAFETY: plain syscall on the set this test created.
            unsafe { libc::semctl(self.0, 0, libc::IPC_RMID) };
        }
    }

    fn sysv_entry(set: SysvSemSet) -> Entry {
        Entry::SysvSem {
            semid: set.semid,
            ctime: set.ctime,
            cuid: set.cuid,
            note: "created by a test".into(),
        }
    }

    #[test]
    fn sysv_sem_set_is_journaled_and_removed_at_the_normal_end() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let mut j = Journal::new(dir.clone());
        let stat = j.note_sysv_sem(set.0, "created by a test").unwrap();
        assert_eq!(stat, SysvSemSet::stat(set.0).unwrap());
        // On disk before the set is used.
        let files = journal_files(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(
            read_journal(&files[0]).unwrap().entries,
            vec![sysv_entry(stat)]
        );
        assert!(content(&files[0]).contains("\"kind\": \"sysv_sem\""));

        let removed = j.remove_sysv_sem(set.0).expect("an entry for the set");
        assert_eq!(removed.outcome, Outcome::Removed, "{removed}");
        assert!(
            removed
                .to_string()
                .starts_with("removed SysV semaphore set"),
            "{removed}"
        );
        assert!(!set.exists());
        assert!(j.entries().is_empty());
        assert!(journal_files(&dir).is_empty());
        assert!(j.remove_sysv_sem(set.0).is_none(), "nothing left to remove");

        // Dropping the journal removes a set still recorded.
        let other = TestSet::new();
        {
            let mut j = Journal::new(dir.clone());
            j.note_sysv_sem(other.0, "created by a test").unwrap();
        }
        assert!(!other.exists());
        assert!(journal_files(&dir).is_empty());
    }

    #[test]
    fn recover_stale_removes_a_dead_owners_sysv_sem_set() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let stat = SysvSemSet::stat(set.0).unwrap();
        let journal = fabricate(&dir, dead_owner(), vec![sysv_entry(stat)]);

        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{}", recovered[0]);
        assert_eq!(recovered[0].restored[0].outcome, Outcome::Removed);
        assert!(!set.exists(), "the set is removed");
        assert!(!journal.exists());
        let json = serde_json::to_value(&recovered[0].restored[0]).unwrap();
        assert_eq!(json["kind"], "sysv_sem");
        assert_eq!(json["status"], "removed");
        assert_eq!(json["semid"], set.0);
    }

    #[test]
    fn a_reused_sysv_sem_id_is_left_alone() {
        let tmp = TempDir::new().unwrap();
        let dir = state(&tmp);
        let set = TestSet::new();
        let stat = SysvSemSet::stat(set.0).unwrap();
        // The recorded set had this id but another creation time: the set
        // there now is someone else's.
        let older = SysvSemSet {
            ctime: stat.ctime - 3600,
            ..stat
        };
        let journal = fabricate(&dir, dead_owner(), vec![sysv_entry(older)]);
        let recovered = recover_stale(&dir);
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert!(recovered[0].ok(), "{}", recovered[0]);
        let restored = &recovered[0].restored[0];
        assert!(
            matches!(&restored.outcome, Outcome::Skipped { reason } if reason.contains("another set")),
            "{restored}"
        );
        assert!(set.exists(), "someone else's set is not removed");
        assert!(!journal.exists(), "the entry is done");

        // Another creator: left alone as well.
        let foreign = SysvSemSet {
            cuid: stat.cuid + 1,
            ..stat
        };
        assert!(matches!(
            remove_sysv_sem_set(foreign),
            Outcome::Skipped { .. }
        ));
        assert!(set.exists());

        // A set that is gone already: nothing to do.
        let gone = TestSet::new();
        let gone_stat = SysvSemSet::stat(gone.0).unwrap();
        drop(gone);
        assert!(matches!(
            remove_sysv_sem_set(gone_stat),
            Outcome::Skipped { reason } if reason.contains("already gone")
        ));
    }

    #[test]
    fn panic_restores_registered_journal() {
        let tmp = TempDir::new().unwrap();
        let knob = target(&tmp, "knob", "1");
        let journal = Arc::new(Mutex::new(Journal::new(state(&tmp))));
        install_panic_restore(journal.clone());

        // Poison the mutex first: the panic happens while the lock is held,
        // so the hook cannot restore then (it would deadlock).
        let j = journal.clone();
        let k = knob.clone();
        let _ = std::thread::spawn(move || {
            let mut guard = j.lock().unwrap();
            guard.set_file(&k, "0").unwrap();
            panic!("intentional panic while holding the journal");
        })
        .join();
        assert!(journal.is_poisoned());
        assert_eq!(content(&knob), "0\n");

        // A later panic elsewhere restores it through the poisoned mutex.
        let _ = std::thread::spawn(|| panic!("intentional panic for the restore hook")).join();
        assert_eq!(content(&knob), "1\n");
        let guard = journal.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(guard.entries().is_empty());
    }
}
