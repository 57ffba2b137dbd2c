//! The one judge of a task set: every rule a set keeps before `exec
//! periodic` runs it or `exec serve` holds its slots, whether it was read
//! from a file, imported from rt-app or built in code.

use super::model::{TaskSet, TaskSpec, Work};
use crate::periodic::config::{MAX_RUN_NS, MAX_TASKS, MIN_PERIOD_NS};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::units::human_duration;

/// Longest task name, in characters (a series name is `<name>.lateness`).
pub const MAX_NAME_CHARS: usize = 64;
/// Highest priority of a task: the executive must run above every task it
/// releases, and 99 is the highest SCHED_FIFO priority.
pub const MAX_TASK_PRIORITY: u32 = 98;

/// Why a task set is refused: the task (its index in the set; None: the
/// set as a whole), the key at fault and what is wrong with it, then what
/// was expected. The reader turns it into a `FILE:LINE:` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub task: Option<usize>,
    pub key: &'static str,
    pub message: String,
}

impl Refusal {
    /// The refusal with the task named, for a set that has no file lines.
    pub fn describe(&self, set: &TaskSet) -> String {
        match self.task.and_then(|i| set.tasks.get(i)) {
            Some(task) => format!("task `{}`: {}", task.name, self.message),
            None => self.message.clone(),
        }
    }
}

impl TaskSet {
    /// Checks every rule (see docs/taskset.md, "The checks"); the first
    /// broken one is the error.
    pub fn validate(&self) -> Result<(), Refusal> {
        if self.tasks.is_empty() {
            return Err(Refusal {
                task: None,
                key: "task",
                message: "no task, expected at least one [[task]]".into(),
            });
        }
        if self.tasks.len() > MAX_TASKS {
            return Err(Refusal {
                task: Some(MAX_TASKS),
                key: "name",
                message: format!("{} tasks, expected at most {MAX_TASKS}", self.tasks.len()),
            });
        }
        let online = CpuSet::online();
        for (i, task) in self.tasks.iter().enumerate() {
            let refuse = |(key, message)| Refusal {
                task: Some(i),
                key,
                message,
            };
            check_task(task, &online).map_err(refuse)?;
            if let Some(first) = self.tasks[..i].iter().position(|t| t.name == task.name) {
                return Err(refuse((
                    "name",
                    format!(
                        "`{}` is already the name of task {}, expected a name of its own",
                        task.name,
                        first + 1
                    ),
                )));
            }
        }
        Ok(())
    }
}

type Broken = (&'static str, String);

/// One task's own rules, in the order of its keys.
fn check_task(t: &TaskSpec, online: &CpuSet) -> Result<(), Broken> {
    check_name(&t.name)?;
    let d = human_duration;
    if t.period_ns < MIN_PERIOD_NS {
        return Err((
            "period",
            format!(
                "period {} is shorter than the release path allows, expected at least {}",
                d(t.period_ns),
                d(MIN_PERIOD_NS)
            ),
        ));
    }
    if t.period_ns > MAX_RUN_NS {
        return Err((
            "period",
            format!(
                "period {} is longer than the longest run, expected at most {} days",
                d(t.period_ns),
                MAX_RUN_NS / 86_400_000_000_000
            ),
        ));
    }
    if t.offset_ns >= t.period_ns {
        return Err((
            "offset",
            format!(
                "offset {} is not shorter than the period {}, expected an offset within the period",
                d(t.offset_ns),
                d(t.period_ns)
            ),
        ));
    }
    if let Work::Uniform { min_ns, max_ns } = t.work {
        if min_ns > max_ns {
            return Err((
                "work",
                format!(
                    "work uniform from {} to {}, expected the shorter first",
                    d(min_ns),
                    d(max_ns)
                ),
            ));
        }
    }
    if t.work.max_ns() >= t.period_ns {
        return Err((
            "work",
            format!(
                "work up to {} is not shorter than the period {}, expected less work than the period",
                d(t.work.max_ns()),
                d(t.period_ns)
            ),
        ));
    }
    // A later deadline would let an activation still run when the next one
    // comes, which the executive counts as a missed activation: only
    // constrained deadlines mean one thing.
    if t.deadline_ns == 0 || t.deadline_ns > t.period_ns {
        return Err((
            "deadline",
            format!(
                "deadline {} is not within the period {}, expected more than 0 and at most the period",
                d(t.deadline_ns),
                d(t.period_ns)
            ),
        ));
    }
    if let Some(budget) = t.budget_ns {
        if budget == 0 || budget > t.deadline_ns {
            return Err((
                "budget",
                format!(
                    "budget {} is not within the deadline {}, expected more than 0 and at most the deadline",
                    d(budget),
                    d(t.deadline_ns)
                ),
            ));
        }
    }
    if !(1..=MAX_TASK_PRIORITY).contains(&t.priority) {
        return Err((
            "priority",
            format!(
                "priority {} is out of range, expected 1-{MAX_TASK_PRIORITY} (SCHED_FIFO, below the executive)",
                t.priority
            ),
        ));
    }
    if let Some(cpu) = t.cpu {
        if !online.iter().any(|c| c == cpu) {
            return Err((
                "cpu",
                format!("cpu {cpu} is not online, expected one of {online}"),
            ));
        }
    }
    Ok(())
}

/// A name that is safe in a series name (`<name>.lateness`), a budget
/// pattern, a CSV cell and a shell: letters, digits, `-` and `_`.
fn check_name(name: &str) -> Result<(), Broken> {
    if name.is_empty() {
        return Err((
            "name",
            "an empty name, expected letters, digits, - or _".into(),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err((
            "name",
            format!(
                "a name of {} characters, expected at most {MAX_NAME_CHARS}",
                name.chars().count()
            ),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
    {
        return Err((
            "name",
            format!("name {name:?} holds {bad:?}, expected only letters, digits, - or _"),
        ));
    }
    Ok(())
}
