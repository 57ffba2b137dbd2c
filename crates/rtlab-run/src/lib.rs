//! rtlab's run engine: one measurement under its loads and settings, the
//! unit that `rtlab measure`, `plan run`, `exec` and every cell of a
//! campaign share.
//!
//! ```text
//! begin() ──► RunContext ─┐
//! RunRequest ─────────────┴─execute()──► RunResult   (or Err(Refused))
//!               sysctls → process → loads → probe ⟲ tick/checkpoint → restore
//! ```
//!
//! What [`execute`] guarantees, whatever the probe:
//! - every system change of the run (sysctls, the process's holds, what
//!   the probe journals itself) is put back before it returns, and what
//!   could not be is a warning of the result;
//! - the loads are stopped and reaped before it returns; a load that will
//!   not start gives a `failed` result with the reason and nothing
//!   measured, one that dies mid-run stops the run as `failed` with the
//!   reason;
//! - the stop flag of the [`RunContext`] (set by the first signal) ends
//!   the run as `partial`, keeping what it measured;
//! - the observer sees the start, every [`TICK`] and, every
//!   [`CHECKPOINT`], the result so far (status `running`);
//! - a sysctl that cannot be set is [`Refused`] before anything is
//!   measured, the error carrying its `failed` result.
//!
//! [`begin`] starts a session the same way for every front end: the
//! journals of dead rtlab processes recovered, this process's journal
//! restored on panic and signal, and the launcher of load workers.
//! ARCHITECTURE.md ("A sample's way", "Journal and durability") places
//! the engine among the other crates.

mod execute;
mod observer;
mod request;
mod session;
mod signals;
mod witnessing;

pub use execute::{execute, Refused};
pub use observer::{RunObserver, Unobserved};
pub use request::{RunContext, RunRequest, CHECKPOINT, TICK};
pub use session::begin;
