//! rtlab: make a stock Linux machine time-critical and prove it.
//!
//! The binary (`main.rs`) is a thin wrapper around this library, which
//! exists so that tests can walk the command line (`cli::Cli::command()`)
//! without running anything: every `--help` example is parsed
//! (tests/help_examples.rs), completions and man pages are generated from it.

pub mod cli;
pub mod commands;
pub mod input;
mod invocation;
pub mod outputs;
mod progress;
mod session;
mod terminal;
