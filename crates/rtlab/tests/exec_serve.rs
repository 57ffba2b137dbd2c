//! `rtlab exec serve` end to end, with separate processes: the test binary
//! re-runs itself as a worker (`worker_entry`, driven by environment
//! variables) that attaches through the Rust client. Proves the
//! accounting of activations, the stored runs, the faults (a worker
//! SIGKILLed, a worker that hangs, the executive SIGKILLed), hostile
//! requests and who may attach. Never asserts a timing; every wait has a
//! generous cap.

mod common;

use common::{rtlab, run};
use rtlab_client::{Error, Params, Periodic};
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const WORKER_ENV: &str = "RTLAB_TEST_SERVE_WORKER";

/// Not a test of its own: what a worker process runs (see [`Worker`]).
#[test]
fn worker_entry() {
    let Ok(mode) = std::env::var(WORKER_ENV) else {
        return;
    };
    let name = std::env::var("RTLAB_TEST_NAME").unwrap_or_else(|_| "worker".into());
    let mut params = Params::every(2_000_000);
    params.name = Some(name);
    let mut task = match Periodic::attach(&params) {
        Ok(task) => task,
        Err(e) => {
            println!(
                "RESULT {{\"code\":{},\"error\":{:?}}}",
                e.code(),
                e.to_string()
            );
            return;
        }
    };
    println!("ATTACHED {}", rtlab_core::sched::gettid());
    let result = match mode.split_once(':') {
        Some(("count", n)) => (0..n.parse::<u64>().unwrap())
            .try_for_each(|_| task.wait_next().map(|_| ()))
            .and_then(|()| task.detach().map(|_| ())),
        _ if mode == "spin" => {
            task.wait_next().unwrap();
            loop {
                std::hint::spin_loop();
            }
        }
        _ => loop {
            if let Err(e) = task.wait_next() {
                break Err(e);
            }
        },
    };
    let code = result.as_ref().err().map_or(0, Error::code);
    println!(
        "RESULT {{\"code\":{code},\"policy\":{}}}",
        rtlab_client::current_policy()
    );
}

/// A worker process and the lines it prints.
struct Worker {
    child: Child,
    lines: Receiver<String>,
}

impl Worker {
    fn start(socket: &Path, mode: &str, name: &str) -> Worker {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["worker_entry", "--exact", "--nocapture", "--test-threads=1"])
            .env(WORKER_ENV, mode)
            .env("RTLAB_TEST_NAME", name)
            .env(rtlab_client::SOCKET_ENV, socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Worker { child, lines }
    }

    /// The first line starting with `prefix` (its rest), within `secs`.
    fn line(&self, prefix: &str, secs: u64) -> String {
        let give_up = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                // libtest may print `test worker_entry ... ` before it.
                Ok(line) => {
                    if let Some(at) = line.find(prefix) {
                        return line[at + prefix.len()..].trim().to_string();
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {prefix} line within {secs} s"),
                Err(RecvTimeoutError::Disconnected) => panic!("the worker ended without {prefix}"),
            }
        }
    }

    fn attached(&self) -> i32 {
        self.line("ATTACHED", 20).parse().unwrap()
    }

    fn result(&self, secs: u64) -> serde_json::Value {
        serde_json::from_str(&self.line("RESULT", secs)).unwrap()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A server process on a socket of its own.
struct Serve {
    dir: tempfile::TempDir,
    child: Child,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let dir = tempfile::TempDir::new().unwrap();
        let mut child = rtlab(&dir.path().join("state"))
            .args(["exec", "serve", "--socket"])
            .arg(dir.path().join("exec.sock"))
            .arg("--db")
            .arg(dir.path().join("results.db"))
            .arg("--json")
            .arg(dir.path().join("serve.json"))
            .args(extra)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let socket = dir.path().join("exec.sock");
        common::wait_until_serving(&mut child, &socket);
        Serve { dir, child }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("exec.sock")
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn status(&self) -> rtlab_client::protocol::StatusReply {
        rtlab_client::executive_status(Some(&self.socket())).unwrap()
    }

    /// Activations of the attached task `name` (None: not attached).
    fn activations(&self, name: &str) -> Option<u64> {
        self.status()
            .tasks
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.stats.activations)
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }

    /// SIGTERM, exit 0, the runs of `--json`.
    fn stop(&mut self) -> Vec<serde_json::Value> {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert!(status.success(), "exec serve exited with {status}");
        assert!(!self.socket().exists(), "the socket is removed");
        let text = std::fs::read_to_string(self.dir.path().join("serve.json")).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "rtlab.serve/1");
        doc["runs"].as_array().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_named<'a>(runs: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    runs.iter()
        .find(|r| r["config"]["name"] == name)
        .unwrap_or_else(|| panic!("no run of {name} in {runs:?}"))
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < give_up, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn policy_of(tid: i32) -> i32 {
    // SAFETY: plain syscall.
    unsafe { libc::sched_getscheduler(tid) & !0x4000_0000 }
}

/// One server at a time: they share the CPUs and their executives spin.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! require_root {
    () => {
        if !common::is_root() {
            common::skip("exec serve promotes other processes' threads: needs root");
            return;
        }
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    };
}

#[test]
fn a_process_is_released_n_times_and_its_run_is_stored() {
    require_root!();
    let mut serve = Serve::start(&[]);
    let worker = Worker::start(&serve.socket(), "count:100", "counted");
    worker.attached();
    assert_eq!(
        worker.result(60),
        serde_json::json!({"code": 0, "policy": 0})
    );
    let runs = serve.stop();
    let counted = run_named(&runs, "counted");
    let run_of = |key: &str| &counted[key];
    assert_eq!(run_of("status"), "complete");
    assert_eq!(run_of("probe"), "serve");
    let lateness = &run_of("series")[0];
    assert_eq!(lateness["name"], "counted.lateness");
    assert_eq!(lateness["metric"], "activation_lateness");
    assert_eq!(
        lateness["samples"], 100,
        "every activation worked is a sample"
    );
    assert_eq!(run_of("series")[1]["name"], "counted.response");
    // The run is in the store too, where show/compare/report read it.
    let out = run(rtlab(&serve.state())
        .args(["show", "--json", "--db"])
        .arg(serve.db())
        .arg(run_of("id").as_str().unwrap()));
    assert!(out.status.success());
}

#[test]
fn a_killed_process_is_dropped_and_the_other_goes_on() {
    require_root!();
    let mut serve = Serve::start(&[]);
    let mut victim = Worker::start(&serve.socket(), "forever", "victim");
    let other = Worker::start(&serve.socket(), "forever", "other");
    victim.attached();
    other.attached();
    wait_for("both released", 20, || {
        serve.activations("victim").unwrap_or(0) > 5 && serve.activations("other").unwrap_or(0) > 5
    });
    victim.kill();
    wait_for("the dead one dropped", 10, || {
        serve.activations("victim").is_none()
    });
    let before = serve.activations("other").unwrap();
    wait_for("the other released on", 20, || {
        serve.activations("other").unwrap() > before + 10
    });
    let runs = serve.stop();
    let dead = run_named(&runs, "victim");
    assert_eq!(dead["status"], "partial");
    assert!(
        dead["warnings"][0].as_str().unwrap().contains("died"),
        "{dead}"
    );
    assert!(dead["series"][0]["samples"].as_u64().unwrap() > 5);
    // The other is told the executive stopped, and is put back.
    assert_eq!(
        other.result(20),
        serde_json::json!({"code": -5, "policy": 0})
    );
    assert_eq!(run_named(&runs, "other")["status"], "partial");
}

#[test]
fn a_process_that_never_yields_is_dropped_and_demoted() {
    require_root!();
    // Two CPUs when there are: the spinner on one, the other on the other
    // (same priority on one CPU, the spinner would hold the other off).
    let mut serve = Serve::start(&["--cpus", "all", "--hang-timeout", "300ms"]);
    let spinner = Worker::start(&serve.socket(), "spin", "spinner");
    let tid = spinner.attached();
    let other = Worker::start(&serve.socket(), "forever", "steady");
    other.attached();
    wait_for("the spinner dropped", 20, || {
        serve.activations("spinner").is_none()
    });
    assert_eq!(
        policy_of(tid),
        libc::SCHED_OTHER,
        "demoted to its old scheduling"
    );
    let before = serve.activations("steady").unwrap();
    wait_for("the other released on", 20, || {
        serve.activations("steady").unwrap() > before + 10
    });
    drop(spinner);
    let runs = serve.stop();
    let dropped = run_named(&runs, "spinner");
    assert_eq!(dropped["status"], "failed");
    assert!(
        dropped["warnings"][0]
            .as_str()
            .unwrap()
            .contains("dropped by the executive"),
        "{dropped}"
    );
    assert_eq!(other.result(20)["code"], -5);
}

#[test]
fn a_killed_executive_ends_wait_next_and_restore_leaves_nothing() {
    require_root!();
    // The spinner (on one CPU) never comes back to its client library:
    // only the journal can put it back. The other (on the other CPU) does.
    let mut serve = Serve::start(&["--cpus", "all", "--hang-timeout", "60s"]);
    let spinner = Worker::start(&serve.socket(), "spin", "stuck");
    let stuck = spinner.attached();
    let worker = Worker::start(&serve.socket(), "forever", "orphan");
    worker.attached();
    wait_for("released", 20, || {
        serve.activations("orphan").unwrap_or(0) > 3
    });
    assert_eq!(policy_of(stuck), libc::SCHED_FIFO);
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    // Returns (never blocks forever), with the scheduling put back.
    assert_eq!(
        worker.result(10),
        serde_json::json!({"code": -5, "policy": 0})
    );
    assert!(
        serve.socket().exists(),
        "a SIGKILLed server leaves its socket"
    );
    assert_eq!(
        policy_of(stuck),
        libc::SCHED_FIFO,
        "nobody put the spinner back yet"
    );
    let out = run(rtlab(&serve.state()).arg("restore"));
    assert!(out.status.success());
    assert!(!serve.socket().exists(), "rtlab restore removes it");
    assert_eq!(
        policy_of(stuck),
        libc::SCHED_OTHER,
        "and puts the spinner back"
    );
}

/// Sends `bytes` as one datagram on a new connection; the reply's text.
fn raw_exchange(socket: &Path, bytes: &[u8]) -> String {
    let fd = rtlab_client::connect(socket).unwrap();
    // SAFETY: a valid buffer on our own socket.
    unsafe { libc::send(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
    let mut buf = vec![0u8; 65536];
    let got = rtlab_client::protocol::recv(fd.as_fd(), &mut buf, 0).unwrap();
    let _ = fd.as_raw_fd();
    String::from_utf8_lossy(&buf[..got.len]).into_owned()
}

#[test]
fn hostile_requests_get_an_error_and_the_server_serves_on() {
    require_root!();
    let mut serve = Serve::start(&[]);
    let socket = serve.socket();
    let attach = |fields: &str| {
        format!(
            r#"{{"op":"attach","version":1,"tid":{},{fields}}}"#,
            rtlab_core::sched::gettid()
        )
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "not a request"),
        (vec![b' '; 70_000], "longer than"),
        (
            br#"{"op":"attach","version":1,"tid":1,"period_ns":1000000}"#.to_vec(),
            "not a thread",
        ),
        (
            attach(r#""period_ns":1000000,"priority":99"#).into_bytes(),
            "priority",
        ),
        (attach(r#""period_ns":0"#).into_bytes(), "period_ns"),
        (
            attach(r#""period_ns":1000000,"evil":true"#).into_bytes(),
            "unknown field",
        ),
    ];
    for (bytes, says) in cases {
        let reply = raw_exchange(&socket, &bytes);
        assert!(
            reply.contains(r#""op":"error""#) && reply.contains(says),
            "{says}: {reply}"
        );
    }
    assert_eq!(policy_of(rtlab_core::sched::gettid()), libc::SCHED_OTHER);
    let worker = Worker::start(&socket, "count:20", "after");
    worker.attached();
    assert_eq!(worker.result(60)["code"], 0);
    assert_eq!(run_named(&serve.stop(), "after")["status"], "complete");
}

/// Forks a child that becomes `nobody` and attaches: its exit code is
/// 0 when released and detached, else minus the client's error code.
fn attach_as_nobody(socket: &Path) -> i32 {
    // SAFETY: the child only calls async-signal-tolerant code paths of
    // this test (glibc resets its allocator's locks at fork) and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = (|| {
            // SAFETY: dropping privileges in the child only.
            unsafe {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return 100;
                }
            }
            let params = Params {
                socket: Some(socket.to_path_buf()),
                name: Some("nobody".into()),
                ..Params::every(2_000_000)
            };
            match Periodic::attach(&params) {
                Ok(mut task) => {
                    for _ in 0..5 {
                        if let Err(e) = task.wait_next() {
                            return -e.code();
                        }
                    }
                    task.detach().map_or_else(|e| -e.code(), |_| 0)
                }
                Err(e) => -e.code(),
            }
        })();
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    libc::WEXITSTATUS(status)
}

#[test]
fn only_root_and_the_allowed_may_attach() {
    require_root!();
    // Root only: the socket is 0600, nobody cannot even connect.
    let mut serve = Serve::start(&[]);
    assert_eq!(attach_as_nobody(&serve.socket()), 2, "Error::Connect");
    serve.stop();
    // Others may attach, but nobody is not among them: refused by its credentials.
    let mut serve = Serve::start(&["--allow-group", "root"]);
    assert_eq!(attach_as_nobody(&serve.socket()), 3, "Error::Refused");
    serve.stop();
    let mut serve = Serve::start(&["--allow-user", "nobody"]);
    assert_eq!(attach_as_nobody(&serve.socket()), 0);
    let runs = serve.stop();
    assert_eq!(run_named(&runs, "nobody")["config"]["uid"], 65534);
}

#[test]
fn bad_settings_are_refused_before_anything_changes() {
    let dir = tempfile::TempDir::new().unwrap();
    let socket = dir.path().join("x.sock");
    let socket = socket.to_str().unwrap();
    common::assert_refused(
        &["exec", "serve", "--socket", socket, "--cpus", "4000"],
        &["--cpus", "4000"],
    );
    common::assert_refused(
        &[
            "exec",
            "serve",
            "--socket",
            socket,
            "--priority",
            "50",
            "--max-priority",
            "60",
        ],
        &["--max-priority 60", "below the executive's --priority 50"],
    );
    common::assert_refused(
        &[
            "exec",
            "serve",
            "--socket",
            socket,
            "--allow-user",
            "no-such-user-rtlab",
        ],
        &["--allow-user", "no user named"],
    );
    common::assert_refused(
        &["exec", "status", "--socket", socket],
        &["exec status", "no executive", "x.sock"],
    );
}

#[test]
fn a_live_executive_is_not_replaced() {
    require_root!();
    let mut serve = Serve::start(&[]);
    let out = run(rtlab(&serve.state())
        .args([
            "exec",
            "serve",
            "--no-store",
            "--duration",
            "1s",
            "--socket",
        ])
        .arg(serve.socket()));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another executive listens at"));
    assert!(
        serve.status().tasks.is_empty(),
        "the first one still answers"
    );
    serve.stop();
}

#[test]
fn a_task_set_gives_each_named_process_its_task_s_timing() {
    require_root!();
    let dir = tempfile::TempDir::new().unwrap();
    let set = dir.path().join("set.toml");
    std::fs::write(
        &set,
        "[[task]]\nname = \"video\"\nperiod = \"5ms\"\noffset = \"1ms\"\ndeadline = \"4ms\"\npriority = 70\n",
    )
    .unwrap();
    let mut serve = Serve::start(&["--taskset", set.to_str().unwrap()]);
    // The worker asks for 2 ms: the set's task says 5 ms, and wins.
    let video = Worker::start(&serve.socket(), "count:20", "video");
    video.attached();
    assert_eq!(video.result(60)["code"], 0);
    // A name the set does not have is refused (code -3, Refused).
    let stranger = Worker::start(&serve.socket(), "count:20", "stranger");
    let refused = stranger.result(20);
    assert_eq!(refused["code"], -3, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("stranger"),
        "{refused}"
    );
    let runs = serve.stop();
    let config = &run_named(&runs, "video")["config"];
    assert_eq!(config["period_ns"], 5_000_000, "{config}");
    assert_eq!(config["offset_ns"], 1_000_000, "{config}");
    assert_eq!(config["deadline_ns"], 4_000_000, "{config}");
    assert_eq!(config["priority"], 70, "{config}");
}

#[test]
fn an_injected_stall_shows_in_the_stored_lateness() {
    require_root!();
    let mut serve = Serve::start(&[]);
    let worker = Worker::start(&serve.socket(), "count:1500", "stalled");
    worker.attached();
    // 3 ms at FIFO 99 on the executive's CPU, every 200 ms, from 600 ms on.
    let stalls = 5;
    let injector = common::stall_a_periodic_run(stalls);
    assert_eq!(injector.join().unwrap(), stalls);
    assert_eq!(worker.result(60)["code"], 0);
    let runs = serve.stop();
    let lateness = &run_named(&runs, "stalled")["series"][0];
    eprintln!(
        "{} samples, {} missed",
        lateness["samples"], lateness["missed"]
    );
    let late = common::samples_at_least(lateness, 1000);
    assert!(
        late >= u64::from(stalls),
        "{late} activations 1 ms late or more in the stored run, {stalls} stalls of 3 ms injected"
    );
}

#[test]
fn the_socket_accepts_connections_as_soon_as_it_appears() {
    require_root!();
    for _ in 0..3 {
        let dir = tempfile::TempDir::new().unwrap();
        let socket = dir.path().join("exec.sock");
        let mut child = rtlab(&dir.path().join("state"))
            .args(["exec", "serve", "--no-store", "--socket"])
            .arg(&socket)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let give_up = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(Instant::now() < give_up, "no socket within 20 s");
            std::hint::spin_loop();
        }
        // A user's script waits for the socket, then starts its program.
        let connected = rtlab_client::connect(&socket);
        let _ = child.kill();
        let _ = child.wait();
        assert!(connected.is_ok(), "{connected:?}");
    }
}
