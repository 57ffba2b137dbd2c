//! Utilization, Liu & Layland and the hyperbolic bound.

use super::*;
use crate::bounds::liu_layland_bound;
use crate::model::Policy;
use crate::{analyse, Verdict};

#[test]
fn liu_layland_bound_values() {
    // Liu & Layland, JACM 20(1), 1973, Theorem 5: n(2^(1/n) − 1).
    // n = 1: 1; n = 2: 2(√2 − 1) = 0.828427; n = 3: 3(1.259921 − 1) =
    // 0.779763; n → ∞: ln 2 = 0.693147.
    assert_eq!(liu_layland_bound(1), 1.0);
    assert!((liu_layland_bound(2) - 0.828_427).abs() < 1e-6);
    assert!((liu_layland_bound(3) - 0.779_763).abs() < 1e-6);
    assert!((liu_layland_bound(1_000_000) - std::f64::consts::LN_2).abs() < 1e-6);
    assert!(
        liu_layland_bound(80) > std::f64::consts::LN_2
            && liu_layland_bound(80) < liu_layland_bound(3)
    );
}

#[test]
fn a_set_liu_layland_rejects_and_the_hyperbolic_bound_accepts_is_schedulable() {
    // Constructed for the gap Bini, Buttazzo & Buttazzo (IEEE TC 52(7),
    // 2003) close: U1 = 5/10 = 0.5, U2 = 9.9/30 = 0.33. U = 0.83 >
    // 0.828427 (LL fails), Π(U + 1) = 1.5 × 1.33 = 1.995 ≤ 2 (passes).
    // RTA: R1 = 5; w2 = 9.9 + ⌈w/10⌉5: 9.9 → 14.9 → 19.9 → 19.9 ≤ 30.
    let tasks = [
        task("fast", 10 * MS, 5 * MS, 2),
        task("slow", 30 * MS, 9_900 * US, 1),
    ];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Pass);
    assert_eq!(*verdict(cpu, Test::LiuLayland), Verdict::Fail);
    assert_eq!(*verdict(cpu, Test::Hyperbolic), Verdict::Pass);
    assert!((outcome(cpu, Test::Hyperbolic).value - 1.995).abs() < 1e-9);
    assert_eq!(*verdict(cpu, Test::ResponseTime), Verdict::Pass);
    assert_eq!(
        responses(cpu),
        [("fast", Some(5 * MS)), ("slow", Some(19_900 * US))]
    );
    assert!(analysis.schedulable);
    assert_eq!(
        outcome(cpu, Test::LiuLayland).detail,
        "U = 0.830 > 0.828 (n = 2): decides nothing"
    );
}

#[test]
fn harmonic_periods_at_full_utilization_fail_both_bounds_yet_meet_every_deadline() {
    // Harmonic periods are schedulable by RM up to U = 1 (Kuo & Mok,
    // RTSS 1991). (T, C) = (2, 1), (4, 1), (8, 2): U = 0.5 + 0.25 + 0.25
    // = 1 > 0.779763; Π = 1.5 × 1.25 × 1.25 = 2.34375 > 2. RTA: R1 = 1;
    // w2 = 1 + ⌈w/2⌉: 1 → 2 → 2; w3 = 2 + ⌈w/2⌉ + ⌈w/4⌉: 2 → 4 → 5 → 7
    // → 8 → 8 ≤ 8.
    let tasks = [
        task("a", 2 * MS, MS, 3),
        task("b", 4 * MS, MS, 2),
        task("c", 8 * MS, 2 * MS, 1),
    ];
    let analysis = analyse(&tasks, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Pass);
    assert_eq!(*verdict(cpu, Test::LiuLayland), Verdict::Fail);
    assert_eq!(*verdict(cpu, Test::Hyperbolic), Verdict::Fail);
    assert!((outcome(cpu, Test::Hyperbolic).value - 2.343_75).abs() < 1e-12);
    assert_eq!(*verdict(cpu, Test::ResponseTime), Verdict::Pass);
    assert_eq!(
        responses(cpu),
        [("a", Some(MS)), ("b", Some(2 * MS)), ("c", Some(8 * MS))]
    );
    assert!(analysis.schedulable);
}

#[test]
fn the_bounds_apply_only_to_rate_monotonic_priorities_deadlines_at_periods_and_no_jitter() {
    let why = |tasks: &[Task], overheads: &Overheads, policy| {
        let analysis = analyse(tasks, policy, overheads);
        let cpu = only_cpu(&analysis);
        assert_eq!(
            verdict(cpu, Test::LiuLayland),
            verdict(cpu, Test::Hyperbolic)
        );
        assert!(outcome(cpu, Test::LiuLayland).value.is_nan());
        match verdict(cpu, Test::LiuLayland) {
            Verdict::NotApplicable(why) => why.clone(),
            other => panic!("{other:?}"),
        }
    };
    let none = Overheads::none();
    let inverted = [task("fast", 10 * MS, MS, 1), task("slow", 20 * MS, MS, 2)];
    assert!(why(&inverted, &none, Policy::FixedPriority).contains("not rate-monotonic"));
    // Equal priorities run in release order under SCHED_FIFO: not RM.
    let equal = [task("fast", 10 * MS, MS, 1), task("slow", 20 * MS, MS, 1)];
    assert!(why(&equal, &none, Policy::FixedPriority).contains("not rate-monotonic"));
    let early = [constrained("early", 10 * MS, 5 * MS, MS, 1)];
    assert!(why(&early, &none, Policy::FixedPriority)
        .contains("deadline (5ms) other than its period (10ms)"));
    let rm = [task("fast", 10 * MS, MS, 2), task("slow", 20 * MS, MS, 1)];
    assert!(why(&rm, &jitter(50 * US), Policy::FixedPriority).contains("50us late"));
    assert!(why(&rm, &none, Policy::Edf).contains("EDF"));
    let with_unknown = [task("fast", 10 * MS, MS, 2), unknown("open", 20 * MS, 1)];
    assert!(
        why(&with_unknown, &none, Policy::FixedPriority).contains("WCET of \"open\" is unknown")
    );
}

#[test]
fn utilization_above_one_fails_exactly() {
    // 1/3 + 1/3 + 1/3 = 1 exactly (rational arithmetic, no rounding):
    // passes; one nanosecond more fails.
    let thirds = [
        task("a", 3, 1, 3),
        task("b", 3 * MS, MS, 2),
        task("c", 3 * US, US, 1),
    ];
    assert!(!crate::bounds::exceeds_one(&crate::item::items(
        &thirds,
        &Overheads::none()
    )));
    let mut over = thirds.clone();
    over[1].wcet_ns = Some(MS + 1);
    let analysis = analyse(&over, Policy::FixedPriority, &Overheads::none());
    let cpu = only_cpu(&analysis);
    assert_eq!(*verdict(cpu, Test::Utilization), Verdict::Fail);
    assert!(!analysis.schedulable);
}
