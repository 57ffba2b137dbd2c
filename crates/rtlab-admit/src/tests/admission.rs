//! `admit`: the deciding test, the victim, the shortfall, suggestions
//! that fit when taken, and the rules for unknown WCETs.

use super::*;
use crate::model::{Policy, Suggestion};
use crate::{admit, analyse, Refusal};

const FP: Policy = Policy::FixedPriority;

/// Burns & Wellings' task set A (see fixed_priority.rs) on CPU 1: "c"
/// and "b" admitted, "a" responds in 52 ms against 50.
fn set_a() -> (Vec<Task>, Task) {
    let admitted = vec![
        on_cpu(1, task("c", 30 * MS, 10 * MS, 3)),
        on_cpu(1, task("b", 40 * MS, 10 * MS, 2)),
    ];
    (admitted, on_cpu(1, task("a", 50 * MS, 12 * MS, 1)))
}

fn refused(admitted: &[Task], candidate: &Task, policy: Policy, cpus: &[usize]) -> Refusal {
    match admit(admitted, candidate, policy, &Overheads::none(), cpus) {
        Err(refusal) => refusal,
        Ok(analysis) => panic!("admitted: {analysis:#?}"),
    }
}

#[test]
fn a_late_candidate_is_refused_with_how_late_and_what_would_fit() {
    // Its response does not depend on its own period: any period ≥ 52 ms
    // (deadline with it) fits. Budget: C = 10 gives w = 10 → 30 → 30;
    // any C > 10 gives w > 30, ⌈w/30⌉ = 2 → w > 40, ⌈w/40⌉ = 2 → w =
    // C + 40 > 50: at most 10 ms. CPU 0 is empty.
    let (admitted, candidate) = set_a();
    let refusal = refused(&admitted, &candidate, FP, &[0, 1]);
    assert_eq!(refusal.test, Test::ResponseTime);
    assert_eq!((refusal.cpu, refusal.victim.as_str()), (1, "a"));
    assert_eq!(refusal.shortfall, "response 52ms > deadline 50ms: 2ms late");
    assert_eq!(
        refusal.suggestions,
        [
            Suggestion::Period { min_ns: 52 * MS },
            Suggestion::Budget { max_ns: 10 * MS },
            Suggestion::Cpu { cpu: 0 }
        ]
    );
    assert_eq!(
        refusal.message,
        "refused by response-time analysis on CPU 1: task \"a\" would respond in 52ms, 2ms after its 50ms \
         deadline; would fit with a period of at least 52ms, or a budget of at most 10ms, or on CPU 0"
    );
    for suggestion in &refusal.suggestions {
        let taken = apply(&candidate, suggestion);
        let analysis = admit(&admitted, &taken, FP, &Overheads::none(), &[0, 1])
            .unwrap_or_else(|refusal| panic!("{suggestion:?} refused: {}", refusal.message));
        assert!(analysis.schedulable, "{suggestion:?}");
        assert_eq!(task_count(&analysis), 3);
    }
}

#[test]
fn a_candidate_that_makes_an_admitted_task_late_names_that_task() {
    let (mut admitted, candidate) = set_a();
    let top = admitted.remove(0);
    admitted.push(candidate);
    let refusal = refused(&admitted, &top, FP, &[1]);
    assert_eq!(refusal.test, Test::ResponseTime);
    assert_eq!(refusal.victim, "a");
    assert!(
        refusal.message.starts_with(
            "refused by response-time analysis on CPU 1: with task \"c\", task \"a\" would respond in 52ms, 2ms after \
             its 50ms deadline; would fit with a period of at least "
        ),
        "{}",
        refusal.message
    );
    assert!(!refusal
        .suggestions
        .iter()
        .any(|suggestion| matches!(suggestion, Suggestion::Cpu { .. })));
    for suggestion in &refusal.suggestions {
        admit(
            &admitted,
            &apply(&top, suggestion),
            FP,
            &Overheads::none(),
            &[1],
        )
        .expect("suggestion fits");
    }
}

#[test]
fn overload_is_refused_by_the_utilization_test() {
    // 0.6 + 0.5 = 1.1 > 1.
    let admitted = [task("a", 10 * MS, 6 * MS, 2)];
    let candidate = task("b", 20 * MS, 10 * MS, 1);
    for policy in [Policy::FixedPriority, Policy::Edf] {
        let refusal = refused(&admitted, &candidate, policy, &[0]);
        assert_eq!(refusal.test, Test::Utilization);
        assert_eq!(refusal.shortfall, "U = 1.100 > 1");
        assert_eq!(refusal.victim, "b");
        assert!(refusal.message.starts_with(
            "refused by the utilization test on CPU 0: with task \"b\", U = 1.100 > 1"
        ));
        // Budget: EDF C ≤ 8 ms (U = 1); RM w = 8 + ⌈w/10⌉6: 8 → 14 → 20
        // → 20 ≤ 20, while 8 ms + 1 ns goes 20 + 1 ns → 26 + 1 ns. Period:
        // EDF T ≥ 25 ms (U = 1); RM w = 10 + ⌈w/10⌉6: 10 → 16 → 22 → 28
        // → 28, so T = D ≥ 28 ms.
        let period = if policy == Policy::Edf {
            25 * MS
        } else {
            28 * MS
        };
        assert_eq!(
            refusal.suggestions,
            [
                Suggestion::Period { min_ns: period },
                Suggestion::Budget { max_ns: 8 * MS }
            ]
        );
    }
}

#[test]
fn a_candidate_that_fits_nowhere_gets_no_cpu() {
    let admitted = [
        on_cpu(0, task("zero", 10 * MS, 9 * MS, 2)),
        on_cpu(1, task("one", 10 * MS, 9 * MS, 2)),
    ];
    let candidate = on_cpu(0, task("new", 10 * MS, 5 * MS, 1));
    let refusal = refused(&admitted, &candidate, FP, &[0, 1, 1]);
    assert!(!refusal
        .suggestions
        .iter()
        .any(|suggestion| matches!(suggestion, Suggestion::Cpu { .. })));
    // 1 ms fits beside 9 in 10 (w = 1 + 9 = 10 ≤ 10).
    assert!(refusal
        .suggestions
        .contains(&Suggestion::Budget { max_ns: MS }));
    assert!(
        refusal.message.contains("or a budget of at most 1ms"),
        "{}",
        refusal.message
    );
}

#[test]
fn an_unknown_wcet_is_admitted_below_every_known_one_and_refused_above_one() {
    let admitted = [
        task("high", 10 * MS, 2 * MS, 30),
        task("low", 20 * MS, 2 * MS, 10),
    ];
    // Below both: nobody's guarantee depends on it.
    let below = unknown("open", 40 * MS, 5);
    let analysis =
        admit(&admitted, &below, FP, &Overheads::none(), &[0]).expect("below every known WCET");
    let cpu = only_cpu(&analysis);
    assert!(analysis.schedulable);
    assert_eq!(cpu.tasks[2].name, "open");
    assert_eq!((cpu.tasks[2].response_ns, cpu.tasks[2].meets), (None, None));
    // Between them: "low" loses its bound.
    let between = unknown("open", 40 * MS, 20);
    let refusal = refused(&admitted, &between, FP, &[0]);
    assert_eq!(
        (refusal.test, refusal.victim.as_str()),
        (Test::ResponseTime, "low")
    );
    assert_eq!(
        refusal.shortfall,
        "the WCET of \"open\" is unknown: response unbounded"
    );
    assert!(
        refusal.message.starts_with(
            "refused by response-time analysis on CPU 0: task \"open\" gives no budget (WCET unknown): task \"low\" \
             (at or below its priority) could no longer be guaranteed; would fit with a budget of at most "
        ),
        "{}",
        refusal.message
    );
    let [Suggestion::Budget { max_ns }] = refusal.suggestions[..] else {
        panic!("{:?}", refusal.suggestions);
    };
    // Budget b between: w(low) = 2 + ⌈w/10⌉2 + ⌈w/40⌉b ≤ 20: b = 14
    // gives 2 + 4 + 14 = 20. At b > 14, w > 20.
    assert_eq!(max_ns, 14 * MS);
    admit(
        &admitted,
        &Task {
            wcet_ns: Some(max_ns),
            ..between
        },
        FP,
        &Overheads::none(),
        &[0],
    )
    .expect("fits");
}

#[test]
fn a_known_wcet_is_refused_below_an_unknown_one() {
    let admitted = [
        unknown("open", 10 * MS, 20),
        on_cpu(1, task("elsewhere", 10 * MS, MS, 1)),
    ];
    let candidate = task("new", 20 * MS, MS, 10);
    let refusal = refused(&admitted, &candidate, FP, &[0, 1]);
    assert_eq!(
        (refusal.test, refusal.victim.as_str()),
        (Test::ResponseTime, "new")
    );
    assert_eq!(refusal.suggestions, [Suggestion::Cpu { cpu: 1 }]);
    assert_eq!(
        refusal.message,
        "refused by response-time analysis on CPU 0: task \"open\" (WCET unknown) shares the CPU at or above its \
         priority: task \"new\" could not be guaranteed; would fit on CPU 1"
    );
    // Alone on its CPU, nothing else would help.
    let refusal = refused(&admitted, &candidate, FP, &[0]);
    assert!(refusal.suggestions.is_empty());
    assert!(refusal
        .message
        .ends_with("; no longer period, smaller budget or other CPU would fit"));
    // Above the unknown one it is fine.
    admit(
        &admitted,
        &task("new", 20 * MS, MS, 30),
        FP,
        &Overheads::none(),
        &[0],
    )
    .expect("above the unknown");
}

#[test]
fn under_edf_an_unknown_wcet_voids_every_known_one_on_its_cpu() {
    let admitted = [task("known", 10 * MS, MS, 0)];
    let refusal = refused(&admitted, &unknown("open", 10 * MS, 0), Policy::Edf, &[0]);
    assert_eq!(
        (refusal.test, refusal.victim.as_str()),
        (Test::ProcessorDemand, "known")
    );
    assert!(
        refusal
            .message
            .contains("any job may delay any other under EDF"),
        "{}",
        refusal.message
    );
    let analysis = analyse(
        &[task("known", 10 * MS, MS, 0), unknown("open", 10 * MS, 0)],
        Policy::Edf,
        &Overheads::none(),
    );
    let cpu = only_cpu(&analysis);
    assert!(!analysis.schedulable);
    assert!(cpu.tasks.iter().all(|task| task.meets.is_none()));
    assert!(matches!(
        verdict(cpu, Test::ProcessorDemand),
        crate::Verdict::NotApplicable(_)
    ));
}

#[test]
fn unknown_wcets_void_the_tasks_at_or_below_them_in_an_analysis() {
    let tasks = [
        task("above", 10 * MS, MS, 30),
        unknown("open", 10 * MS, 20),
        task("level", 20 * MS, MS, 20),
        task("below", 40 * MS, MS, 10),
    ];
    let analysis = analyse(&tasks, FP, &Overheads::none());
    let cpu = only_cpu(&analysis);
    let meets: Vec<_> = cpu
        .tasks
        .iter()
        .map(|task| (task.name.as_str(), task.meets))
        .collect();
    assert_eq!(
        meets,
        [
            ("above", Some(true)),
            ("open", None),
            ("level", None),
            ("below", None)
        ]
    );
    assert!(!analysis.schedulable);
    assert!(matches!(
        verdict(cpu, Test::ResponseTime),
        crate::Verdict::NotApplicable(_)
    ));
    assert_eq!(
        outcome(cpu, Test::Utilization).detail,
        "U = 0.175 ≤ 1 (known WCETs only; unknown: \"open\")"
    );
}

#[test]
fn edf_refusal_names_the_failing_interval() {
    // qpa_finds_the_interval_whose_demand_exceeds_it's set, the third
    // task the candidate: h(7) = 8 > 7.
    let admitted = [
        constrained("t1", 6 * MS, 4 * MS, 2 * MS, 0),
        constrained("t2", 8 * MS, 5 * MS, 2 * MS, 0),
    ];
    let candidate = constrained("t3", 12 * MS, 7 * MS, 4 * MS, 0);
    let refusal = refused(&admitted, &candidate, Policy::Edf, &[0]);
    assert_eq!(refusal.test, Test::ProcessorDemand);
    assert_eq!(refusal.shortfall, "h(7ms) = 8ms > 7ms: 1ms over");
    assert!(
        refusal.message.starts_with(
            "refused by processor-demand analysis (QPA) on CPU 0: with task \"t3\", the jobs due within 7ms would \
             need 8ms (1ms over): "
        ),
        "{}",
        refusal.message
    );
    assert!(!refusal.suggestions.is_empty());
    for suggestion in &refusal.suggestions {
        admit(
            &admitted,
            &apply(&candidate, suggestion),
            Policy::Edf,
            &Overheads::none(),
            &[0],
        )
        .unwrap_or_else(|refusal| panic!("{suggestion:?}: {}", refusal.message));
    }
    // Budget: C = 3 is the set qpa_accepts_a_set_with_deadlines_before_periods.
    assert!(refusal
        .suggestions
        .contains(&Suggestion::Budget { max_ns: 3 * MS }));
}
