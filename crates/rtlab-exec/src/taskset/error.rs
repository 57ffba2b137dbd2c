//! A task-set file (or an rt-app file being imported) that cannot be used.

/// Displayed as `FILE:LINE: what, expected what` (`FILE:LINE:COLUMN:` for
/// JSON syntax, `FILE:` when the error is about the whole file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", place(*line, *column))]
pub struct TaskSetError {
    /// The file as given.
    pub file: String,
    /// 1-based line, when the error is about one place.
    pub line: Option<usize>,
    /// 1-based column (in characters), when known.
    pub column: Option<usize>,
    pub message: String,
}

fn place(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

impl TaskSetError {
    /// An error about the whole file.
    pub fn file(file: &str, message: impl Into<String>) -> TaskSetError {
        TaskSetError {
            file: file.to_string(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// An error at a line.
    pub fn at_line(file: &str, line: usize, message: impl Into<String>) -> TaskSetError {
        TaskSetError {
            line: Some(line),
            ..TaskSetError::file(file, message)
        }
    }
}

/// Most bytes of a task-set or rt-app file: far above any real one.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The text of a file read as a task set (or an rt-app file), or an error
/// naming it: missing, unreadable, too large, not UTF-8.
pub fn read_text(path: &std::path::Path) -> Result<String, TaskSetError> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.display().to_string();
    let fail = |e: std::io::Error| TaskSetError::file(&name, format!("cannot read it: {e}"));
    // Opened non-blocking: a FIFO nobody writes to hung open(2) for ever;
    // now it reads as empty (a pipe with a writer, `<(...)`, still works).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(fail)?;
    // SAFETY: plain fcntl on our descriptor: blocking reads again.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(TaskSetError::file(
            &name,
            format!(
                "larger than {} MiB, expected a task set",
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    rtlab_core::text::utf8_text(bytes).map_err(|e| TaskSetError::file(&name, e.to_string()))
}
