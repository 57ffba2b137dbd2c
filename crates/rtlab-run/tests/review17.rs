//! Issue 17's review of the engine: a panic in a front end's observer
//! (a hook run on the engine's thread, mid-run) still puts the system
//! back, through the journal's panic hook that `rtlab_run::begin`
//! installs, as it did when the engine lived in the campaign crate.

#[allow(dead_code)]
mod fake;

use fake::Fixture;
use rtlab_probe::ProbeRun;
use rtlab_run::{execute, RunObserver};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// The arguments that make a test binary a load worker (the fake's
/// launcher names them; no load runs here).
pub const LOAD_WORKER: &str = "__load-worker";

/// An observer whose first tick panics.
struct Panicking;

impl RunObserver for Panicking {
    fn tick(&mut self, _run: &dyn ProbeRun) {
        panic!("an observer that fails");
    }
}

#[test]
fn a_panicking_observer_still_puts_the_system_back() {
    let fixture = Fixture::new();
    rtlab_core::journal::install_panic_restore(Arc::clone(&fixture.context.journal));
    // Runs until stopped: only the panic ends it.
    let request = fixture.request(None, "", &[]);
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
        execute(request, &fixture.context, &mut Panicking)
    }));
    assert!(run.is_err(), "the observer's panic goes on up");
    fixture.assert_restored();
}
