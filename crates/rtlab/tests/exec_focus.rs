//! `exec serve --focus` and `exec kurt-table --processes --focus` end to
//! end, live: the executive and its attached processes get the focused CPU
//! alone while they run, and the host is exactly as before after a stop
//! and after SIGKILL + `rtlab restore` (rtlab_focus::Snapshot compared).
//! Every test here moves every process on the host: they take one lock
//! (and the machine-wide /tmp/rtlab-host.lock is the runner's). Never
//! asserts a timing; every wait has a generous cap.

mod common;

use common::{rtlab, run};
use rtlab_core::cpuset::CpuSet;
use rtlab_focus::Snapshot;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const ATTACH_ENV: &str = "RTLAB_TEST_FOCUS_ATTACH";
/// Set: the attached process forks a helper (`sleep`) once attached.
const HELPER_ENV: &str = "RTLAB_TEST_FOCUS_HELPER";

/// Not a test of its own: the attached process (see [`Attached`]). It
/// attaches to the socket in `RTLAB_SOCKET`, says so, and is released
/// until the executive lets go, or detaches after the count in
/// `RTLAB_TEST_ACTIVATIONS`.
#[test]
fn attached_entry() {
    if std::env::var_os(ATTACH_ENV).is_none() {
        return;
    }
    let count: Option<u64> = std::env::var("RTLAB_TEST_ACTIVATIONS")
        .ok()
        .and_then(|n| n.parse().ok());
    let mut params = rtlab_client::Params::every(2_000_000);
    params.name = Some("focused".into());
    let mut task = rtlab_client::Periodic::attach(&params).expect("attach");
    println!("ATTACHED");
    // A helper forked inside the partition must leave with its parent.
    if std::env::var_os(HELPER_ENV).is_some() {
        // Never waited for: the test kills it (this process only sleeps).
        #[allow(clippy::zombie_processes)]
        let helper = Command::new("sleep").arg("120").spawn().expect("sleep");
        println!("HELPER {}", helper.id());
    }
    let mut released = 0u64;
    while count.is_none_or(|n| released < n) {
        if task.wait_next().is_err() {
            println!("LET GO after {released}");
            return;
        }
        released += 1;
    }
    task.detach().expect("detach");
    println!("DETACHED after {released}");
    // Stays alive (and unattached) until killed: its place after the
    // focus ends is compared too.
    std::thread::sleep(Duration::from_secs(120));
}

/// A process of this test binary attached to the executive at `socket`.
struct Attached {
    child: Child,
    lines: Receiver<String>,
}

impl Attached {
    fn start(socket: &Path, activations: Option<u64>) -> Attached {
        Attached::start_with(socket, activations, false)
    }

    fn start_with(socket: &Path, activations: Option<u64>, helper: bool) -> Attached {
        let mut command = Command::new(std::env::current_exe().unwrap());
        if helper {
            command.env(HELPER_ENV, "1");
        }
        command
            .args([
                "attached_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ATTACH_ENV, "1")
            .env(rtlab_client::SOCKET_ENV, socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(n) = activations {
            command.env("RTLAB_TEST_ACTIVATIONS", n.to_string());
        }
        let mut child = command.spawn().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Attached { child, lines }
    }

    /// Waits (up to 30 s) for a line containing `word`, and gives it.
    fn says(&self, word: &str) -> String {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("the attached process never said {word}: {e}"));
            if line.contains(word) {
                return line;
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `exec serve --focus CPU --cpus CPU` on a socket of its own.
struct Focused {
    dir: tempfile::TempDir,
    child: Child,
}

impl Focused {
    fn start(cpu: usize) -> Focused {
        let dir = tempfile::TempDir::new().unwrap();
        let socket = dir.path().join("exec.sock");
        let mut child = rtlab(&dir.path().join("state"))
            .args(["exec", "serve", "--no-store", "--socket"])
            .arg(&socket)
            .arg("--json")
            .arg(dir.path().join("serve.json"))
            .args(["--focus", &cpu.to_string(), "--cpus", &cpu.to_string()])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let give_up = Instant::now() + Duration::from_secs(30);
        while rtlab_client::executive_status(Some(&socket)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("exec serve --focus exited early: {status}");
            }
            assert!(
                Instant::now() < give_up,
                "exec serve --focus not ready in 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Focused { dir, child }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("exec.sock")
    }

    /// SIGTERM: it exits 0; its `--json` document.
    fn stop(&mut self) -> serde_json::Value {
        common::signal(&self.child, libc::SIGTERM);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "exec serve --focus exited with {status}");
        let text = std::fs::read_to_string(self.dir.path().join("serve.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Focused {
    /// A test that failed half-way must not leave the host focused: the
    /// server's journal is in this temporary directory, gone with it. So
    /// SIGTERM (it puts everything back), and after a SIGKILL `rtlab
    /// restore` on its state directory before that goes.
    fn drop(&mut self) {
        common::end_and_restore(&mut self.child, &self.dir.path().join("state"));
    }
}

/// One test at a time: each moves every process on the host.
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The CPU to focus (the last), or why these tests cannot run here.
fn focusable() -> Result<usize, String> {
    if !common::is_root() {
        return Err("focusing moves every process and IRQ: needs root".into());
    }
    let cgroups = std::fs::read_to_string("/proc/cgroups").unwrap_or_default();
    let cpuset = cgroups.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.first() == Some(&"cpuset") && fields.last() == Some(&"1")
    });
    if !cpuset {
        return Err("the kernel has no cpuset controller enabled (/proc/cgroups)".into());
    }
    let online = CpuSet::online();
    if online.len() < 2 {
        return Err(format!(
            "one online CPU ({online}): focusing needs one left for the rest"
        ));
    }
    Ok(online.iter().last().unwrap())
}

macro_rules! require_focus {
    () => {
        match focusable() {
            Ok(cpu) => (cpu, HOST.lock().unwrap_or_else(|p| p.into_inner())),
            Err(why) => {
                common::skip(&why);
                return;
            }
        }
    };
}

/// A field of /proc/PID/status.
fn status_field(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        .trim()
        .to_string()
}

fn cpus_allowed(pid: u32) -> CpuSet {
    CpuSet::parse(&status_field(pid, "Cpus_allowed_list")).unwrap()
}

/// The cpuset (cgroup) a process is in.
fn cpuset_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cpuset"))
        .unwrap()
        .trim()
        .to_string()
}

fn assert_same_host(before: &Snapshot, when: &str) {
    let differences = Snapshot::capture().differences(before);
    assert!(
        differences.is_empty(),
        "{when}, the host differs from before:\n{}",
        differences.join("\n")
    );
}

fn sleeper() -> Child {
    Command::new("sleep").arg("120").spawn().unwrap()
}

#[test]
fn an_attached_process_runs_in_the_partition_and_the_host_is_put_back() {
    let (cpu, _host) = require_focus!();
    let mut sleep = sleeper();
    let before = Snapshot::capture();
    assert!(cpus_allowed(sleep.id()).contains(cpu));
    let mut serve = Focused::start(cpu);
    let attached = Attached::start(&serve.socket(), None);
    attached.says("ATTACHED");
    let server = serve.child.id();
    assert_eq!(
        cpus_allowed(attached.pid()),
        CpuSet::from_cpus(vec![cpu]),
        "the attached process is confined to the focused CPU"
    );
    assert_eq!(
        cpuset_of(attached.pid()),
        cpuset_of(server),
        "the attached process is in the server's partition"
    );
    assert_ne!(cpuset_of(server), cpuset_of(sleep.id()));
    assert!(
        !cpus_allowed(sleep.id()).contains(cpu),
        "a process started before may no longer run on CPU {cpu}"
    );
    let doc = serve.stop();
    attached.says("LET GO");
    let focus = &doc["focus"];
    assert_eq!(focus["cpus"], cpu.to_string(), "{doc}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{doc}");
    let said = &runs[0]["config"]["focus"];
    assert_eq!(said["cpus"], focus["cpus"], "the run says it was focused");
    assert_eq!(said["partition"], focus["partition"]);
    assert!(focus["unmoved"].is_array(), "{focus}");
    assert_same_host(&before, "after the server stopped");
    let _ = sleep.kill();
    let _ = sleep.wait();
}

#[test]
fn a_detached_process_leaves_and_serving_goes_on() {
    let (cpu, _host) = require_focus!();
    let before = Snapshot::capture();
    let mut serve = Focused::start(cpu);
    let first = Attached::start_with(&serve.socket(), Some(20), true);
    let helper: u32 = first.says("HELPER")["HELPER ".len()..]
        .trim()
        .parse()
        .unwrap();
    first.says("DETACHED");
    let server = serve.child.id();
    for (pid, who) in [
        (first.pid(), "a detached process"),
        (helper, "the helper it forked inside"),
    ] {
        assert_ne!(
            cpuset_of(pid),
            cpuset_of(server),
            "{who} has left the partition"
        );
        assert!(!cpus_allowed(pid).contains(cpu), "{who}");
    }
    // SAFETY: kill has no memory preconditions; the helper is this test's.
    unsafe { libc::kill(helper as i32, libc::SIGKILL) };
    let second = Attached::start(&serve.socket(), Some(20));
    second.says("DETACHED");
    let doc = serve.stop();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{doc}");
    for run in runs {
        assert_eq!(run["status"], "complete", "{run}");
        assert_eq!(run["series"][0]["samples"], 20, "{run}");
    }
    drop((first, second));
    assert_same_host(&before, "after the server stopped");
}

#[test]
fn a_killed_focused_server_is_put_back_by_restore() {
    let (cpu, _host) = require_focus!();
    let mut sleep = sleeper();
    let before = Snapshot::capture();
    let mut serve = Focused::start(cpu);
    let attached = Attached::start(&serve.socket(), None);
    attached.says("ATTACHED");
    assert!(!cpus_allowed(sleep.id()).contains(cpu));
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    attached.says("LET GO");
    drop(attached);
    assert!(
        !Snapshot::capture().differences(&before).is_empty(),
        "nobody put the host back yet"
    );
    let out = run(rtlab(&serve.dir.path().join("state")).arg("restore"));
    assert!(out.status.success());
    assert_same_host(&before, "after SIGKILL and rtlab restore");
    assert!(cpus_allowed(sleep.id()).contains(cpu));
    let _ = sleep.kill();
    let _ = sleep.wait();
}

#[test]
fn kurt_table_runs_the_executive_focused_and_not() {
    let (cpu, _host) = require_focus!();
    let dir = tempfile::TempDir::new().unwrap();
    let json = dir.path().join("kurt.json");
    let before = Snapshot::capture();
    let out = run(rtlab(dir.path())
        .args(["exec", "kurt-table", "--processes", "--focus"])
        .arg(cpu.to_string())
        .args(["--cpu", &cpu.to_string()])
        .args(["--tasks", "1", "--duration", "1s", "--idle-only", "--json"])
        .arg(&json));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for title in [
        "(a) SCHED_FIFO processes",
        "SCHED_ALL_PROCS",
        "(c) processes under rtlab's executive, focused",
    ] {
        assert!(text.contains(title), "no {title} in:\n{text}");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["focus"], cpu.to_string());
    let cells = doc["cells"].as_array().unwrap();
    let kinds: Vec<(&str, bool)> = cells
        .iter()
        .map(|c| (c["mode"].as_str().unwrap(), c["focused"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("fifo", false), ("executive", false), ("executive", true)]
    );
    for cell in cells {
        let count = |key: &str| cell[key].as_u64().unwrap();
        assert_eq!(count("activations"), 100, "1 s of a 10 ms task: {cell}");
        assert_eq!(
            count("started") + count("missed_activations") + count("not_reached"),
            count("activations"),
            "{cell}"
        );
        assert!(count("started") > 0, "{cell}");
    }
    let focused_run = &doc["runs"][2];
    assert_eq!(focused_run["config"]["focus"], cpu.to_string());
    assert_eq!(doc["runs"][1]["config"]["focus"], serde_json::Value::Null);
    assert_same_host(&before, "after the table");
}

#[test]
fn a_focus_the_table_cannot_have_is_refused() {
    let dir = tempfile::TempDir::new().unwrap();
    let refused = |args: &[&str], why: &str| {
        let out = run(rtlab(dir.path())
            .args(["exec", "kurt-table", "--tasks", "1", "--duration", "1s"])
            .args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    };
    refused(
        &["--focus", "0"],
        "--focus gives the executive's processes their CPUs alone: it needs --processes",
    );
    let every = CpuSet::online().to_string();
    refused(
        &["--processes", "--focus", &every],
        "is every online CPU: none would be left",
    );
    if let Some(last) = CpuSet::online()
        .iter()
        .last()
        .filter(|_| CpuSet::online().len() > 1)
    {
        let first = CpuSet::online().iter().next().unwrap().to_string();
        refused(
            &["--processes", "--focus", &last.to_string(), "--cpu", &first],
            "is not among the focused CPUs",
        );
        let serve = run(rtlab(dir.path())
            .args(["exec", "serve", "--no-store", "--duration", "1s", "--focus"])
            .arg(last.to_string())
            .args(["--cpus", &first]));
        assert_eq!(serve.status.code(), Some(2), "{serve:?}");
        let stderr = String::from_utf8_lossy(&serve.stderr);
        assert!(
            stderr.contains(&format!(
                "--cpus: CPU {first} is not among the focused CPUs (--focus {last})"
            )),
            "{stderr}"
        );
    }
}
