//! Reading results written by other tools (and by rtlab itself) into a
//! [`RunResult`], so that old cyclictest measurements can be stored,
//! exported and compared beside rtlab's.
//!
//! Formats accepted, detected by content (never by file name):
//!
//! - cyclictest's histogram (`--histfile=FILE`, or `-h`/`-H` output captured
//!   from stdout): see [`cyclictest_histfile`];
//! - cyclictest's `--json=FILE` (rt-tests 2.x): see [`cyclictest_json`];
//! - rtlab's own JSON (`"schema": "rtlab.run/1"`), taken as it is.
//!
//! Nothing here panics on input: every defect is an [`ImportError`] naming
//! the file and the line (text formats) or the JSON path, and what was
//! expected there.
//!
//! This file only declares and re-exports: the importers and their shared
//! parts import one another, never this file (no import circle).

mod binned;
mod checks;
mod cyclictest_cmdline;
pub mod cyclictest_histfile;
pub mod cyclictest_json;
mod error;
mod format;
mod read;
mod rtlab_json;
pub(crate) mod run;

pub use checks::MAX_IMPORTED_EVENTS;
pub use error::ImportError;
pub use format::{detect, Format};
pub use read::{import_file, import_text, ACCEPTED_FORMATS, MAX_IMPORT_BYTES};
