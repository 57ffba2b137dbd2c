//! Two network namespaces joined by a veth pair, for tests that run the
//! rtlab binary on both ends of a link (the traffic round trip).
//!
//! The pair is `rtlab net probe --netns`'s own (`rtlab_probe::net::netns`):
//! anonymous namespaces held by descriptors of this test process, so two
//! tests running at once never share a name, and the namespaces, their veth
//! and the addresses in them are gone as soon as the pair is dropped (also
//! on panic, and with the process however it ends). A program started in
//! one (`Namespaced`) keeps it alive while it runs: its guard kills it on
//! drop, so nothing of a failed test outlives it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use rtlab_probe::net::netns::{
    NetnsPair, CLIENT_ADDR, CLIENT_DEVICE, CLIENT_MAC, SERVER_ADDR, SERVER_DEVICE, SERVER_MAC,
};

/// Why namespaces cannot be made here (not root, no `ip`), or Ok.
pub fn available() -> Result<(), String> {
    if !super::is_root() {
        return Err("network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)".into());
    }
    let ip = Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !matches!(ip, Ok(status) if status.success()) {
        return Err("`ip` (iproute2) is not installed (scripts/setup installs it)".into());
    }
    Ok(())
}

/// Whether `program` runs (`program ARG` exits 0), for optional tools.
pub fn tool_available(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Makes `command` run inside `namespace` (it enters it between fork and
/// exec, so the test process itself never changes namespace).
pub fn inside<'a>(command: &'a mut Command, namespace: &OwnedFd) -> &'a mut Command {
    let raw = namespace.as_raw_fd();
    // SAFETY: between fork and exec only setns, a plain system call; the
    // descriptor is open in the child then (CLOEXEC acts at exec).
    unsafe {
        command.pre_exec(move || {
            if libc::setns(raw, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// Waits until a UDP socket listens on `port` inside `namespace` (as `ss`
/// shows it): a receiver started in the background is ready for packets.
pub fn wait_for_udp_listener(namespace: &OwnedFd, port: u16, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let shown = inside(
            Command::new("ss").args(["-H", "-u", "-l", "-n", &format!("sport = :{port}")]),
            namespace,
        )
        .stdin(Stdio::null())
        .output()
        .expect("`ss` (iproute2) runs");
        if !String::from_utf8_lossy(&shown.stdout).trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listened on UDP port {port} within {} s",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A program running inside a namespace, its stderr in a log file; killed
/// when dropped unless it was finished.
pub struct Namespaced {
    child: Option<Child>,
    what: String,
    log: PathBuf,
}

impl Namespaced {
    /// Starts `command` inside `namespace`, its stdout piped and its
    /// stderr written to `log`.
    pub fn spawn(command: &mut Command, namespace: &OwnedFd, what: &str, log: &Path) -> Namespaced {
        let stderr = std::fs::File::create(log).expect("the log file");
        let child = inside(command, namespace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Namespaced {
            child: Some(child),
            what: what.to_string(),
            log: log.to_path_buf(),
        }
    }

    /// Waits until its stderr says `text` (a capture tool saying it
    /// listens); panics, with what it said, if it exits or `limit` passes.
    pub fn wait_for_log(&mut self, text: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let said = std::fs::read_to_string(&self.log).unwrap_or_default();
            if said.contains(text) {
                return;
            }
            let child = self.child.as_mut().expect("not finished yet");
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "{} exited ({status}) before saying {text:?}: {said}",
                    self.what
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not say {text:?} within {} s: {said}",
                self.what,
                limit.as_secs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` (SIGINT: the way a user stops a capture).
    pub fn signal(&self, signal: i32) {
        let child = self.child.as_ref().expect("not finished yet");
        // SAFETY: plain kill(2) on our own child, not reaped yet.
        unsafe { libc::kill(child.id() as i32, signal) };
    }

    /// Waits for it to exit (killed after `limit`: a test must end) and
    /// returns its exit code, stdout and stderr; the stderr is echoed for
    /// the test's log.
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let mut child = self.child.take().expect("finished once");
        let deadline = Instant::now() + limit;
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let timed_out = matches!(child.try_wait(), Ok(None));
        if timed_out {
            let _ = child.kill();
        }
        let output = child.wait_with_output().expect("output of a child");
        let stderr = std::fs::read_to_string(&self.log).unwrap_or_default();
        eprintln!("{} stderr: {stderr}", self.what);
        assert!(
            !timed_out,
            "{} did not end within {} s",
            self.what,
            limit.as_secs()
        );
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr,
        )
    }
}

impl Drop for Namespaced {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
