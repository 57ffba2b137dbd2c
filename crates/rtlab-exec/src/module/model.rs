//! The interface every module kind implements.

use crate::plan::model::Event;

/// What a module does at its events. Called on the dispatcher's thread at
/// the event's time: it must not block, allocate, lock or format (the
/// hot-path rules); a syscall that *is* its job (send, futex wake, kill)
/// is fine.
pub trait Module: Send {
    /// Handles one event; `now_ns` is the fire time (CLOCK_MONOTONIC).
    fn fire(&mut self, event: &Event, now_ns: u64);
    /// Events handled, and how many of them failed (a send refused, ...).
    fn counts(&self) -> (u64, u64);
}
