//! Each task of a run as its threads see it, whichever form the config
//! takes (N equal tasks, or a task set), and the work it does per
//! activation.

use super::config::PeriodicConfig;
use crate::plan::gen::SplitMix64;
use crate::taskset::model::Work;

/// One task of a run: where, when and how long it works.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskTiming {
    /// The prefix of its series: `taskN`, or its name in the task set.
    pub name: String,
    pub cpu: usize,
    pub priority: u32,
    pub period_ns: u64,
    pub offset_ns: u64,
    pub work: Work,
    pub deadline_ns: u64,
    pub budget_ns: Option<u64>,
    pub activations: u64,
}

impl PeriodicConfig {
    /// The run's tasks, in order: `tasks` equal tasks (`taskN`, deadline =
    /// period, no budget) or the task set's.
    pub(crate) fn timings(&self) -> Vec<TaskTiming> {
        match &self.task_set {
            Some(plan) => plan
                .planned()
                .map(|(task, activations)| TaskTiming {
                    name: task.name.clone(),
                    cpu: task.cpu.unwrap_or(self.cpu),
                    priority: task.priority,
                    period_ns: task.period_ns,
                    offset_ns: task.offset_ns,
                    work: task.work,
                    deadline_ns: task.deadline_ns,
                    budget_ns: task.budget_ns,
                    activations,
                })
                .collect(),
            None => (0..self.tasks)
                .map(|task| TaskTiming {
                    name: format!("task{task}"),
                    cpu: self.cpu,
                    priority: self.task_priority,
                    period_ns: self.period_ns,
                    offset_ns: self.offset_of(task),
                    work: Work::Fixed { ns: self.work_ns },
                    deadline_ns: self.period_ns,
                    budget_ns: None,
                    activations: self.activations,
                })
                .collect(),
        }
    }
}

/// The CPUs the tasks run on, each once, in the order of their first task.
pub(crate) fn cpus_of(timings: &[TaskTiming]) -> Vec<usize> {
    let mut cpus: Vec<usize> = Vec::new();
    for t in timings {
        if !cpus.contains(&t.cpu) {
            cpus.push(t.cpu);
        }
    }
    cpus
}

/// The work of each activation: fixed, or drawn uniformly by the plan
/// generator's SplitMix64 seeded from the task's name (the same draws every
/// run). Hot path: a few integer operations, no allocation, no system call.
pub(crate) struct WorkDraw {
    work: Work,
    rng: SplitMix64,
}

impl WorkDraw {
    pub(crate) fn new(work: Work, name: &str) -> WorkDraw {
        // FNV-1a of the name.
        let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        WorkDraw {
            work,
            rng: SplitMix64::new(seed),
        }
    }

    /// The work of the next activation, ns.
    #[inline]
    pub(crate) fn next_ns(&mut self) -> u64 {
        match self.work {
            Work::Fixed { ns } => ns,
            // A task's work is below its period, far below 2^63 ns.
            Work::Uniform { min_ns, max_ns } => {
                min_ns + self.rng.below_or_eq(max_ns.saturating_sub(min_ns))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_draws_stay_in_their_range_and_cover_it() {
        let work = Work::Uniform {
            min_ns: 100,
            max_ns: 199,
        };
        let mut draw = WorkDraw::new(work, "video");
        let draws: Vec<u64> = (0..10_000).map(|_| draw.next_ns()).collect();
        assert!(draws.iter().all(|ns| (100..=199).contains(ns)));
        let low = draws.iter().filter(|&&ns| ns < 150).count();
        assert!(
            (4000..6000).contains(&low),
            "{low} of 10000 below the middle"
        );
        assert!(draws.contains(&100) && draws.contains(&199));
        // The same name draws the same work; another name other work.
        let mut again = WorkDraw::new(work, "video");
        assert!(draws.iter().all(|&ns| ns == again.next_ns()));
        let mut other = WorkDraw::new(work, "audio");
        assert!(draws.iter().any(|&ns| ns != other.next_ns()));
    }

    #[test]
    fn fixed_work_and_a_single_point_are_exact() {
        let mut fixed = WorkDraw::new(Work::Fixed { ns: 42 }, "a");
        assert_eq!(fixed.next_ns(), 42);
        let mut point = WorkDraw::new(
            Work::Uniform {
                min_ns: 7,
                max_ns: 7,
            },
            "a",
        );
        assert!((0..100).all(|_| point.next_ns() == 7));
    }

    #[test]
    fn equal_tasks_become_timings_of_their_own_names() {
        let config = PeriodicConfig::new(3, 10_000_000, 100_000, 1_000_000_000);
        let timings = config.timings();
        assert_eq!(timings.len(), 3);
        assert_eq!(timings[2].name, "task2");
        assert_eq!(timings[2].offset_ns, config.offset_of(2));
        assert_eq!(timings[2].deadline_ns, 10_000_000);
        assert_eq!(timings[2].activations, 100);
        assert_eq!(cpus_of(&timings), vec![config.cpu]);
    }
}
