//! Runs one input under `catch_unwind` with the allocation guard armed,
//! and shrinks a failing input while it fails the same way.

use super::target::{Failure, Oracle, Verdict};
use crate::alloc;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Once;

/// Oracle calls the minimizer may make per failure, and bytes it may
/// feed in all (a 70 KB input costs its parser 70 KB a call): bounds in
/// work, not time, so that a minimized input is the same on any machine.
const MINIMIZE_CALLS: usize = 1500;
const MINIMIZE_BYTES: usize = 4 << 20;

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAUGHT: RefCell<Option<(String, Option<String>)>> = const { RefCell::new(None) };
}

/// Panics of fuzz inputs are recorded, not printed (thousands would
/// drown the output); every other panic goes to the usual hook.
pub(super) fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CAPTURING.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic without a message)".into());
            let location = info.location().map(|l| {
                let at = format!("{}:{}:{}", l.file(), l.line(), l.column());
                match caller_in_workspace(l.file()) {
                    Some(caller) => format!("{at}, called from {caller}"),
                    None => at,
                }
            });
            CAUGHT.with(|c| *c.borrow_mut() = Some((message, location)));
        }));
    });
}

/// For a panic inside the standard library or a dependency (a Display
/// that fails under `to_string`, an `unwrap` in a crate), the first frame
/// in rtlab's own crates: without it every such panic would look alike.
fn caller_in_workspace(file: &str) -> Option<String> {
    if !(file.starts_with("/rustc/") || file.contains("/.cargo/registry/")) {
        return None;
    }
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    trace
        .lines()
        .filter_map(|line| line.trim().strip_prefix("at "))
        .map(|at| at.trim_start_matches("./"))
        .find(|at| at.contains("crates/rtlab") && !at.contains("rtlab-fuzz"))
        .map(|at| match at.find("crates/rtlab") {
            Some(i) => at[i..].to_string(),
            None => at.to_string(),
        })
}

/// A failure, before its input is written anywhere.
pub(super) struct Fault {
    pub(super) kind: &'static str,
    pub(super) message: String,
    pub(super) location: Option<String>,
}

impl Fault {
    pub(super) fn key(&self) -> String {
        Failure {
            kind: self.kind,
            message: self.message.clone(),
            location: self.location.clone(),
            origin: String::new(),
            file: PathBuf::new(),
        }
        .key()
    }
}

pub(super) fn run_one(oracle: Oracle, input: &[u8]) -> Result<Verdict, Fault> {
    CAPTURING.with(|c| c.set(true));
    alloc::arm(true);
    let result = panic::catch_unwind(AssertUnwindSafe(|| oracle(input)));
    alloc::arm(false);
    CAPTURING.with(|c| c.set(false));
    let refused = alloc::take_refused();
    let fault = match result {
        Ok(Ok(verdict)) => match refused {
            None => return Ok(verdict),
            Some(size) => Fault {
                kind: "allocation",
                message: format!(
                    "asked for {size} bytes at once (limit {})",
                    alloc::ALLOC_LIMIT
                ),
                location: None,
            },
        },
        Ok(Err(property)) => Fault {
            kind: "property",
            message: property,
            location: None,
        },
        Err(_) => {
            let (message, location) = CAUGHT
                .with(|c| c.borrow_mut().take())
                .unwrap_or_else(|| ("(panic not captured)".into(), None));
            Fault {
                kind: "panic",
                message,
                location,
            }
        }
    };
    Err(fault)
}

/// Removes chunks of `input` while it still fails the same way.
pub(super) fn minimize(oracle: Oracle, input: &[u8], key: &str) -> Vec<u8> {
    let mut best = input.to_vec();
    let (mut calls, mut bytes) = (0, 0);
    let spent = |calls: usize, bytes: usize| calls >= MINIMIZE_CALLS || bytes >= MINIMIZE_BYTES;
    let mut chunk = best.len().div_ceil(2);
    while chunk >= 1 && !spent(calls, bytes) {
        let mut progressed = false;
        let mut at = 0;
        while at < best.len() && !spent(calls, bytes) {
            let end = (at + chunk).min(best.len());
            let candidate: Vec<u8> = best[..at].iter().chain(&best[end..]).copied().collect();
            calls += 1;
            bytes += candidate.len();
            match run_one(oracle, &candidate) {
                Err(fault) if fault.key() == key => {
                    best = candidate;
                    progressed = true;
                }
                _ => at += chunk,
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
    }
    best
}
