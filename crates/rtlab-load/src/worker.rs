//! The worker: the process one load runs in (`rtlab __load-worker SPEC`).
//!
//! Protocol on stdout, one line each: `ready {json}` once loading,
//! `status {json}` about every second (the work so far), `failed "why"`
//! when the load cannot start or ends early, and `done {LoadRecord}` after
//! a stop. Stop: SIGTERM (or SIGINT/SIGHUP). Parent gone: EOF on stdin (the
//! parent holds the pipe's other end) or the parent-death signal SIGUSR2.
//! All signals are read through a signalfd by the main thread.

use super::cgroup::Cgroup;
use super::ctx::Ctx;
use super::loads::{self, Started};
use super::spec::LoadSpec;
use rtlab_core::result::LoadRecord;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a worker says once its load runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: i32,
    pub pgid: i32,
    /// The load's private cgroup, None when it has its process group only.
    pub cgroup: Option<PathBuf>,
    /// Private directories of the load (removed at stop).
    pub temp_dirs: Vec<PathBuf>,
    /// The spec with every default resolved.
    pub spec: String,
    pub notes: Vec<String>,
}

/// The signal a worker gets when the thread that started it (or its whole
/// parent) exits.
pub const PARENT_DEATH_SIGNAL: i32 = libc::SIGUSR2;

const STATUS_EVERY: Duration = Duration::from_secs(1);

fn say(kind: &str, value: &impl Serialize) {
    let line = format!(
        "{kind} {}\n",
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    );
    let mut out = std::io::stdout().lock();
    // The parent may be gone: nothing to do about it here.
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks `signals` in this thread (and so in every thread started
    /// after) and reads them through a non-blocking signalfd.
    fn new(signals: &[i32]) -> std::io::Result<SignalFd> {
        // SAFETY: the set is initialised by sigemptyset; the fd is checked.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(SignalFd {
                fd: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// Every signal pending now.
    fn drain(&self) -> Vec<i32> {
        let mut signals = Vec::new();
        loop {
            // SAFETY: info is a buffer of exactly one signalfd_siginfo.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    &mut info as *mut _ as *mut libc::c_void,
                    size,
                )
            };
            if n as usize != size {
                return signals;
            }
            signals.push(info.ssi_signo as i32);
        }
    }
}

enum End {
    Stopped,
    ParentGone,
    Failed(String),
}

/// Runs the load described by `spec_json` until told to stop or until
/// its parent dies; returns the process exit code (0 after a stop, 1 when
/// the load failed or the parent is gone, 2 for a bad spec).
pub fn worker_main(spec_json: &str) -> i32 {
    let spec: LoadSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            say("failed", &format!("invalid load spec JSON: {e}"));
            return 2;
        }
    };
    if let Err(e) = spec.validate() {
        say("failed", &e.to_string());
        return 2;
    }
    let spec = spec.resolved();
    // SAFETY: plain syscall.
    let parent = unsafe { libc::getppid() };
    let signals = match SignalFd::new(&[
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGCHLD,
        PARENT_DEATH_SIGNAL,
    ]) {
        Ok(s) => s,
        Err(e) => {
            say("failed", &format!("signalfd: {e}"));
            return 1;
        }
    };
    let mut notes = Vec::new();
    let cgroup = match Cgroup::create_for_self() {
        Ok(c) => Some(c),
        Err(why) => {
            notes.push(format!(
                "no private cgroup ({why}): the load is held by its process group only"
            ));
            None
        }
    };
    let ctx = Ctx::default();
    let mut started = Started {
        cgroup: cgroup.clone(),
        ..Started::default()
    };
    if let Err(why) = loads::start(&spec, &ctx, &mut started) {
        ctx.stop.store(true, Ordering::SeqCst);
        if let Some(command) = started.command.as_mut() {
            command.stop(Duration::from_secs(1), &mut notes);
        }
        started.join(Duration::from_secs(2));
        started.remove_temp_dirs();
        remove_cgroup(cgroup.as_ref(), &mut notes);
        say("failed", &why);
        return 1;
    }
    notes.append(&mut started.notes);
    let pid = std::process::id() as i32;
    say(
        "ready",
        &Ready {
            pid,
            // SAFETY: plain syscall.
            pgid: unsafe { libc::getpgrp() },
            cgroup: cgroup.as_ref().map(|c| c.path.clone()),
            temp_dirs: started.temp_dirs.clone(),
            spec: spec.to_string(),
            notes: notes.clone(),
        },
    );
    let began = Instant::now();
    let mut last_status = Instant::now();
    let end = loop {
        if let Some(end) = wait_for_event(&signals, parent) {
            break end;
        }
        if let Some(command) = started.command.as_mut() {
            command.reap();
            if let Some(why) = command.ended() {
                break End::Failed(format!("{why} before the load was stopped"));
            }
        }
        if let Some(why) = ctx.fatal() {
            break End::Failed(why);
        }
        if last_status.elapsed() >= STATUS_EVERY {
            say("status", &work(&ctx, began));
            last_status = Instant::now();
        }
    };

    ctx.stop.store(true, Ordering::SeqCst);
    let parent_gone = matches!(end, End::ParentGone);
    let grace = if parent_gone {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3)
    };
    if let Some(command) = started.command.as_mut() {
        command.stop(grace, &mut notes);
    }
    started.join(Duration::from_secs(2));
    let work = work(&ctx, began);
    started.remove_temp_dirs();
    remove_cgroup(cgroup.as_ref(), &mut notes);
    notes.append(&mut started.notes);
    let code = match end {
        End::ParentGone => return 1,
        End::Stopped => 0,
        End::Failed(why) => {
            say("failed", &why);
            notes.push(format!("stopped early: {why}"));
            1
        }
    };
    say(
        "done",
        &LoadRecord {
            name: spec.name().to_string(),
            spec: spec.to_string(),
            work,
            notes,
        },
    );
    code
}

/// Waits up to about half a second for a stop, the parent's death or a
/// child's exit; Some when the load must end.
fn wait_for_event(signals: &SignalFd, parent: i32) -> Option<End> {
    let mut fds = [
        libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: signals.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: fds is a valid array of two pollfds.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 500) };
    if n > 0 && fds[0].revents != 0 {
        let mut buffer = [0u8; 256];
        // SAFETY: reads into a local buffer.
        let got = unsafe { libc::read(0, buffer.as_mut_ptr() as *mut libc::c_void, buffer.len()) };
        if got <= 0 {
            // EOF: the parent, which holds the other end, is gone.
            return Some(End::ParentGone);
        }
    }
    for signal in signals.drain() {
        match signal {
            libc::SIGTERM | libc::SIGINT | libc::SIGHUP => return Some(End::Stopped),
            PARENT_DEATH_SIGNAL => {
                // Also sent when only the thread that started us exited;
                // the stdin pipe still tells when the process goes.
            }
            _ => {} // SIGCHLD: reaped by the caller
        }
    }
    // SAFETY: plain syscall.
    if unsafe { libc::getppid() } != parent {
        return Some(End::ParentGone);
    }
    None
}

fn work(ctx: &Ctx, began: Instant) -> std::collections::BTreeMap<String, u64> {
    let mut work = ctx.counters.snapshot();
    let (user, system) = super::sys::cpu_time_us();
    work.insert("cpu_user_us".into(), user);
    work.insert("cpu_system_us".into(), system);
    work.insert("elapsed_ms".into(), began.elapsed().as_millis() as u64);
    work
}

fn remove_cgroup(cgroup: Option<&Cgroup>, notes: &mut Vec<String>) {
    let Some(cgroup) = cgroup else { return };
    let result = cgroup.leave().and_then(|_| cgroup.remove());
    if let Err(e) = result {
        notes.push(format!("could not remove {}: {e}", cgroup.path.display()));
    }
}
