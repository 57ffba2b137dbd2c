//! The record of every change `rtlab tune` makes, kept so `rtlab tune undo`
//! can put things back.
//!
//! Unlike a run's journal (rtlab-core), these changes are meant to outlast
//! the command, so nothing is restored at exit. Each change is written to
//! the record *before* it is made. A thread is named by its id and start
//! time (and the boot), so undo never touches a thread that merely reuses
//! the id of one rtlab changed.

use crate::task::{self, Settings, Task};
use rtlab_core::process::boot_id;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "rtlab.tune-changes/1";
const FILE_NAME: &str = "tune-changes.json";
/// The start of the name of the record's temporary files.
const TEMP_PREFIX: &str = ".tune-changes.json.tmp";
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

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A thread's scheduling and affinity.
    Thread {
        pid: i32,
        tid: i32,
        starttime: u64,
        name: String,
        process_name: String,
        old: Settings,
        new: Settings,
    },
    /// A file rtlab wrote (a systemd drop-in or unit); `old` is None when
    /// the file did not exist, and undo then removes it.
    File {
        path: PathBuf,
        old: Option<String>,
        new: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Which command made it: one number per `rtlab tune` invocation.
    pub txn: u64,
    /// RFC 3339 UTC.
    pub at: String,
    pub command: String,
    pub boot_id: Option<String>,
    #[serde(flatten)]
    pub change: Change,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.change {
            Change::Thread {
                pid,
                tid,
                name,
                old,
                new,
                ..
            } => write!(f, "thread {pid}/{tid} ({name}): {old} -> {new}"),
            Change::File { path, old, .. } => write!(
                f,
                "file {} ({})",
                path.display(),
                if old.is_some() { "replaced" } else { "created" }
            ),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    schema: String,
    next_txn: u64,
    entries: Vec<Entry>,
}

/// The change record in one directory.
#[derive(Debug, Clone)]
pub struct ChangeLog {
    dir: PathBuf,
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("the thread ended before it could be changed")]
    Vanished,
    /// The kernel refused; `left_at` is set when the thread could not be
    /// put back as it was (that state is recorded for undo).
    #[error("{error}{}", left_at.as_ref().map(|s| format!("; left at {s} (recorded for undo)")).unwrap_or_default())]
    Refused {
        error: Box<crate::task::WriteError>,
        left_at: Option<Box<Settings>>,
    },
    /// The thread ended while being changed and its id now names another
    /// thread (start time `starttime`), which the change may have reached;
    /// `taken_back` when that one was seen to have it and was put back to
    /// SCHED_OTHER.
    #[error("thread {tid} ended during the change and its id now names another thread (start time {starttime}), {}", if *taken_back { "which the change reached: it was taken back to SCHED_OTHER".to_string() } else { format!("which may have been given {new}: check it with `rtlab tune show`") })]
    EndedDuring {
        tid: i32,
        starttime: u64,
        taken_back: bool,
        new: Box<Settings>,
    },
    #[error("cannot read thread {tid}: {source}")]
    Unreadable { tid: i32, source: io::Error },
    #[error("cannot write {path}: {source}")]
    File { path: PathBuf, source: io::Error },
    #[error("cannot record the change in {path}: {source}")]
    Record { path: PathBuf, source: io::Error },
}

/// Past this many entries a new change first drops the entries of threads
/// that have ended, so a watch that runs for months keeps a record the
/// size of what it holds (and a burst of changes stays cheap).
const PRUNE_AT: usize = 64;

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

    /// Starts the changes of one command. Threads that have ended since
    /// earlier commands are dropped from the record here: nothing can be
    /// restored for them.
    pub fn begin(&self, command: &str) -> Result<Txn<'_>, ChangeError> {
        let id = self.update(|record| {
            let this_boot = boot_id();
            record
                .entries
                .retain(|e| still_there(e, this_boot.as_deref()));
            record.next_txn += 1;
            Ok(record.next_txn)
        })?;
        Ok(Txn {
            log: self,
            id,
            command: command.to_string(),
        })
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

    fn lock(&self) -> Result<Lock, ChangeError> {
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

    fn read(&self) -> Result<Record, ChangeError> {
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

    /// Writes the record through a temporary file beside it. Called under
    /// the lock only, so a temporary file of ours found there is one a
    /// killed rtlab left part way (`kill -9` during `tune apply`): removed,
    /// where it was left for good in rtlab's state directory.
    fn write(&self, record: &Record) -> Result<(), ChangeError> {
        let json = serde_json::to_vec_pretty(record).expect("the record serializes");
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&self.dir)
            .map_err(|e| self.record_error(e))?;
        tmp.write_all(&json)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| self.record_error(e))?;
        tmp.persist(self.path())
            .map_err(|e| self.record_error(e.error))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.record_error(e))
    }

    /// Read, modify and write the record under the lock.
    fn update<T>(
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

/// The changes of one command.
pub struct Txn<'a> {
    log: &'a ChangeLog,
    id: u64,
    command: String,
}

/// What became of one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ThreadOutcome {
    Changed {
        old: Settings,
        new: Settings,
    },
    /// It already had the settings.
    Held {
        settings: Settings,
    },
}

impl Txn<'_> {
    pub fn id(&self) -> u64 {
        self.id
    }

    fn entry(&self, change: Change) -> Entry {
        Entry {
            txn: self.id,
            at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command: self.command.clone(),
            boot_id: boot_id(),
            change,
        }
    }

    /// Gives `task` the settings `target(current)`: records the change,
    /// then makes it, then records what the kernel really set.
    pub fn change_thread(
        &self,
        task: &Task,
        target: impl Fn(&Settings) -> Settings,
    ) -> Result<ThreadOutcome, ChangeError> {
        self.change_threads(&[task], |_, current| target(current))?
            .pop()
            .expect("one outcome per thread")
    }

    /// [`Txn::change_thread`] for many threads at once: all changes are
    /// recorded in one durable write before the first is made, and what
    /// the kernel set is recorded in one more after the last, so promoting
    /// a hundred threads costs two writes of the record, not two hundred.
    /// The outer error is the record's; the inner ones are per thread.
    pub fn change_threads(
        &self,
        tasks: &[&Task],
        target: impl Fn(&Task, &Settings) -> Settings,
    ) -> Result<Vec<Result<ThreadOutcome, ChangeError>>, ChangeError> {
        let _lock = self.log.lock()?;
        let mut outcomes: Vec<Option<Result<ThreadOutcome, ChangeError>>> = Vec::new();
        let mut pending: Vec<(usize, &Task, Settings, Settings)> = Vec::new();
        for (i, &task) in tasks.iter().enumerate() {
            let planned = (|| {
                if task::starttime_of(task.tid) != Some(task.starttime) {
                    return Err(ChangeError::Vanished);
                }
                let old = read_settings(task.tid)?;
                let new = target(task, &old);
                Ok((old, new))
            })();
            match planned {
                Ok((old, new)) if new == old => {
                    outcomes.push(Some(Ok(ThreadOutcome::Held { settings: old })))
                }
                Ok((old, new)) => {
                    outcomes.push(None);
                    pending.push((i, task, old, new));
                }
                Err(e) => outcomes.push(Some(Err(e))),
            }
        }
        if pending.is_empty() {
            return Ok(outcomes.into_iter().flatten().collect());
        }

        let mut record = self.log.read()?;
        if record.entries.len() + pending.len() > PRUNE_AT {
            let this_boot = boot_id();
            record
                .entries
                .retain(|e| still_there(e, this_boot.as_deref()));
        }
        let first = record.entries.len();
        for (_, task, old, new) in &pending {
            record.entries.push(self.entry(Change::Thread {
                pid: task.pid,
                tid: task.tid,
                starttime: task.starttime,
                name: task.name.clone(),
                process_name: task.process_name.clone(),
                old: old.clone(),
                new: new.clone(),
            }));
        }
        self.log.write(&record)?;

        let mut keep = vec![true; record.entries.len()];
        // The usual case, every change made as asked, needs no second write.
        let mut dirty = false;
        for (n, (i, task, old, new)) in pending.into_iter().enumerate() {
            let (outcome, fate) = make_change(task, old, new);
            match fate {
                Fate::Drop => {
                    keep[first + n] = false;
                    dirty = true;
                }
                Fate::Keep(Some(now)) => {
                    if let Change::Thread { new, .. } = &mut record.entries[first + n].change {
                        *new = now;
                    }
                    dirty = true;
                }
                Fate::Keep(None) => {}
            }
            outcomes[i] = Some(outcome);
        }
        if dirty {
            let mut flags = keep.into_iter();
            record.entries.retain(|_| flags.next().unwrap_or(true));
            self.log.write(&record)?;
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// Whether rtlab gave thread `tid` (with start time `starttime`) the
    /// `settings` it holds: the newest change of it in the record, by any
    /// command of this boot, left it those. A thread that had them from
    /// elsewhere (its service's own settings, `chrt`, the kernel's default
    /// for its threads) is not rtlab's.
    pub fn gave(&self, tid: i32, starttime: u64, settings: &Settings) -> Result<bool, ChangeError> {
        let _lock = self.log.lock()?;
        let this_boot = boot_id();
        let newest = self.log.read()?.entries.into_iter().rev().find(|e| {
            e.boot_id == this_boot
                && matches!(e.change, Change::Thread { tid: t, starttime: s, .. }
                    if t == tid && s == starttime)
        });
        Ok(
            matches!(newest, Some(Entry { change: Change::Thread { new, .. }, .. }) if new == *settings),
        )
    }

    /// Takes back this command's change of `task` if the thread (same id
    /// and start time) still has what it was given: for a thread that no
    /// rule matches any more (it ran another program, or renamed itself).
    /// `Ok(None)` when there is nothing of this command's to take back, or
    /// someone changed the thread since.
    pub fn revert_thread(&self, task: &Task) -> Result<Option<ThreadOutcome>, ChangeError> {
        let _lock = self.log.lock()?;
        let mut record = self.log.read()?;
        let Some(index) = record.entries.iter().rposition(|e| {
            e.txn == self.id
                && matches!(e.change, Change::Thread { tid, starttime, .. }
                    if tid == task.tid && starttime == task.starttime)
        }) else {
            return Ok(None);
        };
        let Change::Thread { old, new, .. } = record.entries[index].change.clone() else {
            return Ok(None);
        };
        let now = read_settings(task.tid)?;
        if now != new {
            return Ok(None);
        }
        match write_to(task.pid, task.tid, task.starttime, &old) {
            Ok(()) => {}
            Err(Missed::Refused(error)) => {
                return Err(ChangeError::Refused {
                    error: Box::new(error),
                    left_at: Settings::read(task.tid).ok().map(Box::new),
                })
            }
            Err(Missed::Gone) => return Err(ChangeError::Vanished),
            Err(Missed::Reached {
                starttime,
                taken_back,
            }) => {
                record.entries.remove(index);
                self.log.write(&record)?;
                return Err(ChangeError::EndedDuring {
                    tid: task.tid,
                    starttime,
                    taken_back,
                    new: Box::new(old),
                });
            }
        }
        record.entries.remove(index);
        self.log.write(&record)?;
        Ok(Some(ThreadOutcome::Changed { old: now, new: old }))
    }

    /// Writes `contents` to `path` (atomically), recording what was there.
    pub fn write_file(&self, path: &Path, contents: &str) -> Result<(), ChangeError> {
        let _lock = self.log.lock()?;
        let old = match fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ChangeError::File {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if old.as_deref() == Some(contents) {
            return Ok(());
        }
        let mut record = self.log.read()?;
        record.entries.push(self.entry(Change::File {
            path: path.to_path_buf(),
            old,
            new: contents.to_string(),
        }));
        self.log.write(&record)?;
        if let Err(source) = write_atomically(path, contents) {
            record.entries.pop();
            self.log.write(&record)?;
            return Err(ChangeError::File {
                path: path.to_path_buf(),
                source,
            });
        }
        Ok(())
    }
}

/// What becomes of a recorded change once it has been tried.
enum Fate {
    /// Nothing changed (or nothing is left to restore): drop the entry.
    Drop,
    /// Keep it, with the settings the thread really has now when they
    /// differ from what was asked.
    Keep(Option<Settings>),
}

/// Where a test stops a change to swap the thread under it (see tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Stage {
    /// After the record is durable, before the identity check.
    Recorded,
    /// After the identity check, before the system call.
    Checked,
}

#[cfg(test)]
type Hook = Box<dyn FnMut(Stage, i32)>;

#[cfg(test)]
thread_local! {
    /// The test seam: called at each [`Stage`] of a change made on this
    /// thread. Compiled only into the crate's own tests.
    pub(crate) static HOOK: std::cell::RefCell<Option<Hook>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
fn hook(stage: Stage, tid: i32) {
    HOOK.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f(stage, tid)
        }
    });
}

#[cfg(not(test))]
fn hook(_: Stage, _: i32) {}

/// Makes one recorded change and judges it.
///
/// The kernel changes a thread by id, and ids are reused. Recording the
/// change takes fsyncs (tens of ms on a busy disk), so the thread's identity
/// is checked again immediately before the change, not only when it was
/// planned: a thread that ended meanwhile is left unchanged, whatever now
/// holds its id. A window remains between that check and the system call.
/// It is closed from the other side: a pidfd opened *before* the check
/// (and seen by the check to name the thread of the recorded start time)
/// cannot be re-pointed, so if it still shows the thread alive after the
/// call, the thread lived through the call and its id could not have been
/// given to anyone else: the change reached it. If it shows the thread
/// ended (or, without pidfds, the start time at the id changed), the
/// change may have reached a newcomer at the id. That newcomer is taken
/// back to SCHED_OTHER when it provably started inside the window (its
/// start time is not before the check) and has exactly the scheduling
/// this change gave: the safe direction for a process that was never meant
/// to be real-time; anything else is reported, not touched.
fn make_change(
    task: &Task,
    old: Settings,
    new: Settings,
) -> (Result<ThreadOutcome, ChangeError>, Fate) {
    hook(Stage::Recorded, task.tid);
    let pin = Pin::open(task);
    let checked_at = boot_ticks();
    if task::starttime_of(task.tid) != Some(task.starttime) || pin.as_ref().is_some_and(Pin::ended)
    {
        return (Err(ChangeError::Vanished), Fate::Drop);
    }
    hook(Stage::Checked, task.tid);
    let made = new.write(task.tid);
    let still_ours = pin.as_ref().is_none_or(|p| !p.ended());
    match task::starttime_of(task.tid) {
        Some(start) if start == task.starttime && still_ours => {}
        // Ended: a change made reached it before it went (nothing is left
        // to restore either way).
        None => {
            let outcome = match made {
                Ok(()) => Ok(ThreadOutcome::Changed { old, new }),
                Err(_) => Err(ChangeError::Vanished),
            };
            return (outcome, Fate::Drop);
        }
        // Ended but not yet reaped (a zombie keeps its id): nothing to
        // restore, and no one else can have the id.
        Some(start) if start == task.starttime => return (Err(ChangeError::Vanished), Fate::Drop),
        // The id names another thread now, which a successful write may
        // have reached.
        Some(other) => {
            let error = match made {
                Err(_) => ChangeError::Vanished,
                Ok(()) => ChangeError::EndedDuring {
                    tid: task.tid,
                    starttime: other,
                    taken_back: take_back_newcomer(task.tid, other, checked_at, &new),
                    new: Box::new(new),
                },
            };
            return (Err(error), Fate::Drop);
        }
    }
    match made {
        Ok(()) => match read_settings(task.tid) {
            // The kernel had nothing to change (an affinity the cpuset
            // narrows back to what it was): nothing to undo.
            Ok(actual) if actual == old => {
                (Ok(ThreadOutcome::Held { settings: actual }), Fate::Drop)
            }
            Ok(actual) => {
                // Undo compares against what the kernel really set.
                let fate = Fate::Keep((actual != new).then(|| actual.clone()));
                (Ok(ThreadOutcome::Changed { old, new: actual }), fate)
            }
            Err(ChangeError::Vanished) => (Err(ChangeError::Vanished), Fate::Drop),
            Err(e) => (Err(e), Fate::Keep(None)),
        },
        Err(error) => {
            // sched_setattr changes all or nothing, but an affinity refused
            // after it leaves the policy changed: put it back, and keep the
            // record unless that is seen to have worked.
            let _ = old.write(task.tid);
            let now = Settings::read(task.tid).ok();
            if now.as_ref() == Some(&old) {
                return (
                    Err(ChangeError::Refused {
                        error: Box::new(error),
                        left_at: None,
                    }),
                    Fate::Drop,
                );
            }
            let left_at = now.clone().or(Some(new)).map(Box::new);
            (
                Err(ChangeError::Refused {
                    error: Box::new(error),
                    left_at,
                }),
                Fate::Keep(now),
            )
        }
    }
}

/// A pidfd on the thread a change is for: it keeps naming that thread
/// (never a newcomer at its id) and shows when it has ended.
struct Pin(std::os::fd::OwnedFd);

/// pidfd_open's flag for a thread that is not its process's leader
/// (Linux 6.9; PIDFD_THREAD = O_EXCL).
const PIDFD_THREAD: libc::c_int = libc::O_EXCL;

impl Pin {
    /// None where the kernel has no pidfds for it (before 5.3, or a
    /// non-leader thread before 6.9): the start time checks remain.
    fn open(task: &Task) -> Option<Pin> {
        Pin::open_ids(task.pid, task.tid)
    }

    fn open_ids(pid: i32, tid: i32) -> Option<Pin> {
        let flags = if tid == pid { 0 } else { PIDFD_THREAD };
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, flags) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd was just returned to us and is owned by no one else.
        Some(Pin(unsafe {
            std::os::fd::FromRawFd::from_raw_fd(fd as std::os::fd::RawFd)
        }))
    }

    /// The thread has ended (a pidfd polls readable once it exits).
    fn ended(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP) != 0
    }
}

/// Why [`write_to`] did not (only) change the thread it was for.
enum Missed {
    /// It has ended; nothing was changed.
    Gone,
    /// The kernel refused.
    Refused(crate::task::WriteError),
    /// It ended during the write and its id names a newcomer now, which
    /// the write may have reached (`taken_back` as in [`make_change`]).
    Reached { starttime: u64, taken_back: bool },
}

/// Writes `settings` to thread `tid` of process `pid` only if it is still
/// the thread that started at `starttime`, with the checks of
/// [`make_change`] immediately before and after the system calls: for
/// undo and for taking a change back, which have no record to write first
/// but the same window between the check and the call.
fn write_to(pid: i32, tid: i32, starttime: u64, settings: &Settings) -> Result<(), Missed> {
    let pin = Pin::open_ids(pid, tid);
    let checked_at = boot_ticks();
    if task::starttime_of(tid) != Some(starttime) || pin.as_ref().is_some_and(Pin::ended) {
        return Err(Missed::Gone);
    }
    hook(Stage::Checked, tid);
    let made = settings.write(tid);
    let still_ours = pin.as_ref().is_none_or(|p| !p.ended());
    match (task::starttime_of(tid), made) {
        (Some(now), Ok(())) if now == starttime && still_ours => Ok(()),
        (Some(now), Err(e)) if now == starttime && still_ours => Err(Missed::Refused(e)),
        (Some(now), Ok(())) if now != starttime => Err(Missed::Reached {
            starttime: now,
            taken_back: take_back_newcomer(tid, now, checked_at, settings),
        }),
        _ => Err(Missed::Gone),
    }
}

impl Missed {
    fn describe(&self, tid: i32, settings: &Settings) -> String {
        match self {
            Missed::Gone => "the thread ended".into(),
            Missed::Refused(e) => e.to_string(),
            Missed::Reached {
                starttime,
                taken_back,
            } => ChangeError::EndedDuring {
                tid,
                starttime: *starttime,
                taken_back: *taken_back,
                new: Box::new(settings.clone()),
            }
            .to_string(),
        }
    }
}

/// Now, in the clock ticks of /proc/PID/stat's start time (boot time).
fn boot_ticks() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000
}

/// After a change that may have reached thread `tid`'s newcomer (start
/// time `starttime`): takes it back to SCHED_OTHER if it started no
/// earlier than the identity check (`checked_at`; one tick earlier, as
/// start times are rounded down) and has exactly the scheduling `new`
/// gave. Whether it did.
fn take_back_newcomer(tid: i32, starttime: u64, checked_at: u64, new: &Settings) -> bool {
    if starttime + 1 < checked_at {
        return false;
    }
    let Ok(now) = Settings::read(tid) else {
        return false;
    };
    if (now.policy, now.priority, now.deadline) != (new.policy, new.priority, new.deadline)
        || !now.policy.is_realtime()
    {
        return false;
    }
    let plain = Settings {
        policy: rtlab_core::sched::Policy::Other,
        priority: 0,
        deadline: None,
        ..now
    };
    plain.write(tid).is_ok() && task::starttime_of(tid) == Some(starttime)
}

/// A thread's settings; a thread that ended reads as `Vanished`.
fn read_settings(tid: i32) -> Result<Settings, ChangeError> {
    Settings::read(tid).map_err(|source| {
        if source.raw_os_error() == Some(libc::ESRCH) {
            ChangeError::Vanished
        } else {
            ChangeError::Unreadable { tid, source }
        }
    })
}

fn write_atomically(path: &Path, contents: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(contents.as_bytes())?;
    tmp.as_file().sync_all()?;
    // Units are read by systemd (root) and listed by users: 0644.
    fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Whether an entry's thread (or file) can still be restored.
fn still_there(entry: &Entry, this_boot: Option<&str>) -> bool {
    match &entry.change {
        Change::File { .. } => true,
        Change::Thread { tid, starttime, .. } => {
            entry.boot_id.as_deref() == this_boot && task::starttime_of(*tid) == Some(*starttime)
        }
    }
}

/// Which changes `undo` takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UndoScope {
    /// Those of the most recent command that still has some.
    Last,
    /// Those of one command (a command taking back its own work).
    Txn(u64),
    All,
}

/// What undo did (or, in a dry run, would do) with one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum UndoOutcome {
    Restored,
    /// The thread has ended (or the id now names another thread, or the
    /// machine rebooted): nothing to restore.
    Gone,
    /// Someone changed it after rtlab did; left alone unless forced.
    ChangedSince {
        now: String,
    },
    Failed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Undone {
    pub entry: Entry,
    #[serde(flatten)]
    pub outcome: UndoOutcome,
}

impl ChangeLog {
    /// Takes back changes, newest first. Restored and gone entries leave
    /// the record; the others stay for a later try (or `force`).
    pub fn undo(
        &self,
        scope: UndoScope,
        force: bool,
        dry_run: bool,
    ) -> Result<Vec<Undone>, ChangeError> {
        let _lock = self.lock()?;
        let mut record = self.read()?;
        let chosen_txn = match scope {
            UndoScope::All => None,
            UndoScope::Txn(txn) => Some(txn),
            UndoScope::Last => match record.entries.iter().map(|e| e.txn).max() {
                Some(txn) => Some(txn),
                None => return Ok(Vec::new()),
            },
        };
        let this_boot = boot_id();
        let mut done = Vec::new();
        let mut keep = vec![true; record.entries.len()];
        let in_scope = |e: &Entry| chosen_txn.is_none_or(|t| e.txn == t);
        let chains = chains(&record.entries, &in_scope);
        // What became of the older changes of a chain, settled with its
        // newest.
        let mut settled: std::collections::HashMap<usize, UndoOutcome> = Default::default();
        for (i, entry) in record.entries.iter().enumerate().rev() {
            if !in_scope(entry) {
                continue;
            }
            let outcome = if let Some(outcome) = settled.remove(&i) {
                outcome
            } else if let Some(older) = chains.get(&i) {
                // One write, to the oldest settings of the chain.
                let mut whole = entry.clone();
                if let (
                    Change::Thread { old, .. },
                    Some(Entry {
                        change: Change::Thread { old: first, .. },
                        ..
                    }),
                ) = (&mut whole.change, older.last().map(|&j| &record.entries[j]))
                {
                    *old = first.clone();
                }
                let outcome = undo_one(&whole, this_boot.as_deref(), force, dry_run);
                if matches!(outcome, UndoOutcome::ChangedSince { .. }) {
                    // Changed since by someone else: each on its own.
                    undo_one(entry, this_boot.as_deref(), force, dry_run)
                } else {
                    for &j in older {
                        settled.insert(j, outcome.clone());
                    }
                    outcome
                }
            } else {
                undo_one(entry, this_boot.as_deref(), force, dry_run)
            };
            if matches!(outcome, UndoOutcome::Restored | UndoOutcome::Gone) {
                keep[i] = false;
            }
            done.push(Undone {
                entry: entry.clone(),
                outcome,
            });
        }
        if !dry_run {
            let mut flags = keep.into_iter();
            record.entries.retain(|_| flags.next().unwrap_or(true));
            self.write(&record)?;
        }
        Ok(done)
    }
}

/// The threads changed more than once in a row (each change starting from
/// what the one before it gave, as a promotion and then a runaway's
/// demotion): the index of the newest change, with those of the older ones,
/// newest first. Undone one by one, newest first, such a chain would give
/// each older setting back in turn, a demoted runaway its real-time
/// priority for a moment (on its CPU, undo itself might not run again);
/// undone as one, the thread goes straight back to the oldest.
fn chains(
    entries: &[Entry],
    in_scope: &dyn Fn(&Entry) -> bool,
) -> std::collections::HashMap<usize, Vec<usize>> {
    let mut chains = std::collections::HashMap::new();
    let mut linked = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate().rev() {
        let Change::Thread {
            tid,
            starttime,
            old: mut from,
            ..
        } = entry.change.clone()
        else {
            continue;
        };
        if !in_scope(entry) || linked.contains(&i) {
            continue;
        }
        let mut older = Vec::new();
        for (j, before) in entries[..i].iter().enumerate().rev() {
            let Change::Thread {
                tid: t,
                starttime: s,
                old,
                new,
                ..
            } = &before.change
            else {
                continue;
            };
            if (*t, *s) != (tid, starttime) || before.boot_id != entry.boot_id {
                continue;
            }
            if !in_scope(before) || *new != from {
                break;
            }
            older.push(j);
            linked.insert(j);
            from = old.clone();
        }
        if !older.is_empty() {
            chains.insert(i, older);
        }
    }
    chains
}

fn undo_one(entry: &Entry, this_boot: Option<&str>, force: bool, dry_run: bool) -> UndoOutcome {
    match &entry.change {
        Change::Thread {
            pid,
            tid,
            starttime,
            old,
            new,
            ..
        } => {
            if entry.boot_id.as_deref() != this_boot || task::starttime_of(*tid) != Some(*starttime)
            {
                return UndoOutcome::Gone;
            }
            let now = match Settings::read(*tid) {
                Ok(now) => now,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return UndoOutcome::Gone,
                Err(e) => {
                    return UndoOutcome::Failed {
                        error: e.to_string(),
                    }
                }
            };
            // Already as it was: the change never landed (the command was
            // killed between recording it and making it) or was taken back
            // by hand. Nothing to write; left in the record, it was 'changed
            // since' and made every later undo exit 1.
            if now == *old {
                return UndoOutcome::Restored;
            }
            if now != *new && !force {
                return UndoOutcome::ChangedSince {
                    now: now.to_string(),
                };
            }
            if dry_run {
                return UndoOutcome::Restored;
            }
            match write_to(*pid, *tid, *starttime, old) {
                Ok(()) => UndoOutcome::Restored,
                Err(Missed::Gone) => UndoOutcome::Gone,
                Err(Missed::Refused(e)) if e.errno() == Some(libc::ESRCH) => UndoOutcome::Gone,
                Err(missed) => UndoOutcome::Failed {
                    error: missed.describe(*tid, old),
                },
            }
        }
        Change::File { path, old, new } => {
            let now = match fs::read_to_string(path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => {
                    return UndoOutcome::Failed {
                        error: e.to_string(),
                    }
                }
            };
            // As it was before: the write never happened (killed first)
            // or was taken back by hand.
            if now == *old {
                return UndoOutcome::Restored;
            }
            if now.as_deref() != Some(new.as_str()) && !force {
                return UndoOutcome::ChangedSince {
                    now: match now {
                        Some(_) => "edited since".into(),
                        None => "removed since".into(),
                    },
                };
            }
            if dry_run {
                return UndoOutcome::Restored;
            }
            let result = match old {
                Some(text) => write_atomically(path, text),
                None => match fs::remove_file(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => {
                        // A drop-in directory rtlab created goes with its
                        // last file; one with other files stays.
                        if let Some(dir) = path.parent() {
                            if dir.extension().is_some_and(|e| e == "d") {
                                let _ = fs::remove_dir(dir);
                            }
                        }
                        Ok(())
                    }
                },
            };
            match result {
                Ok(()) => UndoOutcome::Restored,
                Err(e) => UndoOutcome::Failed {
                    error: e.to_string(),
                },
            }
        }
    }
}

/// An exclusive flock held until dropped: one rtlab at a time edits the
/// record (a `watch` and a `set` may run together).
struct Lock(File);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_recorded_and_restored() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path().join("state"));
        let unit_dir = dir.path().join("units/app.service.d");
        let created = unit_dir.join("50-rtlab-tune.conf");
        let existing = dir.path().join("units/other.conf");
        fs::create_dir_all(existing.parent().unwrap()).unwrap();
        fs::write(&existing, "before\n").unwrap();

        let txn = log.begin("test").unwrap();
        txn.write_file(&created, "[Service]\n").unwrap();
        txn.write_file(&existing, "after\n").unwrap();
        assert_eq!(log.entries().unwrap().len(), 2);

        let dry = log.undo(UndoScope::Last, false, true).unwrap();
        assert_eq!(dry.len(), 2);
        assert!(created.exists(), "a dry run changes nothing");

        let undone = log.undo(UndoScope::Last, false, false).unwrap();
        assert!(undone.iter().all(|u| u.outcome == UndoOutcome::Restored));
        assert!(!created.exists() && !unit_dir.exists());
        assert_eq!(fs::read_to_string(&existing).unwrap(), "before\n");
        assert!(log.entries().unwrap().is_empty());
    }

    #[test]
    fn an_edited_file_is_left_alone_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let file = dir.path().join("x.conf");
        log.begin("a").unwrap().write_file(&file, "ours\n").unwrap();
        fs::write(&file, "theirs\n").unwrap();
        let undone = log.undo(UndoScope::All, false, false).unwrap();
        assert!(matches!(
            undone[0].outcome,
            UndoOutcome::ChangedSince { .. }
        ));
        assert_eq!(fs::read_to_string(&file).unwrap(), "theirs\n");
        assert_eq!(log.entries().unwrap().len(), 1, "kept for a later try");
        let forced = log.undo(UndoScope::All, true, false).unwrap();
        assert_eq!(forced[0].outcome, UndoOutcome::Restored);
        assert!(!file.exists());
    }

    #[test]
    fn a_change_recorded_but_never_made_leaves_the_record() {
        // `tune apply` killed between recording a change and making it left
        // an entry whose thread still had its old settings: every later
        // undo said 'left alone: changed since' and exited 1, for good.
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path().join("state"));
        let file = dir.path().join("x.conf");
        fs::write(&file, "before\n").unwrap();
        log.begin("a").unwrap().write_file(&file, "ours\n").unwrap();
        // As if the write had not happened.
        fs::write(&file, "before\n").unwrap();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let me = crate::task::thread(
                std::process::id() as i32,
                rtlab_core::sched::gettid(),
                crate::task::Detail::Full,
            )
            .unwrap();
            let txn = log2.begin("batch").unwrap();
            txn.change_thread(&me, |current| Settings {
                policy: rtlab_core::sched::Policy::Batch,
                ..current.clone()
            })
            .unwrap();
            // As if the kill had come before the system call.
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: this thread, a valid parameter.
            assert_eq!(
                unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) },
                0
            );
            let undone = log2.undo(UndoScope::All, false, false).unwrap();
            assert_eq!(undone.len(), 2);
            for u in &undone {
                assert_eq!(u.outcome, UndoOutcome::Restored, "{}", u.entry);
            }
        })
        .join()
        .unwrap();
        assert!(log.entries().unwrap().is_empty());
        assert_eq!(fs::read_to_string(&file).unwrap(), "before\n");
    }

    #[test]
    fn a_temporary_record_a_killed_rtlab_left_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let stale = dir.path().join(format!("{TEMP_PREFIX}Xxp3FS"));
        fs::write(&stale, "{\"schema\": \"half").unwrap();
        let other = dir.path().join(".tmpNotOurs");
        fs::write(&other, "").unwrap();
        log.begin("a")
            .unwrap()
            .write_file(&dir.path().join("x.conf"), "1")
            .unwrap();
        assert!(!stale.exists(), "left by a killed rtlab: removed");
        assert!(other.exists(), "another program's file is not ours");
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_PREFIX))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn undo_last_takes_only_the_newest_command() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        log.begin("first").unwrap().write_file(&a, "1").unwrap();
        log.begin("second").unwrap().write_file(&b, "2").unwrap();
        let undone = log.undo(UndoScope::Last, false, false).unwrap();
        assert_eq!(undone.len(), 1);
        assert_eq!(undone[0].entry.command, "second");
        assert!(a.exists() && !b.exists());
    }

    #[test]
    fn a_corrupt_record_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(FILE_NAME), "{ not json").unwrap();
        let log = ChangeLog::at(dir.path());
        let e = log.begin("x").err().unwrap().to_string();
        assert!(e.contains(FILE_NAME) && e.contains("move it aside"), "{e}");
    }

    /// A child killed when dropped: a failing test leaves nothing behind.
    struct Kid(std::process::Child);

    impl Drop for Kid {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn sleeper() -> Kid {
        Kid(std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap())
    }

    /// A promotion, then the runaway's demotion (as `watch --runaway-limit`
    /// records it): undo puts the thread back to where it started in one
    /// write, never through the real-time settings in between.
    #[test]
    fn undo_of_a_demoted_runaway_never_promotes_it_again() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: making another process real-time needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let kid = sleeper();
        let pid = kid.0.id() as i32;
        let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
        let txn = log.begin("watch").unwrap();
        let to = |policy, priority| {
            move |current: &Settings| Settings {
                policy,
                priority,
                ..current.clone()
            }
        };
        txn.change_thread(&task, to(rtlab_core::sched::Policy::Fifo, 3))
            .unwrap();
        txn.change_thread(&task, to(rtlab_core::sched::Policy::Other, 0))
            .unwrap();
        assert_eq!(log.entries().unwrap().len(), 2);

        // What the thread has as undo is about to write to it.
        let seen: std::rc::Rc<std::cell::RefCell<Vec<rtlab_core::sched::Policy>>> =
            Default::default();
        let seen_in = std::rc::Rc::clone(&seen);
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |at, tid| {
                if at == Stage::Checked && tid == pid {
                    seen_in.borrow_mut().push(policy_of(pid));
                }
            }))
        });
        let undone = log.undo(UndoScope::All, false, false).unwrap();
        HOOK.with(|h| h.borrow_mut().take());
        assert_eq!(undone.len(), 2);
        assert!(
            undone.iter().all(|u| u.outcome == UndoOutcome::Restored),
            "{undone:?}"
        );
        assert!(
            seen.borrow().iter().all(|p| !p.is_realtime()),
            "undo made it real-time on the way: {:?}",
            seen.borrow()
        );
        assert_eq!(policy_of(pid), rtlab_core::sched::Policy::Other);
        assert!(log.entries().unwrap().is_empty());
    }

    /// `sleep 300` at pid `pid` (free now), by setting the kernel's last
    /// pid just below it; others may take it first, so it tries again.
    /// It starts after clock tick `after` (the start time of the thread
    /// that had the pid): start times count ticks (10 ms), and a newcomer
    /// started in the same tick would be, to the kernel's record, the same
    /// thread (a reuse that quick needs a chosen pid, as here; the kernel
    /// hands pids out in turn).
    fn sleeper_at(pid: i32, after: u64) -> Option<Kid> {
        // One test at a time chooses a pid: two writing ns_last_pid at once
        // would hand each other's pid out.
        static CHOOSING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = CHOOSING.lock().unwrap_or_else(|e| e.into_inner());
        while boot_ticks() <= after {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for _ in 0..500 {
            fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
            let kid = sleeper();
            if kid.0.id() as i32 == pid {
                return Some(kid);
            }
        }
        None
    }

    fn policy_of(pid: i32) -> rtlab_core::sched::Policy {
        Settings::read(pid).unwrap().policy
    }

    /// Issue 16 item 2: the thread a change was recorded for ends and its
    /// id is reused by another process at `stage`; the newcomer must not
    /// keep real-time priority, and the outcome must say what happened.
    fn swap_at(stage: Stage) -> Option<(Result<ThreadOutcome, ChangeError>, i32, Kid)> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: making another process real-time and choosing pids need root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let target = std::cell::RefCell::new(Some(sleeper()));
        let pid = target.borrow().as_ref().unwrap().0.id() as i32;
        let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
        let newcomer: std::rc::Rc<std::cell::RefCell<Option<Kid>>> = Default::default();
        let slot = std::rc::Rc::clone(&newcomer);
        let target_slot = std::rc::Rc::new(target);
        let killer = std::rc::Rc::clone(&target_slot);
        let started = task.starttime;
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |at, tid| {
                if at == stage && tid == pid {
                    drop(killer.borrow_mut().take()); // killed and reaped
                    *slot.borrow_mut() = sleeper_at(pid, started);
                }
            }))
        });
        let txn = log.begin("test").unwrap();
        let outcome = txn.change_thread(&task, |current| Settings {
            policy: rtlab_core::sched::Policy::Fifo,
            priority: 3,
            ..current.clone()
        });
        HOOK.with(|h| h.borrow_mut().take());
        let Some(kid) = newcomer.borrow_mut().take() else {
            eprintln!("skipped: cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
            return None;
        };
        assert!(
            log.entries().unwrap().is_empty(),
            "nothing to undo is left in the record"
        );
        Some((outcome, pid, kid))
    }

    #[test]
    fn a_thread_that_ends_while_its_change_is_recorded_is_not_changed() {
        let Some((outcome, pid, kid)) = swap_at(Stage::Recorded) else {
            return;
        };
        assert_eq!(
            policy_of(pid),
            rtlab_core::sched::Policy::Other,
            "the newcomer at the reused pid was promoted"
        );
        assert!(matches!(outcome, Err(ChangeError::Vanished)), "{outcome:?}");
        drop(kid);
    }

    #[test]
    fn a_change_that_lands_on_a_newcomer_is_taken_back_and_reported() {
        let Some((outcome, pid, kid)) = swap_at(Stage::Checked) else {
            return;
        };
        assert_eq!(
            policy_of(pid),
            rtlab_core::sched::Policy::Other,
            "the newcomer at the reused pid kept the promotion"
        );
        match outcome {
            Err(
                e @ ChangeError::EndedDuring {
                    taken_back: true, ..
                },
            ) => {
                let text = e.to_string();
                assert!(text.contains("taken back to SCHED_OTHER"), "{text}");
            }
            other => panic!("not reported as reaching another thread: {other:?}"),
        }
        drop(kid);
    }

    /// Undo writes too: a thread demoted from FIFO (as `watch
    /// --runaway-limit` does) ends between undo's check and its write, and
    /// a newcomer takes its pid: the newcomer must not be left FIFO.
    #[test]
    fn an_undo_that_lands_on_a_newcomer_is_taken_back_and_reported() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: making another process real-time and choosing pids need root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        let target = std::rc::Rc::new(std::cell::RefCell::new(Some(sleeper())));
        let pid = target.borrow().as_ref().unwrap().0.id() as i32;
        let fifo = |current: &Settings| Settings {
            policy: rtlab_core::sched::Policy::Fifo,
            priority: 3,
            ..current.clone()
        };
        fifo(&Settings::read(pid).unwrap()).write(pid).unwrap();
        let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
        let txn = log.begin("demote").unwrap();
        let demoted = txn
            .change_thread(&task, |current| Settings {
                policy: rtlab_core::sched::Policy::Other,
                priority: 0,
                ..current.clone()
            })
            .unwrap();
        assert!(matches!(demoted, ThreadOutcome::Changed { .. }));

        let newcomer: std::rc::Rc<std::cell::RefCell<Option<Kid>>> = Default::default();
        let (slot, killer) = (std::rc::Rc::clone(&newcomer), std::rc::Rc::clone(&target));
        let started = task.starttime;
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |at, tid| {
                if at == Stage::Checked && tid == pid {
                    drop(killer.borrow_mut().take());
                    *slot.borrow_mut() = sleeper_at(pid, started);
                }
            }))
        });
        let undone = log.undo(UndoScope::All, false, false).unwrap();
        HOOK.with(|h| h.borrow_mut().take());
        let Some(kid) = newcomer.borrow_mut().take() else {
            eprintln!("skipped: cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
            return;
        };
        assert_eq!(
            policy_of(pid),
            rtlab_core::sched::Policy::Other,
            "undo left the newcomer at the reused pid real-time"
        );
        match &undone[0].outcome {
            UndoOutcome::Failed { error } => {
                assert!(error.contains("taken back to SCHED_OTHER"), "{error}")
            }
            other => panic!("not reported: {other:?}"),
        }
        drop(kid);
    }

    #[test]
    fn this_threads_change_is_recorded_and_undone() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::at(dir.path());
        std::thread::spawn(move || {
            let me = crate::task::thread(
                std::process::id() as i32,
                rtlab_core::sched::gettid(),
                crate::task::Detail::Full,
            )
            .unwrap();
            let txn = log.begin("batch").unwrap();
            // SCHED_BATCH needs no privilege, so this runs as any user.
            let outcome = txn
                .change_thread(&me, |current| Settings {
                    policy: rtlab_core::sched::Policy::Batch,
                    ..current.clone()
                })
                .unwrap();
            assert!(matches!(outcome, ThreadOutcome::Changed { .. }));
            assert_eq!(
                Settings::read(0).unwrap().policy,
                rtlab_core::sched::Policy::Batch
            );
            let again = txn.change_thread(&me, |current| current.clone()).unwrap();
            assert!(matches!(again, ThreadOutcome::Held { .. }));
            let undone = log.undo(UndoScope::Last, false, false).unwrap();
            assert_eq!(undone.len(), 1);
            assert_eq!(undone[0].outcome, UndoOutcome::Restored);
            assert_eq!(
                Settings::read(0).unwrap().policy,
                rtlab_core::sched::Policy::Other
            );
        })
        .join()
        .unwrap();
    }
}
