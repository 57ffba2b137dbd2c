//! One module per command.

pub mod load;
mod measure_timer;
mod restore;

use crate::cli::{Cli, Command, Measure};
use std::process::ExitCode;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Measure(Measure::Timer(args)) => measure_timer::run(*args),
        Command::Restore(args) => restore::run(&args),
        Command::Load(args) => load::run(*args),
        Command::LoadWorker(args) => load::worker(args),
    }
}
