//! The binary on a real PostgreSQL store (a throwaway cluster on a local
//! socket, tests/common/postgres.rs): `--db URL` and `RTLAB_DB` through
//! measure, runs, show, compare and store check; bad URLs as bad input;
//! and a campaign whose server dies half-way: every completed run ends up
//! in PostgreSQL, directly or by `rtlab store push`, exactly once.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::postgres::{shared, Cluster};

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// rtlab with its state in `state` and no RTLAB_DB of the caller's.
fn rtlab(state: &Path) -> Command {
    let mut cmd = common::rtlab(state);
    cmd.env_remove("RTLAB_DB");
    cmd
}

#[test]
fn measure_then_runs_show_compare_and_check_on_postgres() {
    require_realtime!();
    let Some(cluster) = shared() else {
        return;
    };
    let url = cluster.database("binary");
    let dir = tempfile::tempdir().unwrap();
    // Once with --db (and a password: trust authentication takes any),
    // once with RTLAB_DB.
    let with_password = url.replacen("postgres@", "postgres:hunter2@", 1);
    let first = common::run(
        rtlab(dir.path())
            .args(["measure", "timer", "--cpus", "0", "--duration", "1s", "-q"])
            .arg("--db")
            .arg(&with_password),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!stderr(&first).contains("hunter2"));
    // The command line a run records holds no password.
    let recorded = cluster.psql("binary", "SELECT command FROM runs");
    assert!(recorded.contains("postgres:***@"), "{recorded}");
    assert!(!recorded.contains("hunter2"), "{recorded}");
    let leaked = "SELECT count(*) FROM runs WHERE result LIKE '%hunter2%'";
    assert_eq!(cluster.psql("binary", leaked), "0\n");
    let second = common::run(
        rtlab(dir.path())
            .args(["measure", "timer", "--cpus", "0", "--duration", "1s", "-q"])
            .env("RTLAB_DB", &url),
    );
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(cluster.psql("binary", "SELECT count(*) FROM runs"), "2\n");
    assert!(
        !dir.path().join("data/rtlab/results.db").exists(),
        "no file store made"
    );

    let runs = common::run(
        rtlab(dir.path())
            .args(["runs", "--json"])
            .env("RTLAB_DB", &url),
    );
    assert!(runs.status.success(), "{}", stderr(&runs));
    let doc = json(&runs);
    let listed = doc["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    let host = listed[0]["host"].as_str().unwrap().to_string();
    assert!(!host.is_empty());
    assert!(
        listed[0]["kernel"].as_str().is_some_and(|k| !k.is_empty()),
        "{doc}"
    );
    assert!(listed[0]["preemption"].as_str().is_some(), "{doc}");
    let ids: Vec<String> = listed
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();

    let by_host = common::run(
        rtlab(dir.path())
            .args(["runs", "--json", "--host", &host, "--db"])
            .arg(&url),
    );
    assert_eq!(json(&by_host)["runs"].as_array().unwrap().len(), 2);
    let elsewhere = common::run(
        rtlab(dir.path())
            .args(["runs", "--json", "--host", "no-such-host", "--db"])
            .arg(&url),
    );
    assert_eq!(json(&elsewhere)["runs"].as_array().unwrap().len(), 0);

    let show = common::run(
        rtlab(dir.path())
            .args(["show", "last", "--json", "--db"])
            .arg(&url),
    );
    assert!(show.status.success(), "{}", stderr(&show));
    assert_eq!(json(&show)["id"], ids[0].as_str());

    let compare = common::run(
        rtlab(dir.path())
            .args(["compare", &ids[1], &ids[0], "--resamples", "100", "--db"])
            .arg(&url),
    );
    assert!(compare.status.success(), "{}", stderr(&compare));
    assert!(String::from_utf8_lossy(&compare.stdout).contains("p99"));

    let check = common::run(
        rtlab(dir.path())
            .args(["store", "check", "--json", "--db"])
            .arg(&url),
    );
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let report = json(&check);
    assert_eq!(report["ok"], true);
    assert_eq!(report["runs"], 2);
    assert_eq!(report["db"], url.as_str());
}

#[test]
fn bad_urls_and_unreachable_servers_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 4] = [
        ("postgresql://u:hunter2@db.lab", &["--db", "no database"]),
        (
            "postgresql://u:hunter2@db.lab/lab?sslmode=require",
            &["--db", "TLS", "socket"],
        ),
        (
            "postgres://u:hunter2@db.lab:port/lab",
            &["--db", "PostgreSQL URL"],
        ),
        (
            "postgresql://u:hunter2@%2Fnonexistent%2Fsock/lab",
            &["cannot reach", "u@%2Fnonexistent%2Fsock/lab"],
        ),
    ];
    for (url, words) in cases {
        for command in [&["runs"][..], &["store", "check"], &["show", "last"]] {
            let out = common::run(rtlab(dir.path()).args(command).arg("--db").arg(url));
            assert_eq!(out.status.code(), Some(2), "{command:?} {url}");
            let err = stderr(&out);
            for word in words {
                assert!(err.contains(word), "{command:?} {url}: {err}");
            }
            assert!(!err.contains("hunter2"), "{err}");
        }
    }
    // From the environment, the variable is named.
    let out = common::run(
        rtlab(dir.path())
            .arg("runs")
            .env("RTLAB_DB", "postgresql://u:hunter2@db.lab"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("RTLAB_DB") && !err.contains("hunter2"),
        "{err}"
    );
    // --help never shows the variable's value.
    let help = common::run(
        rtlab(dir.path())
            .args(["runs", "--help"])
            .env("RTLAB_DB", "postgresql://u:hunter2@db.lab/x"),
    );
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("RTLAB_DB") && !text.contains("hunter2"),
        "{text}"
    );
}

/// Five runs of one second, one after the other.
const CAMPAIGN: &str = r#"
name = "dropped"
duration = "1s"
repeat = 5
[[probe]]
kind = "timer"
cpus = "0"
[[load]]
name = "idle"
run = []
[[configuration]]
name = "p80"
policy = "fifo"
priority = 80
"#;

/// Ends the campaign (and puts the host back) if the test fails first.
struct Campaign<'a> {
    child: Child,
    state: &'a Path,
}

impl Drop for Campaign<'_> {
    fn drop(&mut self) {
        common::end_and_restore(&mut self.child, self.state);
    }
}

/// The runs stored in `db`, by plan index.
fn plan_indexes(cluster: &Cluster, db: &str) -> Vec<u32> {
    cluster
        .psql(db, "SELECT plan_index FROM runs ORDER BY plan_index")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn a_campaign_that_loses_its_server_loses_no_completed_run() {
    require_realtime!();
    let Some(cluster) = Cluster::private() else {
        return;
    };
    let url = cluster.database("camp");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dropped.toml");
    std::fs::write(&file, CAMPAIGN).unwrap();
    let mut campaign = Campaign {
        child: rtlab(dir.path())
            .args(["campaign", "run", "--quiet"])
            .arg(&file)
            .env("RTLAB_DB", &url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        state: dir.path(),
    };
    // The server dies once the first run is stored, while others run.
    let give_up = Instant::now() + Duration::from_secs(60);
    let has_runs = || cluster.psql("camp", "SELECT to_regclass('runs') IS NOT NULL") == "t\n";
    while !has_runs() || plan_indexes(&cluster, "camp").is_empty() {
        assert!(Instant::now() < give_up, "no run stored within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    cluster.kill_server();
    let status = campaign.child.wait().unwrap();
    let mut err = String::new();
    use std::io::Read;
    campaign
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    eprintln!("campaign: {status}\n{err}");
    // The campaign goes on without its server: every run completes, those
    // after the loss kept as files (the last of them at least, since the
    // server was killed while runs were left), with how to store them;
    // it fails (exit 1) as its runs are not all in the store.
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("runs are not in postgresql://"), "{err}");
    assert!(err.contains("rtlab store push"), "{err}");
    assert!(err.contains("the campaign goes on"), "{err}");
    let completed = 5;
    assert!(
        !walk(&dir.path().join("unsaved")).is_empty(),
        "no run kept while the server was down"
    );

    cluster.restart_server();
    let push = common::run(
        rtlab(dir.path())
            .args(["store", "push", "--json", "--db"])
            .arg(&url),
    );
    assert_eq!(push.status.code(), Some(0), "{}", stderr(&push));
    let pushed = json(&push);
    assert!(pushed["failed"].as_array().unwrap().is_empty(), "{pushed}");
    // Every completed run is there once, in plan order, none kept.
    assert_eq!(
        plan_indexes(&cluster, "camp"),
        (1..=completed).collect::<Vec<_>>(),
        "{pushed}"
    );
    let unsaved = dir.path().join("unsaved");
    let kept: Vec<_> = walk(&unsaved);
    assert!(kept.is_empty(), "kept runs left: {kept:?}");
    // Pushing again finds nothing.
    let again = common::run(
        rtlab(dir.path())
            .args(["store", "push", "--json", "--db"])
            .arg(&url),
    );
    let again = json(&again);
    assert!(again["stored"].as_array().unwrap().is_empty(), "{again}");
    let check = common::run(rtlab(dir.path()).args(["store", "check", "--db"]).arg(&url));
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
}

/// Every JSON file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else if path.extension().is_some_and(|x| x == "json") {
            found.push(path);
        }
    }
    found
}

/// What a campaign prints for the next commands (`rtlab runs --db …`)
/// never holds the URL's password, given with --db or RTLAB_DB.
#[test]
fn a_campaigns_hints_hold_no_password() {
    require_realtime!();
    let Some(cluster) = shared() else {
        return;
    };
    let url = cluster.database("hints");
    let with_password = url.replacen("postgres@", "postgres:hunter2@", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hints.toml");
    std::fs::write(&file, CAMPAIGN.replace("repeat = 5", "repeat = 1")).unwrap();
    for from_env in [false, true] {
        let mut cmd = rtlab(dir.path());
        cmd.args(["campaign", "run"]).arg(&file);
        match from_env {
            true => cmd.env("RTLAB_DB", &with_password),
            false => cmd.arg("--db").arg(&with_password),
        };
        let out = common::run(&mut cmd);
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(out.status.success(), "{all}");
        assert!(
            all.contains("rtlab runs --db postgresql://postgres@"),
            "{all}"
        );
        assert!(!all.contains("hunter2"), "{all}");
    }
}
