//! rtlab runs as root: its output files must not be a way for another
//! user to make it write, truncate or replace a file they cannot (a
//! planted symlink in a shared directory), must not replace a device or a
//! FIFO named as an output, must not lose one output to another written
//! to the same file, and must not empty a result file before it has
//! something to put in it.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// nobody's uid and gid.
const NOBODY: u32 = 65534;

/// A directory like /tmp (1777, root's) inside a private temporary one,
/// and a file outside it that only root may write ("precious").
fn shared_tmp() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("passwd");
    std::fs::write(&victim, "precious\n").unwrap();
    (dir, shared, victim)
}

/// What another user does: a symlink at `link` to `target`, owned by nobody.
fn plant(link: &Path, target: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
    let c = std::ffi::CString::new(link.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), NOBODY, NOBODY) }, 0);
}

fn timer(state: &Path) -> std::process::Command {
    let mut cmd = common::rtlab(state);
    cmd.args(["measure", "timer", "--cpus", "0", "--loops", "20"])
        .args(["--interval", "1ms", "--quiet", "--no-store"]);
    cmd
}

fn mknod(path: &Path, mode: libc::mode_t, dev: libc::dev_t) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mknod(c.as_ptr(), mode, dev) }, 0, "mknod");
}

#[test]
fn a_symlink_another_user_planted_in_a_shared_directory_is_not_followed() {
    if !common::is_root() {
        common::skip("needs root to plant a symlink owned by another user");
        return;
    }
    let (dir, shared, victim) = shared_tmp();
    let json = shared.join("result.json");
    plant(&json, &victim);
    let out = common::run(timer(dir.path()).arg("--json").arg(&json));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to follow the symlink"),
        "{stderr}"
    );
    assert!(stderr.contains("uid 65534"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(std::fs::symlink_metadata(&json).unwrap().is_symlink());

    // A dangling one, to a file root would create: refused, not created.
    let created = dir.path().join("ld.so.preload");
    let junit = shared.join("junit.xml");
    plant(&junit, &created);
    let out = common::run(
        timer(dir.path())
            .args(["--budget", "max<10s", "--junit"])
            .arg(&junit),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!created.exists(), "root created the link's target");
}

#[test]
fn a_planted_symlink_at_the_temporary_name_is_not_written_through() {
    if !common::is_root() {
        common::skip("needs root to plant a symlink owned by another user");
        return;
    }
    // `rtlab load` and `rtlab exec` wrote NAME.tmp, a name anyone could
    // plant in advance.
    let (dir, shared, victim) = shared_tmp();
    let json = shared.join("load.json");
    plant(&shared.join("load.json.tmp"), &victim);
    let out = common::run(
        common::rtlab(dir.path())
            .args(["load", "cpu", "--duration", "300ms", "--quiet", "--json"])
            .arg(&json),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let doc = common::read_json(&json).expect("the load's JSON");
    assert_eq!(doc["schema"], "rtlab.load/1");
    // Nothing of rtlab's left in the shared directory but its output.
    let left: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn a_character_device_or_a_fifo_named_as_output_is_written_not_replaced() {
    if !common::is_root() {
        common::skip("needs root to create a device node");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Our own /dev/null (1, 3), never the system's.
    let null = dir.path().join("null");
    mknod(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
    let out = common::run(timer(dir.path()).arg("--json").arg(&null));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(
        kind.is_char_device(),
        "--json replaced the device: {kind:?}"
    );

    // A FIFO (`--json >(jq .)`) gets the document and stays a FIFO.
    let fifo = dir.path().join("json.fifo");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = common::run(timer(dir.path()).arg("--json").arg(&fifo));
    let sent = reader.join().unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&sent).expect("JSON through the FIFO");
    assert_eq!(doc["schema"], "rtlab.run/1");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn two_outputs_in_one_file_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    let path = file.to_str().unwrap();
    common::assert_refused(
        &["measure", "timer", "--json", path, "--samples", path],
        &["--json", "--samples", "same file"],
    );
    assert!(!file.exists(), "refused, yet the file was created");
    // Another spelling of it, and a hard link to it.
    let other = format!("{}/./out", dir.path().display());
    common::assert_refused(
        &["measure", "timer", "--histfile", path, "--json", &other],
        &["--histfile", "--json", "same file"],
    );
    std::fs::write(&file, "old").unwrap();
    let link = dir.path().join("link");
    std::fs::hard_link(&file, &link).unwrap();
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--samples",
            link.to_str().unwrap(),
            "--histfile",
            path,
        ],
        &["--samples", "--histfile"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    // Two documents on stdout.
    common::assert_refused(
        &["measure", "timer", "--json", "-", "--histfile", "-"],
        &["--json -", "--histfile -", "stdout"],
    );
    common::assert_refused(
        &["measure", "timer", "--json", "-", "--samples", "-"],
        &["--json -", "--samples -", "stdout"],
    );
    common::assert_refused(
        &["exec", "periodic", "--samples", "-", "--json", "-"],
        &["--json -", "--samples -", "stdout"],
    );
}

#[test]
fn two_outputs_to_a_device_are_allowed() {
    if !common::is_root() {
        common::skip("needs root to create a device node");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    mknod(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
    let null = null.to_str().unwrap();
    let out = common::run(
        timer(dir.path())
            .args(["--json", null, "--samples", null])
            .args(["--histfile", null]),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::symlink_metadata(null)
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_campaign_does_not_empty_its_json_before_it_has_results() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("long.toml");
    std::fs::write(
        &spec,
        "name = \"long\"\nduration = \"60s\"\n[[probe]]\nkind = \"timer\"\ncpus = \"0\"\n\
         [[load]]\nname = \"idle\"\nrun = []\n\
         [[configuration]]\nname = \"plain\"\npolicy = \"other\"\n",
    )
    .unwrap();
    let json = dir.path().join("campaign.json");
    std::fs::write(&json, "{\"previous\": true}\n").unwrap();
    let mut child = common::rtlab(dir.path())
        .args(["campaign", "run"])
        .arg(&spec)
        .arg("--db")
        .arg(dir.path().join("results.db"))
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The campaign has begun (its --json is open) once it announces itself.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("campaign long:"));
    assert!(started, "the campaign never started");
    // Dies before its first run ends (a crash, the OOM killer).
    common::signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(&json).unwrap(),
        "{\"previous\": true}\n",
        "the previous result was emptied"
    );
}

/// Runs `cmd` as process `pid` (chosen through the kernel's last pid, as
/// root) after `plant(pid)`; None when the pid could not be had.
fn run_as_pid(
    mut cmd: std::process::Command,
    mut plant: impl FnMut(u32) -> Vec<PathBuf>,
) -> Option<std::process::Output> {
    for _ in 0..100 {
        // A pid well past the last one handed out, free now.
        let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let pid = last + 20;
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let planted = plant(pid);
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let got = child.id();
        let out = child.wait_with_output().unwrap();
        if got == pid {
            return Some(out);
        }
        for link in planted {
            let _ = std::fs::remove_file(link);
        }
    }
    None
}

#[test]
fn a_symlink_planted_at_the_pid_named_temporary_is_not_written_through() {
    if !common::is_root() || std::fs::metadata("/proc/sys/kernel/ns_last_pid").is_err() {
        common::skip("needs root and /proc/sys/kernel/ns_last_pid to run rtlab at a chosen pid");
        return;
    }
    // The temporaries were `.NAME.tmp-PID` (--json, export, report, JUnit)
    // and `.NAME.tmpPID` (plan compile -o): a pid is easy to guess.
    let (dir, shared, victim) = shared_tmp();
    let json = shared.join("out.json");
    let out = run_as_pid(
        {
            let mut cmd = timer(dir.path());
            cmd.arg("--json").arg(&json);
            cmd
        },
        |pid| {
            let link = shared.join(format!(".out.json.tmp-{pid}"));
            plant(&link, &victim);
            vec![link]
        },
    );
    let Some(out) = out else {
        common::skip("could not run rtlab at a chosen pid");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(common::read_json(&json).unwrap()["schema"], "rtlab.run/1");

    let source = dir.path().join("p.txt");
    std::fs::write(
        &source,
        "rtlab-plan 1\nmodule tick mark\nrepeat 10ms\nevents\n0us tick\n",
    )
    .unwrap();
    let compiled = shared.join("p.plan");
    let out = run_as_pid(
        {
            let mut cmd = common::rtlab(dir.path());
            cmd.args(["plan", "compile"])
                .arg(&source)
                .arg("-o")
                .arg(&compiled);
            cmd
        },
        |pid| {
            let link = shared.join(format!(".p.plan.tmp{pid}"));
            plant(&link, &victim);
            vec![link]
        },
    )
    .expect("rtlab ran at a chosen pid once");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(std::fs::metadata(&compiled).unwrap().len() > 0);
}

#[test]
fn load_json_into_a_fifo_gets_the_final_document_only() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("load.fifo");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = common::run(
        common::rtlab(dir.path())
            .args(["load", "cpu", "--duration", "2500ms", "--quiet", "--json"])
            .arg(&fifo),
    );
    let sent = reader.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One document (not the running snapshots before it), and a FIFO still.
    let doc: serde_json::Value = serde_json::from_slice(&sent).expect("one JSON document");
    assert_eq!(doc["status"], "complete");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}
