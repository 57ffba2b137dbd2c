//! One exporter per output format, all behind the same trait, so a new
//! format is one new file.

mod csv;
mod histfile;
mod json;
mod markdown;

pub use csv::CsvExporter;
pub use histfile::HistfileExporter;
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;

use rtlab_core::result::RunResult;
use std::io::{self, Write};
use std::path::Path;

pub trait Exporter {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

/// Writes `result` to `path` through `exporter`, atomically (see
/// [`write_with`]). `-` is stdout.
pub fn write_file(exporter: &dyn Exporter, result: &RunResult, path: &Path) -> io::Result<()> {
    write_with(path, |out| exporter.write(result, out))
}

/// Writes what `body` produces to `path` so that a reader (or a crash)
/// never sees a half-written file, and another user who controls a
/// directory on the way cannot redirect the write (rtlab runs as root):
/// see [`rtlab_core::fsutil`]. `-` is stdout; an existing FIFO or
/// character device is written as it is, never replaced.
pub fn write_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    rtlab_core::fsutil::write_atomic(path, body)
}
