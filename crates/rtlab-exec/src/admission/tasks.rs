//! A periodic run's tasks as admission sees them: per task its CPU (as
//! the run resolves it), period, deadline, priority and WCET, and where
//! the WCET comes from.

use crate::periodic::PeriodicConfig;
use rtlab_admit::Task;
use serde::Serialize;

/// Where a task's WCET comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum WcetSource {
    /// The task's budget.
    Budget,
    /// The task's longest work (it has no budget).
    Work,
    /// A stored run's pWCET (`--budget-from RUN`): the upper end of the
    /// confidence interval at this exceedance probability per activation.
    Pwcet {
        run: String,
        series: String,
        exceedance_per_activation: f64,
        confidence: f64,
    },
}

/// One task and the source of its WCET.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcedTask {
    pub task: Task,
    pub wcet_from: WcetSource,
}

/// The tasks of `config` in its order, each on the CPU the run puts it on
/// (the task's, else the run's default): WCET = the budget, else the
/// task's longest work.
pub fn tasks_of(config: &PeriodicConfig) -> Vec<SourcedTask> {
    config
        .timings()
        .into_iter()
        .map(|t| {
            let (wcet, wcet_from) = match t.budget_ns {
                Some(budget) => (budget, WcetSource::Budget),
                None => (t.work.max_ns(), WcetSource::Work),
            };
            SourcedTask {
                task: Task {
                    name: t.name,
                    cpu: t.cpu,
                    period_ns: t.period_ns,
                    deadline_ns: t.deadline_ns,
                    wcet_ns: Some(wcet),
                    priority: t.priority,
                },
                wcet_from,
            }
        })
        .collect()
}

/// The analysis's input: the tasks alone.
pub fn plain(tasks: &[SourcedTask]) -> Vec<Task> {
    tasks.iter().map(|t| t.task.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset::TaskSet;
    use std::path::Path;

    #[test]
    fn a_budget_wins_over_the_work_and_the_default_cpu_is_the_run_s() {
        let text = r#"
[[task]]
name = "a"
period = "10ms"
work = { uniform = ["1ms", "3ms"] }
budget = "2ms"
cpu = 0

[[task]]
name = "b"
period = "20ms"
deadline = "15ms"
work = { uniform = ["1ms", "3ms"] }
priority = 70
"#;
        let set = TaskSet::parse(text, Path::new("t.toml")).unwrap();
        let mut config = PeriodicConfig::from_task_set(set, 1_000_000_000);
        config.cpu = 1;
        let tasks = tasks_of(&config);
        assert_eq!(tasks[0].task.wcet_ns, Some(2_000_000));
        assert_eq!(tasks[0].wcet_from, WcetSource::Budget);
        assert_eq!(tasks[0].task.cpu, 0);
        assert_eq!(tasks[1].task.wcet_ns, Some(3_000_000));
        assert_eq!(tasks[1].wcet_from, WcetSource::Work);
        assert_eq!(
            (
                tasks[1].task.cpu,
                tasks[1].task.deadline_ns,
                tasks[1].task.priority
            ),
            (1, 15_000_000, 70)
        );
        assert_eq!(plain(&tasks).len(), 2);
    }
}
