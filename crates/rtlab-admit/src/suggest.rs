//! What would make a refused task fit, each change alone: the shortest
//! period, the largest budget, the other CPUs. Every value suggested has
//! been analysed with the change applied (the same test `admit` applies),
//! so taking a suggestion gets the task admitted. A longer period and a
//! smaller budget never hurt any task, so both are found by bisection.

use std::cell::Cell;

use crate::cpu::analyse_with_candidate;
use crate::item::TIME_CAP;
use crate::meter::{Meter, STEPS_PER_CPU};
use crate::model::{Overheads, Policy, Suggestion, Task};
use crate::response::Limit;

/// Steps all the trials of one refusal may take together (each trial
/// within a CPU's budget): a hostile set gets fewer suggestions, never a
/// slow reply.
pub(crate) const STEPS_FOR_SUGGESTIONS: u64 = 4 * STEPS_PER_CPU;

/// The suggestions for `candidate`, refused beside `admitted`, that may
/// use `cpus`.
pub(crate) fn suggestions(
    admitted: &[Task],
    candidate: &Task,
    policy: Policy,
    overheads: &Overheads,
    cpus: &[usize],
) -> Vec<Suggestion> {
    suggestions_and_steps(admitted, candidate, policy, overheads, cpus).0
}

/// The suggestions, and the analysis steps all their trials took.
pub(crate) fn suggestions_and_steps(
    admitted: &[Task],
    candidate: &Task,
    policy: Policy,
    overheads: &Overheads,
    cpus: &[usize],
) -> (Vec<Suggestion>, u64) {
    let trials = Trials {
        admitted,
        policy,
        overheads,
        spent: Cell::new(0),
    };
    // The CPUs first: moving is the change that keeps the task as asked.
    let mut other_cpus: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|&cpu| cpu != candidate.cpu)
        .collect();
    other_cpus.sort_unstable();
    other_cpus.dedup();
    let on_cpus: Vec<Suggestion> = other_cpus
        .into_iter()
        .filter(|&cpu| {
            trials.fit(&Task {
                cpu,
                ..candidate.clone()
            })
        })
        .map(|cpu| Suggestion::Cpu { cpu })
        .collect();
    let budget = largest_budget(&trials, candidate).map(|max_ns| Suggestion::Budget { max_ns });
    let period = shortest_period(&trials, candidate).map(|min_ns| Suggestion::Period { min_ns });
    let suggestions = period.into_iter().chain(budget).chain(on_cpus).collect();
    (suggestions, trials.spent.get())
}

struct Trials<'a> {
    admitted: &'a [Task],
    policy: Policy,
    overheads: &'a Overheads,
    spent: Cell<u64>,
}

impl Trials<'_> {
    /// Whether `candidate` would be admitted as it is; no when the steps
    /// for suggestions are spent.
    fn fit(&self, candidate: &Task) -> bool {
        let left = STEPS_FOR_SUGGESTIONS.saturating_sub(self.spent.get());
        if left == 0 {
            return false;
        }
        let meter = Meter::new(left.min(STEPS_PER_CPU));
        let verdict = analyse_with_candidate(
            self.admitted,
            candidate,
            self.policy,
            self.overheads,
            Limit::Deadline,
            &meter,
        );
        self.spent.set(self.spent.get() + meter.used());
        verdict.fits()
    }
}

/// The shortest period above its own that fits (a deadline equal to the
/// period moves with it, another stays), if any up to the longest the
/// analyses handle.
fn shortest_period(trials: &Trials, candidate: &Task) -> Option<u64> {
    candidate.wcet_ns?;
    let with_period = |period_ns: u64| Task {
        period_ns,
        deadline_ns: if candidate.deadline_ns == candidate.period_ns {
            period_ns
        } else {
            candidate.deadline_ns
        },
        ..candidate.clone()
    };
    let fits = |period: u64| trials.fit(&with_period(period));
    let (too_short, long_enough) = (candidate.period_ns, TIME_CAP);
    if too_short >= long_enough || !fits(long_enough) {
        return None;
    }
    let long_enough = boundary(too_short, long_enough, fits);
    let rounded = long_enough.next_multiple_of(printed_step(long_enough));
    Some(if rounded <= TIME_CAP && fits(rounded) {
        rounded
    } else {
        long_enough
    })
}

/// The largest budget below its own (or, with no budget given, up to its
/// deadline) that fits, if any.
fn largest_budget(trials: &Trials, candidate: &Task) -> Option<u64> {
    let with_budget = |budget: u64| Task {
        wcet_ns: Some(budget),
        ..candidate.clone()
    };
    let fits = |budget: u64| trials.fit(&with_budget(budget));
    let (small_enough, too_large) = match candidate.wcet_ns {
        Some(wcet) => (1, wcet),
        None => {
            let deadline = candidate.deadline_ns.min(TIME_CAP);
            if deadline >= 1 && fits(deadline) {
                return Some(deadline);
            }
            (1, deadline)
        }
    };
    if small_enough >= too_large || !fits(small_enough) {
        return None;
    }
    let small_enough = boundary(too_large, small_enough, fits);
    let rounded = small_enough - small_enough % printed_step(small_enough);
    Some(
        if rounded >= 1 && rounded != small_enough && fits(rounded) {
            rounded
        } else {
            small_enough
        },
    )
}

/// Bisection between a value that does not fit and one that does (in
/// either order; fitting is monotone between them): the fitting value
/// nearest to the one that does not.
fn boundary(mut fails: u64, mut fits_at: u64, fits: impl Fn(u64) -> bool) -> u64 {
    while fails.abs_diff(fits_at) > 1 {
        let middle = fails.min(fits_at) + fails.abs_diff(fits_at) / 2;
        if fits(middle) {
            fits_at = middle;
        } else {
            fails = middle;
        }
    }
    fits_at
}

/// The step `rtlab_core::units::human_duration` prints `ns` to (three
/// decimals of its unit): a suggestion rounded to it reads exactly.
fn printed_step(ns: u64) -> u64 {
    match ns {
        n if n >= 1_000_000_000 => 1_000_000,
        n if n >= 1_000_000 => 1_000,
        _ => 1,
    }
}
