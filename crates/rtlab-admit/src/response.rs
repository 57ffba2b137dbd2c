//! A task's response bound as the analyses give it, and what the
//! fixed-priority and EDF analyses share: a task's request-bound function
//! for the `response-time-analysis` crate, the divergence limit, and the
//! reading of the crate's answer.

use response_time_analysis::demand::RBF;
use response_time_analysis::fixed_point::SearchResult;
use response_time_analysis::time::Service;
use response_time_analysis::wcet::Scalar;

use crate::arrivals::Released;
use crate::item::{Item, TIME_CAP};
use crate::meter::{Meter, Metered};

/// A task's worst-case response from its nominal activation instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Response {
    /// At most this (release jitter included).
    Bounded(u64),
    /// No bound below the divergence limit: its demand piles up.
    Unbounded,
    /// The step budget ran out before the analysis decided.
    Undecided,
    /// A WCET is unknown: this item's own (the index is itself) or that
    /// of the item at this index, at or above its priority.
    Unknown(usize),
}

impl Response {
    /// Whether it is within `deadline` (None: not known).
    pub fn meets(self, deadline: u64) -> Option<bool> {
        match self {
            Response::Bounded(response) => Some(response <= deadline),
            Response::Unbounded => Some(false),
            Response::Undecided | Response::Unknown(_) => None,
        }
    }

    pub fn bounded(self) -> Option<u64> {
        match self {
            Response::Bounded(response) => Some(response),
            _ => None,
        }
    }
}

/// How far the crate's fixed-point searches may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Far enough to say by how much a response misses its deadline.
    Full,
    /// Only as far as the task's deadline: enough for a yes or no (a task
    /// that meets its deadline has its busy window within it), the cheap
    /// check of a suggestion.
    Deadline,
}

/// Limits at or below this make the crate's debug builds check each
/// search against a brute-force one, step by step; no limit is smaller.
const BRUTE_FORCE_CHECK_LIMIT: u64 = 100_000;

impl Limit {
    /// The divergence limit for `item` among `items` (its CPU): the
    /// larger of 16 largest periods and the sum of the periods (a backlog
    /// that long is as good as unbounded), or its deadline.
    pub fn for_item(self, item: &Item, items: &[Item]) -> u64 {
        let limit = match self {
            Limit::Full => {
                let largest = items.iter().map(|other| other.period).max().unwrap_or(0);
                let sum = items
                    .iter()
                    .fold(0u64, |sum, other| sum.saturating_add(other.period));
                largest.saturating_mul(16).max(sum)
            }
            Limit::Deadline => item.deadline,
        };
        limit.clamp(BRUTE_FORCE_CHECK_LIMIT + 1, TIME_CAP)
    }
}

/// The metered request-bound function of an item with a known execution
/// (periodic releases with the executive's release jitter).
pub(crate) type TaskRbf<'m> = Metered<'m, RBF<Released, Scalar>>;

pub(crate) fn task_rbf<'m>(item: &Item, exec: u64, meter: &'m Meter) -> TaskRbf<'m> {
    let arrivals = Released::new(item.period, item.jitter);
    Metered::new(RBF::new(arrivals, Scalar::new(Service::from(exec))), meter)
}

/// Reads the crate's answer for `item`: its bound is measured from the
/// job's release (the arrival curve bounds releases), so the release
/// jitter is added to have it from the nominal activation instant.
pub(crate) fn from_search(item: &Item, result: SearchResult, meter: &Meter) -> Response {
    if meter.ran_out() {
        return Response::Undecided;
    }
    match result {
        Ok(from_release) => Response::Bounded(item.jitter.saturating_add(u64::from(from_release))),
        Err(_) => Response::Unbounded,
    }
}
