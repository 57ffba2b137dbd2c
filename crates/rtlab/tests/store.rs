//! The store from the command line: every measurement is kept, and runs
//! are listed, shown, exported, imported and compared.

mod common;

use std::path::Path;

fn measure(state: &Path, db: &Path, extra: &[&str]) -> String {
    let out = common::run(
        common::rtlab(state)
            .args([
                "measure", "timer", "--cpus", "0", "--loops", "300", "--json", "-", "--db",
            ])
            .arg(db)
            .args(extra),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["id"].as_str().unwrap().to_string()
}

#[test]
fn measurements_are_stored_shown_exported_and_compared() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let a = measure(dir.path(), &db, &[]);
    let b = measure(dir.path(), &db, &["--policy", "other"]);

    let out = common::run(
        common::rtlab(dir.path())
            .args(["runs", "--json", "--db"])
            .arg(&db),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [b.as_str(), a.as_str()], "newest first");

    // show --json gives back exactly what measure wrote.
    let out = common::run(
        common::rtlab(dir.path())
            .args(["show", &a, "--json", "--db"])
            .arg(&db),
    );
    assert!(out.status.success());
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["id"], a.as_str());
    assert_eq!(
        shown["series"][0]["samples"].as_u64().unwrap()
            + shown["series"][0]["missed"].as_u64().unwrap(),
        300
    );
    let out = common::run(
        common::rtlab(dir.path())
            .args(["show", "last", "--db"])
            .arg(&db),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&b));

    // Every export format.
    for (format, needle) in [
        ("json", "\"schema\""),
        ("csv", "run_id,series"),
        ("histfile", "# Total:"),
        ("markdown", "| cpu0"),
    ] {
        let out = common::run(
            common::rtlab(dir.path())
                .args(["export", &a, "--format", format, "--db"])
                .arg(&db),
        );
        assert!(out.status.success(), "{format}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(needle),
            "{format}"
        );
    }

    // An exported histfile imports back as a cyclictest run, and compares.
    let hist = dir.path().join("hist.txt");
    let out = common::run(
        common::rtlab(dir.path())
            .args(["export", &a, "--format", "histfile", "-o"])
            .arg(&hist)
            .arg("--db")
            .arg(&db),
    );
    assert!(out.status.success());
    let out = common::run(
        common::rtlab(dir.path())
            .args(["import", "--json", "--db"])
            .arg(&db)
            .arg(&hist),
    );
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let imported = doc["imported"][0]["id"].as_str().unwrap().to_string();
    let out = common::run(
        common::rtlab(dir.path())
            .args(["compare", &a, &b, &imported, "--json", "--db"])
            .arg(&db),
    );
    assert!(out.status.success());
    let cmp: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cmp["baseline"], a.as_str());
    let out = common::run(
        common::rtlab(dir.path())
            .args(["compare", &a, &b, "--db"])
            .arg(&db),
    );
    assert!(out.status.success());
}

#[test]
fn unknown_runs_and_bad_files_are_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = common::run(
        common::rtlab(dir.path())
            .args(["show", "nosuchrun", "--db"])
            .arg(&db),
    );
    assert_eq!(out.status.code(), Some(2));
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "hello\nworld\n").unwrap();
    let out = common::run(
        common::rtlab(dir.path())
            .args(["import", "--db"])
            .arg(&db)
            .arg(&garbage),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("garbage.txt"));
    // Nothing was stored.
    let out = common::run(
        common::rtlab(dir.path())
            .args(["runs", "--json", "--db"])
            .arg(&db),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["runs"].as_array().unwrap().is_empty());
    // A database path that cannot be created fails before measuring.
    let out = common::run(common::rtlab(dir.path()).args([
        "measure",
        "timer",
        "--loops",
        "10",
        "--db",
        "/proc/nope/r.db",
    ]));
    assert_eq!(out.status.code(), Some(2));
}
