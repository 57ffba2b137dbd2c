//! The focused mode (paper 002 §4.1.1's SCHED_KURT_PROCS, on a stock
//! kernel): some CPUs are given to real-time work alone. A cpuset
//! partition holds them (cgroup v2 `cpuset.cpus.partition=isolated`
//! where the cpuset controller is on v2; on v1 an exclusive cpuset with
//! load balancing off beside one for the rest), every other movable task
//! and every IRQ's affinity goes to the remaining CPUs, and what could
//! not move (kernel threads bound to a CPU, managed IRQs) is said. Every
//! change goes through the journal: put back on [`Focus::end`], on drop,
//! and after SIGKILL by `rtlab restore`.
//!
//! The API in [`api`] is what `rtlab focus`, `exec serve --focus` and
//! `kurt-table --focus` build on; the other files each do one step.

pub mod api;
mod cgroups;
mod changes;
mod cpus;
mod irqs;
mod model;
mod partition_v1;
mod partition_v2;
mod preview;
mod snapshot;
mod start;
mod strays;
mod tasks;

pub use api::{Focus, FocusError, FocusReport, Snapshot, TaskNote};
pub use preview::preview;
