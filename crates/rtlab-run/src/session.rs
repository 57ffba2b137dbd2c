//! What every measuring front end sets up once per process, the same way:
//! restore what a killed rtlab left changed, a journal restored on exit,
//! panic and signal, and how loads are started.

use crate::request::RunContext;
use anyhow::Context;
use rtlab_core::journal::{self, Journal};
use rtlab_load::Launcher;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Starts a session: recovers the journals of dead rtlab processes (each
/// recovery printed), opens this process's journal (restored on a panic,
/// on a second signal and when dropped), wires SIGINT/SIGTERM/SIGHUP to
/// the context's stop flag, and starts loads with this executable and
/// `load_worker`, the arguments that make it a load worker (e.g.
/// `["__load-worker"]`).
pub fn begin(load_worker: &[&str]) -> anyhow::Result<RunContext> {
    let (_state_dir, recovered) = journal::recover_stale_in_state_dir();
    for recovered in recovered {
        eprintln!("restore: {recovered}");
    }
    let journal = Arc::new(Mutex::new(Journal::for_this_process()));
    journal::install_panic_restore(Arc::clone(&journal));
    let stop = Arc::new(AtomicBool::new(false));
    crate::signals::install(Arc::clone(&stop), Arc::clone(&journal))
        .context("installing signal handlers")?;
    let launcher = Launcher::this_executable(load_worker)
        .context("finding rtlab's own executable to start loads with")?;
    Ok(RunContext::new(journal, stop, launcher))
}
