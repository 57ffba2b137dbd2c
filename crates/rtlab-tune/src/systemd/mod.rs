//! systemd drop-ins and the unit for `rtlab tune watch`: what
//! `rtlab tune systemd` writes, checks with `systemd-analyze verify` and
//! makes systemd reload.
//!
//! A drop-in makes systemd itself start a service at a real-time policy
//! (`CPUSchedulingPolicy=`, `CPUSchedulingPriority=`), so the promotion lasts
//! across restarts without a watcher, and gives it the `LimitRTPRIO=` it needs
//! to raise itself (paper 000, §3.5, footnote 5).
//!
//! This module renders and checks; writing the file (through the journal, so
//! `rtlab tune undo` can restore it) and parsing arguments belong to the CLI.

mod child;
mod dropin;
mod error;
mod names;
mod reload;
mod verify;
mod watch_unit;

pub use dropin::{render_dropin, DropIn};
pub use error::SystemdError;
pub use names::{
    dropin_path, service_name, unit_name, watch_unit_path, DEFAULT_UNIT_DIR, DROPIN_FILE_NAME,
    WATCH_UNIT_NAME,
};
pub use reload::{reload, reload_with, ReloadOutcome, SYSTEMD_BOOTED_MARKER};
pub use verify::{verify, verify_with, Verification};
pub use watch_unit::{check_watch_binary, quote_exec_arg, render_watch_unit};
