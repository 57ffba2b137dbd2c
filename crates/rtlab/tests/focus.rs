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
fn focus_in_background(state: &Path, cpu: usize, dir: &Path) -> (Background, i32) {
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
    let background = |child| Background {
        child,
        state: state.to_path_buf(),
    };
    wait_for(&ready, &mut child);
    let pid = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (background(child), pid)
}

/// A `rtlab focus` in the background. A test that fails before it ends
/// must not leave the host focused (its journal is in the test's
/// temporary state directory, gone with it): dropped, it gets SIGTERM
/// (it puts everything back), then `rtlab restore` runs on its state
/// directory.
struct Background {
    child: Child,
    state: PathBuf,
}

impl Drop for Background {
    fn drop(&mut self) {
        common::end_and_restore(&mut self.child, &self.state);
    }
}

#[test]
fn a_command_runs_alone_and_everything_is_put_back() {
    let cpu = require_focus!();
    let _host = host();
    command_runs_alone(cpu);
}

/// `rtlab focus CPU -- sh -c …`: inside, the command has the CPU and a
/// process started before has not, nor has any IRQ that could move;
/// after, the snapshot is as before and a pinned thread has its CPU.
fn command_runs_alone(cpu: usize) {
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
    restore_after_sigkill(cpu);
}

fn restore_after_sigkill(cpu: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let (tid, stop, pinned) = pinned_thread(cpu);
    let before = Snapshot::capture();

    let (mut focus, inner) = focus_in_background(&state, cpu, tmp.path());
    assert!(!focus_dirs().is_empty());
    common::signal(&focus.child, libc::SIGKILL);
    focus.child.wait().unwrap();

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
    assert!(
        first.child.try_wait().unwrap().is_none(),
        "the first focus ended"
    );

    // SIGTERM ends the first: passed to its command, then put back.
    common::signal(&first.child, libc::SIGTERM);
    let status = first.child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "the command's code"
    );
    assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    assert_same(&before, "after SIGTERM");
}

#[test]
fn two_focuses_started_at_once_one_wins_the_other_is_refused_cleanly() {
    // Both check for another focus before either has made its cpusets:
    // without one lock over check and partition, both went on, the loser
    // failed on the winner's exclusive CPUs and left a journal behind.
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let before = Snapshot::capture();
    for round in 0..10 {
        let start = || {
            rtlab(&state)
                .args(["focus", &cpu.to_string(), "--", "sleep", "0.2"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (start(), start());
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        let loser = outs.iter().find(|o| !o.status.success());
        let why = loser.map(|o| String::from_utf8_lossy(&o.stderr).into_owned());
        assert!(
            codes.contains(&Some(0)) && codes.contains(&Some(1)),
            "round {round}: {codes:?} {why:?}"
        );
        let why = why.unwrap();
        assert!(why.contains("another rtlab"), "round {round}: {why}");
        let left: Vec<_> = std::fs::read_dir(&state)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
            .filter(|name| name.to_string_lossy().starts_with("journal"))
            .collect();
        assert!(left.is_empty(), "round {round}: journal left: {left:?}");
        assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    }
    assert_same(&before, "after two focuses at once, ten times");
}

#[test]
fn on_v1_another_cpuset_with_cpus_is_named_and_nothing_changes() {
    // The kernel refuses an exclusive cpuset beside a sibling whose CPUs
    // overlap it: focusing failed half-way on an EINVAL naming neither.
    let cpu = require_focus!();
    let root = Path::new("/sys/fs/cgroup/cpuset");
    if !root.join("cpuset.cpu_exclusive").exists() {
        skip("no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset");
        return;
    }
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let before = Snapshot::capture();
    let other = root.join(format!("rtlab-test-other-{}", std::process::id()));
    std::fs::create_dir(&other).unwrap();
    let made = std::fs::write(other.join("cpuset.cpus"), "0\n")
        .and_then(|()| std::fs::write(other.join("cpuset.mems"), "0\n"));
    let out = made.map(|()| run(rtlab(tmp.path()).args(["focus", &cpu.to_string(), "--", "true"])));
    std::fs::remove_dir(&other).unwrap();
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("rtlab-test-other-") && stderr.contains("(CPUs 0) under"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert!(focus_dirs().is_empty(), "{:?}", focus_dirs());
    assert_same(&before, "after a focus refused beside another cpuset");
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
    common::assert_refused(
        &["focus", "0", "--", "/no/such/program"],
        &["COMMAND", "nothing was changed"],
    );
}

/// The cpuset controller lent to cgroup v2 for one test: the v1 cpuset
/// hierarchy (only its root cgroup, alone on its mount) is unmounted, and
/// mounted again when this is dropped, also on a panic.
struct CpusetOnV2 {
    point: String,
    before: HostCgroups,
}

/// What must be as before once the controller is back: the mount of the
/// v1 cpuset hierarchy and its line in /proc/cgroups (less the hierarchy
/// number, which the kernel gives anew).
#[derive(Debug, PartialEq, Eq)]
struct HostCgroups {
    mounts: Vec<String>,
    cpuset: String,
}

impl HostCgroups {
    fn now() -> HostCgroups {
        // Without mount ids and device numbers, sorted: a mount made
        // again comes last with new numbers.
        let mut mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains(" - cgroup"))
            .map(|l| {
                l.split_once(' ')
                    .unwrap()
                    .1
                    .split_once(' ')
                    .unwrap()
                    .1
                    .to_string()
            })
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .collect();
        mounts.sort();
        let cpuset = std::fs::read_to_string("/proc/cgroups")
            .unwrap()
            .lines()
            .find(|l| l.starts_with("cpuset\t"))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                format!("cpuset cgroups={} enabled={}", f[2], f[3])
            })
            .unwrap_or_default();
        HostCgroups { mounts, cpuset }
    }
}

fn v2_controllers() -> String {
    std::fs::read_to_string("/sys/fs/cgroup/unified/cgroup.controllers")
        .or_else(|_| std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers"))
        .unwrap_or_default()
}

impl CpusetOnV2 {
    fn lend() -> Result<CpusetOnV2, String> {
        if v2_controllers().split_whitespace().any(|c| c == "cpuset") {
            return Err("cpuset is on cgroup v2 already: the other tests ran the v2 path".into());
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        if !mountinfo.contains(" - cgroup2 ") {
            return Err("cgroup v2 is not mounted".into());
        }
        let Some(line) = mountinfo
            .lines()
            .find(|l| l.contains(" - cgroup ") && l.ends_with(",cpuset"))
        else {
            return Err("no v1 cpuset hierarchy to lend".into());
        };
        let point = line.split(' ').nth(4).unwrap().to_string();
        if !line.ends_with(" rw,cpuset") {
            return Err(format!(
                "the v1 cpuset hierarchy shares its mount ({line}): left alone"
            ));
        }
        // Cgroups removed a moment ago (by the tests before) still count
        // until the kernel has destroyed them.
        let settled = Instant::now() + Duration::from_secs(5);
        let mut before = HostCgroups::now();
        while before.cpuset != "cpuset cgroups=1 enabled=1" && Instant::now() < settled {
            std::thread::sleep(Duration::from_millis(100));
            before = HostCgroups::now();
        }
        if before.cpuset != "cpuset cgroups=1 enabled=1" {
            return Err(format!(
                "the v1 cpuset hierarchy is in use ({}): left alone",
                before.cpuset
            ));
        }
        let status = std::process::Command::new("umount")
            .arg(&point)
            .status()
            .unwrap();
        if !status.success() {
            return Err(format!("umount {point} failed: {status}"));
        }
        let lent = CpusetOnV2 { point, before };
        // The hierarchy goes lazily; the controller appears on v2 after.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !v2_controllers().split_whitespace().any(|c| c == "cpuset") {
            if Instant::now() > deadline {
                return Err("cpuset never appeared in cgroup v2's cgroup.controllers".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(lent)
    }

    /// Mounts the hierarchy again (the v2 side lets go lazily: retried).
    fn give_back(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = std::process::Command::new("mount")
                .args(["-t", "cgroup", "-o", "cpuset", "cgroup", &self.point])
                .output()
                .unwrap();
            if out.status.success() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "cannot mount the cpuset hierarchy at {} again: {}",
                    self.point,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for CpusetOnV2 {
    fn drop(&mut self) {
        if HostCgroups::now() == self.before {
            return;
        }
        if let Err(e) = self.give_back() {
            eprintln!("{e}");
        }
    }
}

#[test]
fn on_cgroup_v2_the_same() {
    let cpu = require_focus!();
    let _host = host();
    let lent = match CpusetOnV2::lend() {
        Ok(lent) => lent,
        Err(why) => {
            skip(&format!("the v2 path: {why}"));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = run(rtlab(&tmp.path().join("state")).args([
        "focus",
        &cpu.to_string(),
        "--json",
        "--",
        "true",
    ]));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["report"]["backend"], "cgroup-v2", "{doc}");
    command_runs_alone(cpu);
    restore_after_sigkill(cpu);
    runs_as_nobody(cpu);
    lent.give_back().unwrap();
    assert_eq!(HostCgroups::now(), lent.before, "the host's cgroups");
}

#[test]
fn a_dry_run_says_what_would_move_and_changes_nothing() {
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let before = Snapshot::capture();
    let out = run(rtlab(&state).args(["focus", &cpu.to_string(), "--dry-run", "--json"]));
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["dry_run"], true);
    assert!(doc["report"]["moved"].as_u64().unwrap() > 0, "{doc}");
    // Per-CPU kernel threads of the CPU cannot leave it: said.
    assert!(
        !doc["report"]["unmoved"].as_array().unwrap().is_empty(),
        "{doc}"
    );
    assert_same(&before, "after a dry run");
    assert!(focus_dirs().is_empty());
    assert!(!state.exists() || std::fs::read_dir(&state).unwrap().next().is_none());
}

#[test]
fn the_command_runs_without_root_with_user() {
    let cpu = require_focus!();
    let _host = host();
    runs_as_nobody(cpu);
    common::assert_refused(
        &[
            "focus",
            &cpu.to_string(),
            "--user",
            "no-such-user-x",
            "--",
            "true",
        ],
        &["--user"],
    );
}

/// `--user nobody`: the command has uid 65534, and still the partition.
fn runs_as_nobody(cpu: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(rtlab(&tmp.path().join("state")).args([
        "focus",
        &cpu.to_string(),
        "--user",
        "65534",
        "--",
        "sh",
        "-c",
        "id -u; grep Cpus_allowed_list /proc/self/status",
    ]));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("65534"), "{stdout}");
    assert_eq!(allowed(lines.next().unwrap()), cpu.to_string(), "{stdout}");
    assert!(focus_dirs().is_empty());
}

#[test]
fn a_process_forking_fast_cannot_keep_the_cpu() {
    let cpu = require_focus!();
    let _host = host();
    let tmp = tempfile::tempdir().unwrap();
    let mut forker = std::process::Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .spawn()
        .unwrap();
    let loop_pid = forker.id();
    // Inside: the forking shell and its children of the moment (those
    // that ended while being read are skipped).
    let out_file = tmp.path().join("inside");
    let script = format!(
        "sleep 0.3; for p in {loop_pid} $(cat /proc/{loop_pid}/task/{loop_pid}/children); do \
         grep -h Cpus_allowed_list /proc/$p/status 2>/dev/null; done > {}; true",
        out_file.display()
    );
    let out = run(rtlab(&tmp.path().join("state")).args([
        "focus",
        &cpu.to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    forker.kill().unwrap();
    forker.wait().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let inside = std::fs::read_to_string(&out_file).unwrap();
    assert!(!inside.is_empty(), "the forking shell was not seen");
    for line in inside.lines() {
        let cpus = CpuSet::parse(&allowed(line)).unwrap();
        assert!(
            !cpus.contains(cpu),
            "a fast forker kept CPU {cpu}: {inside}"
        );
    }
    assert!(focus_dirs().is_empty());
}
