//! `cmd:"…"`: an external command (e.g. stress-ng) run by `sh -c` in the
//! worker's process group and in a child cgroup of the worker's. The
//! worker is its subreaper, so nothing the command starts escapes it, and
//! it ends them all at stop or when rtlab dies.

use super::cgroup::Cgroup;
use super::ctx::Ctx;
use super::sys;
use std::collections::VecDeque;
use std::io::BufRead;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of the command's output kept for error messages.
const TAIL_LINES: usize = 10;

pub struct CommandLoad {
    command: String,
    pid: i32,
    pgid: i32,
    cgroup: Option<Cgroup>,
    output: Arc<Mutex<VecDeque<String>>>,
    /// Wait status of `sh` once it has ended.
    status: Option<i32>,
}

impl CommandLoad {
    pub fn start(
        command: &str,
        ctx: &Ctx,
        spawn: &mut dyn FnMut(String, Box<dyn FnOnce() + Send>) -> Result<(), String>,
        cgroup: Option<&Cgroup>,
    ) -> Result<CommandLoad, String> {
        // SAFETY: plain prctl on this process: orphans of the command are
        // reparented to us, so we reap them and they stay within reach.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let sub = cgroup.and_then(|c| c.create_child("cmd").ok());
        let procs = match &sub {
            Some(s) => std::fs::OpenOptions::new()
                .write(true)
                .open(s.procs_file())
                .ok(),
            None => None,
        };
        let procs_fd = procs.as_ref().map_or(-1, |f| f.as_raw_fd());
        let mut fds = [0; 2];
        // SAFETY: fds is a valid out-parameter of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!("cmd: pipe: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fresh descriptors we own.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let write_copy = write_end
            .try_clone()
            .map_err(|e| format!("cmd: pipe: {e}"))?;
        let worker = std::process::id() as i32;
        let mut sh = std::process::Command::new("/bin/sh");
        sh.arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(Stdio::from(write_end))
            .stderr(Stdio::from(write_copy));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            sh.pre_exec(move || {
                super::sys::reset_signals();
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != worker {
                    libc::_exit(1);
                }
                if procs_fd >= 0 {
                    // Into the command's own cgroup (best effort).
                    libc::write(procs_fd, b"0".as_ptr() as *const libc::c_void, 1);
                }
                Ok(())
            });
        }
        let child = sh
            .spawn()
            .map_err(|e| format!("cmd: cannot start /bin/sh -c {command:?}: {e}"))?;
        // The Command held the pipe's write ends: dropped, so EOF comes when
        // the command's processes are gone. Child is never waited through
        // std: we reap with waitpid(-1) as the subreaper.
        drop(sh);
        drop(procs);
        let pid = child.id() as i32;
        drop(child);

        let output = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&output);
        let lines = ctx.counters.get("output_lines");
        spawn(
            "cmd-output".into(),
            Box::new(move || {
                let reader = std::io::BufReader::new(std::fs::File::from(read_end));
                for line in reader.split(b'\n') {
                    let Ok(line) = line else { break };
                    lines.fetch_add(1, Ordering::Relaxed);
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(String::from_utf8_lossy(&line).trim_end().to_string());
                }
            }),
        )?;
        let mut load = CommandLoad {
            command: command.to_string(),
            pid,
            pgid: worker,
            cgroup: sub,
            output,
            status: None,
        };
        // A command that cannot run (not found, bad syntax) ends at once:
        // report that before "ready".
        let deadline = Instant::now() + Duration::from_millis(100);
        while Instant::now() < deadline {
            load.reap();
            if load.status.is_some() {
                std::thread::sleep(Duration::from_millis(20));
                let ended = load.ended().unwrap_or_default();
                load.stop(Duration::from_millis(200), &mut Vec::new());
                return Err(ended);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(load)
    }

    /// Reaps every child that has ended (the command and orphans handed to
    /// us); returns whether any child is left.
    pub fn reap(&mut self) -> bool {
        loop {
            let mut status = 0;
            // SAFETY: status is a valid out-parameter.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            match pid {
                0 => return true,
                p if p < 0 => return false, // ECHILD: none left
                p => {
                    if p == self.pid {
                        self.status = Some(status);
                    }
                }
            }
        }
    }

    /// Why the command ended, when it has (with its last output lines).
    pub fn ended(&self) -> Option<String> {
        let status = self.status?;
        let tail = self.tail();
        let mut text = format!(
            "cmd: {:?} {}",
            self.command,
            sys::describe_wait_status(status)
        );
        if !tail.is_empty() {
            text.push_str(&format!("; its last output: {}", tail.join(" | ")));
        }
        Some(text)
    }

    pub fn tail(&self) -> Vec<String> {
        self.output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Ends the command and everything it started: SIGTERM to the process
    /// group, `grace` to exit, then SIGKILL to what is left of the group
    /// and of the command's cgroup; every child is reaped.
    pub fn stop(&mut self, grace: Duration, notes: &mut Vec<String>) {
        // The worker is in the group too: SIGTERM is blocked in all its
        // threads and read through its signalfd, so this does not end it.
        sys::signal_group(self.pgid, libc::SIGTERM);
        // Processes that left the group are still in the command's cgroup.
        if let Some(c) = &self.cgroup {
            c.signal_all(libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while self.reap() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.reap() {
            let me = std::process::id() as i32;
            let mut left: Vec<i32> = sys::group_members(self.pgid);
            if let Some(c) = &self.cgroup {
                left.extend(c.pids());
            }
            left.retain(|&p| p != me && sys::proc_stat(p).is_some_and(|s| s.state != 'Z'));
            left.sort_unstable();
            left.dedup();
            if let Some(c) = &self.cgroup {
                c.kill_all(Duration::from_secs(1));
            }
            for pid in sys::group_members(self.pgid) {
                if pid != me {
                    sys::signal_member(pid, self.pgid, libc::SIGKILL);
                }
            }
            let deadline = Instant::now() + Duration::from_secs(2);
            while self.reap() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            notes.push(format!(
                "cmd: {} process(es) did not end within {} of SIGTERM and were killed",
                left.len(),
                rtlab_core::units::human_duration(grace.as_nanos() as u64)
            ));
        }
        if let Some(c) = &self.cgroup {
            if let Err(e) = c.remove() {
                notes.push(format!("cmd: could not remove {}: {e}", c.path.display()));
            }
        }
    }
}
