//! `rtlab tune`: promote the processes on the critical path to real-time
//! scheduling and keep them promoted (rules, apply, watch, undo), write
//! systemd drop-ins, and audit the system's real-time settings.

pub mod changes;
pub mod check;
mod connector;
pub mod identity;
pub mod promote;
pub mod rule;
pub mod rules_file;
pub mod systemd;
pub mod task;
pub mod trust;
pub mod watch;
