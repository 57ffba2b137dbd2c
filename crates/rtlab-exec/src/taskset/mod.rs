//! Task-set files (TOML): per task its period, offset, work or a work
//! distribution, deadline, budget, priority and CPU; `exec periodic` runs
//! them as threads, `exec serve` holds their slots for processes that
//! attach by name. The periodic subset of rt-app's JSON task sets imports
//! into one.
//!
//! CONTRACT (issue 18, lead): the model types are shared by `exec
//! periodic`, `exec serve` and the importer; the task-set helper writes
//! the reader, the checks and the importer.
//!
//! - `model`: the types; `check`: [`TaskSet::validate`], the one judge;
//! - `read`: [`TaskSet::load`], [`TaskSet::parse`], [`TaskSet::to_toml`];
//! - `error`: [`TaskSetError`] (`FILE:LINE: what, expected what`);
//! - `rt_app`: [`import_rt_app`], the periodic subset of rt-app's JSON,
//!   read through `json` (comments, trailing commas, repeated keys).

mod check;
mod error;
mod json;
pub(crate) mod model;
mod read;
mod rt_app;

pub use check::{Refusal, MAX_NAME_CHARS, MAX_TASK_PRIORITY};
pub use error::{TaskSetError, MAX_FILE_BYTES};
pub use model::{TaskSet, TaskSpec, Work};
pub use rt_app::{import_rt_app, parse_rt_app, Imported};
