//! The run's child processes (the workers, the executive): each in its
//! own process group, told when rtlab dies, signalled only through its
//! group while it is not reaped (so its pid and group id cannot be
//! reused meanwhile), and killed and reaped whatever happens: when the run
//! ends, on an error, on a panic ([`Drop`]).

use rtlab_load::sys::{describe_wait_status, exit_nowait, reset_signals, signal_group};
use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a child ended, in rtlab-load's words ("exited with status 1",
/// "killed by signal 9 (SIGKILL)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit(String);

impl Exit {
    pub fn is_success(&self) -> bool {
        self.0 == "exited with status 0"
    }

    pub fn was_killed(&self) -> bool {
        self.0.ends_with("(SIGKILL)")
    }

    pub fn describe(&self) -> &str {
        &self.0
    }
}

/// One child process and its pipes (taken by whoever reads them).
pub struct Child {
    pub pid: i32,
    pub stdin: Option<File>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    /// Known once it has exited (before or at reaping).
    exit: Option<Exit>,
    reaped: bool,
}

/// Starts `program args` in its own process group with a standard signal
/// state; `death_signal` is sent to it when the spawning thread (normally
/// the main thread) dies. Its stdin and stderr are pipes; its stdout a
/// pipe when `stdout_piped`, else /dev/null.
pub fn spawn(
    program: &Path,
    args: &[&OsStr],
    death_signal: i32,
    stdout_piped: bool,
) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: plain syscall.
    let parent = unsafe { libc::getpid() };
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(if stdout_piped {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            reset_signals();
            libc::prctl(libc::PR_SET_PDEATHSIG, death_signal, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    Ok(Child {
        pid: child.id() as i32,
        stdin: child
            .stdin
            .take()
            .map(|s| File::from(std::os::fd::OwnedFd::from(s))),
        stdout: child
            .stdout
            .take()
            .map(|s| File::from(std::os::fd::OwnedFd::from(s))),
        stderr: child
            .stderr
            .take()
            .map(|s| File::from(std::os::fd::OwnedFd::from(s))),
        exit: None,
        reaped: false,
    })
}

impl Child {
    /// How it ended, once it has; it is not reaped (it stays a zombie, its
    /// group id reserved, until [`Child::reap`]).
    pub fn exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() && !self.reaped {
            self.exit = exit_nowait(self.pid).map(Exit);
        }
        self.exit.clone()
    }

    /// Sends `signal` to its process group (never once it is reaped).
    pub fn signal(&self, signal: i32) {
        if !self.reaped {
            signal_group(self.pid, signal);
        }
    }

    /// Waits up to `grace` for the child to exit by itself, then kills
    /// its whole group; reaps it. Returns how it ended and whether it had
    /// to be killed.
    pub fn reap(&mut self, grace: Duration) -> (Option<Exit>, bool) {
        let give_up = Instant::now() + grace;
        while self.exit().is_none() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(2));
        }
        let killed = self.exit().is_none();
        self.kill_and_reap();
        (self.exit.clone(), killed)
    }

    /// SIGKILL to the whole group (what it started too), then reaps the
    /// child. Idempotent.
    pub fn kill_and_reap(&mut self) {
        if self.reaped {
            return;
        }
        signal_group(self.pid, libc::SIGKILL);
        let mut status = 0;
        // SAFETY: status is a valid out-parameter; the pid is our child.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, 0) };
        if rc == self.pid && self.exit.is_none() {
            self.exit = Some(Exit(describe_wait_status(status)));
        }
        self.reaped = true;
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_load::sys::group_members;

    fn sh(script: &str) -> Child {
        spawn(
            Path::new("/bin/sh"),
            &[OsStr::new("-c"), OsStr::new(script)],
            libc::SIGKILL,
            true,
        )
        .unwrap()
    }

    #[test]
    fn a_child_that_exits_is_seen_before_it_is_reaped() {
        let mut child = sh("exit 3");
        let (exit, killed) = child.reap(Duration::from_secs(10));
        assert!(!killed);
        let exit = exit.unwrap();
        assert_eq!(exit.describe(), "exited with status 3");
        assert!(!exit.is_success() && !exit.was_killed());
    }

    #[test]
    fn a_child_and_what_it_started_are_killed_with_their_group() {
        // The shell starts a sleep in its group and waits for it.
        let mut child = sh("sleep 60 & wait");
        let give_up = Instant::now() + Duration::from_secs(10);
        while group_members(child.pid).len() < 2 {
            assert!(Instant::now() < give_up, "the sleep never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        let members = group_members(child.pid);
        let (exit, killed) = child.reap(Duration::from_millis(10));
        assert!(killed);
        let exit = exit.unwrap();
        assert_eq!(exit.describe(), "killed by signal 9 (SIGKILL)");
        assert!(exit.was_killed());
        // The sleep (reparented, reaped by init or a subreaper) is gone too.
        let give_up = Instant::now() + Duration::from_secs(10);
        while members
            .iter()
            .any(|&p| rtlab_load::sys::proc_stat(p).is_some_and(|s| s.state != 'Z'))
        {
            assert!(Instant::now() < give_up, "{members:?} still alive");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        let child = sh("sleep 60");
        let pid = child.pid;
        drop(child);
        // Reaped: no longer our child.
        // SAFETY: plain syscall.
        let rc = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(rc, -1);
    }
}
