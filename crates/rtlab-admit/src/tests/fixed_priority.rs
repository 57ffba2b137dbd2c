//! Exact response-time analysis for fixed priorities.

use super::*;
use crate::model::Policy;
use crate::{analyse, Verdict};

#[test]
fn the_classic_example_responds_in_3_6_and_20() {
    // Burns & Wellings, "Real-Time Systems and Programming Languages"
    // (4th ed., §11.5): (T, C) = (7, 3), (12, 3), (20, 5), RM priorities.
    // R1 = 3. w2 = 3 + ⌈w/7⌉3: 3 → 6 → 6. w3 = 5 + ⌈w/7⌉3 + ⌈w/12⌉3:
    // 5 → 11 → 14 → 17 → 20 → 20 ≤ 20 (just in time).
    let tasks = [
        task("a", 7 * MS, 3 * MS, 3),
        task("b", 12 * MS, 3 * MS, 2),
        task("c", 20 * MS, 5 * MS, 1),
    ];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(
        responses(cpu),
        [
            ("a", Some(3 * MS)),
            ("b", Some(6 * MS)),
            ("c", Some(20 * MS))
        ]
    );
    assert!(cpu.tasks.iter().all(|task| task.meets == Some(true)));
    assert_eq!(*verdict(cpu, Test::ResponseTime), Verdict::Pass);
    assert_eq!(outcome(cpu, Test::ResponseTime).value, 1.0);
    // U = 3/7 + 3/12 + 5/20 = 0.929 > 0.780 and Π = 1.429 × 1.25 × 1.25
    // = 2.232 > 2: neither bound could have said so.
    assert_eq!(*verdict(cpu, Test::LiuLayland), Verdict::Fail);
    assert_eq!(*verdict(cpu, Test::Hyperbolic), Verdict::Fail);
    assert!(analysis.schedulable);
}

#[test]
fn an_unschedulable_set_misses_by_the_amount_the_recurrence_gives() {
    // Burns & Wellings (4th ed., §11.4, task set A): (T, C) = (50, 12),
    // (40, 10), (30, 10), RM priorities; U = 0.824 fails Liu & Layland.
    // R(30) = 10; w(40) = 10 + ⌈w/30⌉10: 10 → 20 → 20; w(50) = 12 +
    // ⌈w/30⌉10 + ⌈w/40⌉10: 12 → 32 → 42 → 52 → 52 > 50: 2 ms late.
    let tasks = [
        task("a", 50 * MS, 12 * MS, 1),
        task("b", 40 * MS, 10 * MS, 2),
        task("c", 30 * MS, 10 * MS, 3),
    ];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(
        responses(cpu),
        [
            ("c", Some(10 * MS)),
            ("b", Some(20 * MS)),
            ("a", Some(52 * MS))
        ]
    );
    assert_eq!(cpu.tasks[2].meets, Some(false));
    assert_eq!(*verdict(cpu, Test::ResponseTime), Verdict::Fail);
    assert_eq!(outcome(cpu, Test::ResponseTime).value, 52.0 / 50.0);
    assert_eq!(
        outcome(cpu, Test::ResponseTime).detail,
        "\"a\": response 52ms > deadline 50ms: 2ms late"
    );
    assert!(!analysis.schedulable);
}

#[test]
fn jitter_raises_responses_as_the_recurrence_says() {
    // (T, C) = (10, 2) above (40, 7). No jitter: w = 7 + ⌈w/10⌉2: 7 → 9
    // → 9, R = 9. Jitter J = 2 on every release (Audsley et al. 1993):
    // R1 = 2 + 2 = 4; w = 7 + ⌈(w + 2)/10⌉2: 7 → 9 → 11 (⌈11/10⌉ = 2) →
    // 11, R2 = J + w = 13: its own lateness and one more preemption.
    let tasks = [
        task("fast", 10 * MS, 2 * MS, 2),
        task("slow", 40 * MS, 7 * MS, 1),
    ];
    let plain = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    assert_eq!(
        responses(only_cpu(&plain)),
        [("fast", Some(2 * MS)), ("slow", Some(9 * MS))]
    );
    let late = analyse(&tasks, Policy::FixedPriority, &jitter(2 * MS));
    assert_eq!(
        responses(only_cpu(&late)),
        [("fast", Some(4 * MS)), ("slow", Some(13 * MS))]
    );
    // The release cost adds to every execution: C = 3 and 8, w = 8 +
    // ⌈w/10⌉3: 8 → 11 → 14 → 14 (the lower task's releases cost "fast"
    // ⌈w/40⌉ × 1 more: w = 3 + 1 = 4, R = 4).
    let costly = Overheads {
        release_cost_ns: MS,
        ..Overheads::none()
    };
    let analysis = analyse(&tasks, Policy::FixedPriority, &costly);
    assert_eq!(
        responses(only_cpu(&analysis)),
        [("fast", Some(4 * MS)), ("slow", Some(14 * MS))]
    );
    assert_eq!(only_cpu(&analysis).tasks[1].wcet_ns, Some(8 * MS));
}

#[test]
fn a_lower_task_release_preempts_a_higher_one() {
    // The executive releases every task at its top priority. "high"
    // (T = 20, C = 2) above "low" (T = 10, C = 1), release cost 1: high's
    // C = 3 and low's releases cost it ⌈w/10⌉ × 1: w = 3 → 4 → 4 (3
    // without). Low: C = 2, w = 2 + ⌈w/20⌉3: 2 → 5 → 5.
    let tasks = [
        task("high", 20 * MS, 2 * MS, 2),
        task("low", 10 * MS, MS, 1),
    ];
    let costly = Overheads {
        release_cost_ns: MS,
        ..Overheads::none()
    };
    let analysis = analyse(&tasks, Policy::FixedPriority, &costly);
    let cpu = only_cpu(&analysis);
    assert_eq!(
        responses(cpu),
        [("high", Some(4 * MS)), ("low", Some(5 * MS))]
    );
    assert!(
        matches!(verdict(cpu, Test::LiuLayland), Verdict::NotApplicable(why) if why.contains("release costs 1ms"))
    );
}

#[test]
fn equal_priorities_interfere_both_ways() {
    // SCHED_FIFO: either may be released first and run to completion,
    // so each has the other's ⌈w/T⌉C on top: w = 3 + ⌈w/10⌉4: 3 → 7 → 7
    // and w = 4 + ⌈w/10⌉3: 4 → 7 → 7.
    let tasks = [task("a", 10 * MS, 3 * MS, 5), task("b", 10 * MS, 4 * MS, 5)];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    assert_eq!(
        responses(only_cpu(&analysis)),
        [("a", Some(7 * MS)), ("b", Some(7 * MS))]
    );
}

#[test]
fn overload_leaves_the_lower_priorities_unbounded() {
    // U of the top two = 0.6 + 0.5 = 1.1 > 1: the busy window of every
    // level below the top never ends, so "b" and "c" have no bound (the
    // crate diverges; nothing is made up). "a" alone: R = 6.
    let tasks = [
        task("a", 10 * MS, 6 * MS, 3),
        task("b", 20 * MS, 10 * MS, 2),
        task("c", 40 * MS, MS, 1),
    ];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(cpu.tasks[0].response_ns, Some(6 * MS));
    assert_eq!(cpu.tasks[1].response_ns, None);
    assert_eq!(cpu.tasks[2].response_ns, None);
    assert_eq!(cpu.tasks[2].meets, Some(false));
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Fail);
    assert_eq!(outcome(cpu, Test::ResponseTime).value, f64::INFINITY);
}

/// The classic recurrence, iterated by hand: R = J + w, w = C + Σ_hep
/// ⌈(w + J)/T_j⌉ C_j; None past `limit`.
fn classic_response(tasks: &[Task], index: usize, jitter: u64, limit: u64) -> Option<u64> {
    let me = &tasks[index];
    let own = me.wcet_ns.unwrap();
    let mut window = own;
    loop {
        let next = own
            + tasks
                .iter()
                .enumerate()
                .filter(|(other, task)| *other != index && task.priority >= me.priority)
                .map(|(_, task)| (window + jitter).div_ceil(task.period_ns) * task.wcet_ns.unwrap())
                .sum::<u64>();
        if next == window {
            return Some(jitter + window);
        }
        if next > limit {
            return None;
        }
        window = next;
    }
}

#[test]
fn the_crate_agrees_with_the_classic_recurrence() {
    // 300 pseudo-random sets (2 to 6 tasks, periods 100 µs to 50 ms,
    // priorities with ties, jitter up to a quarter of the shortest
    // period). Where the classic single-job recurrence is exact (its
    // response within the period, so no earlier job of the task is still
    // running) the crate must give the same number.
    let mut seed: u64 = 0x5eed_0019;
    let mut next = |below: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    let mut compared = 0;
    for set in 0..300 {
        let count = 2 + next(5) as usize;
        let tasks: Vec<Task> = (0..count)
            .map(|index| {
                let period = 100 * US + next(50 * MS - 100 * US);
                let wcet = 1 + next(period / count as u64 * 6 / 5);
                task(&format!("t{set}.{index}"), period, wcet, 1 + next(4) as u32)
            })
            .collect();
        let shortest = tasks.iter().map(|task| task.period_ns).min().unwrap();
        let overheads = jitter(next(shortest / 4));
        let analysis = analyse(&tasks, Policy::FixedPriority, &overheads);
        let cpu = only_cpu(&analysis);
        for (index, task) in tasks.iter().enumerate() {
            let classic = classic_response(&tasks, index, overheads.release_jitter_ns, 1 << 40);
            let Some(classic) = classic.filter(|&response| response <= task.period_ns) else {
                continue;
            };
            let crate_says = cpu
                .tasks
                .iter()
                .find(|outcome| outcome.name == task.name)
                .unwrap();
            assert_eq!(
                crate_says.response_ns,
                Some(classic),
                "{task:?} in {tasks:?}, {overheads:?}"
            );
            compared += 1;
        }
    }
    assert!(compared > 500, "only {compared} responses compared");
}
