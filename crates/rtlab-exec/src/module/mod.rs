//! Modules: what an event does when it fires (paper 002 §4.2, KURT's
//! `register_rtmod`). A plan's header declares each module it uses by name,
//! kind and settings; the dispatcher builds them before the first event
//! and calls [`Module::fire`] at each event's time.
//!
//! To add a kind: implement [`Module`], add its name to [`KINDS`], its
//! settings check to [`validate`] and its constructor to `build`.
//!
//! This file only declares and re-exports: the children import each other,
//! never their parent (no import circle).

mod builtin;
mod kinds;
mod model;
mod socket;
mod traffic;

pub use builtin::build;
pub use kinds::{settings_of, signal_number, validate, KINDS};
pub use model::{Module, Slot};
pub use socket::connected_udp;
