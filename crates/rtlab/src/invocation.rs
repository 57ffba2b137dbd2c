//! How this rtlab was started: its command line and its executable, for
//! the records and the units of `tune` and `tune systemd`.

use anyhow::Context;
use std::path::PathBuf;

/// The command as typed, recorded with each change.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// The absolute path of this rtlab binary (for units that run it).
pub fn own_executable() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot find the path of the rtlab binary")
}
