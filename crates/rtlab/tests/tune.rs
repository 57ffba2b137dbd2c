//! `rtlab tune`: promotion of throwaway processes and threads (set, rules,
//! apply, watch), undo, reused pids, bad rules files, systemd drop-ins and
//! the audit. Every test changes only processes it started itself.

mod common;

use common::{assert_refused, is_root, rtlab, run, skip};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{thread_affinity, thread_sched, Policy};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A process name no other test (or program) uses: `sleep` run through a
/// symlink of that name (the kernel names a process after the file it ran).
fn unique_name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    // comm keeps 15 bytes: 3 + 1 + 6 + 1 + 2 at most.
    format!(
        "rt{tag}{}x{}",
        std::process::id() % 1_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

struct Throwaway {
    dir: tempfile::TempDir,
    name: String,
}

impl Throwaway {
    fn new(tag: &str) -> Throwaway {
        let dir = tempfile::tempdir().unwrap();
        let name = unique_name(tag);
        let sleep = ["/usr/bin/sleep", "/bin/sleep"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("sleep is installed");
        std::os::unix::fs::symlink(sleep, dir.path().join(&name)).unwrap();
        Throwaway { dir, name }
    }

    fn program(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    fn start(&self) -> Proc {
        Proc(
            Command::new(self.program())
                .arg("300")
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }
}

/// A child killed when dropped: a failing test must not leave a promoted
/// `sleep 300` behind.
struct Proc(Child);

impl std::ops::Deref for Proc {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Proc {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stop(child: Proc) {
    drop(child);
}

fn policy_of(tid: i32) -> (Policy, u32) {
    let s = thread_sched(tid).unwrap();
    (s.params.policy, s.params.priority)
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Skips unless this test may change other processes' scheduling.
macro_rules! require_root {
    () => {
        if !is_root() {
            skip("changing other processes' real-time priority needs root (CAP_SYS_NICE)");
            return;
        }
    };
}

#[test]
fn set_promotes_every_process_and_undo_restores_them() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("s");
    let (a, b) = (program.start(), program.start());
    let before = thread_affinity(a.id() as i32).unwrap();
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "rr",
        "--priority",
        "21",
        "--affinity",
        "0",
        "--json",
    ]));
    assert!(out.status.success());
    let doc = json_of(&out);
    assert_eq!(doc["changed"], 2, "{doc}");
    for child in [&a, &b] {
        let pid = child.id() as i32;
        assert_eq!(policy_of(pid), (Policy::Rr, 21));
        assert_eq!(thread_affinity(pid).unwrap().to_string(), "0");
    }

    // Again: nothing to do, and nothing new recorded.
    let again = json_of(&run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "rr",
        "--priority",
        "21",
        "--affinity",
        "0",
        "--json",
    ])));
    assert_eq!(
        (again["changed"].as_u64(), again["held"].as_u64()),
        (Some(0), Some(2))
    );

    let out = run(rtlab(state.path()).args(["tune", "undo", "--all", "--json"]));
    assert!(out.status.success());
    let undone = json_of(&out);
    assert_eq!(undone["undone"].as_array().unwrap().len(), 2, "{undone}");
    for child in [&a, &b] {
        let pid = child.id() as i32;
        assert_eq!(policy_of(pid), (Policy::Other, 0));
        assert_eq!(thread_affinity(pid).unwrap(), before);
    }
    stop(a);
    stop(b);
}

#[test]
fn set_with_threads_changes_only_the_named_threads() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let tag = unique_name("t");
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let (tids_tx, tids_rx) = std::sync::mpsc::channel();
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let (rx, tids_tx) = (rx.clone(), tids_tx.clone());
            std::thread::Builder::new()
                // Thread names are cut to 15 bytes by the kernel too.
                .name(format!("{}{i}", &tag[..tag.len().min(14)]))
                .spawn(move || {
                    tids_tx.send(rtlab_core::sched::gettid()).unwrap();
                    let _ = rx.lock().unwrap().recv();
                })
                .unwrap()
        })
        .collect();
    let tids: Vec<i32> = (0..3).map(|_| tids_rx.recv().unwrap()).collect();
    let me = fs::read_to_string("/proc/self/comm").unwrap();
    let thread_pattern = format!("{}.", &tag[..tag.len().min(14)]);
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        me.trim(),
        "--exact",
        "--threads",
        &thread_pattern,
        "--policy",
        "fifo",
        "--priority",
        "17",
        "--json",
    ]));
    // --exact applies to --threads too: the '.' is literal, nothing matches.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        me.trim(),
        "--threads",
        &thread_pattern,
        "--policy",
        "fifo",
        "--priority",
        "17",
        "--json",
    ]));
    assert!(out.status.success());
    assert_eq!(json_of(&out)["changed"], 3);
    for &tid in &tids {
        assert_eq!(policy_of(tid), (Policy::Fifo, 17));
    }
    // The test's main thread was not named: untouched.
    assert_eq!(policy_of(std::process::id() as i32).0, Policy::Other);

    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    for &tid in &tids {
        assert_eq!(policy_of(tid), (Policy::Other, 0));
    }
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
}

#[test]
fn set_refuses_99_and_leaves_kernel_threads_alone_without_kernel() {
    assert_refused(
        &["tune", "set", "x", "--policy", "fifo", "--priority", "99"],
        &["--priority", "--allow-99"],
    );
    assert_refused(&["tune", "set", "x", "--policy", "fifo"], &["--priority"]);
    assert_refused(
        &["tune", "set", "(x", "--policy", "fifo", "--priority", "5"],
        &["PATTERN", "'(x'"],
    );
    assert_refused(
        &[
            "tune",
            "set",
            "x",
            "--policy",
            "deadline",
            "--runtime",
            "5ms",
            "--period",
            "1ms",
        ],
        &["--deadline"],
    );
    assert_refused(
        &[
            "tune",
            "set",
            "x",
            "--policy",
            "fifo",
            "--priority",
            "5",
            "--affinity",
            "9000",
        ],
        &["--affinity"],
    );

    // kthreadd exists on every Linux; without --kernel it is not matched.
    let state = tempfile::tempdir().unwrap();
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        "kthreadd",
        "--policy",
        "fifo",
        "--priority",
        "10",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 kernel thread(s) match"), "{stderr}");
    // With --kernel, a dry run shows it would change and changes nothing.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        "kthreadd",
        "--kernel",
        "--policy",
        "fifo",
        "--priority",
        "10",
        "--dry-run",
        "--json",
    ]));
    let doc = json_of(&out);
    assert_eq!(doc["dry_run"], true);
    assert_eq!(doc["threads"][0]["pid"], 2, "{doc}");
    assert_eq!(policy_of(2).0, Policy::Other, "a dry run changed kthreadd");
}

fn write_rules(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("rules.toml");
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    path
}

#[test]
fn apply_and_status_follow_the_rules_file() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("a");
    let child = program.start();
    let pid = child.id() as i32;
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nname = \"throwaway\"\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 23\nreset_on_fork = true\n",
            program.name
        ),
    );
    let rules_arg = rules.to_str().unwrap();
    let status = run(rtlab(state.path()).args(["tune", "status", "--rules", rules_arg, "--json"]));
    assert_eq!(
        status.status.code(),
        Some(1),
        "not applied yet: does not hold"
    );
    assert_eq!(json_of(&status)["holds"], false);

    let dry = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules_arg, "--dry-run"]));
    assert!(dry.status.success());
    assert_eq!(policy_of(pid).0, Policy::Other, "dry run changed nothing");

    let out = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules_arg, "--json"]));
    assert!(out.status.success());
    assert_eq!(json_of(&out)["changed"], 1);
    assert_eq!(policy_of(pid), (Policy::Fifo, 23));
    assert!(thread_sched(pid).unwrap().reset_on_fork);

    let status = run(rtlab(state.path()).args(["tune", "status", "--rules", rules_arg]));
    assert!(status.status.success());
    assert!(String::from_utf8_lossy(&status.stdout).contains("holds on all 1 thread(s)"));

    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(pid), (Policy::Other, 0));
    assert!(!thread_sched(pid).unwrap().reset_on_fork);
    stop(child);
}

#[test]
fn a_bad_rules_file_is_refused_with_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(
        dir.path(),
        "# alarm chain\n[[rule]]\nmatch = \"alarmd\"\npolicy = \"fifo\"\npriority = 120\n",
    );
    let rules = rules.to_str().unwrap();
    assert_refused(
        &["tune", "apply", "--rules", rules],
        &["rules.toml:5", "field `priority`", "120"],
    );
    let unknown = write_rules(
        dir.path(),
        "[[rule]]\nmatch = \"alarmd\"\npolicy = \"fifo\"\npriority = 5\nnice = 3\n",
    );
    assert_refused(
        &["tune", "status", "--rules", unknown.to_str().unwrap()],
        &["rules.toml:5", "nice"],
    );
    assert_refused(
        &[
            "tune",
            "watch",
            "--rules",
            dir.path().join("missing.toml").to_str().unwrap(),
        ],
        &["missing.toml", "cannot read"],
    );
}

#[test]
fn as_root_a_rules_file_others_could_write_is_refused() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "[[rule]]\nmatch = \"x\"\npolicy = \"other\"\n");
    let rules_arg = rules.to_str().unwrap().to_string();
    fs::set_permissions(&rules, fs::Permissions::from_mode(0o666)).unwrap();
    assert_refused(
        &["tune", "apply", "--rules", &rules_arg],
        &["writable by everyone", "chmod go-w"],
    );
    fs::set_permissions(&rules, fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::chown(&rules, Some(65534), None).unwrap();
    assert_refused(
        &["tune", "apply", "--rules", &rules_arg],
        &["owned by uid 65534", "chown root"],
    );

    // A root-owned file reached through a symlink, or inside a directory
    // another user owns (however deep), could be swapped: refused too.
    let theirs = dir.path().join("theirs");
    fs::create_dir_all(theirs.join("sub")).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
    let deep = write_rules(
        &theirs.join("sub"),
        "[[rule]]\nmatch = \"x\"\npolicy = \"other\"\n",
    );
    assert_refused(
        &["tune", "apply", "--rules", deep.to_str().unwrap()],
        &["owner uid 65534", "could be replaced"],
    );
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&deep, &link).unwrap();
    assert_refused(
        &["tune", "apply", "--rules", link.to_str().unwrap()],
        &["owner uid 65534"],
    );
}

#[test]
fn as_root_a_symlinked_rules_file_in_a_directory_others_may_write_is_refused() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "[[rule]]\nmatch = \"x\"\npolicy = \"other\"\n");
    // The target is safe; the link is in a directory anyone may write, so
    // anyone may point it elsewhere.
    let open = dir.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let link = open.join("rules.toml");
    std::os::unix::fs::symlink(&rules, &link).unwrap();
    assert_refused(
        &["tune", "apply", "--rules", link.to_str().unwrap()],
        &["open", "mode 777", "could be replaced"],
    );
    // Sticky, as /tmp is: a link another user owns may be replaced by them.
    let sticky = dir.path().join("sticky");
    fs::create_dir(&sticky).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = sticky.join("rules.toml");
    std::os::unix::fs::symlink(&rules, &theirs).unwrap();
    std::os::unix::fs::lchown(&theirs, Some(65534), None).unwrap();
    assert_refused(
        &["tune", "apply", "--rules", theirs.to_str().unwrap()],
        &["uid 65534", "could be replaced"],
    );
    // Root's link there, to root's file, is as safe as the file.
    let state = tempfile::tempdir().unwrap();
    let ours = sticky.join("ours.toml");
    std::os::unix::fs::symlink(&rules, &ours).unwrap();
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--dry-run",
        "--rules",
        ours.to_str().unwrap(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sleep_path() -> PathBuf {
    ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("sleep is installed")
}

/// `prog 300` run as `uid` (and its group), killed when dropped.
fn start_as(uid: u32, prog: &Path) -> Proc {
    use std::os::unix::process::CommandExt;
    Proc(
        Command::new(prog)
            .arg("300")
            .uid(uid)
            .gid(uid)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Issue 16 item 1: any user names a process after a rule's pattern; a
/// rule that names only the name must not promote it.
#[test]
fn a_rule_by_name_promotes_no_other_users_process_unless_it_says_so() {
    require_root!();
    const NOBODY: u32 = 65534;
    let state = tempfile::tempdir().unwrap();
    let name = unique_name("n");
    // Another user's copy of sleep, in a directory of theirs.
    let home = tempfile::tempdir().unwrap();
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = home.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let copy = theirs.join(&name);
    fs::copy(sleep_path(), &copy).unwrap();
    std::os::unix::fs::chown(&copy, Some(NOBODY), Some(NOBODY)).unwrap();
    let victim = start_as(NOBODY, &copy);
    // Root running a file in that user's directory: they could have
    // written it.
    let planted = start_as(0, &copy);
    let (victim_pid, planted_pid) = (victim.id() as i32, planted.id() as i32);
    wait_until("both to run the copy", || {
        [victim_pid, planted_pid].iter().all(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
        })
    });

    let rules = write_rules(
        state.path(),
        &format!("[[rule]]\nmatch = \"{name}\"\npolicy = \"fifo\"\npriority = 23\n"),
    );
    let rules_arg = rules.to_str().unwrap();
    let out = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules_arg, "--json"]));
    let doc = json_of(&out);
    assert!(out.status.success(), "{doc}");
    assert_eq!(
        (doc["changed"].as_u64(), doc["skipped"].as_u64()),
        (Some(0), Some(2)),
        "{doc}"
    );
    let reason_of = |doc: &serde_json::Value, pid: i32| -> String {
        doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["pid"] == pid)
            .unwrap_or_else(|| panic!("{pid} not reported: {doc}"))["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let reason = reason_of(&doc, victim_pid);
    assert!(
        reason.contains("uid 65534") && reason.contains("allow_any_user"),
        "{reason}"
    );
    let reason = reason_of(&doc, planted_pid);
    assert!(reason.contains("could have written"), "{reason}");
    assert_eq!(policy_of(victim_pid).0, Policy::Other);
    assert_eq!(policy_of(planted_pid).0, Policy::Other);
    // In words, too.
    let out = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules_arg]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("skipped  {victim_pid} {name}: runs as uid 65534")),
        "{text}"
    );

    // tune set: the same rule; nothing promoted is exit 1.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &name,
        "--policy",
        "fifo",
        "--priority",
        "23",
        "--json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["skipped"], 2);
    assert_eq!(policy_of(victim_pid).0, Policy::Other);

    // Vouching for the user promotes theirs only.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &name,
        "--user",
        "65534",
        "--policy",
        "fifo",
        "--priority",
        "23",
        "--json",
    ]));
    assert!(out.status.success());
    assert_eq!(policy_of(victim_pid), (Policy::Fifo, 23));
    assert_eq!(policy_of(planted_pid).0, Policy::Other);
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(victim_pid).0, Policy::Other);

    // So does the explicit override of tune set.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &name,
        "--allow-any-user",
        "--policy",
        "fifo",
        "--priority",
        "23",
        "--json",
    ]));
    assert_eq!(json_of(&out)["changed"], 2, "{}", json_of(&out));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(victim_pid).0, Policy::Other);

    // watch skips it too, and says so once.
    let watcher = Watcher::start(state.path(), &rules, &["--poll", "--interval", "50ms"]);
    let skipped = watcher.next_event("applied");
    assert_eq!(skipped["result"], "skipped", "{skipped}");
    std::thread::sleep(Duration::from_millis(300));
    let events = watcher.stop();
    assert_eq!(policy_of(victim_pid).0, Policy::Other);
    assert_eq!(policy_of(planted_pid).0, Policy::Other);
    let more_skips = events
        .iter()
        .filter(|e| e["event"] == "applied" && e["result"] == "skipped")
        .count();
    assert_eq!(more_skips, 1, "each is reported once: {events:?}");

    // The explicit override promotes both.
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{name}\"\nallow_any_user = true\npolicy = \"fifo\"\npriority = 23\n"
        ),
    );
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--rules",
        rules.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(json_of(&out)["changed"], 2, "{}", json_of(&out));
    assert_eq!(policy_of(victim_pid), (Policy::Fifo, 23));
    assert_eq!(policy_of(planted_pid), (Policy::Fifo, 23));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(victim_pid).0, Policy::Other);
    stop(victim);
    stop(planted);
}

/// Run by a user, rtlab can change only that user's processes: a rule by
/// name still applies to them (SCHED_BATCH needs no privilege).
#[test]
fn run_by_a_user_a_rule_by_name_applies_to_their_own_processes() {
    require_root!(); // to become nobody
    const NOBODY: u32 = 65534;
    let state = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(state.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let name = unique_name("o");
    let copy = home.path().join(&name);
    fs::copy(sleep_path(), &copy).unwrap();
    std::os::unix::fs::chown(&copy, Some(NOBODY), Some(NOBODY)).unwrap();
    let theirs = start_as(NOBODY, &copy);
    let pid = theirs.id() as i32;
    wait_until("it to run the copy", || {
        fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
    });
    let mut cmd = rtlab(state.path());
    {
        use std::os::unix::process::CommandExt;
        cmd.args(["tune", "set", &name, "--policy", "batch", "--json"])
            .uid(NOBODY)
            .gid(NOBODY);
    }
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(json_of(&out)["changed"], 1);
    assert_eq!(policy_of(pid).0, Policy::Batch);
    stop(theirs);
}

#[test]
fn an_exe_rule_promotes_roots_process_and_refuses_a_file_others_can_write() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("e");
    let child = program.start();
    let pid = child.id() as i32;
    let exe = fs::canonicalize(sleep_path()).unwrap();
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\nexe = \"{}\"\npolicy = \"fifo\"\npriority = 22\n",
            program.name,
            exe.display()
        ),
    );
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--rules",
        rules.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(json_of(&out)["changed"], 1, "{}", json_of(&out));
    assert_eq!(policy_of(pid), (Policy::Fifo, 22));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());

    // Another executable than the rule's: skipped, with why.
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\nexe = \"/etc/passwd\"\npolicy = \"fifo\"\npriority = 22\n",
            program.name
        ),
    );
    let out = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules.to_str().unwrap()]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not /etc/passwd (exe)"), "{text}");
    assert_eq!(policy_of(pid).0, Policy::Other);

    // A file another user may write cannot be named at all.
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("alarmd");
    fs::copy(sleep_path(), &theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"alarmd\"\nexe = \"{}\"\npolicy = \"fifo\"\npriority = 22\n",
            theirs.display()
        ),
    );
    assert_refused(
        &["tune", "apply", "--rules", rules.to_str().unwrap()],
        &["rules.toml:3", "field `exe`", "owned by uid 65534"],
    );
    assert_refused(
        &[
            "tune",
            "set",
            "alarmd",
            "--exe",
            theirs.to_str().unwrap(),
            "--policy",
            "fifo",
            "--priority",
            "5",
        ],
        &["--exe", "owned by uid 65534"],
    );
    stop(child);
}

/// An `exe` rule names the file, not whose code runs in it: any user may
/// run root's file under the rule's name (a symlink), with code of their
/// own (`LD_PRELOAD`, or a script when the file is an interpreter). Without
/// `user`, `unit` or `cgroup`, such a rule promotes only root's processes.
#[test]
fn an_exe_rule_alone_promotes_no_other_users_process() {
    require_root!();
    const NOBODY: u32 = 65534;
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let name = unique_name("x");
    let exe = fs::canonicalize(sleep_path()).unwrap();
    let link = home.path().join(&name);
    std::os::unix::fs::symlink(&exe, &link).unwrap();
    let theirs = start_as(NOBODY, &link);
    let pid = theirs.id() as i32;
    wait_until("it to run", || {
        fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
    });
    let rules_with = |extra: &str| {
        write_rules(
            state.path(),
            &format!(
                "[[rule]]\nmatch = \"{name}\"\nexe = \"{}\"\n{extra}policy = \"fifo\"\npriority = 21\n",
                exe.display()
            ),
        )
    };
    let rules = rules_with("");
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--rules",
        rules.to_str().unwrap(),
        "--json",
    ]));
    let doc = json_of(&out);
    assert_eq!(
        (doc["changed"].as_u64(), doc["skipped"].as_u64()),
        (Some(0), Some(1)),
        "{doc}"
    );
    let reason = doc["threads"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("uid 65534") && reason.contains("names the file, not who runs it"),
        "{reason}"
    );
    assert_eq!(policy_of(pid).0, Policy::Other);
    // tune set --exe alike.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &name,
        "--exe",
        exe.to_str().unwrap(),
        "--policy",
        "fifo",
        "--priority",
        "21",
    ]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(policy_of(pid).0, Policy::Other);
    // Naming the user too promotes it.
    let rules = rules_with("user = 65534\n");
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--rules",
        rules.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(json_of(&out)["changed"], 1, "{}", json_of(&out));
    assert_eq!(policy_of(pid), (Policy::Fifo, 21));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(pid).0, Policy::Other);
    stop(theirs);
}

/// Where cgroup v2 is mounted, if it is.
fn cgroup2_mount() -> Option<PathBuf> {
    fs::read_to_string("/proc/self/mounts")
        .ok()?
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| PathBuf::from(f[1]))
}

/// A cgroup given to a user outside systemd's tree (no slice above it) is
/// theirs to name: a child they call `alarmd.service` is not that unit.
#[test]
fn a_unit_rule_ignores_a_cgroup_a_user_named_like_the_unit() {
    require_root!();
    const NOBODY: u32 = 65534;
    let Some(root) = cgroup2_mount() else {
        skip("no cgroup v2 mounted");
        return;
    };
    let given = root.join(unique_name("deleg"));
    if fs::create_dir(&given).is_err() {
        skip("cannot create a cgroup");
        return;
    }
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            for dir in [self.0.join("alarmd.service"), self.0.clone()] {
                let _ = fs::remove_dir(dir);
            }
        }
    }
    let _remove = Remove(given.clone());
    for entry in fs::read_dir(&given).unwrap() {
        let _ = std::os::unix::fs::chown(entry.unwrap().path(), Some(NOBODY), Some(NOBODY));
    }
    std::os::unix::fs::chown(&given, Some(NOBODY), Some(NOBODY)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let name = unique_name("u");
    let link = home.path().join(&name);
    std::os::unix::fs::symlink(sleep_path(), &link).unwrap();
    let theirs = start_as(NOBODY, &link);
    let pid = theirs.id() as i32;
    fs::write(given.join("cgroup.procs"), pid.to_string()).unwrap();
    // The user makes a child cgroup and moves their process into it.
    let moved = {
        use std::os::unix::process::CommandExt;
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "mkdir '{0}/alarmd.service' && echo {pid} > '{0}/alarmd.service/cgroup.procs'",
                given.display()
            ))
            .uid(NOBODY)
            .gid(NOBODY)
            .status()
            .unwrap()
    };
    assert!(moved.success());
    let cgroup = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(cgroup.contains("/alarmd.service\n"), "{cgroup}");

    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{name}\"\nunit = \"alarmd.service\"\npolicy = \"fifo\"\npriority = 21\n"
        ),
    );
    let out = run(rtlab(state.path()).args([
        "tune",
        "apply",
        "--rules",
        rules.to_str().unwrap(),
        "--json",
    ]));
    let doc = json_of(&out);
    assert_eq!(
        (doc["changed"].as_u64(), doc["skipped"].as_u64()),
        (Some(0), Some(1)),
        "{doc}"
    );
    let reason = doc["threads"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("no systemd unit"), "{reason}");
    assert_eq!(policy_of(pid).0, Policy::Other);
    stop(theirs);
}

/// Starts `rtlab tune watch` with JSON events on stdout, read by a thread.
struct Watcher {
    child: Child,
    lines: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl Watcher {
    fn start(state: &Path, rules: &Path, extra: &[&str]) -> Watcher {
        let mut child = rtlab(state)
            .args(["tune", "watch", "--json", "--rules"])
            .arg(rules)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Ok(v) = serde_json::from_str(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let watcher = Watcher { child, lines };
        let started = watcher.next_event("started");
        eprintln!("watch started: {started}");
        watcher
    }

    fn next_event(&self, kind: &str) -> serde_json::Value {
        loop {
            let event = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no '{kind}' event from watch in 30 s"));
            if event["event"] == kind {
                return event;
            }
        }
    }

    fn stop(mut self) -> Vec<serde_json::Value> {
        self.stop_and_read()
    }

    fn stop_and_read(&mut self) -> Vec<serde_json::Value> {
        common::signal(&self.child, libc::SIGTERM);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "watch exited with {status}");
        // Everything it wrote: the reader ends at the pipe's end of file.
        self.lines.iter().collect()
    }
}

impl Drop for Watcher {
    /// A failed test must not leave its watch running (it would hold the
    /// test's output open and keep promoting).
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `done` every 5 ms, up to 6000 times (a hang guard, not a timing
/// check: the host is noisy), and panics with `what` if it never holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("gave up waiting: {what}");
}

/// Waits until `pid` has `policy`; returns how long that took (printed,
/// never asserted).
fn wait_for_policy(pid: i32, policy: Policy) -> Duration {
    let start = Instant::now();
    wait_until(&format!("{pid} to become {policy}"), || {
        thread_sched(pid).is_ok_and(|s| s.params.policy == policy)
    });
    start.elapsed()
}

fn watch_promotes_restarted_processes(extra: &[&str]) {
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("w");
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 24\n",
            program.name
        ),
    );
    let first = program.start();
    let watcher = Watcher::start(state.path(), &rules, extra);
    let took = wait_for_policy(first.id() as i32, Policy::Fifo);
    eprintln!("already running: promoted after {took:?}");
    stop(first);
    for restart in 0..3 {
        let again = program.start();
        let took = wait_for_policy(again.id() as i32, Policy::Fifo);
        eprintln!("restart {restart}: promoted {took:?} after it started");
        assert_eq!(policy_of(again.id() as i32), (Policy::Fifo, 24));
        // The newest entry is the live process (entries of ended ones are
        // dropped in bulk once there are many).
        let record: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(state.path().join("tune-changes.json")).unwrap(),
        )
        .unwrap();
        let entries = record["entries"].as_array().unwrap();
        assert_eq!(entries.last().unwrap()["pid"], again.id(), "{record}");
        stop(again);
    }
    let events = watcher.stop();
    let stopped = events
        .iter()
        .find(|e| e["event"] == "stopped")
        .expect("a stopped event");
    assert_eq!(stopped["failed"], 0);
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
}

#[test]
fn watch_promotes_a_restarted_process_again_with_process_events() {
    require_root!();
    watch_promotes_restarted_processes(&[]);
}

#[test]
fn watch_promotes_a_restarted_process_again_by_polling() {
    require_root!();
    watch_promotes_restarted_processes(&["--poll", "--interval", "100ms"]);
}

/// Field 22 of /proc/PID/stat: when the process started.
fn rtlab_tune_starttime(pid: i32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(19).unwrap().parse().unwrap()
}

/// Starts `program args` so that it gets pid `pid` (free now), by setting
/// the kernel's last-allocated pid just below it; other processes may take
/// it first, so it tries again. None when the kernel does not allow it.
fn spawn_at_pid(pid: i32, program: &str, args: &[&str]) -> Option<Proc> {
    // A start time counts clock ticks (10 ms at USER_HZ 100): a newcomer at
    // the same pid within the tick its predecessor started in is the same
    // thread to anyone reading /proc, rtlab included. CI once started both
    // within one tick; wait the tick out so the test asks what it means to.
    std::thread::sleep(Duration::from_millis(25));
    for _ in 0..200 {
        if fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).is_err() {
            return None;
        }
        let child = Proc(
            Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
        if child.id() as i32 == pid {
            return Some(child);
        }
        stop(child);
    }
    None
}

#[test]
fn undo_leaves_alone_a_process_that_reuses_a_promoted_pid() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("u");
    let first = program.start();
    let pid = first.id() as i32;
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "fifo",
        "--priority",
        "31",
    ]));
    assert!(out.status.success());
    stop(first);
    // Another program, started at the same pid with the very settings rtlab
    // recorded as "new": only the start time tells it apart.
    let Some(other) = spawn_at_pid(pid, "chrt", &["-f", "31", "sleep", "300"]) else {
        skip("cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
        return;
    };
    let out = run(rtlab(state.path()).args(["tune", "undo", "--json"]));
    assert!(out.status.success());
    let doc = json_of(&out);
    assert_eq!(doc["undone"][0]["result"], "gone", "{doc}");
    assert_eq!(
        policy_of(pid),
        (Policy::Fifo, 31),
        "undo touched the new process"
    );
    stop(other);
}

#[test]
fn watch_leaves_alone_a_process_that_reuses_a_promoted_pid() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("r");
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 26\n",
            program.name
        ),
    );
    let watcher = Watcher::start(state.path(), &rules, &["--poll", "--interval", "50ms"]);
    let first = program.start();
    let pid = first.id() as i32;
    wait_for_policy(pid, Policy::Fifo);
    let first_start = rtlab_tune_starttime(pid);
    stop(first);
    // The newcomer has exactly what watch gave the old process: a watch
    // that knew threads by pid alone would "take back" its promotion.
    let Some(other) = spawn_at_pid(pid, "chrt", &["-f", "26", "sleep", "300"]) else {
        watcher.stop();
        skip("cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
        return;
    };
    // A matching process started after it proves the watch has scanned
    // past the reused pid (scans are in pid order and see both).
    let marker = program.start();
    wait_for_policy(marker.id() as i32, Policy::Fifo);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        policy_of(pid),
        (Policy::Fifo, 26),
        "the reused pid was changed"
    );
    let events = watcher.stop();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "applied" && e["pid"] == pid && e["starttime"] != first_start),
        "{events:?}"
    );
    stop(other);
    stop(marker);
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

#[test]
fn show_lists_threads_with_their_scheduling() {
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("v");
    let child = program.start();
    let out = run(rtlab(state.path()).args(["tune", "show", &program.name, "--json"]));
    assert!(out.status.success());
    let doc = json_of(&out);
    let threads = doc["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{doc}");
    let t = &threads[0];
    assert_eq!(t["pid"], child.id());
    assert_eq!(t["policy"], "other");
    assert_eq!(t["kernel_thread"], false);
    assert!(t["affinity"].as_str().is_some_and(|a| !a.is_empty()));
    assert!(t["voluntary_switches"].is_u64());

    let all = json_of(&run(rtlab(state.path()).args(["tune", "show", "--json"])));
    assert!(all["threads"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["pid"] == 2 && t["kernel_thread"] == true));
    let text = run(rtlab(state.path()).args(["tune", "show", "kthreadd"]));
    assert!(String::from_utf8_lossy(&text.stdout).contains("[kthreadd]"));
    stop(child);
}

fn systemd_analyze_present() -> bool {
    Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn systemd_drop_in_is_written_verified_and_undone() {
    let state = tempfile::tempdir().unwrap();
    let units = tempfile::tempdir().unwrap();
    let unit = format!("{}.service", unique_name("d"));
    fs::write(
        units.path().join(&unit),
        "[Unit]\nDescription=throwaway\n\n[Service]\nExecStart=/bin/sleep 1000\n",
    )
    .unwrap();
    let unit_dir = units.path().to_str().unwrap();
    let dry = run(rtlab(state.path()).args([
        "tune",
        "systemd",
        &unit,
        "--policy",
        "fifo",
        "--priority",
        "50",
        "--unit-dir",
        unit_dir,
        "--dry-run",
    ]));
    assert!(dry.status.success());
    let printed = String::from_utf8_lossy(&dry.stdout);
    assert!(printed.contains("CPUSchedulingPriority=50") && printed.contains("LimitRTPRIO=50"));
    let dropin = units.path().join(format!("{unit}.d/50-rtlab-tune.conf"));
    assert!(!dropin.exists(), "a dry run wrote the file");

    let out = run(rtlab(state.path()).args([
        "tune",
        "systemd",
        &unit,
        "--policy",
        "fifo",
        "--priority",
        "50",
        "--affinity",
        "1",
        "--limit-rttime",
        "200ms",
        "--unit-dir",
        unit_dir,
        "--json",
    ]));
    assert!(out.status.success());
    let doc = json_of(&out);
    let written = fs::read_to_string(&dropin).unwrap();
    for line in [
        "CPUSchedulingPolicy=fifo",
        "CPUSchedulingPriority=50",
        "CPUAffinity=1",
        "LimitRTPRIO=50",
        "LimitRTTIME=",
    ] {
        assert!(written.contains(line), "{line} missing in:\n{written}");
    }
    if systemd_analyze_present() {
        assert_eq!(doc["verification"]["result"], "passed", "{doc}");
    } else {
        skip("systemd-analyze is not installed: the drop-in was not verified");
    }
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert!(!dropin.exists() && !dropin.parent().unwrap().exists());
}

#[test]
fn a_drop_in_systemd_rejects_is_taken_back() {
    if !systemd_analyze_present() {
        skip("systemd-analyze is not installed");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let units = tempfile::tempdir().unwrap();
    // No such unit anywhere: systemd-analyze refuses it, so nothing stays.
    let unit = format!("{}.service", unique_name("n"));
    let out = run(rtlab(state.path()).args([
        "tune",
        "systemd",
        &unit,
        "--policy",
        "rr",
        "--priority",
        "10",
        "--unit-dir",
        units.path().to_str().unwrap(),
    ]));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOT kept"));
    assert!(
        fs::read_dir(units.path()).unwrap().next().is_none(),
        "left files behind"
    );
}

/// rtlab as `tune systemd --watch-unit` will accept it in its unit: a
/// checkout (and so `target/`) may lie under /tmp, which the unit refuses
/// (PrivateTmp= hides it, and anyone may write there). Then, as root, a
/// copy in a root-owned directory under /run; else `None` (skipped).
fn rtlab_for_the_watch_unit(state: &Path) -> Option<(Command, String, Option<tempfile::TempDir>)> {
    let built = env!("CARGO_BIN_EXE_rtlab");
    let shared = ["/tmp/", "/var/tmp/", "/dev/shm/"];
    if !shared.iter().any(|d| built.starts_with(d)) {
        return Some((rtlab(state), built.to_string(), None));
    }
    if !is_root() {
        skip("the checkout lies under a shared temporary directory, which the watch unit refuses, and only root can place a copy elsewhere");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("rtlab-test-")
        .tempdir_in("/run")
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("rtlab");
    fs::copy(built, &copy).unwrap();
    let mut cmd = Command::new(&copy);
    cmd.env("RTLAB_STATE_DIR", state);
    cmd.env("XDG_DATA_HOME", state.join("data"));
    Some((cmd, copy.display().to_string(), Some(dir)))
}

#[test]
fn the_watch_unit_verifies() {
    let state = tempfile::tempdir().unwrap();
    let units = tempfile::tempdir().unwrap();
    let Some((mut watch_rtlab, exe, _copy)) = rtlab_for_the_watch_unit(state.path()) else {
        return;
    };
    let out = run(watch_rtlab.args([
        "tune",
        "systemd",
        "--watch-unit",
        "--rules",
        "/etc/rtlab/rules.toml",
        "--unit-dir",
        units.path().to_str().unwrap(),
        "--json",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc = json_of(&out);
    let unit = fs::read_to_string(units.path().join("rtlab-tune-watch.service")).unwrap();
    assert!(unit.contains(&exe) && unit.contains("tune watch"), "{unit}");
    if systemd_analyze_present() {
        assert_eq!(doc["verification"]["result"], "passed", "{doc}");
    }
    assert_refused(
        &["tune", "systemd", "--watch-unit", "--policy", "fifo"],
        &["--policy"],
    );
    assert_refused(
        &[
            "tune",
            "systemd",
            "a/b",
            "--policy",
            "fifo",
            "--priority",
            "5",
        ],
        &["UNIT"],
    );
    assert_refused(
        &[
            "tune",
            "systemd",
            "app",
            "--policy",
            "fifo",
            "--priority",
            "99",
        ],
        &["--allow-99"],
    );
}

/// The watch unit cuts rtlab's capabilities to its bounding set: what the
/// rules' identity checks read must still be readable with those alone
/// (`/proc/PID/exe` of a root process needs CAP_SYS_PTRACE), or the unit
/// would skip every process a name rule matches.
#[test]
fn the_watch_unit_keeps_the_capabilities_a_rule_by_name_needs() {
    require_root!();
    if Command::new("setpriv").arg("--version").output().is_err() {
        skip("setpriv is needed to run rtlab with the unit's capabilities");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let units = tempfile::tempdir().unwrap();
    let Some((mut watch_rtlab, _, _copy)) = rtlab_for_the_watch_unit(state.path()) else {
        return;
    };
    let out = run(watch_rtlab.args([
        "tune",
        "systemd",
        "--watch-unit",
        "--no-verify",
        "--unit-dir",
        units.path().to_str().unwrap(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let unit = fs::read_to_string(units.path().join("rtlab-tune-watch.service")).unwrap();
    let caps: Vec<String> = unit
        .lines()
        .find_map(|l| l.strip_prefix("CapabilityBoundingSet="))
        .expect("a bounding set")
        .split_whitespace()
        .map(|c| format!("+{}", c.trim_start_matches("CAP_").to_lowercase()))
        .collect();
    let program = Throwaway::new("cap");
    let child = program.start();
    let pid = child.id() as i32;
    wait_until("it to run", || {
        fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == program.name)
    });
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 20\n",
            program.name
        ),
    );
    let out = run(Command::new("setpriv")
        .arg(format!("--bounding-set=-all,{}", caps.join(",")))
        .arg(env!("CARGO_BIN_EXE_rtlab"))
        .env("RTLAB_STATE_DIR", state.path())
        .args(["tune", "apply", "--dry-run", "--json", "--rules"])
        .arg(&rules));
    let doc = json_of(&out);
    assert_eq!(
        (doc["changed"].as_u64(), doc["skipped"].as_u64()),
        (Some(1), Some(0)),
        "with {caps:?}: {doc}"
    );
    stop(child);
}

/// Issue 16 item 16: an rtlab run from /tmp would write a unit whose
/// ExecStart names a file the unit's PrivateTmp=yes hides (and that every
/// user could reach): refused, and nothing is written.
#[test]
fn the_watch_unit_refuses_an_rtlab_under_tmp() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let copy = dir.path().join("rtlab");
    if fs::hard_link(env!("CARGO_BIN_EXE_rtlab"), &copy).is_err() {
        fs::copy(env!("CARGO_BIN_EXE_rtlab"), &copy).unwrap();
    }
    let state = tempfile::tempdir().unwrap();
    let units = tempfile::tempdir().unwrap();
    let out = run(Command::new(&copy)
        .env("RTLAB_STATE_DIR", state.path())
        .args(["tune", "systemd", "--watch-unit", "--unit-dir"])
        .arg(units.path()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("PrivateTmp")
            && stderr.contains("cargo install --locked --path crates/rtlab --root /usr/local"),
        "{stderr}"
    );
    assert!(
        fs::read_dir(units.path()).unwrap().next().is_none(),
        "a unit was written"
    );
}

/// `program` run under the process name `name` (a symlink to it in `dir`),
/// pinned to `cpu` before anything can promote it.
fn start_pinned(dir: &Path, name: &str, program: &Path, args: &[&str], cpu: usize) -> Proc {
    if !dir.join(name).exists() {
        std::os::unix::fs::symlink(program, dir.join(name)).unwrap();
    }
    let child = Proc(
        Command::new(dir.join(name))
            .args(args)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    rtlab_core::sched::set_thread_affinity(child.id() as i32, &CpuSet::from_cpus(vec![cpu]))
        .unwrap();
    child
}

/// Issue 16 item 5: a promoted FIFO thread that never sleeps is demoted by
/// `watch --runaway-limit`, with an event; one that sleeps now and then,
/// though it runs most of the time, is left alone. Both are pinned to one
/// CPU, and the kernel's RT throttling stays on, so the machine keeps a
/// CPU and 5% of the other.
#[test]
fn watch_demotes_a_runaway_thread_and_spares_one_that_sleeps() {
    require_root!();
    let cpu = CpuSet::online().iter().last().unwrap_or(0);
    if fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").is_ok_and(|v| v.trim() == "-1") {
        skip("RT throttling is off: a spinning FIFO test thread could hang this machine");
        return;
    }
    let Some(python) = python() else {
        skip("python3 is needed for the thread that sleeps");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let (spinner_name, sleeper_name) = (unique_name("sp"), unique_name("sl"));
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{spinner_name}\"\npolicy = \"fifo\"\npriority = 10\n\
             [[rule]]\nmatch = \"{sleeper_name}\"\npolicy = \"fifo\"\npriority = 10\n"
        ),
    );
    let watcher = Watcher::start(
        state.path(),
        &rules,
        &["--poll", "--interval", "100ms", "--runaway-limit", "500ms"],
    );

    // Runs 45 ms, sleeps 5 ms: 90% of its CPU, but it blocks.
    let sleeper = start_pinned(
        dir.path(),
        &sleeper_name,
        &python,
        &[
            "-c",
            "import time\nwhile True:\n    t = time.monotonic()\n    \
             while time.monotonic() - t < 0.045: pass\n    time.sleep(0.005)\n",
        ],
        cpu,
    );
    let sleeper_pid = sleeper.id() as i32;
    wait_for_policy(sleeper_pid, Policy::Fifo);
    // Six limits' worth of samples.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        policy_of(sleeper_pid).0,
        Policy::Fifo,
        "a thread that sleeps was demoted"
    );
    stop(sleeper);

    let sh = fs::canonicalize("/bin/sh").unwrap();
    let spinner = start_pinned(
        dir.path(),
        &spinner_name,
        &sh,
        &["-c", "while :; do :; done"],
        cpu,
    );
    let spinner_pid = spinner.id() as i32;
    let event = watcher.next_event("runaway");
    eprintln!("runaway event: {event}");
    assert_eq!(event["pid"], spinner_pid, "{event}");
    assert_eq!(event["result"], "changed", "{event}");
    assert_eq!(event["new"]["policy"], "other", "{event}");
    assert!(event["cpu_ms"].as_u64().unwrap() * 4 >= event["wall_ms"].as_u64().unwrap() * 3);
    assert_eq!(policy_of(spinner_pid).0, Policy::Other);
    // It stays demoted: later scans do not promote it again.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(policy_of(spinner_pid).0, Policy::Other);
    stop(spinner);

    // One that had its rule's settings from elsewhere (another service's
    // own real-time thread) is not rtlab's to demote. Pinned and FIFO 10
    // from its first instruction (taskset and chrt exec it), so the watch
    // never changes it: it only finds it held.
    let spin_held = || {
        Proc(
            Command::new("taskset")
                .args(["-c", &cpu.to_string(), "chrt", "-f", "10"])
                .arg(dir.path().join(&spinner_name))
                .args(["-c", "while :; do :; done"])
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let foreign = spin_held();
    let foreign_pid = foreign.id() as i32;
    // Six limits' worth of samples.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(policy_of(foreign_pid), (Policy::Fifo, 10));
    stop(foreign);
    let events = watcher.stop();
    for pid in [sleeper_pid, foreign_pid] {
        assert!(
            !events
                .iter()
                .any(|e| e["event"] == "runaway" && e["pid"] == pid),
            "{pid}: {events:?}"
        );
    }

    // One rtlab promoted before this watch started (a restarted watch)
    // is watched, though it only finds it held.
    let earlier = start_pinned(
        dir.path(),
        &spinner_name,
        &sh,
        &["-c", "while :; do :; done"],
        cpu,
    );
    let earlier_pid = earlier.id() as i32;
    let out = run(rtlab(state.path()).args(["tune", "apply", "--rules", rules.to_str().unwrap()]));
    assert!(out.status.success());
    assert_eq!(policy_of(earlier_pid), (Policy::Fifo, 10));
    let watcher = Watcher::start(
        state.path(),
        &rules,
        &["--poll", "--interval", "100ms", "--runaway-limit", "500ms"],
    );
    let event = watcher.next_event("runaway");
    assert_eq!(event["pid"], earlier_pid, "{event}");
    assert_eq!(policy_of(earlier_pid).0, Policy::Other);
    stop(earlier);
    watcher.stop();
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

/// A SCHED_DEADLINE thread is held to its runtime by the kernel: one that
/// uses all of it without sleeping is doing what it was given, not running
/// away, and `--runaway-limit` leaves it alone.
#[test]
fn watch_runaway_limit_leaves_a_deadline_thread_alone() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let name = unique_name("dl");
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{name}\"\npolicy = \"deadline\"\nruntime = \"8ms\"\n\
             deadline = \"10ms\"\nperiod = \"10ms\"\n"
        ),
    );
    let watcher = Watcher::start(
        state.path(),
        &rules,
        &["--poll", "--interval", "100ms", "--runaway-limit", "500ms"],
    );
    let sh = fs::canonicalize("/bin/sh").unwrap();
    std::os::unix::fs::symlink(&sh, dir.path().join(&name)).unwrap();
    let spinner = Proc(
        Command::new(dir.path().join(&name))
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = spinner.id() as i32;
    wait_for_policy(pid, Policy::Deadline);
    // Six limits' worth of samples.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        policy_of(pid).0,
        Policy::Deadline,
        "the deadline thread was demoted"
    );
    stop(spinner);
    let events = watcher.stop();
    assert!(
        !events.iter().any(|e| e["event"] == "runaway"),
        "{events:?}"
    );
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

#[test]
fn check_reports_findings_with_severity_and_fix() {
    let state = tempfile::tempdir().unwrap();
    let out = run(rtlab(state.path()).args(["tune", "check", "--json"]));
    assert!(out.status.success());
    let doc = json_of(&out);
    let findings = doc["findings"].as_array().unwrap();
    assert!(findings.len() >= 10, "{doc}");
    for f in findings {
        assert!(f["id"].is_string() && f["severity"].is_string(), "{f}");
        if f["severity"] == "warning" || f["severity"] == "critical" {
            assert!(f["fix"].is_string(), "no fix hint: {f}");
        }
    }
    // Every report's worst finding is at least "ok": --fail-on ok fails.
    let gate = run(rtlab(state.path()).args(["tune", "check", "--fail-on", "ok"]));
    assert_eq!(gate.status.code(), Some(1));
    assert_refused(&["tune", "check", "--fail-on", "bad"], &["bad"]);
}

#[test]
fn watch_rereads_its_rules_on_sighup_and_keeps_them_when_the_file_breaks() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("h");
    let rules = write_rules(
        state.path(),
        "[[rule]]\nmatch = \"no-such-process\"\npolicy = \"fifo\"\npriority = 5\n",
    );
    let child = program.start();
    let pid = child.id() as i32;
    let watcher = Watcher::start(state.path(), &rules, &["--poll", "--interval", "50ms"]);

    write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 27\n",
            program.name
        ),
    );
    common::signal(&watcher.child, libc::SIGHUP);
    assert_eq!(watcher.next_event("reloaded")["rules"], 1);
    wait_for_policy(pid, Policy::Fifo);
    assert_eq!(policy_of(pid), (Policy::Fifo, 27));

    write_rules(
        state.path(),
        "[[rule]]\nmatch = \"x\"\npolicy = \"fifo\"\npriority = 500\n",
    );
    common::signal(&watcher.child, libc::SIGHUP);
    let refused = watcher.next_event("reload_failed");
    assert!(
        refused["error"].as_str().unwrap().contains("priority"),
        "{refused}"
    );
    // The rules in force stay: a demoted process is promoted again.
    assert!(Command::new("chrt")
        .args(["-o", "-p", "0", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    wait_for_policy(pid, Policy::Fifo);
    watcher.stop();
    stop(child);
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

/// The interpreter itself (not a pyenv shim script), so a symlink to it
/// gives the process the symlink's name; None without python3.
fn python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, os; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A python3 program started under a unique process name, with pipes.
struct Scripted {
    child: Proc,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    _dir: tempfile::TempDir,
}

impl Scripted {
    fn start(name: &str, script: &str, args: &[&str]) -> Option<Scripted> {
        let python = python()?;
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&python, dir.path().join(name)).unwrap();
        let mut child = Command::new(dir.path().join(name))
            .arg("-c")
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Some(Scripted {
            stdin: child.stdin.take().unwrap(),
            stdout: std::io::BufReader::new(child.stdout.take().unwrap()),
            child: Proc(child),
            _dir: dir,
        })
    }

    fn line(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    fn go(&mut self) {
        use std::io::Write;
        self.stdin.write_all(b"go\n").unwrap();
        self.stdin.flush().unwrap();
    }
}

const PRCTL_NAME: &str = "import ctypes, os, sys, threading, time\n\
libc = ctypes.CDLL(None)\n\
def name(n): libc.prctl(15, n.encode(), 0, 0, 0)\n";

#[test]
fn watch_finds_the_threads_of_a_process_that_renames_itself() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let renamed = unique_name("n");
    let rules = write_rules(
        state.path(),
        &format!("[[rule]]\nmatch = \"{renamed}\"\nthreads = \"io-.*\"\npolicy = \"fifo\"\npriority = 28\n"),
    );
    // No periodic rescan during the test: only the rename event can do it.
    let watcher = Watcher::start(state.path(), &rules, &["--rescan", "1h"]);
    let script = format!(
        "{PRCTL_NAME}\
ready = threading.Event()\n\
def worker():\n    name('io-1'); print(threading.get_native_id(), flush=True); ready.set(); time.sleep(300)\n\
threading.Thread(target=worker, daemon=True).start(); ready.wait()\n\
sys.stdin.readline(); name(sys.argv[1]); print('renamed', flush=True); time.sleep(300)\n"
    );
    let Some(mut program) = Scripted::start("rtpyrename", &script, &[&renamed]) else {
        watcher.stop();
        skip("python3 is not installed");
        return;
    };
    let worker: i32 = program.line().parse().unwrap();
    assert_eq!(policy_of(worker).0, Policy::Other);
    program.go();
    assert_eq!(program.line(), "renamed");
    wait_for_policy(worker, Policy::Fifo);
    assert_eq!(policy_of(worker), (Policy::Fifo, 28));
    // Its main thread is not an io- thread: left alone.
    assert_eq!(policy_of(program.child.id() as i32).0, Policy::Other);
    watcher.stop();
    stop(program.child);
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

#[test]
fn watch_takes_back_a_forked_child_that_runs_another_program() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let name = unique_name("f");
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{name}\"\npolicy = \"fifo\"\npriority = 13\nreset_on_fork = true\n"
        ),
    );
    let watcher = Watcher::start(state.path(), &rules, &["--rescan", "1h"]);
    let sleep = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    let script = "import os, sys, time\n\
sys.stdin.readline()\n\
pid = os.fork()\n\
if pid == 0:\n    time.sleep(0.2); os.execv(sys.argv[1], ['sleep', '300'])\n\
print(pid, flush=True); time.sleep(300)\n";
    let Some(mut program) = Scripted::start(&name, script, &[sleep]) else {
        watcher.stop();
        skip("python3 is not installed");
        return;
    };
    let parent = program.child.id() as i32;
    wait_for_policy(parent, Policy::Fifo);
    program.go();
    let child: i32 = program.line().parse().unwrap();
    // Wait for the child to run sleep, then for the watch to have handled
    // that: a process started after it is promoted after it.
    wait_until("the child to run sleep", || {
        fs::read_to_string(format!("/proc/{child}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    let marker = Throwaway::new("m");
    write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{name}\"\npolicy = \"fifo\"\npriority = 13\nreset_on_fork = true\n\n\
             [[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 2\n",
            marker.name
        ),
    );
    common::signal(&watcher.child, libc::SIGHUP);
    watcher.next_event("reloaded");
    let m = marker.start();
    wait_for_policy(m.id() as i32, Policy::Fifo);
    // The child runs a program no rule matches: it must not keep a
    // promotion (reset-on-fork said its children start at SCHED_OTHER).
    assert_eq!(
        policy_of(child),
        (Policy::Other, 0),
        "the exec'd child kept the promotion"
    );
    assert_eq!(policy_of(parent), (Policy::Fifo, 13));
    watcher.stop();
    stop(m);
    // SAFETY: kill(2) of the test's own grandchild.
    unsafe { libc::kill(child, libc::SIGKILL) };
    stop(program.child);
    assert!(run(rtlab(state.path()).args(["tune", "undo", "--all"]))
        .status
        .success());
}

#[test]
fn nice_survives_a_real_time_spell_and_its_undo() {
    require_root!();
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("i");
    // Started at FIFO 10 with nice 5 kept underneath (chrt over nice).
    let child = Proc(
        Command::new("nice")
            .args(["-n", "5", "chrt", "-f", "10"])
            .arg(program.program())
            .arg("300")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.id() as i32;
    wait_until("the program to start", || {
        fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == program.name)
    });
    let niceness = || {
        // SAFETY: getpriority of our own child.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t) }
    };
    assert_eq!((policy_of(pid), niceness()), ((Policy::Fifo, 10), 5));
    let out = run(rtlab(state.path()).args(["tune", "set", &program.name, "--policy", "other"]));
    assert!(out.status.success());
    assert_eq!(
        (policy_of(pid), niceness()),
        ((Policy::Other, 0), 5),
        "nice lost going to other"
    );
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(
        (policy_of(pid), niceness()),
        ((Policy::Fifo, 10), 5),
        "undo lost nice"
    );
    stop(child);
}

#[test]
fn deadline_takes_no_affinity_and_undo_restores_it_in_the_right_order() {
    require_root!();
    assert_refused(
        &[
            "tune",
            "set",
            "x",
            "--policy",
            "deadline",
            "--runtime",
            "1ms",
            "--period",
            "100ms",
            "--affinity",
            "1",
        ],
        &["--affinity", "root domain"],
    );
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("l");
    let child = program.start();
    let pid = child.id() as i32;
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "deadline",
        "--runtime",
        "1ms",
        "--period",
        "100ms",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let sched = thread_sched(pid).unwrap();
    assert_eq!(sched.params.policy, Policy::Deadline);
    assert!(
        sched.reset_on_fork,
        "deadline threads must not fork without reset-on-fork"
    );
    // From deadline to a pinned fifo, and back: the kernel refuses
    // deadline to a pinned thread unless the affinity goes first.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "fifo",
        "--priority",
        "14",
        "--affinity",
        "1",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(policy_of(pid), (Policy::Fifo, 14));
    let out = run(rtlab(state.path()).args(["tune", "undo"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(thread_sched(pid).unwrap().params.policy, Policy::Deadline);
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(pid), (Policy::Other, 0));
    stop(child);
}

/// A cgroup-v1 cpuset holding only CPU 0, removed when dropped.
struct CpusetZero(PathBuf);

impl CpusetZero {
    fn new() -> Option<CpusetZero> {
        let root = Path::new("/sys/fs/cgroup/cpuset");
        if !root.join("cpuset.cpus").exists() {
            return None;
        }
        let dir = root.join(format!("rtlab-test-{}", unique_name("c")));
        fs::create_dir(&dir).ok()?;
        let set = CpusetZero(dir);
        fs::write(set.0.join("cpuset.cpus"), "0").ok()?;
        fs::write(set.0.join("cpuset.mems"), "0").ok()?;
        Some(set)
    }
}

impl Drop for CpusetZero {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

#[test]
fn an_affinity_a_cpuset_narrows_is_seen_to_hold() {
    require_root!();
    if CpuSet::online().len() < 2 {
        skip("needs two CPUs");
        return;
    }
    let Some(cpuset) = CpusetZero::new() else {
        skip("no cgroup-v1 cpuset hierarchy at /sys/fs/cgroup/cpuset");
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("k");
    let mut child = program.start();
    fs::write(cpuset.0.join("tasks"), child.id().to_string()).unwrap();
    let set = || {
        json_of(&run(rtlab(state.path()).args([
            "tune",
            "set",
            &program.name,
            "--policy",
            "fifo",
            "--priority",
            "11",
            "--affinity",
            "0-1",
            "--json",
        ])))
    };
    assert_eq!(set()["changed"], 1);
    assert_eq!(thread_affinity(child.id() as i32).unwrap().to_string(), "0");
    let again = set();
    assert_eq!(
        (again["changed"].as_u64(), again["held"].as_u64()),
        (Some(0), Some(1)),
        "{again}"
    );
    let rules = write_rules(
        state.path(),
        &format!(
            "[[rule]]\nmatch = \"{}\"\npolicy = \"fifo\"\npriority = 11\naffinity = \"0-1\"\n",
            program.name
        ),
    );
    let status =
        run(rtlab(state.path()).args(["tune", "status", "--rules", rules.to_str().unwrap()]));
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    let list = json_of(&run(
        rtlab(state.path()).args(["tune", "undo", "--list", "--json"])
    ));
    assert_eq!(list["entries"].as_array().unwrap().len(), 1, "{list}");
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    let _ = child.kill();
    let _ = child.wait();
    drop(cpuset);
}

#[test]
fn a_broad_pattern_needs_yes_and_never_touches_rtlab() {
    let state = tempfile::tempdir().unwrap();
    let program = Throwaway::new("y");
    let many: Vec<Proc> = (0..17).map(|_| program.start()).collect();
    // 17 processes of one name: more than a critical path has, so --yes.
    let out = run(rtlab(state.path()).args(["tune", "set", &program.name, "--policy", "batch"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("matches 17 processes") && stderr.contains("--yes"),
        "{stderr}"
    );
    for p in &many {
        assert_eq!(
            policy_of(p.id() as i32).0,
            Policy::Other,
            "changed without --yes"
        );
    }
    // SCHED_BATCH needs no privilege: this part runs as any user.
    let out = run(rtlab(state.path()).args([
        "tune",
        "set",
        &program.name,
        "--policy",
        "batch",
        "--yes",
        "--json",
    ]));
    assert!(out.status.success());
    assert_eq!(json_of(&out)["changed"], 17);
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    for p in &many {
        assert_eq!(policy_of(p.id() as i32).0, Policy::Other, "undo missed one");
    }
    // rtlab never matches itself (nor any other rtlab).
    let out =
        run(rtlab(state.path()).args(["tune", "set", "rtlab", "--policy", "other", "--dry-run"]));
    assert_eq!(out.status.code(), Some(1), "rtlab matched itself");
}

/// Anyone picks their process's name bytes (and the kernel cuts a name at
/// 15 bytes, even inside a character): a name that is not UTF-8 must not
/// make the process look gone to the identity check, nor empty its command
/// line. It is matched like any other, by name and by command line.
#[test]
fn a_process_whose_name_is_not_utf8_is_matched_and_promoted() {
    require_root!();
    use std::os::unix::ffi::OsStrExt;
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let name = unique_name("u");
    let mut bytes = name.clone().into_bytes();
    bytes.push(0xff);
    let link = dir.path().join(std::ffi::OsStr::from_bytes(&bytes));
    std::os::unix::fs::symlink(sleep_path(), &link).unwrap();
    let child = Proc(
        Command::new(&link)
            .arg("300")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.id() as i32;
    wait_until("the child to run under its name", || {
        fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(&bytes))
    });
    let apply = |rule: &str| {
        let rules = write_rules(state.path(), rule);
        let out = run(rtlab(state.path()).args([
            "tune",
            "apply",
            "--rules",
            rules.to_str().unwrap(),
            "--json",
        ]));
        assert_eq!(json_of(&out)["changed"], 1, "{rule}: {}", json_of(&out));
    };
    // By name, with an exe check (which reads the process's identity).
    let exe = fs::canonicalize(sleep_path()).unwrap();
    apply(&format!(
        "[[rule]]\nmatch = \"{name}.\"\nexe = \"{}\"\npolicy = \"fifo\"\npriority = 23\n",
        exe.display()
    ));
    assert_eq!(policy_of(pid), (Policy::Fifo, 23));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    assert_eq!(policy_of(pid).0, Policy::Other);
    // By command line (its first word holds the name's bytes).
    apply(&format!(
        "[[rule]]\ncmdline = \"/{name}. 300$\"\npolicy = \"fifo\"\npriority = 24\n"
    ));
    assert_eq!(policy_of(pid), (Policy::Fifo, 24));
    assert!(run(rtlab(state.path()).args(["tune", "undo"]))
        .status
        .success());
    stop(child);
}
