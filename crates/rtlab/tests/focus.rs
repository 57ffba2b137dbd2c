//! `rtlab focus`, live (root): the command runs on its CPUs alone, and
//! afterwards (also after a SIGKILL and `rtlab restore`) every thread's
//! CPUs and cgroup, every IRQ's affinity and the cpuset tree are as
//! before. These tests change the whole host: they take one lock (and
//! are run under the machine-wide /tmp/rtlab-host.lock).

mod common;

use common::{is_root, rtlab, run, skip};
use rtlab_core::cpuset::CpuSet;
use rtlab_focus::Snapshot;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static HOST: Mutex<()> = Mutex::new(());

fn host() -> MutexGuard<'static, ()> {
    HOST.lock().unwrap_or_else(|p| p.into_inner())
}

/// The CPU to focus (the last online one), or why these tests cannot run.
fn focus_cpu() -> Result<usize, String> {
    if !is_root() {
        return Err("rtlab focus needs root".into());
    }
    let online = CpuSet::online();
    if online.len() < 2 {
        return Err("one CPU online: nothing to focus".into());
    }
    let cpuset_somewhere = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains(" - cgroup ") && l.ends_with("cpuset") || l.contains(",cpuset"))
        || std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.contains("cpuset"))
        || std::fs::read_to_string("/sys/fs/cgroup/unified/cgroup.controllers")
            .is_ok_and(|c| c.contains("cpuset"));
    if !cpuset_somewhere {
        return Err("no cpuset controller mounted".into());
    }
    Ok(online.iter().last().unwrap())
}

macro_rules! require_focus {
    () => {
        match focus_cpu() {
            Ok(cpu) => cpu,
            Err(why) => {
                skip(&why);
                return;
            }
        }
    };
}

/// Fails with the differences, one a line.
fn assert_same(before: &Snapshot, what: &str) {
    let lines = Snapshot::capture().differences(before);
    assert!(
        lines.is_empty(),
        "{what}: not as before:\n{}",
        lines.join("\n")
    );
}

/// `cpus` as `Cpus_allowed_list` in a status text.
fn allowed(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A thread of this process pinned to `cpu`, parked until the sender drops.
fn pinned_thread(cpu: usize) -> (i32, mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        rtlab_core::sched::pin_current_thread(cpu).unwrap();
        tid_tx.send(rtlab_core::sched::gettid()).unwrap();
        let _ = stop_rx.recv();
    });
    (tid_rx.recv().unwrap(), stop_tx, handle)
}

fn sleeper() -> Child {
    std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap()
}

/// The focus dirs any rtlab left in the cpuset hierarchies.
fn focus_dirs() -> Vec<PathBuf> {
    [
        "/sys/fs/cgroup/cpuset",
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup",
    ]
    .iter()
    .filter_map(|root| std::fs::read_dir(root).ok())
    .flat_map(|d| d.flatten())
    .map(|e| e.path())
    .filter(|p| {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        name.starts_with("rtlab-focus-") || name.starts_with("rtlab-rest-")
    })
    .collect()
}

/// Waits until `file` exists (written by the focused command).
fn wait_for(file: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !file.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("rtlab focus exited early with {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `rtlab focus CPU -- sh -c SCRIPT` in the background; SCRIPT's `$$` is
/// written to `dir/ready` once it runs in the partition.
fn focus_in_background(state: &Path, cpu: usize, dir: &Path) -> (Child, i32) {
    let ready = dir.join("ready");
    let script = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 120",
        ready.display()
    );
    let mut child = rtlab(state)
        .args(["focus", &cpu.to_string(), "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&ready, &mut child);
    let pid = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (child, pid)
}

#[test]
fn a_command_runs_alone_and_everything_is_put_back() {
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let mut sleep = sleeper();
    let (tid, stop, pinned) = pinned_thread(cpu);
    let before = Snapshot::capture();

    let me = std::process::id();
    let out_file = tmp.path().join("inside");
    let script = format!(
        "{{ grep Cpus_allowed_list /proc/self/status; grep Cpus_allowed_list /proc/{}/status; \
         grep Cpus_allowed_list /proc/{me}/task/{tid}/status; \
         for f in /proc/irq/*/smp_affinity_list; do echo \"$f $(cat $f)\"; done; }} > {}",
        sleep.id(),
        out_file.display()
    );
    let out = run(rtlab(&tmp.path().join("state")).args([
        "focus",
        &cpu.to_string(),
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "rtlab.focus/1");
    assert_eq!(doc["exit_code"], 0);
    assert!(doc["report"]["moved"].as_u64().unwrap() > 0, "{doc}");

    let inside = std::fs::read_to_string(&out_file).unwrap();
    let mut lines = inside.lines();
    assert_eq!(
        allowed(lines.next().unwrap()),
        cpu.to_string(),
        "the command: {inside}"
    );
    let sleeper_cpus = CpuSet::parse(&allowed(lines.next().unwrap())).unwrap();
    assert!(
        !sleeper_cpus.contains(cpu),
        "a process started before kept CPU {cpu}: {inside}"
    );
    assert!(
        !allowed(lines.next().unwrap()).contains(&cpu.to_string()),
        "{inside}"
    );
    let refused: Vec<u64> = doc["report"]["irqs_unmoved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| pair[0].as_u64().unwrap())
        .collect();
    for line in lines {
        let (path, cpus) = line.split_once(' ').unwrap();
        let irq: u64 = path.split('/').nth(3).unwrap().parse().unwrap();
        let cpus = CpuSet::parse(cpus).unwrap();
        assert!(
            !cpus.contains(cpu) || refused.contains(&irq),
            "IRQ {irq} on CPUs {cpus} inside the focus, not reported as refused"
        );
    }
    let restored = doc["restored"].as_array().unwrap();
    assert!(restored.iter().all(|r| r["status"] != "failed"), "{doc}");

    assert_same(&before, "after the command");
    assert_eq!(
        rtlab_core::sched::thread_affinity(tid).unwrap(),
        CpuSet::from_cpus(vec![cpu]),
        "the pinned thread's CPUs"
    );
    assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    drop(stop);
    pinned.join().unwrap();
    sleep.kill().unwrap();
    sleep.wait().unwrap();
}

#[test]
fn after_sigkill_rtlab_restore_puts_everything_back() {
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let (tid, stop, pinned) = pinned_thread(cpu);
    let before = Snapshot::capture();

    let (mut focus, inner) = focus_in_background(&state, cpu, tmp.path());
    assert!(!focus_dirs().is_empty());
    common::signal(&focus, libc::SIGKILL);
    focus.wait().unwrap();

    let out = run(rtlab(&state).args(["restore", "--json"]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    assert_same(&before, "after SIGKILL and rtlab restore");
    assert_eq!(
        rtlab_core::sched::thread_affinity(tid).unwrap(),
        CpuSet::from_cpus(vec![cpu])
    );
    // The orphaned command, back among everything else, is ours to end.
    // SAFETY: kill(2) of the sleep this test started.
    unsafe { libc::kill(inner, libc::SIGKILL) };
    drop(stop);
    pinned.join().unwrap();
}

#[test]
fn a_second_focus_is_refused_and_the_first_goes_on() {
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let before = Snapshot::capture();
    let (mut first, inner) = focus_in_background(&tmp.path().join("a"), cpu, tmp.path());

    let out = run(rtlab(&tmp.path().join("b")).args(["focus", &cpu.to_string(), "--", "true"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("another rtlab"), "{stderr}");
    let status = std::fs::read_to_string(format!("/proc/{inner}/status")).unwrap();
    assert_eq!(
        allowed(&status),
        cpu.to_string(),
        "the first focus's command moved"
    );
    assert!(first.try_wait().unwrap().is_none(), "the first focus ended");

    // SIGTERM ends the first: passed to its command, then put back.
    common::signal(&first, libc::SIGTERM);
    let status = first.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "the command's code"
    );
    assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    assert_same(&before, "after SIGTERM");
}

#[test]
fn bad_cpu_lists_exit_2_and_change_nothing() {
    let online = CpuSet::online();
    let beyond = (online.iter().last().unwrap() + 5).to_string();
    common::assert_refused(&["focus", &beyond, "--", "true"], &["not online"]);
    common::assert_refused(
        &["focus", &online.to_string(), "--", "true"],
        &["at least one"],
    );
    common::assert_refused(&["focus", "x", "--", "true"], &["CPUS", "'x'"]);
}
