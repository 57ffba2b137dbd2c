//! Errors of the journal, and the hints their messages give.

use std::io;
use std::path::PathBuf;

use super::entry::shown;

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

    #[error("cannot read the scheduling of thread {tid} of process {pid}: {source}; nothing was changed")]
    Thread {
        pid: i32,
        tid: i32,
        source: io::Error,
    },
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

pub(super) fn io_message(e: &io::Error) -> String {
    format!("{e}{}", write_hint(e))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
