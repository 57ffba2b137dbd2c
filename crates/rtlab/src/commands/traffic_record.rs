//! `rtlab traffic record`: datagrams received with kernel timestamps.
//!
//! CONTRACT (issue 20): the record part owns this file.

use crate::cli::TrafficRecordArgs;
use std::process::ExitCode;

pub fn run(args: TrafficRecordArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    todo!("record part")
}
