//! What a hostile or odd task set meets: every analysis ends within its
//! step budget, odd numbers never panic, and everything serializes.

use super::*;
use crate::cpu::analyse_cpu;
use crate::item::items;
use crate::meter::{Meter, STEPS_PER_CPU};
use crate::model::Policy;
use crate::response::Limit;
use crate::suggest::{suggestions_and_steps, STEPS_FOR_SUGGESTIONS};
use crate::{admit, analyse};

fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

/// 80 tasks with distinct prime (so pairwise co-prime) periods spread
/// geometrically from 1 µs to 10 s, each U = 0.8/80, rate-monotonic.
fn eighty_coprime(deadline_share: f64) -> Vec<Task> {
    let mut last = 0;
    (0..80u32)
        .map(|index| {
            let target = (1_000.0 * 10f64.powf(7.0 * f64::from(index) / 79.0)) as u64;
            let period = (target.max(last + 1)..).find(|&n| is_prime(n)).unwrap();
            last = period;
            let deadline = ((period as f64 * deadline_share) as u64).max(1);
            constrained(
                &format!("t{index}"),
                period,
                deadline,
                (period / 100).max(1),
                80 - index,
            )
        })
        .collect()
}

fn steps(tasks: &[Task], policy: Policy) -> (u64, bool, bool) {
    let meter = Meter::new(STEPS_PER_CPU);
    let verdict = analyse_cpu(
        0,
        items(tasks, &Overheads::none()),
        policy,
        Limit::Full,
        &meter,
    );
    let decided = (0..verdict.items.len()).all(|index| verdict.meets(index).is_some());
    (meter.used(), meter.ran_out(), decided && verdict.fits())
}

#[test]
fn eighty_coprime_tasks_are_decided_well_within_the_budget() {
    for (policy, share) in [
        (Policy::FixedPriority, 1.0),
        (Policy::Edf, 1.0),
        (Policy::Edf, 0.7),
    ] {
        let tasks = eighty_coprime(share);
        let (used, ran_out, fits) = steps(&tasks, policy);
        println!("{policy:?}, D = {share} T: {used} steps");
        assert!(
            !ran_out && used < STEPS_PER_CPU / 10,
            "{policy:?}: {used} steps"
        );
        assert!(fits, "{policy:?}, D = {share} T");
        // One more task: admitted or refused, with its suggestions, in
        // a bounded number of steps.
        let candidate = task("big", 7 * MS, 3 * MS, 50);
        let (_, spent) =
            suggestions_and_steps(&tasks, &candidate, policy, &Overheads::none(), &[0, 1]);
        assert!(spent <= STEPS_FOR_SUGGESTIONS, "{spent}");
        let analysis = admit(&tasks, &candidate, policy, &Overheads::none(), &[0, 1]);
        if let Err(refusal) = analysis {
            assert!(
                refusal
                    .suggestions
                    .contains(&crate::Suggestion::Cpu { cpu: 1 }),
                "{refusal:?}"
            );
        }
    }
}

#[test]
fn a_hostile_set_stops_at_the_budget_and_is_not_admitted() {
    // Inverse priorities: the 1 µs period lowest, under 79 tasks up to
    // 10 s with U ≈ 0.99: millions of jobs in its busy window.
    let mut tasks = eighty_coprime(1.0);
    for task in &mut tasks {
        task.priority = 100 - task.priority;
        task.wcet_ns = Some((task.period_ns as f64 * 0.99 / 80.0) as u64);
    }
    tasks[0].wcet_ns = Some(1);
    let (used, ran_out, fits) = steps(&tasks, Policy::FixedPriority);
    println!("hostile: {used} steps, ran out: {ran_out}");
    assert!(used <= STEPS_PER_CPU);
    assert!(!fits || !ran_out, "an undecided set must not fit");
    let candidate = task("one more", 1_009, 1, 1);
    let (_, spent) = suggestions_and_steps(
        &tasks,
        &candidate,
        Policy::FixedPriority,
        &Overheads::none(),
        &[0],
    );
    assert!(spent <= STEPS_FOR_SUGGESTIONS);
    let _ = admit(
        &tasks,
        &candidate,
        Policy::FixedPriority,
        &Overheads::none(),
        &[0],
    );
}

#[test]
fn odd_numbers_never_panic_and_never_pass() {
    let odd = [
        Task {
            period_ns: 0,
            ..task("no period", 0, MS, 5)
        },
        constrained("no deadline", 10 * MS, 0, MS, 4),
        task("endless", u64::MAX, u64::MAX, 3),
        constrained("past its period", 10 * MS, u64::MAX, MS, 2),
        unknown("open", u64::MAX, 1),
        // Free and as frequent as can be: under a jitter of 2^40 periods.
        task("free", 1, 0, 6),
    ];
    for policy in [Policy::FixedPriority, Policy::Edf] {
        for overheads in [Overheads::none(), jitter(u64::MAX)] {
            let analysis = analyse(&odd, policy, &overheads);
            assert!(!analysis.schedulable);
            for task in &only_cpu(&analysis).tasks {
                let fine = task.name == "past its period"
                    || (task.name == "free" && overheads.release_jitter_ns == 0);
                if !fine {
                    assert_ne!(task.meets, Some(true), "{task:?}");
                }
                assert!(task.deadline_ns <= 1 << 40, "{task:?}");
            }
            for candidate in &odd {
                let others: Vec<Task> = odd
                    .iter()
                    .filter(|other| other.name != candidate.name)
                    .cloned()
                    .collect();
                let _ = admit(&others, candidate, policy, &overheads, &[0, 1, usize::MAX]);
            }
        }
    }
    // Alone and within its period, a deadline past the period is
    // analysed as the period: the verdict still holds for the longer one.
    let alone = analyse(&[odd[3].clone()], Policy::FixedPriority, &Overheads::none());
    assert!(alone.schedulable);
    assert_eq!(only_cpu(&alone).tasks[0].deadline_ns, 10 * MS);
}

#[test]
fn analyses_and_refusals_serialize_with_not_applicable_values_as_null() {
    let analysis = analyse(
        &[task("a", 10 * MS, MS, 1)],
        Policy::Edf,
        &Overheads::none(),
    );
    let json = serde_json::to_value(&analysis).unwrap();
    let tests = &json["cpus"][0]["tests"];
    assert_eq!(tests[1]["test"], "liu_layland");
    assert_eq!(tests[1]["verdict"]["verdict"], "not_applicable");
    assert!(tests[1]["value"].is_null() && tests[1]["bound"].is_null());
    assert_eq!(tests[4]["verdict"]["verdict"], "pass");
    assert_eq!(json["policy"], "edf");
    let refusal = admit(
        &[task("a", 10 * MS, 9 * MS, 2)],
        &task("b", 10 * MS, 5 * MS, 1),
        Policy::Edf,
        &Overheads::none(),
        &[0],
    )
    .unwrap_err();
    let json = serde_json::to_value(&refusal).unwrap();
    assert_eq!(json["test"], "utilization");
    assert_eq!(json["suggestions"][0]["change"], "period");
}
