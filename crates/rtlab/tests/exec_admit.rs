//! Admission end to end: `exec admit` gives the textbook verdicts on the
//! textbook sets of examples/ (each file cites its source), a set it
//! admits with this machine's measured overheads runs with no deadline
//! miss, a set it refuses does not run unless forced (and then misses),
//! `exec serve` refuses a registration that cannot fit and names the test,
//! and `--budget-from` takes WCETs from a stored run. Never an absolute
//! timing: verdicts, counts, exit codes and texts.

mod common;

use common::{assert_refused, rtlab, run};
use rtlab_client::{Error, Params, Periodic};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The live tests of this file one at a time: each runs real-time tasks
/// on the last CPU, and two at once would make each other miss.
static LIVE: Mutex<()> = Mutex::new(());

fn live() -> std::sync::MutexGuard<'static, ()> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// `rtlab exec admit ARGS --json`: its exit code and document.
fn admit(args: &[&str]) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(&dir.path().join("state"))
        .args(["exec", "admit", "--json"])
        .args(args));
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {:?}", out.stdout));
    (out.status.code().unwrap(), doc)
}

/// The verdict of `test` on the only CPU of `doc`.
fn verdict<'a>(doc: &'a Value, test: &str) -> &'a Value {
    let cpus = doc["analysis"]["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1, "{doc}");
    let tests = cpus[0]["tests"].as_array().unwrap();
    let outcome = tests
        .iter()
        .find(|t| t["test"] == test)
        .unwrap_or_else(|| panic!("no {test} in {doc}"));
    &outcome["verdict"]["verdict"]
}

/// The response bounds of the only CPU's tasks, by name, in ns.
fn responses(doc: &Value) -> Vec<(String, Option<u64>)> {
    doc["analysis"]["cpus"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["response_ns"].as_u64(),
            )
        })
        .collect()
}

#[test]
fn burns_and_wellings_set_is_admitted_by_exact_analysis_alone() {
    // examples/admit-rta.toml: Burns & Wellings §11.5, (7,3), (12,3), (20,5).
    let file = example("admit-rta.toml");
    let (code, doc) = admit(&[file.to_str().unwrap(), "--overheads", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "rtlab.admit/1");
    assert_eq!(doc["admitted"], true);
    assert_eq!(doc["analysis"]["policy"], "fixed_priority");
    assert_eq!(doc["analysis"]["overheads"]["source"], "none");
    assert_eq!(verdict(&doc, "utilization"), "pass");
    assert_eq!(verdict(&doc, "liu_layland"), "fail");
    assert_eq!(verdict(&doc, "hyperbolic"), "fail");
    assert_eq!(verdict(&doc, "response_time"), "pass");
    let ms = |n: u64| Some(n * 1_000_000);
    assert_eq!(
        responses(&doc),
        vec![
            ("a".into(), ms(3)),
            ("b".into(), ms(6)),
            ("c".into(), ms(20))
        ]
    );
    for task in doc["tasks"].as_array().unwrap() {
        assert_eq!(task["wcet_from"]["from"], "work", "{task}");
    }
    assert!(doc["refusal"].is_null());
}

#[test]
fn a_set_over_one_cpu_is_refused_naming_the_test_and_what_fits() {
    // examples/admit-overload.toml: U = 1.4 on one CPU.
    let file = example("admit-overload.toml");
    let (code, doc) = admit(&[file.to_str().unwrap(), "--overheads", "none"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["admitted"], false);
    assert_eq!(verdict(&doc, "utilization"), "fail");
    assert_eq!(verdict(&doc, "response_time"), "fail");
    let refusal = &doc["refusal"];
    assert_eq!(refusal["victim"], "slow", "{refusal}");
    assert!(!refusal["message"].as_str().unwrap().is_empty());
    assert!(
        !refusal["suggestions"].as_array().unwrap().is_empty(),
        "{refusal}"
    );
    // The text says it too.
    let dir = tempfile::tempdir().unwrap();
    let out = run(rtlab(&dir.path().join("state"))
        .args(["exec", "admit", "--overheads", "none"])
        .arg(&file));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not admitted: "), "{text}");
    assert!(
        text.contains("utilization") && text.contains("FAIL"),
        "{text}"
    );
}

#[test]
fn edf_with_short_deadlines_is_refused_by_processor_demand() {
    // examples/admit-edf.toml: U = 0.6, but h(5 ms) = 6 ms > 5 ms.
    let file = example("admit-edf.toml");
    let (code, doc) = admit(&[
        file.to_str().unwrap(),
        "--policy",
        "edf",
        "--overheads",
        "none",
    ]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["analysis"]["policy"], "edf");
    assert_eq!(verdict(&doc, "utilization"), "pass");
    assert_eq!(verdict(&doc, "processor_demand"), "fail");
    assert_eq!(doc["refusal"]["test"], "processor_demand", "{doc}");
    // Fixed priorities miss too: the second task responds at 6 ms > 5 ms.
    let (code, doc) = admit(&[file.to_str().unwrap(), "--overheads", "none"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(verdict(&doc, "response_time"), "fail");
    assert_eq!(responses(&doc)[1], ("second".to_string(), Some(6_000_000)));
}

#[test]
fn overrides_enter_the_analysis_and_its_source() {
    // 1 ms of jitter on Burns & Wellings' set: c's 20 ms response is late.
    let file = example("admit-rta.toml");
    let (code, doc) = admit(&[
        file.to_str().unwrap(),
        "--overheads",
        "none",
        "--jitter",
        "1ms",
    ]);
    assert_eq!(code, 1, "{doc}");
    let overheads = &doc["analysis"]["overheads"];
    assert_eq!(overheads["release_jitter_ns"], 1_000_000);
    assert!(
        overheads["source"].as_str().unwrap().contains("--jitter"),
        "{overheads}"
    );
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("bad.toml");
    std::fs::write(
        &set,
        "[[task]]\nname = \"a\"\nperiod = \"10ms\"\nwork = \"20ms\"\n",
    )
    .unwrap();
    let at = format!("{}:", set.display());
    assert_refused(&["exec", "admit", set.to_str().unwrap()], &[&at, "work"]);
    assert_refused(
        &["exec", "admit", "/nonexistent/set.toml"],
        &["/nonexistent/set.toml"],
    );
    let good = example("admit-rta.toml");
    assert_refused(
        &["exec", "admit", good.to_str().unwrap(), "--policy", "rm"],
        &["--policy"],
    );
    assert_refused(
        &[
            "exec",
            "admit",
            good.to_str().unwrap(),
            "--overheads",
            "none",
            "--budget-from",
            "nosuchrun",
        ],
        &["--budget-from", "nosuchrun"],
    );
}

/// `exec periodic --taskset FILE --duration 3s` with its JSON.
fn periodic(state: &Path, file: &Path, extra: &[&str]) -> (i32, String, Option<Value>) {
    let json = state.with_extension("json");
    let out = run(rtlab(state)
        .args(["exec", "periodic", "--taskset"])
        .arg(file)
        .args(["--duration", "3s", "--json"])
        .arg(&json)
        .args(extra));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap(), stderr, common::read_json(&json))
}

fn deadline_misses(run: &Value) -> u64 {
    run["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["metric"] == "response_time")
        .map(|s| s["missed"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_set_admitted_here_runs_with_no_deadline_miss() {
    require_realtime!();
    let _live = live();
    let file = example("admit-fits.toml");
    let (code, doc) = admit(&[file.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    let source = doc["analysis"]["overheads"]["source"].as_str().unwrap();
    assert!(source.starts_with("measured on CPU"), "{source}");
    assert!(
        doc["analysis"]["overheads"]["release_cost_ns"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(doc["measured"]["per_cpu"][0]["activations"], 300);
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, run) = periodic(&dir.path().join("state"), &file, &["--no-store"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("admission: admitted"), "{stderr}");
    let run = run.expect("the run's JSON");
    assert_eq!(run["status"], "complete", "{}", run["warnings"]);
    let responses = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["metric"] == "response_time")
        .count();
    assert_eq!(responses, 3);
    assert_eq!(deadline_misses(&run), 0, "{}", run["warnings"]);
}

#[test]
fn a_set_refused_here_does_not_run_unless_forced_and_then_misses() {
    require_realtime!();
    let _live = live();
    let file = example("admit-overload.toml");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (code, stderr, run) = periodic(&state, &file, &["--no-store"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("admission refused the task set: "),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(run.is_none(), "no run when refused");
    let (code, stderr, run) = periodic(&state, &file, &["--no-store", "--force"]);
    assert!(stderr.contains("--force: running it anyway"), "{stderr}");
    let run = run.expect("the forced run's JSON");
    assert!(matches!(code, 0 | 1), "{stderr}");
    assert!(deadline_misses(&run) > 0, "{}", run["warnings"]);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("admission refused"), "{warnings}");
}

#[test]
fn budget_from_takes_each_wcet_from_a_stored_run() {
    require_realtime!();
    let _live = live();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let file = example("admit-fits.toml");
    let (code, stderr, _) = periodic(&state, &file, &[]);
    assert_eq!(code, 0, "{stderr}");
    let out = run(rtlab(&state)
        .args([
            "exec",
            "admit",
            "--json",
            "--overheads",
            "none",
            "--budget-from",
            "last",
        ])
        .arg(&file));
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        // The estimate was made: each budgeted task's WCET is its pWCET.
        Some(0 | 1) => {
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            for task in doc["tasks"].as_array().unwrap() {
                let from = &task["wcet_from"];
                match task["name"].as_str().unwrap() {
                    "control" | "video" => {
                        assert_eq!(from["from"], "pwcet", "{task}");
                        assert_eq!(from["exceedance_per_activation"], 1e-9);
                        let series = format!("{}.execution", task["name"].as_str().unwrap());
                        assert_eq!(from["series"], series.as_str());
                    }
                    // No budget, no execution series: its response series.
                    _ => assert_eq!(from["from"], "pwcet", "{task}"),
                }
            }
        }
        // 150 activations of a 20 ms task: too few blocks for a fit, and
        // the refusal says why and what to do.
        Some(2) => {
            assert!(stderr.contains("no pWCET"), "{stderr}");
            assert!(stderr.contains("longer run"), "{stderr}");
            assert!(stderr.contains(".execution"), "{stderr}");
        }
        other => panic!("exit {other:?}: {stderr}"),
    }
}

/// A server on a socket of its own on the last CPU.
struct Serve {
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let dir = tempfile::TempDir::new().unwrap();
        let socket = dir.path().join("exec.sock");
        let mut child = rtlab(&dir.path().join("state"))
            .args(["exec", "serve", "--no-store", "--socket"])
            .arg(&socket)
            .args(["--cpus", &common::last_cpu().to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        common::wait_until_serving(&mut child, &socket);
        Serve {
            dir,
            child: Some(child),
        }
    }

    fn params(&self, name: &str) -> Params {
        Params {
            period_ns: 10_000_000,
            budget_ns: Some(6_000_000),
            name: Some(name.into()),
            socket: Some(self.dir.path().join("exec.sock")),
            ..Params::default()
        }
    }

    /// SIGTERM; its stderr.
    fn stop(mut self) -> String {
        let child = self.child.take().unwrap();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "exec serve exited with {}",
            out.status
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A thread attached with `params`, waiting for its activations until
/// told to stop, then detached; attached once this returns.
fn attached(params: Params) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn({
        let stop = Arc::clone(&stop);
        move || {
            let mut task = Periodic::attach(&params).expect("the first task is admitted");
            tx.send(()).unwrap();
            while !stop.load(Ordering::Acquire) {
                task.wait_next().unwrap();
            }
            task.detach().unwrap();
        }
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("attached");
    (stop, thread)
}

/// Attaches `params` on a thread of its own and detaches at once.
fn try_attach(params: Params) -> Result<(), Error> {
    std::thread::spawn(move || Periodic::attach(&params).and_then(|t| t.detach().map(|_| ())))
        .join()
        .unwrap()
}

#[test]
fn exec_serve_refuses_a_registration_that_cannot_fit_and_names_the_test() {
    require_realtime!();
    let _live = live();
    let serve = Serve::start(&[]);
    let (stop, first) = attached(serve.params("first"));
    // 6 ms every 10 ms twice on one CPU: U = 1.2.
    let refused = try_attach(serve.params("second"));
    stop.store(true, Ordering::Release);
    first.join().unwrap();
    let message = match refused {
        Err(Error::Refused(message)) => message,
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(Error::Refused(String::new()).code(), -3);
    let lower = message.to_lowercase();
    assert!(
        lower.contains("utilization") || lower.contains("response"),
        "{message}"
    );
    let stderr = serve.stop();
    assert!(stderr.contains("admission: CPU"), "{stderr}");
    assert!(stderr.contains("refused pid"), "{stderr}");
}

#[test]
fn exec_serve_without_admission_grants_what_does_not_fit() {
    require_realtime!();
    let _live = live();
    let serve = Serve::start(&["--admission", "off"]);
    let (stop, first) = attached(serve.params("first"));
    let second = try_attach(serve.params("second"));
    stop.store(true, Ordering::Release);
    first.join().unwrap();
    assert!(second.is_ok(), "{second:?}");
    let stderr = serve.stop();
    assert!(!stderr.contains("admission: CPU"), "{stderr}");
}
