//! Why a change was not made.

use crate::task::Settings;
use std::io;
use std::path::PathBuf;

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
