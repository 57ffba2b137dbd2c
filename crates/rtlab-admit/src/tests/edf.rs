//! EDF: utilization when deadlines are periods, QPA otherwise.

use super::*;
use crate::model::Policy;
use crate::{analyse, Verdict};

#[test]
fn full_utilization_with_deadlines_at_periods_is_schedulable_under_edf_only() {
    // Liu & Layland 1973, Theorem 7: EDF meets every deadline iff U ≤ 1
    // when D = T. (T, C) = (4, 2), (6, 3): U = 1. Under RM the second
    // misses: w = 3 + ⌈w/4⌉2: 3 → 5 → 7 > 6.
    let tasks = [task("a", 4 * MS, 2 * MS, 2), task("b", 6 * MS, 3 * MS, 1)];
    let edf = analyse(&tasks, Policy::Edf, &Overheads::none());
    let cpu = only_cpu(&edf);
    assert!(edf.schedulable);
    assert_eq!(*verdict(cpu, Test::ProcessorDemand), Verdict::Pass);
    assert!(outcome(cpu, Test::ProcessorDemand)
        .detail
        .contains("U = 1.000 ≤ 1 is exact"));
    assert!(matches!(
        verdict(cpu, Test::ResponseTime),
        Verdict::NotApplicable(_)
    ));
    assert!(cpu.tasks.iter().all(|task| task.meets == Some(true)));
    assert!(cpu
        .tasks
        .iter()
        .all(|task| task.response_ns.unwrap() <= task.deadline_ns));
    let fp = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    assert!(!fp.schedulable);
    assert_eq!(only_cpu(&fp).tasks[1].response_ns, Some(7 * MS));
}

/// (C, D, T) in ms.
fn set(tasks: &[(u64, u64, u64)]) -> Vec<Task> {
    tasks
        .iter()
        .enumerate()
        .map(|(index, &(wcet, deadline, period))| {
            constrained(
                &format!("t{}", index + 1),
                period * MS,
                deadline * MS,
                wcet * MS,
                1,
            )
        })
        .collect()
}

#[test]
fn qpa_finds_the_interval_whose_demand_exceeds_it() {
    // Constructed here, worked by hand: (C, D, T) = (2, 4, 6), (2, 5, 8),
    // (4, 7, 12), U = 1/3 + 1/4 + 1/3 = 0.917 < 1. Lb: w = 8 → 4 + 2 + 4
    // = 10 → 4 + 4 + 4 = 12 → 12. La = (2/3 + 3/4 + 5/3)/(1/12) = 37.
    // L = 12. QPA: t = 10 (last deadline < 12), h(10) = 2·2 + 2 + 4 = 10
    // = t → t = 7, h(7) = 2 + 2 + 4 = 8 > 7: unschedulable.
    let analysis = analyse(
        &set(&[(2, 4, 6), (2, 5, 8), (4, 7, 12)]),
        Policy::Edf,
        &Overheads::none(),
    );
    let cpu = only_cpu(&analysis);
    assert!(!analysis.schedulable);
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Pass);
    assert_eq!(*verdict(cpu, Test::ProcessorDemand), Verdict::Fail);
    assert_eq!(
        outcome(cpu, Test::ProcessorDemand).detail,
        "h(7ms) = 8ms > 7ms: 1ms over"
    );
    assert_eq!(outcome(cpu, Test::ProcessorDemand).value, 8.0 / 7.0);
    assert!(cpu.tasks.iter().any(|task| task.meets == Some(false)));
}

#[test]
fn qpa_accepts_a_set_with_deadlines_before_periods() {
    // Constructed here, worked by hand: (C, D, T) = (2, 4, 6), (2, 5, 8),
    // (3, 7, 12), U = 0.833. Lb: w = 7 → 4 + 2 + 3 = 9 → 4 + 4 + 3 = 11
    // → 11. La = (2/3 + 3/4 + 5/4)/(1/6) = 16. L = 11. QPA: t = 10, h =
    // 9 < 10 → t = 9, h = 7 → t = 7, h = 7 = t → t = 5 (last deadline
    // before 7), h = 4 ≤ d_min = 4: schedulable after 4 points.
    let analysis = analyse(
        &set(&[(2, 4, 6), (2, 5, 8), (3, 7, 12)]),
        Policy::Edf,
        &Overheads::none(),
    );
    let cpu = only_cpu(&analysis);
    assert!(analysis.schedulable);
    assert_eq!(*verdict(cpu, Test::ProcessorDemand), Verdict::Pass);
    assert_eq!(
        outcome(cpu, Test::ProcessorDemand).detail,
        "h(t) ≤ t at every deadline t < L = 11ms (QPA: 4 points, largest h(t)/t 1.000)"
    );
    for task in &cpu.tasks {
        assert_eq!(task.meets, Some(true));
        assert!(task.response_ns.unwrap() <= task.deadline_ns, "{task:?}");
    }
}

#[test]
fn jitter_tightens_edf_deadlines() {
    // The set above with J = 1 (Spuri 1996: D' = D − J): D' = 3, 4, 6.
    // Lb: w = 7 → 4 + 2 + 3 = 9 → 4 + 4 + 3 = 11 → 11. t = 9 (τ1's
    // second deadline), h(9) = 4 + 2 + 3 = 9 = t → t = 6, h(6) = 2 + 2 +
    // 3 = 7 > 6: unschedulable.
    let analysis = analyse(
        &set(&[(2, 4, 6), (2, 5, 8), (3, 7, 12)]),
        Policy::Edf,
        &jitter(MS),
    );
    let cpu = only_cpu(&analysis);
    assert!(!analysis.schedulable);
    assert_eq!(
        outcome(cpu, Test::ProcessorDemand).detail,
        "h(6ms) = 7ms > 6ms: 1ms over"
    );
}

#[test]
fn edf_over_full_utilization_fails_without_qpa() {
    let tasks = [
        task("a", 4 * MS, 2 * MS, 1),
        task("b", 6 * MS, 3 * MS + 1, 1),
    ];
    let analysis = analyse(&tasks, Policy::Edf, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Fail);
    assert_eq!(*verdict(cpu, Test::ProcessorDemand), Verdict::Fail);
    assert!(outcome(cpu, Test::ProcessorDemand)
        .detail
        .contains("outgrows every interval"));
    assert!(!analysis.schedulable);
}
