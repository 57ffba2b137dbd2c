//! Task-set files (TOML): per task its period, offset, work or a work
//! distribution, deadline, budget, priority and CPU; `exec periodic` runs
//! them as threads, `exec serve` holds their slots for processes that
//! attach by name. The periodic subset of rt-app's JSON task sets imports
//! into one.
//!
//! CONTRACT (issue 18, lead): the model types are shared by `exec
//! periodic`, `exec serve` and the importer; the task-set helper writes
//! the reader, the checks and the importer.

mod model;

pub use model::{TaskSet, TaskSpec, Work};
