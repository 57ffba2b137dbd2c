//! The system audit behind `rtlab tune check`.
//!
//! Every check reads what the kernel exposes under a root directory (`/` on
//! a real machine, a fake tree in tests) plus the thread list and the
//! caller's resource limits, and turns it into findings: what was read, how
//! bad it is for real-time work, and the concrete command or kernel
//! parameter that fixes it. Nothing is changed on the host.
//!
//! An unreadable file never aborts the audit: the check concerned reports
//! "unknown" as an info finding, because a partial audit still tells the
//! user far more than an error.

//!
//! This file only declares and re-exports: the files import what they share
//! from one another, never from here (no import circle).

mod audit;
mod context;
mod cpu;
mod finding;
mod input;
mod irq;
mod kernel;
mod limits;
mod memory;
mod rank;
mod render;
mod report;
mod sched;
mod util;
mod watchdog;

pub use audit::audit;
pub use finding::{Area, Finding, Severity};
pub use input::AuditInput;
pub use limits::Limits;
pub use report::{Counts, Host, Report, SCHEMA};
