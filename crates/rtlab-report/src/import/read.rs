//! Reading a file or a text: its format detected by content, then handed
//! to that format's parser.

use super::error::ImportError;
use super::format::{detect, Format};
use super::{cyclictest_histfile, cyclictest_json, rtlab_json};
use rtlab_core::result::RunResult;
use std::path::Path;
use std::time::SystemTime;

/// The formats [`import_file`] accepts, as listed in its error messages.
pub const ACCEPTED_FORMATS: &str = "a cyclictest histogram (--histfile, or -h/-H output \
     starting at a '# Histogram' line), cyclictest JSON (--json, rt-tests 2.x) or an rtlab \
     result (JSON with \"schema\": \"rtlab.run/1\")";

/// The largest file [`import_file`] reads: a cyclictest histogram of
/// 10⁶ µs bins is about 10 MiB, an rtlab result a few MiB.
pub const MAX_IMPORT_BYTES: u64 = 64 << 20;

/// Reads `path`, detects its format by content and converts it. The run
/// gets a new id (except an rtlab result, which keeps its own), probe
/// `cyclictest`, and `config.imported_from = path`.
pub fn import_file(path: &Path) -> Result<RunResult, ImportError> {
    use std::io::Read;
    let origin = path.display().to_string();
    let io = |source| ImportError::Io {
        path: origin.clone(),
        source,
    };
    // Read at most one byte past the limit: `/dev/zero` or a huge file is
    // refused, not read until memory runs out.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_IMPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(ImportError::UnknownFormat {
            path: origin,
            message: format!(
                "larger than {} MiB: not a result rtlab imports (cyclictest's files and \
                 rtlab's results are far smaller)",
                MAX_IMPORT_BYTES >> 20
            ),
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    import_text(&text, &origin, modified)
}

/// Like [`import_file`] for text already read; `origin` names it in errors
/// and in `config.imported_from`; `modified` (the file's modification
/// time) dates a histfile, which records no time of its own.
pub fn import_text(
    text: &str,
    origin: &str,
    modified: Option<SystemTime>,
) -> Result<RunResult, ImportError> {
    match detect(text) {
        Some(Format::CyclictestHistfile) => cyclictest_histfile::parse(text, origin, modified),
        Some(Format::CyclictestJson) => cyclictest_json::parse(text, origin),
        Some(Format::RtlabJson) => rtlab_json::parse(text, origin),
        None => Err(ImportError::UnknownFormat {
            path: origin.to_string(),
            message: if text.trim().is_empty() {
                format!("the file is empty; expected {ACCEPTED_FORMATS}")
            } else if text.trim_start().starts_with('{') {
                format!(
                    "a JSON document, but neither cyclictest's (no \"thread\" object) nor \
                     rtlab's (no \"schema\" key); expected {ACCEPTED_FORMATS}"
                )
            } else {
                format!("not a format rtlab can import; expected {ACCEPTED_FORMATS}")
            },
        }),
    }
}
