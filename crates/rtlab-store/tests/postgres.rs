//! The store on a real PostgreSQL server (a throwaway cluster on a local
//! socket, `scripts/pg-test-cluster` through the end-to-end tests'
//! fixture), against the same store on SQLite: every operation gives the
//! same answers on both; migrations from empty and from schema 3; two
//! connections saving at once; a database that is not rtlab's refused; no
//! password in any message; a dropped connection loses no run.

mod common;

/// The fixture of rtlab's end-to-end tests; it asks its parent module
/// for `is_root` and `skip`, below.
#[path = "../../rtlab/tests/common/postgres.rs"]
mod fixture;

pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Says why a test is skipped, on the real stderr (the harness captures
/// what passing tests print).
pub fn skip(reason: &str) {
    use std::io::Write;
    let _ = write!(std::io::stderr(), "\nskipped: {reason}\n");
}

use std::path::Path;
use std::sync::{Arc, Barrier};

use common::*;
use fixture::{shared, Cluster};
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_store::{kept_dir, Location, RunFilter, Store, StoreError, UnsavedDir, SCHEMA_VERSION};

fn location(text: &str) -> Location {
    Location::parse(Path::new(text)).unwrap()
}

/// A fresh database on the shared cluster (None: skipped, reason printed).
fn database(name: &str) -> Option<(&'static Cluster, Location)> {
    let cluster = shared()?;
    Some((cluster, location(&cluster.database(name))))
}

/// Runs `body` on a new SQLite file and on a new PostgreSQL database, and
/// returns the two transcripts (what `body` wrote of each answer).
fn on_both(name: &str, body: fn(&Location) -> Vec<String>) -> Option<(Vec<String>, Vec<String>)> {
    let (_, pg) = database(name)?;
    let dir = tempfile::tempdir().unwrap();
    let file = Location::File(dir.path().join("results.db"));
    Some((body(&file), body(&pg)))
}

/// What an answer is, for the transcript: an error by its kind and the
/// message without the store's name (a path on one, a URL on the other).
fn said<T: std::fmt::Debug>(answer: Result<T, StoreError>, store: &Store) -> String {
    match answer {
        Ok(value) => format!("{value:?}"),
        Err(e) => {
            let kind = format!("{e:?}");
            let kind = kind.split([' ', '(', '{']).next().unwrap().to_string();
            let shown = store.path().display().to_string();
            format!("error {kind}: {}", e.to_string().replace(&shown, "STORE"))
        }
    }
}

/// The ids [`Store::list`] gives for the filter `set` makes.
fn ids(store: &Store, set: impl FnOnce(&mut RunFilter)) -> String {
    let mut filter = RunFilter::default();
    set(&mut filter);
    said(
        store
            .list(&filter)
            .map(|runs| runs.into_iter().map(|s| s.id).collect::<Vec<_>>()),
        store,
    )
}

/// Every operation of the store, each answer written down.
fn every_operation(at: &Location) -> Vec<String> {
    let mut store = Store::open_location(at).unwrap();
    let mut log = Vec::new();
    log.push(format!("version {}", store.schema_version().unwrap()));
    let a = run("20261121T193012Z-100", "2026-11-21T19:30:12.5Z", "rig1");
    let mut b = run("20261121T193013Z-100", "2026-11-21T19:30:13Z", "rig2");
    b.probe = "switch".into();
    let c = campaign_run("20261121T193014Z-7-2", "2026-11-21T19:30:14Z", "exec1", 2);
    let d = campaign_run("20261121T193014Z-7", "2026-11-21T19:30:14Z", "exec1", 1);
    // An imported run's start that is no time: sorted as the oldest.
    let e = run("imported-1", "not a time", "rig1");
    for r in [&a, &b, &c, &d, &e] {
        log.push(said(store.save(r), &store));
    }
    log.push(said(store.save(&a), &store));
    let mut again = b.clone();
    again.id = "other".into();
    log.push(said(store.save_all(&[again.clone(), again]), &store));
    log.push(said(store.contains("other"), &store));

    let summaries = store.list(&RunFilter::default()).unwrap();
    log.push(serde_json::to_string(&summaries).unwrap());
    log.push(ids(&store, |f| f.host = Some("rig2".into())));
    log.push(ids(&store, |f| f.probe = Some("switch".into())));
    log.push(ids(&store, |f| f.status = Some("complete".into())));
    log.push(ids(&store, |f| f.status = Some("weird".into())));
    log.push(ids(&store, |f| f.campaign = Some("quick".into())));
    log.push(ids(&store, |f| f.execution = Some("exec1".into())));
    log.push(ids(&store, |f| f.limit = Some(2)));

    for id in [
        "last",
        "20261121T193013Z",
        "20261121T193014Z-7",
        "2026",
        "nope",
        "",
        "a/b",
    ] {
        log.push(said(store.resolve(id), &store));
    }
    log.push(said(store.get("imported").map(|r| r.id), &store));
    assert_same(&store.get(&c.id).unwrap(), &c);
    log.push(said(
        store
            .campaign_runs("exec1")
            .map(|runs| runs.into_iter().map(|r| r.id).collect::<Vec<_>>()),
        &store,
    ));

    log.push(said(store.tag("last", "baseline"), &store));
    log.push(said(store.tag("last", "baseline"), &store));
    log.push(said(store.tag(&a.id, "nightly"), &store));
    log.push(said(store.tag(&a.id, "bad tag"), &store));
    log.push(said(store.tags(&a.id), &store));
    log.push(ids(&store, |f| f.tag = Some("baseline".into())));
    log.push(said(store.untag(&a.id, "nightly"), &store));
    log.push(said(store.untag(&a.id, "nightly"), &store));

    let mut running = run("20261121T200000Z-9", "2026-11-21T20:00:00Z", "rig1");
    running.status = RunStatus::Running;
    log.push(said(store.save(&running), &store));
    running.status = RunStatus::Complete;
    log.push(said(store.update(&running), &store));
    log.push(said(store.update(&running), &store));
    log.push(said(
        store.update(&run("never-saved", "2026-11-21T20:00:00Z", "x")),
        &store,
    ));

    log.push(said(store.delete("nope"), &store));
    log.push(said(store.delete_all(&[a.id.as_str(), "nope"]), &store));
    log.push(said(store.contains(&a.id), &store));
    log.push(said(
        store.delete_all(&[a.id.as_str(), b.id.as_str()]),
        &store,
    ));
    log.push(ids(&store, |_| {}));

    let report = store.check().unwrap();
    log.push(format!(
        "check {} {} {:?}",
        report.schema_version, report.runs, report.problems
    ));

    let reader = Store::open_location_read_only(at).unwrap();
    log.push(ids(&reader, |_| {}));
    log.push(said(reader.get("last").map(|r| r.id), &reader));
    let mut refused = run("20261121T210000Z-1", "2026-11-21T21:00:00Z", "rig1");
    refused.id = "read-only".into();
    let mut reader = reader;
    log.push(said(reader.save(&refused), &reader));
    log
}

#[test]
fn every_operation_answers_as_on_sqlite() {
    let Some((sqlite, postgres)) = on_both("every_operation", every_operation) else {
        return;
    };
    assert_eq!(sqlite.len(), postgres.len());
    for (lite, pg) in sqlite.iter().zip(&postgres) {
        assert_eq!(lite, pg, "SQLite and PostgreSQL answer differently");
    }
    // The transcript is about something: runs were listed and refused.
    assert!(
        sqlite.iter().any(|l| l.contains("error Duplicate")),
        "{sqlite:#?}"
    );
    assert!(
        sqlite.iter().any(|l| l.contains("error Ambiguous")),
        "{sqlite:#?}"
    );
    assert!(
        sqlite
            .iter()
            .any(|l| l.contains("\"kernel\":\"6.12.0-rt\"")),
        "{sqlite:#?}"
    );
}

#[test]
fn a_new_database_is_migrated_and_marked_as_rtlabs() {
    let Some((cluster, at)) = database("from_empty") else {
        return;
    };
    let store = Store::open_location(&at).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(
        cluster.psql(
            "from_empty",
            "SELECT application, version FROM rtlab_schema"
        ),
        format!("rtlab|{SCHEMA_VERSION}\n")
    );
    let tables = cluster.psql(
        "from_empty",
        "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables
         WHERE table_schema = 'public'",
    );
    assert_eq!(tables.trim(), "rtlab_schema,runs,series,spikes,tags");
    drop(store);
    // Opening again changes nothing.
    let store = Store::open_location(&at).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

/// A database built by the rtlab of schema 3, opened by this one: the
/// kernel and preemption columns appear, filled from the runs' JSON.
fn from_schema_3(at: &Location) -> Vec<String> {
    let mut saved = realistic_result();
    saved.environment.kernel_release = Some("6.6.0-rt15".into());
    {
        let mut old = Store::open_location_at_version(at, 3).unwrap();
        assert_eq!(old.schema_version().unwrap(), 3);
        old.save(&saved).unwrap();
        old.tag(&saved.id, "v3").unwrap();
        let listed = old.list(&RunFilter::default()).unwrap();
        assert_eq!(listed[0].kernel, None, "schema 3 has no kernel column");
    }
    let reader = Store::open_location_read_only(at).unwrap();
    assert_eq!(
        reader.schema_version().unwrap(),
        3,
        "reading does not migrate"
    );
    drop(reader);
    let store = Store::open_location(at).unwrap();
    let listed = store.list(&RunFilter::default()).unwrap();
    assert_same(&store.get(&saved.id).unwrap(), &saved);
    assert!(store.check().unwrap().problems.is_empty());
    vec![
        format!("version {}", store.schema_version().unwrap()),
        format!(
            "{:?} {:?} {:?}",
            listed[0].kernel, listed[0].preemption, listed[0].tags
        ),
    ]
}

#[test]
fn a_schema_3_database_gains_kernel_and_preemption() {
    let Some((sqlite, postgres)) = on_both("from_v3", from_schema_3) else {
        return;
    };
    assert_eq!(sqlite, postgres);
    assert_eq!(
        sqlite,
        [
            format!("version {SCHEMA_VERSION}"),
            "Some(\"6.6.0-rt15\") Some(\"rt\") [\"v3\"]".to_string()
        ]
    );
}

#[test]
fn two_connections_create_and_fill_one_database_at_once() {
    let Some((_, at)) = database("concurrent") else {
        return;
    };
    let start = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["hostA", "hostB"]
        .into_iter()
        .map(|host| {
            let (at, start) = (at.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                // Both open a new database at once: one migrates, the
                // other waits for it (the advisory lock) and finds it done.
                let mut store = Store::open_location(&at).unwrap();
                for i in 0..20 {
                    let id = format!("20261121T193012Z-{host}-{i}");
                    store.save(&run(&id, "2026-11-21T19:30:12Z", host)).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let store = Store::open_location_read_only(&at).unwrap();
    for host in ["hostA", "hostB"] {
        let filter = RunFilter {
            host: Some(host.into()),
            ..Default::default()
        };
        assert_eq!(store.list(&filter).unwrap().len(), 20, "{host}");
    }
    assert!(store.check().unwrap().problems.is_empty());
}

#[test]
fn the_same_id_from_two_hosts_is_a_clear_error() {
    let Some((_, at)) = database("same_id") else {
        return;
    };
    let mut store = Store::open_location(&at).unwrap();
    store
        .save(&run("20261121T193012Z-1", "2026-11-21T19:30:12Z", "hostA"))
        .unwrap();
    let error = store
        .save(&run("20261121T193012Z-1", "2026-11-21T19:30:12Z", "hostB"))
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, StoreError::Duplicate { .. }), "{message}");
    assert!(message.contains("from host hostA"), "{message}");
    assert!(message.contains("--new-id"), "{message}");
}

#[test]
fn another_programs_database_is_refused_and_left_unchanged() {
    let Some((cluster, at)) = database("foreign") else {
        return;
    };
    cluster.psql(
        "foreign",
        "CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)",
    );
    for error in [
        Store::open_location(&at).unwrap_err(),
        Store::open_location_read_only(&at).unwrap_err(),
    ] {
        assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
        assert!(error.to_string().contains("rtlab_schema"), "{error}");
    }
    assert_eq!(
        cluster.psql(
            "foreign",
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ),
        "1\n"
    );

    let Some((cluster, newer)) = database("newer") else {
        return;
    };
    drop(Store::open_location(&newer).unwrap());
    cluster.psql("newer", "UPDATE rtlab_schema SET version = 99");
    let error = Store::open_location(&newer).unwrap_err();
    assert!(
        matches!(error, StoreError::TooNew { found: 99, .. }),
        "{error}"
    );
    assert_eq!(
        cluster.psql("newer", "SELECT version FROM rtlab_schema"),
        "99\n"
    );
}

#[test]
fn a_damaged_row_is_corrupt_not_a_panic() {
    let Some((cluster, at)) = database("damaged") else {
        return;
    };
    let mut store = Store::open_location(&at).unwrap();
    let saved = run("20261121T193012Z-5", "2026-11-21T19:30:12Z", "rig1");
    store.save(&saved).unwrap();
    cluster.psql("damaged", "UPDATE runs SET result = '{\"id\": 12'");
    let error = store.get(&saved.id).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    let report = store.check().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    // Listing still works: the columns are an index of the JSON.
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn no_message_holds_the_password() {
    let Some(cluster) = shared() else {
        return;
    };
    let url = cluster.database("secret");
    // Trust authentication takes any password: the store works, and
    // names itself without it.
    let with_password = url.replacen("postgres@", "postgres:hunter2@", 1);
    let mut store = Store::open_location(&location(&with_password)).unwrap();
    assert!(!store.path().display().to_string().contains("hunter2"));
    let mut saved = run("20261121T193012Z-6", "2026-11-21T19:30:12Z", "rig1");
    store.save(&saved).unwrap();
    let error = store.save(&saved).unwrap_err().to_string();
    assert!(
        error.contains("postgres@") && !error.contains("hunter2"),
        "{error}"
    );
    saved.id = "bad/id".into();
    let error = store.save(&saved).unwrap_err().to_string();
    assert!(!error.contains("hunter2"), "{error}");
    // A server that is not there: an error at once, no password.
    let nowhere = location("postgresql://rtlab:hunter2@%2Fnonexistent%2Fsock/lab");
    let error = Store::open_location_read_only(&nowhere).unwrap_err();
    assert!(error.is_connection(), "{error}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert!(!format!("{error:?}").contains("hunter2"), "{error:?}");
}

#[test]
fn a_dropped_connection_keeps_the_run_and_push_stores_it_once() {
    let Some(cluster) = Cluster::private() else {
        return;
    };
    let at = location(&cluster.database("dropped"));
    let kept = tempfile::tempdir().unwrap();
    let dirs = [UnsavedDir {
        dir: kept.path().to_path_buf(),
        volatile: false,
    }];
    let mut store = Store::open_location(&at).unwrap();
    let first = run("20261121T193012Z-7", "2026-11-21T19:30:12Z", "rig1");
    store.save(&first).unwrap();

    cluster.kill_server();
    let lost: RunResult = run("20261121T193013Z-7", "2026-11-21T19:30:13Z", "rig1");
    let error = store.save_or_keep_in_dirs(&lost, &dirs).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("rtlab store push"), "{message}");
    let StoreError::Unsaved {
        kept: Ok(file),
        cause,
        ..
    } = error
    else {
        panic!("{message}")
    };
    assert!(cause.is_connection(), "{cause}");
    assert_eq!(file.file.parent().unwrap(), kept_dir(kept.path(), &at));
    // The same run kept twice (a retry that did commit, then lost the
    // answer): pushed once.
    std::fs::copy(&file.file, file.file.with_file_name("copy.json")).unwrap();

    cluster.restart_server();
    let report = store.push_kept(&dirs).unwrap();
    assert_eq!(report.stored, std::slice::from_ref(&lost.id));
    assert_eq!(report.already, std::slice::from_ref(&lost.id));
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(
        std::fs::read_dir(kept_dir(kept.path(), &at))
            .unwrap()
            .count(),
        0
    );
    let reader = Store::open_location_read_only(&at).unwrap();
    assert_same(&reader.get(&lost.id).unwrap(), &lost);
    assert_eq!(reader.list(&RunFilter::default()).unwrap().len(), 2);
    // Nothing left: pushing again does nothing.
    let again = store.push_kept(&dirs).unwrap();
    assert!(again.stored.is_empty() && again.already.is_empty());
}

/// A "server" that takes the connection and never answers: the open ends
/// with an error (the start-up is bounded too, not only the socket).
#[test]
fn a_server_that_never_answers_is_unreachable_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let listener =
        std::os::unix::net::UnixListener::bind(dir.path().join(".s.PGSQL.5432")).unwrap();
    let socket_dir = dir.path().display().to_string().replace('/', "%2F");
    let at = location(&format!(
        "postgresql://rtlab@{socket_dir}/lab?connect_timeout=1"
    ));
    let error = Store::open_location_read_only(&at).unwrap_err();
    assert!(error.is_connection(), "{error}");
    assert!(error.to_string().contains("did not answer"), "{error}");
    drop(listener);
}
