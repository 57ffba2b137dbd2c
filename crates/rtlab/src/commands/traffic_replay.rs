//! `rtlab traffic replay`: a traffic plan's packets, each at its planned
//! instant, with their departures measured.
//!
//! CONTRACT (issue 20): the replay part owns this file.

use crate::cli::TrafficReplayArgs;
use std::process::ExitCode;

pub fn run(args: TrafficReplayArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    todo!("replay part")
}
