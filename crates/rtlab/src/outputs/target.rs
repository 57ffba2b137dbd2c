//! Where one output flag writes: stdout (`-`) or a file. Parsed once, by
//! clap, so no command compares a path with `-` itself.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The value of an output flag (`--json`, `--samples`, `--histfile`,
/// `--junit`, `-o`): `-` is stdout, anything else a file, written through
/// [`rtlab_core::fsutil`] (atomically, durably, never through a planted
/// symlink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    Stdout,
    File(PathBuf),
}

impl From<PathBuf> for OutputTarget {
    fn from(path: PathBuf) -> OutputTarget {
        if path.as_os_str() == "-" {
            OutputTarget::Stdout
        } else {
            OutputTarget::File(path)
        }
    }
}

impl OutputTarget {
    /// The clap value parser of an output flag: a path as clap takes one
    /// (not empty; any bytes), `-` for stdout.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = OutputTarget> {
        use clap::builder::TypedValueParser;
        clap::builder::PathBufValueParser::new().map(OutputTarget::from)
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, OutputTarget::Stdout)
    }

    /// The file, unless it is stdout.
    pub fn file(&self) -> Option<&Path> {
        match self {
            OutputTarget::Stdout => None,
            OutputTarget::File(path) => Some(path),
        }
    }

    /// Writes what `body` produces: to stdout, or to the file through
    /// [`rtlab_core::fsutil::write_atomic`] (a reader or a crash never
    /// sees half a file; a FIFO or a device is written as it is).
    pub fn write_with(
        &self,
        body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            OutputTarget::Stdout => {
                let stdout = io::stdout();
                let mut lock = stdout.lock();
                body(&mut lock)?;
                lock.flush()
            }
            OutputTarget::File(path) => rtlab_core::fsutil::write_atomic(path, body),
        }
    }
}

/// `-` or the path, as the user wrote it.
impl fmt::Display for OutputTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputTarget::Stdout => f.write_str("-"),
            OutputTarget::File(path) => write!(f, "{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OutputTarget;
    use std::path::PathBuf;

    #[test]
    fn a_dash_is_stdout_and_anything_else_a_file() {
        assert_eq!(OutputTarget::from(PathBuf::from("-")), OutputTarget::Stdout);
        let file = OutputTarget::from(PathBuf::from("./-"));
        assert_eq!(file.file(), Some(std::path::Path::new("./-")));
        assert_eq!(file.to_string(), "./-");
        assert_eq!(OutputTarget::Stdout.to_string(), "-");
    }
}
