//! The Rust API: [`Params`], [`Stats`], [`Error`] here, and
//! [`crate::Periodic`] (`attach`, `wait_next`, `stats`, `detach`) in
//! `periodic.rs` (moved there from this file, signatures unchanged, so that
//! the client's internals can use these types without an import circle).
//!
//! CONTRACT (issue 18, lead): the public types and signatures below are
//! what the C library, the examples and `kurt-table --processes` build on.
//! Keep them; the bodies are the server helper's to write.

use std::fmt;
use std::path::PathBuf;

/// Where `rtlab exec serve` listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/rtlab/exec.sock";
/// Environment variable naming the executive's socket (overrides
/// [`DEFAULT_SOCKET`]; [`Params::socket`] overrides both).
pub const SOCKET_ENV: &str = "RTLAB_SOCKET";

/// What a process asks the executive for (paper 002's `rtparams`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Params {
    /// Period, ns (required, > 0).
    pub period_ns: u64,
    /// Phase: activations fall at the executive's epoch + offset + k × period.
    pub offset_ns: u64,
    /// Relative deadline, ns; None: the period.
    pub deadline_ns: Option<u64>,
    /// Execution budget per activation, ns; None: no budget.
    pub budget_ns: Option<u64>,
    /// CPU to run on; None: the executive chooses among its CPUs.
    pub cpu: Option<u32>,
    /// SCHED_FIFO priority; None: the executive's default for its tasks.
    pub priority: Option<u32>,
    /// Name of the task (a task of the executive's task set, when it has
    /// one); None: the process's command name.
    pub name: Option<String>,
    /// The executive's socket; None: `$RTLAB_SOCKET`, else [`DEFAULT_SOCKET`].
    pub socket: Option<PathBuf>,
}

impl Params {
    /// Every default, with this period.
    pub fn every(period_ns: u64) -> Params {
        Params {
            period_ns,
            ..Params::default()
        }
    }
}

/// A process's statistics (paper 002's `rtstats`), all times in ns.
/// (Serializable: an addition to the contract, for `exec status`.)
/// Lateness: the start of the work (the return of
/// [`crate::Periodic::wait_next`]) minus the activation instant. Response: the
/// end of the work (the next call of `wait_next` or `detach`) minus the
/// activation instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Activations the process was released for and worked.
    pub activations: u64,
    /// Activations that came while the process was still working on an
    /// earlier one (never released, never skipped silently).
    pub missed_activations: u64,
    /// Activations whose response was later than the relative deadline.
    pub deadline_misses: u64,
    /// Activations whose work (end minus start) exceeded the budget.
    pub budget_overruns: u64,
    pub lateness_p50_ns: u64,
    pub lateness_p99_ns: u64,
    pub lateness_p999_ns: u64,
    pub lateness_max_ns: u64,
    pub response_p50_ns: u64,
    pub response_p99_ns: u64,
    pub response_p999_ns: u64,
    pub response_max_ns: u64,
}

/// Why a call failed. [`Error::code`] is the C library's return value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The parameters are wrong (the message names the field).
    Invalid(String),
    /// No executive answers at the socket (the message names it).
    Connect(String),
    /// The executive refused the registration (permission, limits, task
    /// set): its reason.
    Refused(String),
    /// The executive said something this library does not understand.
    Protocol(String),
    /// The executive is gone (killed, stopped): the process is back to
    /// the scheduling it had before attaching.
    ExecutiveGone,
    /// The executive dropped this process (it overran its activation far
    /// beyond its period, or never yielded): its reason.
    Dropped(String),
    /// This thread is not attached (C API).
    NotAttached,
    /// A system call failed (its name and errno text).
    System(String),
}

impl Error {
    /// The C library's code for this error (negative; 0 is success).
    pub fn code(&self) -> i32 {
        match self {
            Error::Invalid(_) => -1,
            Error::Connect(_) => -2,
            Error::Refused(_) => -3,
            Error::Protocol(_) => -4,
            Error::ExecutiveGone => -5,
            Error::Dropped(_) => -6,
            Error::NotAttached => -7,
            Error::System(_) => -8,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(why) => write!(f, "invalid parameters: {why}"),
            Error::Connect(why) => write!(f, "no executive: {why}"),
            Error::Refused(why) => write!(f, "refused by the executive: {why}"),
            Error::Protocol(why) => write!(f, "protocol error: {why}"),
            Error::ExecutiveGone => f.write_str("the executive is gone"),
            Error::Dropped(why) => write!(f, "dropped by the executive: {why}"),
            Error::NotAttached => f.write_str("this thread is not attached"),
            Error::System(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}
