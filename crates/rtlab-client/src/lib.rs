//! Periodic real-time processes for any program (paper 002, §4.3: the
//! SCHED_KURT calls `set_rtparams`, `rt_suspend` and `get_rtstats`, in user
//! space): a process attaches to `rtlab exec serve`, which releases it at
//! its planned instants through a futex in a page they share; the process
//! waits for its next activation, works, and reads its statistics.
//!
//! ```no_run
//! use rtlab_client::{Params, Periodic};
//! let mut task = Periodic::attach(&Params::every(10_000_000))?;
//! for _ in 0..100 {
//!     task.wait_next()?; // returns at the activation instant
//!     // ... the periodic work ...
//! }
//! let stats = task.detach()?;
//! println!("{} activations, {} missed", stats.activations, stats.missed_activations);
//! # Ok::<(), rtlab_client::Error>(())
//! ```
//!
//! This crate is small on purpose (libc, serde, hdrhistogram): it is
//! linked into users' programs, and `librtlab.so` (crates/rtlab-capi)
//! wraps it for C.

mod api;
pub mod futex;
mod own_sched;
mod periodic;
#[doc(hidden)]
pub mod protocol;
mod session;
#[doc(hidden)]
pub mod shm;
pub mod stats;

pub use api::{Error, Params, Stats, DEFAULT_SOCKET, SOCKET_ENV};
#[doc(hidden)]
pub use own_sched::current_policy;
pub use periodic::Periodic;
/// A raw connection to the executive (tests speak the protocol with it).
#[doc(hidden)]
pub use session::connect;
pub use session::{executive_status, WATCH_NS};
