//! The store's behaviour on real SQLite files in temporary directories:
//! round trips, replacing, listing, lookups, campaigns, interrupted
//! campaigns, deleting and several handles on one file.

// Rows read back with rusqlite are compared as tuples of their columns.
#![allow(clippy::type_complexity)]

mod common;

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;
use rtlab_core::result::RunStatus;
use rtlab_store::{RunFilter, Store, StoreError, SCHEMA_VERSION};

fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("results.db")).unwrap();
    (dir, store)
}

fn count(path: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

fn ids(store: &Store, filter: &RunFilter) -> Vec<String> {
    store
        .list(filter)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect()
}

#[test]
fn open_creates_parent_directories_wal_and_latest_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/er/results.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.path(), path);
    assert!(path.is_file());
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 4);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Opening again changes nothing.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn saved_run_reads_back_exactly() {
    let (_dir, mut store) = temp_store();
    let saved = realistic_result();
    // The parts that are easy to lose are there.
    let document = to_json(&saved);
    assert!(document.get("break_event").is_some());
    assert!(document.pointer("/loads/0/work/bytes_touched").is_some());
    assert!(document.pointer("/campaign/execution").is_some());
    assert!(document.pointer("/series/0/top/2").is_some());
    assert!(document.pointer("/series/0/overflows").is_some());
    assert!(document.pointer("/series/1/max_at").unwrap().is_null());

    store.save(&saved).unwrap();
    assert_same(&store.get(&saved.id).unwrap(), &saved);
    assert_same(&store.get("last").unwrap(), &saved);
}

#[test]
fn saved_run_is_indexed_in_columns_series_and_spikes() {
    let (_dir, mut store) = temp_store();
    let saved = realistic_result();
    store.save(&saved).unwrap();
    let conn = rusqlite::Connection::open(store.path()).unwrap();

    let run: (
        String,
        String,
        Option<String>,
        String,
        String,
        i64,
        i64,
        i64,
        String,
        String,
    ) = conn
        .query_row(
            "SELECT status, probe, host, campaign, execution, plan_index, plan_total, repeat,
                    configuration, load FROM runs WHERE id = ?1",
            [&saved.id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        run,
        (
            "break".into(),
            "timer".into(),
            Some("rig1".into()),
            "quick".into(),
            "20261121T193000Z-12345".into(),
            3,
            4,
            1,
            "stock".into(),
            "vm".into()
        )
    );
    let loads: String = conn
        .query_row(
            "SELECT json_extract(loads, '$[0].spec') FROM runs",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(loads, "vm:workers=4,bytes=256M");
    let hostname: String = conn
        .query_row(
            "SELECT json_extract(environment, '$.hostname') FROM runs",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hostname, "rig1");

    let series: Vec<(
        i64,
        String,
        Option<i64>,
        i64,
        i64,
        i64,
        Option<i64>,
        Option<i64>,
        String,
    )> = conn
        .prepare(
            "SELECT position, name, cpu, samples, missed, p99_9_ns, max_at_ns, max_sample,
                    histogram_us FROM series ORDER BY position",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        series,
        vec![
            (
                0,
                "cpu0".into(),
                Some(0),
                41_878,
                1,
                14_015,
                Some(41_878_012_345),
                Some(41_877),
                "[[1,12],[2,38001],[3,3864],[1203,1]]".into()
            ),
            (1, "cpu1".into(), Some(1), 0, 3, 0, None, None, "[]".into()),
        ]
    );
    let mean: f64 = conn
        .query_row("SELECT mean_ns FROM series WHERE position = 0", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(mean, saved.series[0].stats.mean_ns);

    let spikes: Vec<(String, i64, i64, i64, i64)> = conn
        .prepare("SELECT series, rank, sample, at_ns, latency_ns FROM spikes ORDER BY rank")
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        spikes,
        vec![
            ("cpu0".into(), 0, 41_877, 41_878_012_345, 1_203_456),
            ("cpu0".into(), 1, 9_001, 9_002_000_777, 87_654),
            ("cpu0".into(), 2, 3, 4_001_234, 12_001),
        ]
    );
}

#[test]
fn updating_a_running_run_replaces_it() {
    let (_dir, mut store) = temp_store();
    // Saved while running, with more series than it ends with...
    let mut running = realistic_result();
    running.status = RunStatus::Running;
    running.ended_at = None;
    running.break_event = None;
    running.series.push(busy_series("cpu2", 2, 2));
    store.save(&running).unwrap();
    assert_same(&store.get(&running.id).unwrap(), &running);
    assert_eq!(count(store.path(), "SELECT count(*) FROM series"), 3);
    assert_eq!(count(store.path(), "SELECT count(*) FROM spikes"), 6);

    // ...and again when it ends.
    let ended = realistic_result();
    assert!(matches!(
        store.save(&ended).unwrap_err(),
        StoreError::Duplicate { .. }
    ));
    store.update(&ended).unwrap();
    assert_same(&store.get(&ended.id).unwrap(), &ended);
    assert_eq!(count(store.path(), "SELECT count(*) FROM runs"), 1);
    assert_eq!(count(store.path(), "SELECT count(*) FROM series"), 2);
    assert_eq!(count(store.path(), "SELECT count(*) FROM spikes"), 3);
    let listed = store.list(&RunFilter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, "break");
    assert_eq!(listed[0].series, 2);
}

#[test]
fn a_run_without_id_is_refused() {
    let (_dir, mut store) = temp_store();
    let mut result = realistic_result();
    result.id.clear();
    let error = store.save(&result).unwrap_err();
    assert!(matches!(error, StoreError::InvalidRun { .. }), "{error}");
    assert!(error.to_string().contains("id is empty"), "{error}");
}

/// Five runs: two hosts, two probes, statuses, one campaign execution.
fn listed_store() -> (tempfile::TempDir, Store) {
    let (dir, mut store) = temp_store();
    let mut a = run("20261101T100000Z-1", "2026-11-01T10:00:00.000001Z", "rig1");
    a.series = vec![busy_series("cpu0", 0, 1)];
    let mut b = run("20261102T100000Z-2", "2026-11-02T10:00:00.000001Z", "rig2");
    b.status = RunStatus::Partial;
    b.series = vec![busy_series("cpu0", 0, 1), busy_series("cpu1", 1, 3)];
    let mut c = run("20261103T100000Z-3", "2026-11-03T10:00:00.000001Z", "rig1");
    c.probe = "switch".into();
    c.status = RunStatus::Failed;
    c.series.clear();
    let d = campaign_run(
        "20261104T100000Z-4",
        "2026-11-04T10:00:00.000001Z",
        "20261104T095959Z-4",
        1,
    );
    let e = campaign_run(
        "20261104T100100Z-4-2",
        "2026-11-04T10:01:00.000001Z",
        "20261104T095959Z-4",
        2,
    );
    // Saved out of time order: the list orders by start.
    for result in [&c, &a, &e, &b, &d] {
        store.save(result).unwrap();
    }
    (dir, store)
}

#[test]
fn list_is_newest_first_with_totals() {
    let (_dir, store) = listed_store();
    let all = store.list(&RunFilter::default()).unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20261104T100100Z-4-2",
            "20261104T100000Z-4",
            "20261103T100000Z-3",
            "20261102T100000Z-2",
            "20261101T100000Z-1"
        ]
    );
    let b = &all[3];
    assert_eq!(b.status, "partial");
    assert_eq!(b.host.as_deref(), Some("rig2"));
    assert_eq!(b.started_at, "2026-11-02T10:00:00.000001Z");
    assert_eq!(b.probe, "timer");
    assert_eq!(b.series, 2);
    assert_eq!(b.samples, 2 * 41_878);
    assert_eq!(b.missed, 2);
    assert_eq!(b.worst_p99_9_ns, 3 * 14_015);
    assert_eq!(b.worst_max_ns, 3 * 1_203_456);
    assert_eq!(b.campaign, None);
    // A run without series lists zeros.
    let c = &all[2];
    assert_eq!(
        (
            c.series,
            c.samples,
            c.missed,
            c.worst_p99_9_ns,
            c.worst_max_ns
        ),
        (0, 0, 0, 0, 0)
    );
    // Campaign runs carry their place; empty series count as series.
    let e = &all[0];
    assert_eq!(e.campaign.as_deref(), Some("quick"));
    assert_eq!(e.execution.as_deref(), Some("20261104T095959Z-4"));
    assert_eq!(e.configuration.as_deref(), Some("promoted"));
    assert_eq!(e.load.as_deref(), Some("vm"));
    assert_eq!((e.series, e.missed), (2, 4));
    // The summary is what `rtlab runs --json` prints.
    let json = serde_json::to_value(e).unwrap();
    assert_eq!(json["worst_max_ns"], 1_203_456);
}

#[test]
fn list_filters() {
    let (_dir, store) = listed_store();
    let by = |filter: RunFilter| ids(&store, &filter);
    assert_eq!(
        by(RunFilter {
            host: Some("rig2".into()),
            ..Default::default()
        }),
        ["20261102T100000Z-2"]
    );
    assert_eq!(
        by(RunFilter {
            probe: Some("switch".into()),
            ..Default::default()
        }),
        ["20261103T100000Z-3"]
    );
    assert_eq!(
        by(RunFilter {
            status: Some("complete".into()),
            ..Default::default()
        }),
        [
            "20261104T100100Z-4-2",
            "20261104T100000Z-4",
            "20261101T100000Z-1"
        ]
    );
    assert_eq!(
        by(RunFilter {
            campaign: Some("quick".into()),
            ..Default::default()
        }),
        ["20261104T100100Z-4-2", "20261104T100000Z-4"]
    );
    assert_eq!(
        by(RunFilter {
            execution: Some("20261104T095959Z-4".into()),
            limit: Some(1),
            ..Default::default()
        }),
        ["20261104T100100Z-4-2"]
    );
    assert_eq!(
        by(RunFilter {
            host: Some("rig1".into()),
            status: Some("complete".into()),
            ..Default::default()
        }),
        [
            "20261104T100100Z-4-2",
            "20261104T100000Z-4",
            "20261101T100000Z-1"
        ]
    );
    assert_eq!(
        by(RunFilter {
            limit: Some(2),
            ..Default::default()
        }),
        ["20261104T100100Z-4-2", "20261104T100000Z-4"]
    );
    assert!(by(RunFilter {
        limit: Some(0),
        ..Default::default()
    })
    .is_empty());
    assert!(by(RunFilter {
        campaign: Some("nightly".into()),
        ..Default::default()
    })
    .is_empty());

    let error = store
        .list(&RunFilter {
            status: Some("done".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("expected one of running, complete, partial, break, failed"),
        "{error}"
    );
}

#[test]
fn get_by_exact_id_prefix_or_last() {
    let (_dir, store) = listed_store();
    // An exact id that is also a prefix of another is that run.
    assert_eq!(
        store.get("20261104T100000Z-4").unwrap().id,
        "20261104T100000Z-4"
    );
    assert_eq!(
        store.resolve("20261104T100000Z-4").unwrap(),
        "20261104T100000Z-4"
    );
    // A unique prefix.
    assert_eq!(store.get("20261102").unwrap().id, "20261102T100000Z-2");
    assert_eq!(
        store.get("20261104T1001").unwrap().id,
        "20261104T100100Z-4-2"
    );
    // The newest.
    assert_eq!(store.get("last").unwrap().id, "20261104T100100Z-4-2");

    // Ambiguous: every candidate named.
    let error = store.get("20261104").unwrap_err();
    match &error {
        StoreError::Ambiguous {
            candidates, total, ..
        } => {
            assert_eq!(candidates, &["20261104T100000Z-4", "20261104T100100Z-4-2"]);
            assert_eq!(*total, 2);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("20261104T100000Z-4, 20261104T100100Z-4-2"),
        "{message}"
    );
    assert!(
        message.contains(&store.path().display().to_string()),
        "{message}"
    );
    let error = store.get("2026").unwrap_err();
    assert!(error.to_string().contains("matches 5 runs"), "{error}");

    // Unknown, and prefix matching is not a pattern match.
    for unknown in ["20251", "2026110_", "2026110%", "20261102t"] {
        let error = store.get(unknown).unwrap_err();
        // `%` is not in a run id at all.
        assert!(
            matches!(error, StoreError::NotFound { .. })
                || (unknown.contains('%') && matches!(error, StoreError::Invalid(_))),
            "{unknown}: {error}"
        );
        assert!(error.to_string().contains(unknown), "{error}");
    }
    assert!(store.get("").is_err());
}

#[test]
fn ambiguous_prefix_lists_ten_candidates_and_the_rest_as_a_count() {
    let (_dir, mut store) = temp_store();
    for n in 0..13 {
        let id = format!("20261121T193012Z-1-{}", n + 2);
        store
            .save(&run(&id, "2026-11-21T19:30:12.000001Z", "rig1"))
            .unwrap();
    }
    let error = store.get("20261121T193012Z-1-").unwrap_err();
    let message = error.to_string();
    assert!(message.contains("matches 13 runs"), "{message}");
    assert!(message.contains("and 3 more"), "{message}");
}

#[test]
fn last_of_an_empty_store_says_so() {
    let (_dir, store) = temp_store();
    let error = store.get("last").unwrap_err();
    assert!(matches!(error, StoreError::Empty { .. }), "{error}");
    assert!(store.list(&RunFilter::default()).unwrap().is_empty());
    assert!(store.campaign_runs("nothing").unwrap().is_empty());
}

#[test]
fn campaign_runs_are_in_plan_order() {
    let (_dir, mut store) = temp_store();
    let execution = "20261121T193000Z-777";
    let plan: Vec<_> = (1..=4)
        .map(|index| {
            campaign_run(
                &format!("20261121T19300{index}Z-777-{index}"),
                // Started in plan order, saved in another.
                &format!("2026-11-21T19:30:0{index}.000001Z"),
                execution,
                index,
            )
        })
        .collect();
    for index in [3, 0, 2, 1] {
        store.save(&plan[index]).unwrap();
    }
    // Another execution of the same campaign is not included.
    store
        .save(&campaign_run(
            "20261122T193000Z-8",
            "2026-11-22T19:30:00.000001Z",
            "20261122T192959Z-8",
            1,
        ))
        .unwrap();
    let runs = store.campaign_runs(execution).unwrap();
    assert_eq!(runs.len(), 4);
    for (got, expected) in runs.iter().zip(&plan) {
        assert_same(got, expected);
    }
}

/// The store's part of "an interrupted campaign keeps run 1 complete and run
/// 2 partial": run 1 is saved when it ends, run 2 is saved while it runs
/// and, on SIGINT, again as partial with what it measured. A later process
/// finds both.
#[test]
fn interrupted_campaign_keeps_complete_and_partial_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let execution = "20261121T193000Z-4242";
    {
        let mut store = Store::open(&path).unwrap();
        let first = campaign_run(
            "20261121T193001Z-4242",
            "2026-11-21T19:30:01.000001Z",
            execution,
            1,
        );
        store.save(&first).unwrap();

        let mut second = campaign_run(
            "20261121T193102Z-4242-2",
            "2026-11-21T19:31:02.000001Z",
            execution,
            2,
        );
        second.status = RunStatus::Running;
        second.ended_at = None;
        store.save(&second).unwrap();
        // SIGINT: what was measured so far, stored as partial.
        second.status = RunStatus::Partial;
        second.ended_at = Some("2026-11-21T19:31:09.5Z".into());
        second.elapsed_ns = 7_499_000_000;
        second.series[0].stats.samples = 7_499;
        store.update(&second).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let runs = store.campaign_runs(execution).unwrap();
    let statuses: Vec<_> = runs.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(
        statuses,
        [
            ("20261121T193001Z-4242", RunStatus::Complete),
            ("20261121T193102Z-4242-2", RunStatus::Partial)
        ]
    );
    assert_eq!(runs[1].series[0].stats.samples, 7_499);
    let listed = store
        .list(&RunFilter {
            execution: Some(execution.into()),
            ..Default::default()
        })
        .unwrap();
    let statuses: Vec<_> = listed.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(statuses, ["partial", "complete"]);
    assert_eq!(listed[0].samples, 7_499);
}

#[test]
fn delete_takes_an_exact_id_and_removes_series_and_spikes() {
    let (_dir, mut store) = listed_store();
    let error = store.delete("20261102").unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }), "{error}");
    let error = store.delete("last").unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }), "{error}");

    store.delete("20261102T100000Z-2").unwrap();
    assert!(matches!(
        store.get("20261102T100000Z-2"),
        Err(StoreError::NotFound { .. })
    ));
    let path = store.path().to_path_buf();
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM series WHERE run_id = '20261102T100000Z-2'"
        ),
        0
    );
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM spikes WHERE run_id = '20261102T100000Z-2'"
        ),
        0
    );
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 4);
    assert!(store.delete("20261102T100000Z-2").is_err());
}

#[test]
fn two_handles_on_one_file_see_each_others_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut writer = Store::open(&path).unwrap();
    let mut other = Store::open(&path).unwrap();
    writer
        .save(&run(
            "20261121T193012Z-1",
            "2026-11-21T19:30:12.000001Z",
            "rig1",
        ))
        .unwrap();
    assert_eq!(other.get("last").unwrap().id, "20261121T193012Z-1");
    other
        .save(&run(
            "20261121T193112Z-2",
            "2026-11-21T19:31:12.000001Z",
            "rig1",
        ))
        .unwrap();
    assert_eq!(writer.list(&RunFilter::default()).unwrap().len(), 2);
}

#[test]
fn a_writer_waits_for_another_ones_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    // Another process holds the write lock for a while.
    let locked = Arc::new(Barrier::new(2));
    let holder = {
        let path = path.clone();
        let locked = locked.clone();
        std::thread::spawn(move || {
            let mut conn = rusqlite::Connection::open(&path).unwrap();
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .unwrap();
            tx.execute("UPDATE runs SET host = host", []).unwrap();
            locked.wait();
            std::thread::sleep(Duration::from_millis(300));
            tx.commit().unwrap();
        })
    };
    locked.wait();
    // Blocks on the lock, then goes through.
    let saved = realistic_result();
    store.save(&saved).unwrap();
    holder.join().unwrap();
    assert_same(&store.get(&saved.id).unwrap(), &saved);
}

#[test]
fn several_processes_can_open_and_write_a_new_store_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/results.db");
    let writers = 4;
    let runs_each = 10;
    let start = Arc::new(Barrier::new(writers));
    let threads: Vec<_> = (0..writers)
        .map(|writer| {
            let path = path.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let mut store = Store::open(&path).unwrap();
                for n in 0..runs_each {
                    let id = format!("20261121T1930{writer:02}Z-{n}");
                    store
                        .save(&run(&id, &format!("2026-11-21T19:30:{n:02}.1Z"), "rig1"))
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(
        store.list(&RunFilter::default()).unwrap().len(),
        writers * runs_each
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM spikes"),
        (writers * runs_each * 3) as i64
    );
}

#[test]
fn default_path_follows_the_environment() {
    // Only reads the process environment; the cases are unit-tested in the
    // library. Here: whatever it answers ends in rtlab/results.db.
    if let Ok(path) = Store::default_path() {
        assert!(path.ends_with("rtlab/results.db"), "{}", path.display());
        assert!(path.is_absolute());
    }
}

/// Issue 16 item 6: importing a JSON with the id of a stored run turned a
/// complete 3999-sample run into a failed 1-sample one. The store itself
/// now refuses, and the stored run is untouched.
#[test]
fn saving_another_run_with_a_stored_id_is_refused() {
    let (_dir, mut store) = temp_store();
    let complete = realistic_result();
    store.save(&complete).unwrap();
    let mut other = run(&complete.id, "2026-11-22T08:00:00.000001Z", "rig9");
    other.status = RunStatus::Failed;
    other.series.truncate(1);
    other.series[0].stats.samples = 1;
    let error = store.save(&other).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, StoreError::Duplicate { .. }), "{message}");
    assert!(message.contains(&complete.id), "{message}");
    assert!(message.contains("--new-id"), "{message}");
    assert!(message.contains("41878 samples"), "{message}");
    assert_same(&store.get(&complete.id).unwrap(), &complete);
    // Nor may `update` replace it: it is not running, and not this run.
    assert!(store.update(&other).is_err());
    let mut same_but_ended = complete.clone();
    same_but_ended.status = RunStatus::Failed;
    assert!(store.update(&same_but_ended).is_err());
    assert_same(&store.get(&complete.id).unwrap(), &complete);
    // An update of a run never saved is not an insert.
    let new = run("20261122T080000Z-1", "2026-11-22T08:00:00.000001Z", "rig1");
    assert!(matches!(
        store.update(&new).unwrap_err(),
        StoreError::NotFound { .. }
    ));
}

#[test]
fn ids_are_checked_when_saving_and_when_looking_up() {
    let (_dir, mut store) = temp_store();
    for bad in ["x\u{1b}[2J", "../x", "-x", "last", &"x".repeat(65)] {
        let mut result = realistic_result();
        result.id = bad.to_string();
        let error = store.save(&result).unwrap_err();
        assert!(matches!(error, StoreError::InvalidRun { .. }), "{error}");
        assert!(!error.to_string().contains('\u{1b}'), "{error}");
        let error = store.get(bad);
        if bad != "last" {
            let error = error.unwrap_err();
            assert!(matches!(error, StoreError::Invalid(_)), "{error}");
            assert!(!error.to_string().contains('\u{1b}'), "{error}");
        }
    }
    assert_eq!(count(store.path(), "SELECT count(*) FROM runs"), 0);
}

#[test]
fn runs_are_tagged_listed_by_tag_untagged_and_deleted_with_their_tags() {
    let (_dir, mut store) = listed_store();
    let id = store.tag("20261103", "baseline").unwrap();
    assert_eq!(id, "20261103T100000Z-3");
    store.tag(&id, "kernel-6.18").unwrap();
    store.tag(&id, "baseline").unwrap();
    store.tag("last", "baseline").unwrap();
    assert_eq!(store.tags(&id).unwrap(), ["baseline", "kernel-6.18"]);
    let filter = RunFilter {
        tag: Some("baseline".into()),
        ..Default::default()
    };
    assert_eq!(
        ids(&store, &filter),
        ["20261104T100100Z-4-2", "20261103T100000Z-3"]
    );
    let listed = store.list(&filter).unwrap();
    assert_eq!(listed[1].tags, ["baseline", "kernel-6.18"]);
    assert_eq!(listed[0].tags, ["baseline"]);
    assert!(matches!(
        store.tag(&id, "bad tag").unwrap_err(),
        StoreError::Invalid(_)
    ));
    assert!(store
        .list(&RunFilter {
            tag: Some("\u{1b}".into()),
            ..Default::default()
        })
        .is_err());
    assert_eq!(store.untag(&id, "baseline").unwrap(), (id.clone(), true));
    assert_eq!(store.untag(&id, "baseline").unwrap(), (id.clone(), false));
    store.delete(&id).unwrap();
    assert_eq!(
        count(
            store.path(),
            "SELECT count(*) FROM tags WHERE run_id = '20261103T100000Z-3'"
        ),
        0
    );
    assert!(store.check().unwrap().problems.is_empty());
}

#[test]
fn check_finds_damaged_rows() {
    let (_dir, store) = listed_store();
    let report = store.check().unwrap();
    assert_eq!(report.runs, 5);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    conn.execute(
        "UPDATE runs SET result = '{\"not\": \"a run\"}' WHERE id = '20261101T100000Z-1'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE runs SET result = replace(result, '20261102T100000Z-2', '20261102T100000Z-9')
         WHERE id = '20261102T100000Z-2'",
        [],
    )
    .unwrap();
    conn.execute("DELETE FROM series WHERE run_id = '20261104T100000Z-4'", [])
        .unwrap();
    // A host name with an escape sequence, stored before import refused it.
    conn.execute(
        "UPDATE runs SET result = json_set(result, '$.environment.hostname', 'vm' || char(27) || '[2J')
         WHERE id = '20261103T100000Z-3'",
        [],
    )
    .unwrap();
    let report = store.check().unwrap();
    let problems = &report.problems;
    let found = |needle: &str| problems.iter().filter(|p| p.contains(needle)).count();
    assert_eq!(
        found("`20261101T100000Z-1`: its JSON is not a run"),
        1,
        "{problems:?}"
    );
    assert_eq!(found("says id `20261102T100000Z-9`"), 1, "{problems:?}");
    assert_eq!(
        found("`20261104T100000Z-4`: 0 series rows for 2 series"),
        1,
        "{problems:?}"
    );
    assert_eq!(
        found("`20261103T100000Z-3`: the text at $[\"environment\"][\"hostname\"] holds control"),
        1,
        "{problems:?}"
    );
    assert_eq!(problems.len(), 4, "{problems:?}");
}

#[test]
fn a_run_the_store_cannot_take_is_kept_in_a_file() {
    let (dir, mut store) = temp_store();
    let saved = realistic_result();
    store.save(&saved).unwrap();
    // The id is taken: this save fails, and the run goes to a file.
    let mut again = saved.clone();
    again.started_at = "2026-11-22T08:00:00.000001Z".into();
    let unsaved = dir.path().join("state/unsaved");
    let error = store.save_or_keep_in(&again, &unsaved).unwrap_err();
    let message = error.to_string();
    let file = unsaved.join(format!("{}.json", saved.id));
    assert!(
        message.contains(&format!("rtlab import {}", file.display())),
        "{message}"
    );
    let kept: rtlab_core::result::RunResult =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_same(&kept, &again);
    // No temporary file stays beside it.
    assert_eq!(std::fs::read_dir(&unsaved).unwrap().count(), 1);
    // A run saved keeps nothing.
    let other = run("20261122T080000Z-1", "2026-11-22T08:00:00.000001Z", "rig1");
    store.save_or_keep_in(&other, &unsaved).unwrap();
    assert_eq!(std::fs::read_dir(&unsaved).unwrap().count(), 1);
}

#[test]
fn read_only_opening_never_creates_nor_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    // No store yet: an empty one, and no file.
    let empty = Store::open_read_only(&path).unwrap();
    assert!(empty.list(&RunFilter::default()).unwrap().is_empty());
    assert!(matches!(
        empty.get("last").unwrap_err(),
        StoreError::Empty { .. }
    ));
    assert!(empty
        .get("20261122")
        .unwrap_err()
        .to_string()
        .contains(&path.display().to_string()));
    drop(empty);
    assert!(!path.exists());
    let saved = realistic_result();
    Store::open(&path).unwrap().save(&saved).unwrap();
    let mut store = Store::open_read_only(&path).unwrap();
    assert!(store.is_read_only());
    assert_same(&store.get("last").unwrap(), &saved);
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 1);
    assert!(store
        .save(&run(
            "20261122T080000Z-1",
            "2026-11-22T08:00:00.000001Z",
            "rig1"
        ))
        .is_err());
    assert!(store.tag("last", "x").is_err());
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 1);
}

#[test]
fn a_run_is_not_kept_in_a_directory_others_may_write() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, mut store) = temp_store();
    let saved = realistic_result();
    store.save(&saved).unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = store
        .save_or_keep_in(&saved, &state.join("unsaved"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("keeping it in a file failed too"), "{error}");
    assert!(error.contains("group or others may write it"), "{error}");
    assert!(std::fs::read_dir(state.join("unsaved"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn root_keeps_unsaved_runs_where_they_survive_a_reboot() {
    use rtlab_store::{choose_unsaved_dirs, UnsavedDir};
    use std::path::PathBuf;
    let place = |dir: &str, volatile| UnsavedDir {
        dir: PathBuf::from(dir),
        volatile,
    };
    let os = |s: &str| Some(std::ffi::OsString::from(s));
    assert_eq!(
        choose_unsaved_dirs(None, 0, os("/x"), os("/root"), "/run/rtlab".into()),
        [
            place("/var/lib/rtlab/unsaved", false),
            place("/run/rtlab/unsaved", true)
        ]
    );
    assert_eq!(
        choose_unsaved_dirs(
            None,
            1000,
            None,
            os("/home/u"),
            "/run/user/1000/rtlab".into()
        ),
        [
            place("/home/u/.local/state/rtlab/unsaved", false),
            place("/run/user/1000/rtlab/unsaved", true)
        ]
    );
    assert_eq!(
        choose_unsaved_dirs(
            None,
            1000,
            os("/s"),
            os("/home/u"),
            "/tmp/rtlab-1000".into()
        ),
        [
            place("/s/rtlab/unsaved", false),
            place("/tmp/rtlab-1000/unsaved", true)
        ]
    );
    // Relative XDG values are ignored, as the spec says.
    assert_eq!(
        choose_unsaved_dirs(None, 1000, os("s"), os("h"), "/tmp/rtlab-1000".into()),
        [place("/tmp/rtlab-1000/unsaved", true)]
    );
    assert_eq!(
        choose_unsaved_dirs(os("/st"), 0, None, None, "/st".into()),
        [place("/st/unsaved", false)]
    );
}

#[test]
fn an_unsaved_run_falls_back_to_the_volatile_directory_and_says_so() {
    use rtlab_store::{keep_unsaved_in, UnsavedDir};
    let dir = tempfile::tempdir().unwrap();
    let run = realistic_result();
    // The persistent place cannot be written (here a file is in the way;
    // on a full disk, ENOSPC): the volatile one takes the run.
    let blocked = dir.path().join("lib");
    std::fs::write(&blocked, "").unwrap();
    let dirs = [
        UnsavedDir {
            dir: blocked.join("unsaved"),
            volatile: false,
        },
        UnsavedDir {
            dir: dir.path().join("run/unsaved"),
            volatile: true,
        },
    ];
    let kept = keep_unsaved_in(&run, &dirs).unwrap();
    assert_eq!(
        kept.file,
        dir.path().join(format!("run/unsaved/{}.json", run.id))
    );
    let said = kept.to_string();
    assert!(said.contains("emptied at reboot"), "{said}");
    assert!(
        said.contains(&format!(
            "{} could not be written",
            blocked.join("unsaved").display()
        )),
        "{said}"
    );
    // When the persistent place can be written, the run goes there and
    // nothing is said about reboots.
    std::fs::remove_file(&blocked).unwrap();
    let kept = keep_unsaved_in(&run, &dirs).unwrap();
    assert_eq!(kept.file, blocked.join(format!("unsaved/{}.json", run.id)));
    assert_eq!(kept.volatile, None);
    assert_eq!(kept.to_string(), kept.file.display().to_string());
    // Through the store: the error names the file and the fallback.
    let (_store_dir, mut store) = temp_store();
    store.save(&run).unwrap();
    std::fs::remove_dir_all(&blocked).unwrap();
    std::fs::write(&blocked, "").unwrap();
    let message = store
        .save_or_keep_in_dirs(&run, &dirs)
        .unwrap_err()
        .to_string();
    assert!(message.contains("emptied at reboot"), "{message}");
    assert!(message.contains("rtlab import"), "{message}");
    // Neither works: both reasons are given.
    let nowhere = [UnsavedDir {
        dir: blocked.join("x"),
        volatile: true,
    }];
    assert!(keep_unsaved_in(&run, &nowhere)
        .unwrap_err()
        .contains("could not be written"));
}

#[test]
fn a_kept_run_never_replaces_a_file_nor_follows_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let unsaved = dir.path().join("unsaved");
    let run = realistic_result();
    let first = rtlab_store::keep_unsaved(&run, &unsaved).unwrap();
    assert_eq!(first, unsaved.join(format!("{}.json", run.id)));
    // The same id again (another run kept under it): a second file.
    let mut other = run.clone();
    other.started_at = "2026-11-22T08:00:00.000001Z".into();
    let second = rtlab_store::keep_unsaved(&other, &unsaved).unwrap();
    assert_eq!(second, unsaved.join(format!("{}.2.json", run.id)));
    let read = |p: &Path| -> rtlab_core::result::RunResult {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    assert_same(&read(&first), &run);
    assert_same(&read(&second), &other);
    // A link where the file would go is left alone, and what it points
    // at is not written.
    let target = dir.path().join("target");
    std::fs::write(&target, "mine").unwrap();
    let mut third = run.clone();
    third.id = "20261122T080000Z-9".into();
    std::os::unix::fs::symlink(&target, unsaved.join("20261122T080000Z-9.json")).unwrap();
    let kept = rtlab_store::keep_unsaved(&third, &unsaved).unwrap();
    assert_eq!(kept, unsaved.join("20261122T080000Z-9.2.json"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    // A link in place of the directory is refused.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let linked = dir.path().join("linked");
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    let error = rtlab_store::keep_unsaved(&run, &linked).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A directory of another user (as root: nobody's), or one under a
    // directory of another user, is refused too.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        for place in [theirs.clone(), theirs.join("unsaved")] {
            let error = rtlab_store::keep_unsaved(&run, &place).unwrap_err();
            assert!(error.to_string().contains("owned by uid 65534"), "{error}");
        }
    }
    // No temporary file is left anywhere.
    assert!(std::fs::read_dir(&unsaved).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));
}

#[test]
fn a_store_path_that_is_not_a_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo has no other precondition.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("zero.db");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    // Without the check, the FIFO hung the reader (SQLite waited for a
    // writer) and /dev/zero read as an empty store and was "migrated".
    for (path, what) in [
        (&fifo, "a FIFO"),
        (&link, "a character device"),
        (&Path::new("/dev/zero").to_path_buf(), "a character device"),
        (&dir.path().to_path_buf(), "a directory"),
    ] {
        for error in [
            Store::open(path).unwrap_err(),
            Store::open_read_only(path).unwrap_err(),
        ] {
            let message = error.to_string();
            assert!(
                matches!(error, StoreError::Foreign { .. }) && message.contains(what),
                "{}: {message}",
                path.display()
            );
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn save_all_and_delete_all_store_or_delete_all_or_nothing() {
    let (dir, mut store) = temp_store();
    let path = dir.path().join("results.db");
    let a = run("20261122T080000Z-1", "2026-11-22T08:00:00.000001Z", "rig1");
    let b = run("20261122T080000Z-2", "2026-11-22T08:00:01.000001Z", "rig1");
    let c = run("20261122T080000Z-3", "2026-11-22T08:00:02.000001Z", "rig1");
    store.save(&b).unwrap();
    // b is stored: a and c are not stored either.
    let error = store
        .save_all(&[a.clone(), b.clone(), c.clone()])
        .unwrap_err();
    assert!(
        matches!(&error, StoreError::Duplicate { id, .. } if *id == b.id),
        "{error}"
    );
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 1);
    // Twice the same id in one batch: nothing.
    assert!(matches!(
        store.save_all(&[a.clone(), a.clone()]).unwrap_err(),
        StoreError::Duplicate { .. }
    ));
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 1);
    store.save_all(&[a.clone(), c.clone()]).unwrap();
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 3);
    // One id not stored: nothing deleted.
    assert!(matches!(
        store
            .delete_all(&[&a.id, "20261122T080000Z-9", &c.id])
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 3);
    store.delete_all(&[&a.id, &c.id]).unwrap();
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 1);
    assert_eq!(
        count(
            &path,
            "SELECT count(*) FROM series WHERE run_id <> '20261122T080000Z-2'"
        ),
        0
    );
}

#[test]
fn list_saturates_sample_counts_that_overflow_sqlite_integers() {
    // A histfile's overflow line can say i64::MAX samples: two such series
    // made sum() fail with 'integer overflow', and with it every listing of
    // the store and every later save of that id.
    let (_dir, mut store) = temp_store();
    let mut a = run("20261101T100000Z-1", "2026-11-01T10:00:00.000001Z", "rig1");
    a.series = vec![busy_series("cpu0", 0, 1), busy_series("cpu1", 1, 1)];
    for series in &mut a.series {
        series.stats.samples = i64::MAX as u64;
        series.stats.missed = u64::MAX;
    }
    store.save(&a).unwrap();
    let all = store.list(&RunFilter::default()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].samples, all[0].missed),
        (i64::MAX as u64, i64::MAX as u64)
    );
    // Saving the same id again is refused as a duplicate, not a SQL error.
    let again = store.save(&a).unwrap_err();
    assert!(matches!(again, StoreError::Duplicate { .. }), "{again}");
}

/// Kept runs are pushed as root into a shared store: a file another user
/// could have planted or replaced (in a directory others may write, a
/// symbolic link) is left and reported, never stored.
#[test]
fn kept_runs_others_could_have_planted_are_never_pushed() {
    use rtlab_store::UnsavedDir;
    use std::os::unix::fs::PermissionsExt;
    let (dir, mut store) = temp_store();
    let planted = realistic_result();
    let json = serde_json::to_string(&to_json(&planted)).unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(open.join("planted.json"), &json).unwrap();
    let closed = dir.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(open.join("planted.json"), closed.join("link.json")).unwrap();
    let dirs = [&open, &closed].map(|d| UnsavedDir {
        dir: d.clone(),
        volatile: false,
    });
    let report = store.push_kept(&dirs).unwrap();
    assert!(report.stored.is_empty(), "{:?}", report.stored);
    assert!(report.already.is_empty(), "{:?}", report.already);
    let reasons: Vec<String> = report.failed.iter().map(|f| f.reason.clone()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].contains("group or others may write"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("symbolic link"), "{reasons:?}");
    assert!(store.get(&planted.id).is_err());
    assert!(open.join("planted.json").exists() && closed.join("link.json").exists());
}
