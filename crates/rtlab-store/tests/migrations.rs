//! The schema's versions: a database written by an rtlab at schema 1 is
//! migrated and still readable; a newer one, a failed migration, a file that
//! is not SQLite and another program's database are refused with messages
//! that say why, and are left unchanged.

mod common;

use std::path::Path;

use common::*;
use rtlab_core::result::RunResult;
use rtlab_store::{RunFilter, Store, StoreError, SCHEMA_VERSION};

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

/// Saves a run as an rtlab at schema 1 did: the run row and its series, no
/// campaign columns, no spikes table.
fn save_v1(conn: &rusqlite::Connection, run: &RunResult) {
    let json = |v: &dyn erased_json::ToJson| v.json();
    conn.execute(
        "INSERT INTO runs (id, format, probe, status, host, started_at, ended_at, elapsed_ns,
             command, config, environment, warnings, result)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        rusqlite::params![
            run.id,
            run.schema,
            run.probe,
            json(&run.status).trim_matches('"'),
            run.environment.hostname,
            run.started_at,
            run.ended_at,
            run.elapsed_ns as i64,
            json(&run.command),
            json(&run.config),
            json(&run.environment),
            json(&run.warnings),
            json(run),
        ],
    )
    .unwrap();
    for (position, series) in run.series.iter().enumerate() {
        let s = &series.stats;
        let p = &s.percentiles_ns;
        conn.execute(
            "INSERT INTO series (run_id, position, name, metric, cpu, interval_ns, samples,
                 missed, dropped, min_ns, max_ns, mean_ns, stdev_ns, p50_ns, p90_ns, p99_ns,
                 p99_9_ns, p99_99_ns, max_at_ns, max_sample, histogram_ns, histogram_us)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17, ?18, ?19, ?20, ?21, ?22)",
            rusqlite::params![
                run.id,
                position as i64,
                series.name,
                series.metric,
                series.cpu.map(|c| c as i64),
                series.interval_ns as i64,
                s.samples as i64,
                s.missed as i64,
                s.dropped as i64,
                s.min_ns as i64,
                s.max_ns as i64,
                s.mean_ns,
                s.stdev_ns,
                p.p50 as i64,
                p.p90 as i64,
                p.p99 as i64,
                p.p99_9 as i64,
                p.p99_99 as i64,
                s.max_at.map(|m| m.at_ns as i64),
                s.max_at.map(|m| m.sample as i64),
                json(&s.histogram_ns),
                json(&s.histogram_us),
            ],
        )
        .unwrap();
    }
}

mod erased_json {
    pub trait ToJson {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> ToJson for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}

/// A database as an rtlab at schema 1 left it: a campaign run (the result
/// JSON carries its campaign, loads and spikes, which schema 1 did not
/// index) and a plain run.
fn v1_database(path: &Path) -> (RunResult, RunResult) {
    let store = Store::open_at_version(path, 1).unwrap();
    assert_eq!(store.schema_version().unwrap(), 1);
    drop(store);
    let campaign = realistic_result();
    let plain = run("20261120T080000Z-99", "2026-11-20T08:00:00.000001Z", "rig2");
    let conn = rusqlite::Connection::open(path).unwrap();
    // Schema 1 has neither the campaign columns nor spikes.
    assert!(conn.prepare("SELECT execution FROM runs").is_err());
    assert!(conn.prepare("SELECT * FROM spikes").is_err());
    save_v1(&conn, &campaign);
    save_v1(&conn, &plain);
    (campaign, plain)
}

#[test]
fn a_schema_1_database_is_migrated_and_its_runs_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let (campaign, plain) = v1_database(&path);
    assert_eq!(user_version(&path), 1);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));

    // The old runs read back as they were saved.
    assert_same(&store.get(&campaign.id).unwrap(), &campaign);
    assert_same(&store.get(&plain.id).unwrap(), &plain);
    assert_eq!(store.get("last").unwrap().id, campaign.id);

    // The columns the migration added were filled from the stored results.
    let listed = store
        .list(&RunFilter {
            campaign: Some("quick".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
    let summary = &listed[0];
    assert_eq!(summary.id, campaign.id);
    assert_eq!(summary.status, "break");
    assert_eq!(summary.execution.as_deref(), Some("20261121T193000Z-12345"));
    assert_eq!(summary.configuration.as_deref(), Some("stock"));
    assert_eq!(summary.load.as_deref(), Some("vm"));
    assert_eq!(summary.worst_max_ns, 1_203_456);
    let runs = store.campaign_runs("20261121T193000Z-12345").unwrap();
    assert_eq!(runs.len(), 1);
    assert_same(&runs[0], &campaign);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let (index, total, repeat, loads): (i64, i64, i64, String) = conn
        .query_row(
            "SELECT plan_index, plan_total, repeat, json_extract(loads, '$[0].name')
             FROM runs WHERE id = ?1",
            [&campaign.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!((index, total, repeat, loads.as_str()), (3, 4, 1, "vm"));
    let plain_loads: String = conn
        .query_row("SELECT loads FROM runs WHERE id = ?1", [&plain.id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(plain_loads, "[]");
    // ...and the spikes from each series' top list.
    let spikes: Vec<(String, String, i64, i64, i64, i64)> = conn
        .prepare(
            "SELECT run_id, series, rank, sample, at_ns, latency_ns FROM spikes
             ORDER BY run_id, series_index, rank",
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
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut expected = Vec::new();
    for run in [&plain, &campaign] {
        for series in &run.series {
            for (rank, spike) in series.stats.top.iter().enumerate() {
                expected.push((
                    run.id.clone(),
                    series.name.clone(),
                    rank as i64,
                    spike.sample as i64,
                    spike.at_ns as i64,
                    spike.latency_ns as i64,
                ));
            }
        }
    }
    expected.sort();
    assert_eq!(expected.len(), 6);
    assert_eq!(spikes, expected);

    // The migrated database refuses to replace an old run by another with
    // its id, and takes new runs.
    assert!(matches!(
        store.save(&campaign).unwrap_err(),
        StoreError::Duplicate { .. }
    ));
    store.delete(&campaign.id).unwrap();
    store.save(&campaign).unwrap();
    store
        .save(&run(
            "20261122T080000Z-7",
            "2026-11-22T08:00:00.000001Z",
            "rig1",
        ))
        .unwrap();
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 3);
    let spike_rows: i64 = conn
        .query_row("SELECT count(*) FROM spikes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(spike_rows, 9);
    // Deleting an old run cascades to what the migration added.
    store.delete(&plain.id).unwrap();
    let orphans: i64 = conn
        .query_row(
            "SELECT count(*) FROM spikes WHERE run_id = ?1",
            [&plain.id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}

#[test]
fn a_failed_migration_leaves_the_database_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let (campaign, _) = v1_database(&path);
    // Something in the way of migration 2 (which creates `spikes`).
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE spikes (x)").unwrap();
    drop(conn);

    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Migration { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("from schema version 1 to 2"), "{message}");
    assert!(message.contains("left at version 1"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");

    // Nothing of migration 2 stayed: no new columns, still version 1.
    assert_eq!(user_version(&path), 1);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(conn.prepare("SELECT execution FROM runs").is_err());
    // Once out of the way, the migration goes through.
    conn.execute_batch("DROP TABLE spikes").unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_same(&store.get(&campaign.id).unwrap(), &campaign);
}

#[test]
fn a_database_from_a_newer_rtlab_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut store = Store::open(&path).unwrap();
    let saved = realistic_result();
    store.save(&saved).unwrap();
    drop(store);
    let newer = SCHEMA_VERSION + 1;
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", newer).unwrap();
    drop(conn);

    let error = Store::open(&path).unwrap_err();
    match &error {
        StoreError::TooNew { found, known, .. } => {
            assert_eq!((*found, *known), (newer, SCHEMA_VERSION))
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&format!("schema version {newer}")),
        "{message}"
    );
    assert!(
        message.contains(&format!("knows versions up to {SCHEMA_VERSION}")),
        "{message}"
    );
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("newer rtlab"), "{message}");
    assert_eq!(user_version(&path), i64::from(newer));
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    let text = "{\"schema\": \"rtlab.run/1\", \"this\": \"is not a database, but long enough \
                to have an SQLite header's size and then some more bytes\"}\n"
        .repeat(4);
    std::fs::write(&path, &text).unwrap();

    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::NotADatabase { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("not an SQLite database"), "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Tables but no schema version.
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE things (x); INSERT INTO things VALUES (1);")
        .unwrap();
    drop(conn);
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert!(
        error.to_string().contains("not an rtlab result store"),
        "{error}"
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);
    drop(conn);

    // Another application id.
    let path = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "application_id", 0x4750_4b47)
        .unwrap();
    drop(conn);
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert!(error.to_string().contains("0x47504b47"), "{error}");
}

#[test]
fn a_store_cannot_be_opened_where_a_directory_cannot_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let path = file.join("results.db");
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::CreateDir { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&file.display().to_string()),
        "{error}"
    );
}

#[test]
fn open_at_version_rejects_versions_that_do_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    assert!(Store::open_at_version(&path, 0).is_err());
    assert!(Store::open_at_version(&path, SCHEMA_VERSION + 1).is_err());
    // A database past the version asked for is left as it is.
    Store::open(&path).unwrap();
    let store = Store::open_at_version(&path, 1).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_damaged_run_does_not_block_the_migration_or_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let (campaign, plain) = v1_database(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE runs SET result = substr(result, 1, 100) WHERE id = ?1",
        [&plain.id],
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_same(&store.get(&campaign.id).unwrap(), &campaign);
    // Still listed (from its columns), and reading it says which run and why.
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 2);
    let error = store.get(&plain.id).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&plain.id), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
}

#[test]
fn a_directory_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let error = Store::open(dir.path()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&dir.path().display().to_string()),
        "{error}"
    );
}

/// Schema 3 adds tags: a schema 2 store opens, gains an empty `tags`
/// table, keeps its runs, and its runs can be tagged.
#[test]
fn a_schema_2_database_gains_tags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let saved = realistic_result();
    {
        let mut store = Store::open_at_version(&path, 2).unwrap();
        assert_eq!(store.schema_version().unwrap(), 2);
        store.save(&saved).unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(conn.prepare("SELECT * FROM tags").is_err());

    // Only reading does not migrate: it reads what schema 2 has (no tags).
    {
        let old = Store::open_read_only(&path).unwrap();
        assert_eq!(old.schema_version().unwrap(), 2);
        let listed = old.list(&RunFilter::default()).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].tags.is_empty());
        assert!(old.tags(&saved.id).unwrap().is_empty());
        assert_same(&old.get(&saved.id).unwrap(), &saved);
        let error = old
            .list(&RunFilter {
                tag: Some("x".into()),
                ..Default::default()
            })
            .unwrap_err();
        assert!(error.to_string().contains("no tags yet"), "{error}");
        let report = old.check().unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.schema_version, 2);
    }
    assert_eq!(user_version(&path), 2);

    let mut store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), 4);
    assert_same(&store.get(&saved.id).unwrap(), &saved);
    assert_eq!(store.list(&RunFilter::default()).unwrap()[0].tags.len(), 0);
    store.tag(&saved.id, "baseline").unwrap();
    assert_eq!(store.tags(&saved.id).unwrap(), ["baseline"]);
    assert!(store.check().unwrap().problems.is_empty());
}

/// Schema 1 lacks the columns the listing reads: reading it without
/// migrating is refused, saying what to do, and the file is unchanged.
#[test]
fn a_schema_1_database_is_not_read_without_migrating() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    v1_database(&path);
    let error = Store::open_read_only(&path).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::NeedsMigration {
                found: 1,
                latest: 4,
                ..
            }
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("schema version 1"), "{message}");
    assert!(message.contains("writes"), "{message}");
    assert_eq!(user_version(&path), 1);
}
