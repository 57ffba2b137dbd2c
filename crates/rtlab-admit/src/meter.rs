//! A budget of analysis steps. Task sets come from other users (a
//! registration with `exec serve`, a task-set file), and a response-time
//! or demand analysis is pseudo-polynomial: a 1 µs period under a 10 s
//! one can ask for millions of steps. Every demand evaluation and every
//! step of a search space takes one unit; when the budget is spent the
//! analysis stops and says it could not decide (conservatively: nothing
//! undecided is admitted).

use std::cell::Cell;

use response_time_analysis::demand::RequestBound;
use response_time_analysis::time::{Duration, Service};

use crate::item::TIME_CAP;

/// Steps one CPU's analysis may take: far above what realistic sets need
/// (80 tasks, periods 1 µs to 10 s, take thousands), small enough to
/// answer a registration within a fraction of a second.
pub(crate) const STEPS_PER_CPU: u64 = 2_000_000;

/// What a spent budget answers for a demand: more than any divergence
/// limit (at most [`TIME_CAP`]), so every fixed-point search stops at
/// once; small enough that a sum over millions of tasks cannot overflow.
const SPENT_DEMAND: u64 = 4 * TIME_CAP;

#[derive(Debug)]
pub(crate) struct Meter {
    budget: u64,
    used: Cell<u64>,
    ran_out: Cell<bool>,
}

impl Meter {
    pub fn new(budget: u64) -> Meter {
        Meter {
            budget,
            used: Cell::new(0),
            ran_out: Cell::new(false),
        }
    }

    /// Takes `steps` from the budget; false (and remembered) when it
    /// cannot.
    pub fn take(&self, steps: u64) -> bool {
        let used = self.used.get().saturating_add(steps);
        if self.ran_out.get() || used > self.budget {
            self.ran_out.set(true);
            return false;
        }
        self.used.set(used);
        true
    }

    pub fn ran_out(&self) -> bool {
        self.ran_out.get()
    }

    pub fn used(&self) -> u64 {
        self.used.get()
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }
}

/// A request-bound function whose every evaluation and step is paid
/// from a [`Meter`]; once it is spent, demand is "more than any limit"
/// and the steps end, so the crate's searches return at once.
pub(crate) struct Metered<'m, R> {
    inner: R,
    meter: &'m Meter,
}

impl<'m, R> Metered<'m, R> {
    pub fn new(inner: R, meter: &'m Meter) -> Self {
        Metered { inner, meter }
    }
}

impl<R: RequestBound> RequestBound for Metered<'_, R> {
    fn service_needed(&self, delta: Duration) -> Service {
        if self.meter.take(1) {
            self.inner.service_needed(delta)
        } else {
            Service::from(SPENT_DEMAND)
        }
    }

    fn least_wcet_in_interval(&self, delta: Duration) -> Service {
        self.inner.least_wcet_in_interval(delta)
    }

    fn steps_iter<'a>(&'a self) -> Box<dyn Iterator<Item = Duration> + 'a> {
        Box::new(
            self.inner
                .steps_iter()
                .take_while(move |_| self.meter.take(1)),
        )
    }

    fn job_cost_iter<'a>(&'a self, delta: Duration) -> Box<dyn Iterator<Item = Service> + 'a> {
        self.inner.job_cost_iter(delta)
    }
}
