//! `rtlab load NAME`: one load generator, alone, to sit beside any other
//! tool; and the hidden `__load-worker` that every load runs in.

use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct LoadArgs {
    /// The load: cpu, vm, io, fswalk, net, timers, msg, procfs, dohell or cmd:"…".
    pub name: String,
}

/// The child side of a load: started by rtlab itself, never by a user.
#[derive(Args)]
pub struct WorkerArgs {
    /// The load to run, as JSON.
    pub spec: String,
}

pub fn run(_args: LoadArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("rtlab load is being built")
}

pub fn worker(_args: WorkerArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the load worker is being built")
}
