//! The interface every module kind implements.

use crate::plan::model::Event;

/// Where an event stands in a run, for the modules that need more than
/// the fire time (the replay's sender puts the planned instant and the
/// event's index in its stamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The event's index over all repetitions (0 for the plan's first).
    pub index: u64,
    /// The run's start (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// The planned instant, ns since `start_ns`.
    pub planned_ns: u64,
}

/// What a module does at its events. Called on the dispatcher's thread at
/// the event's time: it must not block, allocate, lock or format (the
/// hot-path rules); a syscall that *is* its job (send, futex wake, kill)
/// is fine.
pub trait Module: Send {
    /// Handles one event; `now_ns` is the fire time (CLOCK_MONOTONIC).
    fn fire(&mut self, event: &Event, now_ns: u64);
    /// What the dispatcher calls: [`Module::fire`] unless a module needs
    /// to know where the event stands in the run.
    fn fire_at(&mut self, event: &Event, slot: Slot, now_ns: u64) {
        let _ = slot;
        self.fire(event, now_ns);
    }
    /// Events handled, and how many of them failed (a send refused, ...).
    fn counts(&self) -> (u64, u64);
}
