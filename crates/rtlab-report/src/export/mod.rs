//! One exporter per output format, all behind the same trait, so a new
//! format is one new file.

mod csv;
mod histfile;
mod json;
mod markdown;

pub use csv::CsvExporter;
pub use histfile::{HistfileExporter, MAX_RANGE_US as HISTFILE_MAX_RANGE_US};
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
/// never sees a half-written file: write a temporary file beside it, flush
/// it to disk, then rename it over the old one. `-` is stdout.
pub fn write_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if path == Path::new("-") {
        let stdout = io::stdout();
        let mut lock = stdout.lock();
        body(&mut lock)?;
        return lock.flush();
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        {
            let mut buffered = io::BufWriter::new(&mut file);
            body(&mut buffered)?;
            buffered.flush()?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
