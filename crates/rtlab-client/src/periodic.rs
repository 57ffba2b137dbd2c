//! [`Periodic`]: the calling thread's attachment (the issue 18 contract's
//! signatures, moved from `api.rs`; the bodies are the session's).

use crate::api::{Error, Params, Stats};
use crate::session::Session;

/// The calling thread's attachment to the executive. Not `Send`: the
/// executive releases the thread that attached.
pub struct Periodic {
    session: Session,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Periodic {
    /// Registers the calling thread with the executive (paper 002's
    /// `set_rtparams`): it is pinned to its CPU and given its SCHED_FIFO
    /// priority by the executive; its first activation is the first
    /// instant of its grid at least a few ms away.
    pub fn attach(params: &Params) -> Result<Periodic, Error> {
        Ok(Periodic {
            session: Session::attach(params)?,
            _not_send: std::marker::PhantomData,
        })
    }

    /// Ends the current activation (if any) and returns at the next one
    /// (paper 002's `rt_suspend`): the executive wakes the thread a little
    /// early and it spins to the instant. Returns the activation instant
    /// (CLOCK_MONOTONIC, ns). Never blocks forever: an error once the
    /// executive is gone or has dropped this process.
    pub fn wait_next(&mut self) -> Result<u64, Error> {
        self.session.wait_next()
    }

    /// The statistics so far (paper 002's `get_rtstats`); works after the
    /// executive is gone too.
    pub fn stats(&self) -> Stats {
        self.session.stats()
    }

    /// Ends the current activation, tells the executive (which stores the
    /// process's statistics as a run), and puts the thread back to the
    /// scheduling and CPUs it had before attaching. Returns the final
    /// statistics.
    pub fn detach(mut self) -> Result<Stats, Error> {
        self.session.detach()
    }

    /// The registration as the executive granted it: name, CPU, priority,
    /// deadline, first activation (an addition to the issue 18 contract).
    pub fn granted(&self) -> &crate::protocol::Attached {
        &self.session.granted
    }
}
