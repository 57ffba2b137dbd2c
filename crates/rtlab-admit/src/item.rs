//! One task as the analyses see it: times clamped into a range where no
//! sum or product can overflow, execution with the release cost added,
//! the executive's release jitter attached. Clamping only ever makes a
//! verdict more pessimistic, so odd input (0, u64::MAX, a deadline past
//! its period) is analysed safely instead of panicking.

use crate::model::{Overheads, Task};

/// The longest time the analyses handle (2^40 ns, about 18 minutes): a
/// longer period is analysed as this one (more frequent: never kinder),
/// a longer execution or jitter as just above it (never meets).
pub(crate) const TIME_CAP: u64 = 1 << 40;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Item<'a> {
    pub task: &'a Task,
    /// 1 ns to [`TIME_CAP`].
    pub period: u64,
    /// 0 to the period: a deadline past its period is analysed as the
    /// period (tighter, so a Pass still holds for the longer one).
    pub deadline: u64,
    /// WCET + release cost, at most `TIME_CAP + 1`; None: unknown.
    pub exec: Option<u64>,
    /// Release jitter, at most `TIME_CAP + 1`.
    pub jitter: u64,
    /// What each of its releases costs the CPU at the executive's top
    /// priority (part of `exec`), at most `TIME_CAP + 1`.
    pub release_cost: u64,
    pub priority: u32,
}

impl<'a> Item<'a> {
    pub fn new(task: &'a Task, overheads: &Overheads) -> Item<'a> {
        let period = task.period_ns.clamp(1, TIME_CAP);
        Item {
            task,
            period,
            deadline: task.deadline_ns.min(period),
            exec: task.wcet_ns.map(|wcet| {
                wcet.saturating_add(overheads.release_cost_ns)
                    .min(TIME_CAP + 1)
            }),
            jitter: overheads.release_jitter_ns.min(TIME_CAP + 1),
            release_cost: overheads.release_cost_ns.min(TIME_CAP + 1),
            priority: task.priority,
        }
    }

    pub fn name(&self) -> &'a str {
        &self.task.name
    }

    /// Its utilization (0 when its WCET is unknown).
    pub fn utilization(&self) -> f64 {
        self.exec.unwrap_or(0) as f64 / self.period as f64
    }

    /// Whether it can ever keep up with itself: an execution longer than
    /// its period piles up without end (and would overflow the crate's
    /// demand arithmetic).
    pub fn overloads_itself(&self) -> bool {
        self.exec.is_some_and(|exec| exec > self.period)
    }

    /// Whether `candidate` is the task this item was made from.
    pub fn is(&self, candidate: &Task) -> bool {
        std::ptr::eq(self.task, candidate)
    }
}

/// The items of `tasks`, analysed with `overheads`.
pub(crate) fn items<'a>(
    tasks: impl IntoIterator<Item = &'a Task>,
    overheads: &Overheads,
) -> Vec<Item<'a>> {
    tasks
        .into_iter()
        .map(|task| Item::new(task, overheads))
        .collect()
}
