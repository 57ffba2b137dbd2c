//! The analyses against textbook task sets (each with its source and the
//! arithmetic worked by hand), the admission rules, and the limits a
//! hostile task set meets.

mod admission;
mod bounds;
mod edf;
mod fixed_priority;
mod limits;
mod properties;

use crate::model::{
    Analysis, CpuAnalysis, Overheads, Suggestion, Task, Test, TestOutcome, Verdict,
};

pub(super) const US: u64 = 1_000;
pub(super) const MS: u64 = 1_000_000;

/// A task on CPU 0 with its deadline at its period.
pub(super) fn task(name: &str, period: u64, wcet: u64, priority: u32) -> Task {
    Task {
        name: name.into(),
        cpu: 0,
        period_ns: period,
        deadline_ns: period,
        wcet_ns: Some(wcet),
        priority,
    }
}

/// A task with a deadline before its period.
pub(super) fn constrained(
    name: &str,
    period: u64,
    deadline: u64,
    wcet: u64,
    priority: u32,
) -> Task {
    Task {
        deadline_ns: deadline,
        ..task(name, period, wcet, priority)
    }
}

pub(super) fn on_cpu(cpu: usize, task: Task) -> Task {
    Task { cpu, ..task }
}

pub(super) fn unknown(name: &str, period: u64, priority: u32) -> Task {
    Task {
        wcet_ns: None,
        ..task(name, period, 0, priority)
    }
}

pub(super) fn jitter(ns: u64) -> Overheads {
    Overheads {
        release_jitter_ns: ns,
        release_cost_ns: 0,
        source: "test".into(),
    }
}

pub(super) fn only_cpu(analysis: &Analysis) -> &CpuAnalysis {
    assert_eq!(analysis.cpus.len(), 1, "{analysis:#?}");
    &analysis.cpus[0]
}

pub(super) fn outcome(cpu: &CpuAnalysis, test: Test) -> &TestOutcome {
    cpu.tests
        .iter()
        .find(|outcome| outcome.test == test)
        .unwrap()
}

pub(super) fn verdict(cpu: &CpuAnalysis, test: Test) -> &Verdict {
    &outcome(cpu, test).verdict
}

/// How many tasks an analysis holds, over every CPU.
pub(super) fn task_count(analysis: &Analysis) -> usize {
    analysis.cpus.iter().map(|cpu| cpu.tasks.len()).sum()
}

/// Each task's response bound, by name, in the CPU's order.
pub(super) fn responses(cpu: &CpuAnalysis) -> Vec<(&str, Option<u64>)> {
    cpu.tasks
        .iter()
        .map(|task| (task.name.as_str(), task.response_ns))
        .collect()
}

/// Applies `suggestion` to `candidate` as `exec serve` would.
pub(super) fn apply(candidate: &Task, suggestion: &Suggestion) -> Task {
    match *suggestion {
        Suggestion::Period { min_ns } => Task {
            period_ns: min_ns,
            deadline_ns: if candidate.deadline_ns == candidate.period_ns {
                min_ns
            } else {
                candidate.deadline_ns
            },
            ..candidate.clone()
        },
        Suggestion::Budget { max_ns } => Task {
            wcet_ns: Some(max_ns),
            ..candidate.clone()
        },
        Suggestion::Cpu { cpu } => Task {
            cpu,
            ..candidate.clone()
        },
    }
}
