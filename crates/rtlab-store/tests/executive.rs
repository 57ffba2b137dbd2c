//! A run with the executive's learned guards (`RunResult::executive`) is
//! stored and read back whole; a run without it reads back without it.

mod common;

use common::*;
use rtlab_core::result::{ExecutiveReport, ExecutiveThread, GuardBucket};
use rtlab_store::Store;

fn guards() -> ExecutiveReport {
    ExecutiveReport {
        threads: vec![ExecutiveThread {
            role: "dispatcher".into(),
            cpu: None,
            guard_mode: "auto".into(),
            release_early_mode: "none".into(),
            quantile: 0.995,
            spin_budget_percent: 25,
            guards: vec![GuardBucket {
                idle_from_ns: 10_000_000,
                idle_below_ns: None,
                observations: 1000,
                quantile_ns: Some(176_000),
                max_ns: 2_400_000,
                guard_ns: 225_000,
                capped: 3,
            }],
            release_early: None,
            capped: 3,
            spin_ns: 98_765_432,
            elapsed_ns: 10_000_000_000,
            spin_percent: 0.987,
        }],
    }
}

#[test]
fn the_executive_s_guards_are_stored_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    let mut with = run("20261127T030000Z-1-1", "2026-11-27T03:00:00.000001Z", "rig");
    with.probe = "plan".into();
    with.executive = Some(guards());
    store.save(&with).unwrap();
    let back = store.get(&with.id).unwrap();
    assert_same(&back, &with);
    assert_eq!(back.executive, Some(guards()));
    let without = run("20261127T030001Z-1-2", "2026-11-27T03:00:01.000001Z", "rig");
    store.save(&without).unwrap();
    let back = store.get(&without.id).unwrap();
    assert!(back.executive.is_none());
    assert!(to_json(&back).get("executive").is_none());
}
