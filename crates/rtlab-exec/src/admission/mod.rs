//! Admission where rtlab meets it (issue 19): the analysis itself is
//! `rtlab_admit`; this module gives it what it reads from this executive.
//!
//! * [`overheads`]: the release jitter and cost the executive measured on
//!   this machine, by running its own release path (one function for
//!   `exec admit`, `exec periodic --taskset` and `exec serve`).
//! * [`tasks`]: a periodic run's tasks (a task set) as admission tasks,
//!   with where each WCET comes from.
//! * [`serve`]: admission at registration with `exec serve`.

pub mod overheads;
pub mod serve;
pub mod tasks;

pub use overheads::{measure, CpuOverheads, Measured, ReleaseSettings};
pub use serve::ServeAdmission;
pub use tasks::{plain, tasks_of, SourcedTask, WcetSource};
