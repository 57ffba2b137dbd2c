//! SIGINT/SIGTERM/SIGHUP: the first one asks the run to stop (it then
//! saves what it measured and restores the system as on a normal exit);
//! a second one restores the journal at once and exits with 130.

use rtlab_core::journal::Journal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub fn install(stop: Arc<AtomicBool>, journal: Arc<Mutex<Journal>>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("rtlab-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if !stop.swap(true, Ordering::SeqCst) {
                    continue;
                }
                // Second signal: the user wants out now.
                let mut journal = journal.lock().unwrap_or_else(|p| p.into_inner());
                for restored in journal.restore() {
                    eprintln!("{restored}");
                }
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}
