//! `rtlab traffic import|gen|export`.
//!
//! CONTRACT (issue 20): the plan-side part owns this file.

use crate::cli::{TrafficExportArgs, TrafficGenArgs, TrafficImportArgs};
use std::process::ExitCode;

pub fn import(args: TrafficImportArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    todo!("plan-side part")
}

pub fn gen(args: TrafficGenArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    todo!("plan-side part")
}

pub fn export(args: TrafficExportArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    todo!("plan-side part")
}
