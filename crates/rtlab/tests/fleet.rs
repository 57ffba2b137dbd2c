//! A fleet in one PostgreSQL store (docs/fleet.md): two rtlab processes
//! act as two hosts, each in a UTS namespace of its own with its own
//! hostname, and store their runs in one database; `runs --host`, `show`,
//! `compare` and `report` read them together, and `compare --baseline`
//! gates on them with its exit code (0 under a huge threshold, 1 for a
//! candidate made worse for real by injected stalls, 2 for bad input).
//! The Ansible playbook of examples/fleet/ runs its campaign on localhost
//! and the runs land in the database.
//!
//! The tests measure: run them under the machine-wide lock,
//! `flock /tmp/rtlab-host.lock cargo test -p rtlab --test fleet`.

mod common;

use common::postgres::{self, Cluster};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `cmd` runs as host `name`: in a UTS namespace of its own with that
/// hostname, so the environment its runs record really differs.
fn as_host<'a>(cmd: &'a mut Command, name: &'static str) -> &'a mut Command {
    // SAFETY: only unshare(2) and sethostname(2) run between fork and
    // exec, both async-signal-safe, on memory the closure owns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUTS) != 0
                || libc::sethostname(name.as_ptr().cast(), name.len()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// One shared database and a state directory per host.
struct Fleet {
    dir: tempfile::TempDir,
    db: String,
    /// One test of this file at a time: two measuring on CPU 0 at once
    /// would each be the other's load.
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Fleet {
    /// The shared cluster's database `name`, or None (skip printed) where
    /// PostgreSQL or real-time scheduling is not available.
    fn new(name: &str) -> Option<(Fleet, &'static Cluster)> {
        if let Err(why) = common::realtime_allowed() {
            common::skip(&why);
            return None;
        }
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let serial = SERIAL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let cluster = postgres::shared()?;
        let db = cluster.database(name);
        let dir = tempfile::tempdir().unwrap();
        Some((
            Fleet {
                dir,
                db,
                _serial: serial,
            },
            cluster,
        ))
    }

    fn state(&self, host: &str) -> PathBuf {
        self.dir.path().join(host)
    }

    /// `rtlab ARGS --db URL` as an operator anywhere would run it.
    fn rtlab(&self, args: &[&str]) -> Output {
        common::run(
            common::rtlab(&self.state("operator"))
                .args(args)
                .args(["--db", &self.db]),
        )
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.rtlab(args);
        assert!(out.status.success(), "rtlab {args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `rtlab measure timer` for 2 s on CPU 0 as `host`, stored in the
    /// database; `during` runs once it measures (the stalls of a worse
    /// run). The run's id.
    fn measure_on(&self, host: &'static str, during: impl FnOnce()) -> String {
        let json = self
            .dir
            .path()
            .join(format!("{host}-{}.json", rand_suffix()));
        let mut child = as_host(
            common::rtlab(&self.state(host)).args([
                "measure",
                "timer",
                "--cpus",
                "0",
                "--interval",
                "1ms",
                "--duration",
                "2s",
                "--quiet",
                "--db",
                &self.db,
            ]),
            host,
        )
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
        common::wait_until_running(&json, &mut child);
        during();
        assert!(child.wait().unwrap().success(), "measure timer on {host}");
        let doc = common::read_json(&json).unwrap();
        assert_eq!(doc["environment"]["hostname"], host);
        doc["id"].as_str().unwrap().to_string()
    }
}

/// A name part no two calls in this process share.
fn rand_suffix() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn ids(list: &serde_json::Value) -> Vec<String> {
    let mut ids: Vec<String> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn two_hosts_share_one_store_and_a_baseline_gates_them() {
    let Some((fleet, _cluster)) = Fleet::new("fleet_two_hosts") else {
        return;
    };
    let a = fleet.measure_on("fleet-a", || {});
    let b = fleet.measure_on("fleet-b", || {});

    // runs --host: each host's own.
    assert_eq!(
        ids(&fleet.json(&["runs", "--host", "fleet-a", "--json"])),
        std::slice::from_ref(&a)
    );
    assert_eq!(
        ids(&fleet.json(&["runs", "--host", "fleet-b", "--json"])),
        std::slice::from_ref(&b)
    );
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(ids(&fleet.json(&["runs", "--json"])), both);

    // show, compare and report across the hosts.
    let show = fleet.rtlab(&["show", &b]);
    assert!(show.status.success());
    assert!(
        text(&show).contains("host       fleet-b,"),
        "{}",
        text(&show)
    );
    let compare = fleet.rtlab(&["compare", &a, &b]);
    assert!(compare.status.success());
    assert!(
        text(&compare).contains("measured on different hosts (A fleet-a, B fleet-b)"),
        "{}",
        text(&compare)
    );
    let report = fleet.rtlab(&["report", &a, &b, "--format", "text"]);
    assert!(report.status.success());
    let report = text(&report);
    for (id, host) in [(&a, "fleet-a"), (&b, "fleet-b")] {
        assert!(
            report
                .lines()
                .any(|line| line.contains(id.as_str()) && line.contains(host)),
            "run {id} of {host} in the report:\n{report}"
        );
    }

    // The gate: B passes a huge threshold, says its host differs.
    let gate = fleet.rtlab(&["compare", "--baseline", &a, &b, "--threshold", "1000000%"]);
    assert_eq!(gate.status.code(), Some(0), "{gate:?}");
    assert!(text(&gate).contains("host fleet-b  (another host than the baseline)"));
    let doc = fleet.json(&[
        "compare",
        "--baseline",
        &a,
        &b,
        "--threshold",
        "1000000",
        "--json",
    ]);
    assert_eq!(doc["schema"], "rtlab.baseline/1");
    assert_eq!(doc["regressed"], 0);
    assert_eq!(doc["candidates"][0]["other_host"], true);
    assert_eq!(
        doc["candidates"][0]["hosts"],
        serde_json::json!(["fleet-b"])
    );

    // B made worse for real: a 5 ms stall in every 10 ms on its CPU for
    // 1.5 s, one late wake-up in ten samples or so, p99 milliseconds
    // above a p99 of microseconds.
    let worse = fleet.measure_on("fleet-b", || {
        let stalls =
            common::inject_stalls(0, Duration::from_millis(5), Duration::from_millis(5), 150);
        assert_eq!(stalls.join().unwrap(), 150);
    });
    let gate = fleet.rtlab(&["compare", "--baseline", &a, &worse, "--json"]);
    assert_eq!(gate.status.code(), Some(1), "{gate:?}");
    let doc: serde_json::Value = serde_json::from_slice(&gate.stdout).unwrap();
    assert_eq!(doc["regressed"], 1);
    let check = &doc["pairs"][0]["checks"][0];
    eprintln!("the stalled run: {}", check["verdict"]);
    assert_eq!(check["metric"], "p99");
    assert_eq!(check["significant"], true);
    assert_eq!(check["regressed"], true);
    let stderr = String::from_utf8_lossy(&gate.stderr);
    assert!(
        stderr.contains("error: regression against the baseline A")
            && stderr.contains("1 of 1 pairs regressed beyond 10% (p99)"),
        "{stderr}"
    );

    // Bad input: named, exit 2.
    let unknown = fleet.rtlab(&["compare", "--baseline", &a, "no-such-run"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("RUN no-such-run: no run"));
    let itself = fleet.rtlab(&["compare", "--baseline", &a, &a]);
    assert_eq!(itself.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&itself.stderr).contains("is the baseline itself"));
    let metric = fleet.rtlab(&["compare", "--baseline", &a, &b, "--metric", "p99,mean"]);
    assert_eq!(metric.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&metric.stderr).contains("unknown metric 'mean'"));
}

/// A campaign of 2 runs of 1 s on CPU 0: `fleettest`.
fn small_campaign(dir: &Path) -> PathBuf {
    let path = dir.join("fleettest.toml");
    std::fs::write(
        &path,
        "name = \"fleettest\"\nduration = \"1s\"\nrepeat = 2\n\
         [[probe]]\nkind = \"timer\"\ncpus = \"0\"\ninterval = \"1ms\"\n\
         [[load]]\nname = \"idle\"\nrun = []\n\
         [[configuration]]\nname = \"promoted\"\npolicy = \"fifo\"\npriority = 90\n",
    )
    .unwrap();
    path
}

/// Runs the campaign as `host`; its execution id.
fn campaign_on(fleet: &Fleet, campaign: &Path, host: &'static str) -> String {
    let out = common::run(as_host(
        common::rtlab(&fleet.state(host))
            .args([
                "campaign", "run", "--quiet", "--json", "-", "--db", &fleet.db,
            ])
            .arg(campaign),
        host,
    ));
    assert!(out.status.success(), "campaign on {host}: {out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["execution"].as_str().unwrap().to_string()
}

#[test]
fn campaign_executions_of_two_hosts_compare_cell_by_cell() {
    let Some((fleet, _cluster)) = Fleet::new("fleet_campaigns") else {
        return;
    };
    let campaign = small_campaign(fleet.dir.path());
    let on_a = campaign_on(&fleet, &campaign, "fleet-a");
    let on_b = campaign_on(&fleet, &campaign, "fleet-b");
    let listed = fleet.json(&[
        "runs",
        "--host",
        "fleet-b",
        "--campaign",
        "fleettest",
        "--json",
    ]);
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2);
    assert!(listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["execution"] == on_b.as_str()));

    // The campaign's name was run on two hosts: which finished last is
    // chance, so it is refused, naming each host's execution.
    let ambiguous = fleet.rtlab(&["compare", "--baseline", &on_a, "fleettest"]);
    let err = String::from_utf8_lossy(&ambiguous.stderr);
    assert_eq!(ambiguous.status.code(), Some(2), "{err}");
    assert!(err.contains("was run on 2 hosts"), "{err}");
    assert!(err.contains(&format!("{on_b} on fleet-b")), "{err}");
    assert!(err.contains(&format!("{on_a} on fleet-a")), "{err}");
    let doc = fleet.json(&[
        "compare",
        "--baseline",
        &on_a,
        &on_b,
        "--threshold",
        "1000000",
        "--json",
    ]);
    assert_eq!(doc["matching"], "campaign_cells");
    assert_eq!(doc["baseline"]["execution"], on_a.as_str());
    assert_eq!(doc["candidates"][0]["execution"], on_b.as_str());
    assert_eq!(
        doc["candidates"][0]["hosts"],
        serde_json::json!(["fleet-b"])
    );
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["name"], "promoted / idle / cpu0");
    assert_eq!(pairs[0]["baseline_runs"], 2);
    assert_eq!(pairs[0]["candidate_runs"], 2);
    assert_eq!(doc["regressed"], 0);

    // An execution against a run is bad input.
    let run = fleet.json(&["runs", "--host", "fleet-a", "--limit", "1", "--json"]);
    let run = run["runs"][0]["id"].as_str().unwrap().to_string();
    let mixed = fleet.rtlab(&["compare", "--baseline", &on_a, &run]);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("compare a run with a run"));
}

/// The playbook's ansible-playbook, kept off the host's own Ansible
/// state: its temporary and home directories under `dir`.
fn ansible(dir: &Path, state: &Path, args: &[&str]) -> Output {
    let playbook =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet/rtlab-campaign.yml");
    let mut cmd = Command::new("ansible-playbook");
    cmd.args(["-i", "localhost,", "-c", "local", "-v"])
        .arg(playbook)
        .args(["-e", "ansible_python_interpreter=/usr/bin/python3"])
        .args(args)
        .env("ANSIBLE_HOME", dir.join("ansible"))
        .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible/tmp"))
        .env("ANSIBLE_REMOTE_TEMP", dir.join("ansible/remote"))
        .env("ANSIBLE_NOCOLOR", "1")
        // The local connection runs the modules with this environment: the
        // campaign's journal and default store stay in the test's.
        .env("RTLAB_STATE_DIR", state)
        .env("XDG_DATA_HOME", state.join("data"));
    common::run(&mut cmd)
}

#[test]
fn the_playbook_runs_the_campaign_on_localhost_into_postgres() {
    // Looked up, not run: even `--version` makes ~/.ansible on the host.
    let have_ansible = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| dir.join("ansible-playbook").is_file())
    });
    if !have_ansible {
        common::skip("ansible-playbook is not installed (scripts/setup installs ansible-core)");
        return;
    }
    let Some((fleet, cluster)) = Fleet::new("fleet_ansible") else {
        return;
    };
    // A password in the URL (trust authentication ignores it): no task
    // may print it.
    let secret = "s3cret-never-printed";
    let url = fleet.db.replacen(
        "postgresql://postgres@",
        &format!("postgresql://postgres:{secret}@"),
        1,
    );
    assert_ne!(url, fleet.db);
    let dir = fleet.dir.path();
    let installed = dir.join("bin/rtlab");
    let vars = [
        format!("rtlab_binary={}", env!("CARGO_BIN_EXE_rtlab")),
        format!("rtlab_install_path={}", installed.display()),
        format!("rtlab_work_dir={}", dir.join("work").display()),
    ];
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let mut args: Vec<&str> = vars.iter().flat_map(|v| ["-e", v.as_str()]).collect();

    // Without the store's URL the play stops at once, saying what to set.
    let missing = ansible(dir, &fleet.state("ansible"), &args);
    assert!(!missing.status.success());
    assert!(
        text(&missing).contains("set rtlab_binary"),
        "{}",
        text(&missing)
    );
    assert!(!installed.exists(), "installed before the check");

    // From a vars file, as from a vault: no command line of the test's
    // holds the password, so any process showing it is the playbook's leak.
    let vars_file = dir.join("vault.yml");
    std::fs::write(&vars_file, format!("rtlab_db: \"{url}\"\n")).unwrap();
    let db_var = format!("@{}", vars_file.display());
    args.extend(["-e", db_var.as_str()]);
    let watch = CommandLineWatch::start(secret);
    let out = ansible(dir, &fleet.state("ansible"), &args);
    let shown = watch.stop();
    assert!(
        shown.is_empty(),
        "the URL's password was on command lines:\n{}",
        shown.join("\n")
    );
    let printed = format!("{}{}", text(&out), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{printed}");
    assert!(
        !printed.contains(secret),
        "the URL's password was printed:\n{printed}"
    );
    assert!(printed.contains("campaign fleet execution"), "{printed}");
    assert!(installed.exists());

    // Every run of the example campaign reached PostgreSQL, from this host.
    let runs = fleet.json(&["runs", "--campaign", "fleet", "--json"]);
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "complete"), "{runs:?}");
    let database = fleet.db.rsplit('/').next().unwrap();
    assert_eq!(
        cluster
            .psql(
                database,
                "SELECT count(*) FROM runs WHERE campaign = 'fleet'"
            )
            .trim(),
        "4"
    );
}

/// Looks at every process's command line (what any user reads in ps)
/// until stopped, keeping those that hold `secret`.
struct CommandLineWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<String>>,
}

impl CommandLineWatch {
    fn start(secret: &'static str) -> CommandLineWatch {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut shown = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let procs = std::fs::read_dir("/proc").into_iter().flatten().flatten();
                for entry in procs {
                    let Ok(line) = std::fs::read(entry.path().join("cmdline")) else {
                        continue;
                    };
                    let line = String::from_utf8_lossy(&line).replace('\0', " ");
                    if line.contains(secret) && !shown.contains(&line) {
                        shown.push(line);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            shown
        });
        CommandLineWatch { stop, thread }
    }

    fn stop(self) -> Vec<String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}
