//! Properties over many pseudo-random task sets: a refusal's every
//! suggestion, taken, is admitted; an admission holds what it promises;
//! odd numbers anywhere never panic.

use super::*;
use crate::model::Policy;
use crate::{admit, analyse};

/// A small deterministic generator (the sets are the same every run).
struct Numbers(u64);

impl Numbers {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound.max(1)
    }

    fn one_of<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.below(choices.len() as u64) as usize]
    }
}

fn random_task(numbers: &mut Numbers, name: String) -> Task {
    let period = numbers.one_of(&[
        100 * US,
        250 * US,
        MS,
        2 * MS,
        5 * MS,
        10 * MS,
        20 * MS,
        50 * MS,
    ]);
    let period = period + numbers.below(period / 10);
    let deadline = if numbers.below(2) == 0 {
        period
    } else {
        period / 2 + numbers.below(period / 2)
    };
    let wcet =
        (numbers.below(2) != 0 || numbers.below(8) != 0).then(|| 1 + numbers.below(period / 3));
    Task {
        name,
        cpu: numbers.below(2) as usize,
        period_ns: period,
        deadline_ns: deadline,
        wcet_ns: wcet,
        priority: 1 + numbers.below(5) as u32,
    }
}

#[test]
fn every_suggestion_taken_is_admitted_and_every_admission_holds() {
    let mut numbers = Numbers(19);
    let (mut refusals, mut suggestions, mut admissions) = (0, 0, 0);
    for round in 0..150 {
        let policy = numbers.one_of(&[Policy::FixedPriority, Policy::Edf]);
        let overheads = Overheads {
            release_jitter_ns: numbers.one_of(&[0, 5 * US, 20 * US]),
            release_cost_ns: numbers.one_of(&[0, 2 * US]),
            source: "test".into(),
        };
        let mut admitted: Vec<Task> = Vec::new();
        for index in 0..6 {
            let candidate = random_task(&mut numbers, format!("r{round}.{index}"));
            match admit(&admitted, &candidate, policy, &overheads, &[0, 1]) {
                Ok(analysis) => {
                    admissions += 1;
                    let cpu = analysis
                        .cpus
                        .iter()
                        .find(|cpu| cpu.cpu == candidate.cpu)
                        .unwrap();
                    for task in cpu.tasks.iter().filter(|task| task.wcet_ns.is_some()) {
                        assert_eq!(task.meets, Some(true), "{task:?} in {analysis:#?}");
                        assert!(task.response_ns.unwrap() <= task.deadline_ns, "{task:?}");
                    }
                    admitted.push(candidate);
                }
                Err(refusal) => {
                    refusals += 1;
                    assert!(
                        refusal.message.starts_with("refused by "),
                        "{}",
                        refusal.message
                    );
                    assert_eq!(refusal.cpu, candidate.cpu);
                    for suggestion in &refusal.suggestions {
                        suggestions += 1;
                        let taken = apply(&candidate, suggestion);
                        if let Err(again) = admit(&admitted, &taken, policy, &overheads, &[0, 1]) {
                            panic!(
                                "{suggestion:?} of \"{}\" refused: {}",
                                refusal.message, again.message
                            );
                        }
                    }
                }
            }
        }
        // What was admitted one by one is schedulable as a whole.
        assert!(
            analyse(&admitted, policy, &overheads).schedulable
                || admitted.iter().any(|t| t.wcet_ns.is_none())
        );
    }
    println!("{admissions} admitted, {refusals} refused, {suggestions} suggestions verified");
    assert!(refusals > 50 && admissions > 50 && suggestions > 50);
}

#[test]
fn odd_numbers_anywhere_never_panic() {
    let odd = [
        0,
        1,
        2,
        999,
        100_001,
        MS,
        1 << 40,
        (1 << 40) + 1,
        u64::MAX / 2,
        u64::MAX,
    ];
    let mut numbers = Numbers(7);
    for round in 0..200 {
        let tasks: Vec<Task> = (0..1 + numbers.below(4))
            .map(|index| Task {
                name: format!("o{round}.{index}"),
                cpu: numbers.one_of(&[0, 0, 1, usize::MAX]),
                period_ns: numbers.one_of(&odd),
                deadline_ns: numbers.one_of(&odd),
                wcet_ns: (numbers.below(4) != 0).then(|| numbers.one_of(&odd)),
                priority: numbers.one_of(&[0, 1, u32::MAX]),
            })
            .collect();
        let overheads = Overheads {
            release_jitter_ns: numbers.one_of(&odd),
            release_cost_ns: numbers.one_of(&odd),
            source: "odd".into(),
        };
        for policy in [Policy::FixedPriority, Policy::Edf] {
            let analysis = analyse(&tasks, policy, &overheads);
            assert_eq!(task_count(&analysis), tasks.len());
            let (candidate, admitted) = tasks.split_last().unwrap();
            let _ = admit(admitted, candidate, policy, &overheads, &[0, 1, usize::MAX]);
        }
    }
}
