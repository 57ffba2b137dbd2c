//! One CPU's analysis: its tasks in the order the policy runs them, each
//! task's response, the processor demand under EDF, and from these every
//! test's outcome and each task's verdict.

use crate::bounds::{hyperbolic_outcome, liu_layland_outcome, not_applicable, utilization_outcome};
use crate::demand::{processor_demand, Demand};
use crate::edf::edf_responses;
use crate::item::{items, Item};
use crate::meter::{Meter, STEPS_PER_CPU};
use crate::model::{CpuAnalysis, Overheads, Policy, Task, TaskOutcome, Test, TestOutcome, Verdict};
use crate::response::{Limit, Response};
use crate::rta::fixed_priority_responses;
use crate::text::{demand_over, duration, lateness, quoted};

/// Steps for the EDF response bounds of one CPU, beside the
/// [`STEPS_PER_CPU`] of its verdict.
const STEPS_FOR_EDF_BOUNDS: u64 = STEPS_PER_CPU / 4;

#[derive(Debug)]
pub(crate) struct CpuVerdict<'a> {
    pub cpu: usize,
    pub policy: Policy,
    /// Priority order (highest first), or deadline order under EDF.
    pub items: Vec<Item<'a>>,
    pub responses: Vec<Response>,
    /// EDF with every WCET known: the processor demand.
    pub demand: Option<Demand>,
    /// The step budget the analysis had (said when it ran out).
    pub budget: u64,
}

/// Analyses `items`, all on `cpu`, within `meter`'s budget.
pub(crate) fn analyse_cpu<'a>(
    cpu: usize,
    mut items: Vec<Item<'a>>,
    policy: Policy,
    limit: Limit,
    meter: &Meter,
) -> CpuVerdict<'a> {
    let (responses, demand) = match policy {
        Policy::FixedPriority => {
            items.sort_by_key(|item| std::cmp::Reverse(item.priority));
            (fixed_priority_responses(&items, limit, meter), None)
        }
        Policy::Edf => {
            items.sort_by_key(|item| item.deadline);
            let all_known = items.iter().all(|item| item.exec.is_some());
            let demand = all_known.then(|| processor_demand(&items, meter));
            // A decided demand is the whole verdict: a yes-or-no check
            // skips the bounds, which then only say how long each task
            // takes (or, when the demand fails, who could miss).
            let decided = demand.and_then(Demand::fits).is_some();
            let responses = if limit == Limit::Deadline && decided {
                vec![Response::Undecided; items.len()]
            } else {
                edf_responses(&items, STEPS_FOR_EDF_BOUNDS)
            };
            (responses, demand)
        }
    };
    CpuVerdict {
        cpu,
        policy,
        items,
        responses,
        demand,
        budget: meter.budget(),
    }
}

/// The analysis of `candidate`'s CPU with it and the tasks admitted there.
pub(crate) fn analyse_with_candidate<'a>(
    admitted: &'a [Task],
    candidate: &'a Task,
    policy: Policy,
    overheads: &Overheads,
    limit: Limit,
    meter: &Meter,
) -> CpuVerdict<'a> {
    let sharing = admitted
        .iter()
        .filter(|task| task.cpu == candidate.cpu)
        .chain(std::iter::once(candidate));
    analyse_cpu(
        candidate.cpu,
        items(sharing, overheads),
        policy,
        limit,
        meter,
    )
}

impl CpuVerdict<'_> {
    fn demand_fits(&self) -> bool {
        self.demand.and_then(Demand::fits) == Some(true)
    }

    /// Whether the task at `index` meets its deadline (None: not known).
    pub fn meets(&self, index: usize) -> Option<bool> {
        if self.demand_fits() {
            return Some(true);
        }
        self.responses[index].meets(self.items[index].deadline)
    }

    /// Its response bound; under EDF a demand that fits bounds every
    /// response by its deadline too.
    pub fn response(&self, index: usize) -> Option<u64> {
        let bound = self.responses[index].bounded();
        if self.demand_fits() {
            let deadline = self.items[index].deadline;
            return Some(bound.map_or(deadline, |bound| bound.min(deadline)));
        }
        bound
    }

    /// Every task with a known WCET provably meets its deadline.
    pub fn fits(&self) -> bool {
        self.failing().next().is_none()
    }

    /// The tasks with a known WCET not proven to meet their deadlines.
    pub fn failing(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.items.len())
            .filter(|&index| self.items[index].exec.is_some() && self.meets(index) != Some(true))
    }

    /// The index of `task` among the items.
    pub fn index_of(&self, task: &Task) -> Option<usize> {
        self.items.iter().position(|item| item.is(task))
    }

    pub fn to_analysis(&self) -> CpuAnalysis {
        let tests = vec![
            utilization_outcome(&self.items),
            liu_layland_outcome(&self.items, self.policy),
            hyperbolic_outcome(&self.items, self.policy),
            self.response_time_outcome(),
            self.demand_outcome(),
        ];
        let tasks = (0..self.items.len())
            .map(|index| {
                let item = &self.items[index];
                TaskOutcome {
                    name: item.task.name.clone(),
                    cpu: self.cpu,
                    wcet_ns: item.exec,
                    deadline_ns: item.deadline,
                    response_ns: self.response(index),
                    meets: self.meets(index),
                }
            })
            .collect();
        CpuAnalysis {
            cpu: self.cpu,
            utilization: self.items.iter().map(Item::utilization).sum(),
            tests,
            tasks,
        }
    }

    /// Why the task at `index` is not proven to meet its deadline.
    pub fn shortfall(&self, index: usize) -> String {
        let deadline = self.items[index].deadline;
        match self.responses[index] {
            Response::Bounded(response) => lateness(response, deadline),
            Response::Unbounded => format!("response unbounded > deadline {}", duration(deadline)),
            Response::Undecided => {
                format!("no response bound within {} analysis steps", self.budget)
            }
            Response::Unknown(unknown) if unknown == index => "its WCET is unknown".into(),
            Response::Unknown(unknown) => format!(
                "the WCET of {} is unknown: response unbounded",
                quoted(self.items[unknown].name())
            ),
        }
    }

    fn response_time_outcome(&self) -> TestOutcome {
        if self.policy == Policy::Edf {
            return not_applicable(
                Test::ResponseTime,
                "a test for fixed priorities; the policy is EDF".into(),
            );
        }
        let known = || (0..self.items.len()).filter(|&index| self.items[index].exec.is_some());
        let ratio = |index: usize| match self.responses[index] {
            Response::Bounded(response) => {
                response as f64 / self.items[index].deadline.max(1) as f64
            }
            _ => f64::INFINITY,
        };
        let worst = known()
            .filter(|&index| {
                matches!(
                    self.responses[index],
                    Response::Bounded(_) | Response::Unbounded
                )
            })
            .max_by(|&a, &b| ratio(a).total_cmp(&ratio(b)));
        let value = worst.map_or(0.0, ratio);
        let outcome = |verdict, detail| TestOutcome {
            test: Test::ResponseTime,
            verdict,
            value,
            bound: 1.0,
            detail,
        };
        if let Some(missing) = known().find(|&index| self.meets(index) == Some(false)) {
            let detail = format!(
                "{}: {}",
                quoted(self.items[missing].name()),
                self.shortfall(missing)
            );
            return outcome(Verdict::Fail, detail);
        }
        if let Some(open) = known().find(|&index| self.meets(index).is_none()) {
            let why = format!(
                "{}: {}",
                quoted(self.items[open].name()),
                self.shortfall(open)
            );
            return not_applicable(Test::ResponseTime, why);
        }
        let detail = match worst {
            Some(index) => format!(
                "every response within its deadline; the nearest, {}: {} of {} ({:.3})",
                quoted(self.items[index].name()),
                duration(self.responses[index].bounded().unwrap_or(0)),
                duration(self.items[index].deadline),
                value
            ),
            None => "no task with a known WCET".into(),
        };
        outcome(Verdict::Pass, detail)
    }

    fn demand_outcome(&self) -> TestOutcome {
        if self.policy == Policy::FixedPriority {
            return not_applicable(
                Test::ProcessorDemand,
                "a test for EDF; the policy is fixed priorities".into(),
            );
        }
        let outcome = |verdict, value, detail| TestOutcome {
            test: Test::ProcessorDemand,
            verdict,
            value,
            bound: 1.0,
            detail,
        };
        let Some(demand) = self.demand else {
            return match self.items.iter().find(|item| item.exec.is_none()) {
                Some(unknown) if self.items.iter().any(|item| item.exec.is_some()) => {
                    not_applicable(
                        Test::ProcessorDemand,
                        format!(
                            "the WCET of {} is unknown: under EDF it may delay every task",
                            quoted(unknown.name())
                        ),
                    )
                }
                _ => outcome(Verdict::Pass, 0.0, "no task with a known WCET".into()),
            };
        };
        match demand {
            Demand::ImplicitFits { utilization } => outcome(
                Verdict::Pass,
                utilization,
                format!("every deadline is its period, releases on time: U = {utilization:.3} ≤ 1 is exact"),
            ),
            Demand::Fits {
                horizon,
                points,
                worst_ratio,
            } => outcome(
                Verdict::Pass,
                worst_ratio,
                format!(
                    "h(t) ≤ t at every deadline t < L = {} (QPA: {points} points, largest h(t)/t {worst_ratio:.3})",
                    duration(horizon)
                ),
            ),
            Demand::Exceeds { t, demand } => outcome(
                Verdict::Fail,
                if t == 0 { f64::INFINITY } else { demand as f64 / t as f64 },
                demand_over(t, demand),
            ),
            Demand::Overloaded { utilization } => outcome(
                Verdict::Fail,
                utilization,
                format!("U = {utilization:.3} > 1: the demand outgrows every interval"),
            ),
            Demand::Undecided => not_applicable(
                Test::ProcessorDemand,
                format!("QPA undecided within {} analysis steps", self.budget),
            ),
        }
    }
}
