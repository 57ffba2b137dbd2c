//! Every probe looks for other real-time threads that can take its CPUs
//! at or above its priority, when it starts and during the run, and says
//! so in the result's warnings and on stderr: two rtlab probes at the
//! default priority on one CPU no longer starve each other silently.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `sleep` child, SCHED_FIFO at `priority` on CPU 0 (SCHED_OTHER for
/// None); killed and reaped when dropped. Sleeping, it takes no CPU time.
struct Sleeper(Child);

impl Sleeper {
    fn start(priority: Option<i32>) -> Sleeper {
        Sleeper::start_as(Path::new("sleep"), priority)
    }

    /// Started as `program` (a link to `sleep`, whose name it takes).
    fn start_as(program: &Path, priority: Option<i32>) -> Sleeper {
        let child = Command::new(program)
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep starts");
        let sleeper = Sleeper(child);
        let pid = sleeper.pid() as i32;
        // SAFETY: cpu_set_t is plain data; the calls act on our own child.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            assert_eq!(
                libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
            if let Some(priority) = priority {
                let param = libc::sched_param {
                    sched_priority: priority,
                };
                assert_eq!(libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param), 0);
            }
        }
        sleeper
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The warnings of a result that name `pid` as a rival.
fn rival_warnings(doc: &Value, pid: u32) -> Vec<String> {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.starts_with("another real-time thread") && w.contains(&format!("(pid {pid}")))
        .map(str::to_string)
        .collect()
}

/// `rtlab measure ARGS --json FILE`: its result and its stderr.
fn measure(state: &Path, args: &[&str]) -> (Value, String) {
    let json = state.join("result.json");
    let out = common::run(
        common::rtlab(state)
            .arg("measure")
            .args(args)
            .args(["--quiet", "--no-store", "--json"])
            .arg(&json),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (common::read_json(&json).expect("a result"), stderr)
}

#[test]
fn a_realtime_thread_above_the_probe_on_its_cpu_is_a_warning() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let above = Sleeper::start(Some(95));
    let below = Sleeper::start(Some(50));
    let normal = Sleeper::start(None);
    let (doc, stderr) = measure(dir.path(), &["timer", "--cpus", "0", "--duration", "1s"]);
    let found = rival_warnings(&doc, above.pid());
    assert_eq!(found.len(), 1, "{}", doc["warnings"]);
    let warning = &found[0];
    assert!(
        warning.contains("fifo 95 thread \"sleep\"")
            && warning.contains("can preempt the measuring threads (fifo 90) on CPU 0")
            && warning.contains("there when the probe started"),
        "{warning}"
    );
    assert!(stderr.contains(&format!("warning: {warning}")), "{stderr}");
    // Below the probe's priority, or not real-time: no warning.
    for quiet in [&below, &normal] {
        assert!(
            rival_warnings(&doc, quiet.pid()).is_empty(),
            "{}",
            doc["warnings"]
        );
        assert!(
            !stderr.contains(&format!("(pid {}", quiet.pid())),
            "{stderr}"
        );
    }
    // Above it, the sleeper is no rival any more.
    let (doc, _) = measure(
        dir.path(),
        &[
            "timer",
            "--cpus",
            "0",
            "--duration",
            "1s",
            "--priority",
            "96",
        ],
    );
    assert!(
        rival_warnings(&doc, above.pid()).is_empty(),
        "{}",
        doc["warnings"]
    );
}

#[test]
fn a_realtime_thread_that_appears_during_the_run_is_a_warning() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut child = common::rtlab(dir.path())
        .args(["measure", "timer", "--cpus", "0", "--duration", "10m"])
        .args(["--no-store", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtlab starts");
    common::wait_until_running(&json, &mut child);
    let rival = Sleeper::start(Some(95));
    // The result file is rewritten at every checkpoint: wait until one
    // names the rival (or give up after a minute).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let doc = common::read_json(&json);
        if doc.is_some_and(|doc| !rival_warnings(&doc, rival.pid()).is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "no checkpoint named the rival");
        std::thread::sleep(Duration::from_millis(100));
    }
    common::signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let doc = common::read_json(&json).unwrap();
    let found = rival_warnings(&doc, rival.pid());
    assert_eq!(found.len(), 1, "once: {}", doc["warnings"]);
    assert!(found[0].contains("into the run"), "{}", found[0]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("warning: {}", found[0])),
        "{stderr}"
    );
}

/// A thread named with bytes that are not UTF-8 (anyone can name theirs
/// so) is found all the same: the kernel writes them as such in
/// /proc/PID/task/TID/status too.
#[test]
fn a_rival_named_with_bytes_that_are_not_utf8_is_a_warning() {
    use std::os::unix::ffi::OsStrExt;
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep is installed");
    std::os::unix::fs::symlink(sleep, &link).unwrap();
    // Spawned once it has exec'd: named after the link.
    let rival = Sleeper::start_as(&link, Some(95));
    let stat = std::fs::read(format!("/proc/{}/stat", rival.pid())).unwrap();
    assert!(stat.windows(8).any(|w| w == b"(sl\xffeep)"));
    let (doc, _) = measure(dir.path(), &["timer", "--cpus", "0", "--loops", "10"]);
    let found = rival_warnings(&doc, rival.pid());
    assert_eq!(found.len(), 1, "{}", doc["warnings"]);
    assert!(
        found[0].contains("fifo 95 thread \"sl\u{fffd}eep\""),
        "{}",
        found[0]
    );
}

/// The case: two rtlab probes at the default priority on one CPU.
/// The second sees the first, whatever the probe.
#[test]
fn a_second_probe_on_the_same_cpu_names_the_first() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("first.json");
    let mut first = common::start_timer(
        dir.path(),
        &["--cpus", "0", "--duration", "10m", "--no-store"],
        &json,
    );
    let second = dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    for args in [
        &["switch", "--cpu", "0", "--duration", "1s"][..],
        &["noise", "--cpus", "0", "--duration", "1s"][..],
    ] {
        let (doc, stderr) = measure(&second, args);
        let found = rival_warnings(&doc, first.id());
        assert!(!found.is_empty(), "{args:?}: {}", doc["warnings"]);
        assert!(found[0].contains("fifo 90 thread"), "{}", found[0]);
        assert!(stderr.contains(&found[0]), "{stderr}");
    }
    common::signal(&first, libc::SIGINT);
    assert_eq!(first.wait().unwrap().code(), Some(130));
}

/// In a campaign, a rival found while a run measures is printed then, once
/// (not again with the run's other warnings when it is stored).
#[test]
fn a_campaign_prints_a_rival_found_during_a_run_once() {
    use std::io::BufRead;
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("campaign.toml");
    std::fs::write(
        &file,
        "name = \"rivals\"\nduration = \"10m\"\n\
         [[probe]]\nkind = \"timer\"\ncpus = \"0\"\n\
         [[load]]\nname = \"idle\"\nrun = []\n\
         [[configuration]]\nname = \"rt\"\n",
    )
    .unwrap();
    let mut child = common::rtlab(dir.path())
        .args(["campaign", "run"])
        .arg(&file)
        .arg("--db")
        .arg(dir.path().join("results.db"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtlab starts");
    let (lines, seen) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap();
            eprintln!("stderr: {line}");
            let _ = lines.send(line);
        }
    });
    // The run has begun: a rival that comes now is found during it (at
    // the next checkpoint) unless the run starts late; either way it must
    // be printed once.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen
        .recv_timeout(Duration::from_secs(60))
        .expect("the run starts")
        .starts_with("run 1/1")
    {
        assert!(Instant::now() < deadline, "the run never started");
    }
    std::thread::sleep(Duration::from_secs(1));
    let rival = Sleeper::start(Some(95));
    let named = format!("(pid {}", rival.pid());
    let mut all = Vec::new();
    while Instant::now() < deadline {
        match seen.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let found = line.contains(&named);
                all.push(line);
                if found {
                    break;
                }
            }
            Err(_) => continue,
        }
    }
    common::signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    reader.join().unwrap();
    all.extend(seen.try_iter());
    let warnings: Vec<&String> = all.iter().filter(|l| l.contains(&named)).collect();
    assert_eq!(warnings.len(), 1, "{all:#?}");
    assert!(
        warnings[0].starts_with("warning: run 1: another real-time thread"),
        "{}",
        warnings[0]
    );
}
