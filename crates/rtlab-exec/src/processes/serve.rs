//! The executive of the executive form: `rtlab exec serve` started as a
//! child on a socket in a private directory, ready once a status request
//! succeeds, stopped with SIGTERM (it exits 0 and removes its socket),
//! killed with its group if it does not.

use super::children::{self, Child};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::units::human_duration;
use std::ffi::{CString, OsStr};
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the executive gets to listen on its socket.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long it gets to leave after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// Lines of its stderr kept for the reason of a failure.
const TAIL_LINES: usize = 8;

/// A running `rtlab exec serve`.
pub struct Executive {
    child: Child,
    /// The private directory (mode 0700) holding its socket.
    dir: PathBuf,
    pub socket: PathBuf,
    tail: Arc<Mutex<Vec<String>>>,
    /// The thread reading its stderr into `tail`: done once it is at EOF.
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Starts `program exec serve` on `cpu` for `duration_ns` (longer than the
/// run: it is stopped at the run's end), with room for `tasks` processes
/// (its own default is 64), focused on `focus` when given, and waits
/// until it listens.
pub fn start(
    program: &Path,
    cpu: usize,
    tasks: usize,
    duration_ns: u64,
    focus: Option<&CpuSet>,
) -> anyhow::Result<Executive> {
    let dir = private_dir()?;
    let socket = dir.join("exec.sock");
    let cpus = cpu.to_string();
    let duration = format!("{}ms", duration_ns.div_ceil(1_000_000));
    let max_tasks = tasks.to_string();
    let focus = focus.map(|cpus| cpus.to_string());
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("exec"),
        OsStr::new("serve"),
        OsStr::new("--socket"),
        socket.as_os_str(),
        OsStr::new("--cpus"),
        OsStr::new(&cpus),
        OsStr::new("--duration"),
        OsStr::new(&duration),
        OsStr::new("--no-store"),
        OsStr::new("--max-tasks"),
        OsStr::new(&max_tasks),
    ];
    if let Some(focus) = &focus {
        args.extend([OsStr::new("--focus"), OsStr::new(focus)]);
    }
    let spawned = children::spawn(program, &args, libc::SIGTERM, false);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            anyhow::bail!(
                "cannot start the executive ({} exec serve): {e}",
                program.display()
            );
        }
    };
    let tail = Arc::new(Mutex::new(Vec::new()));
    let reader = child
        .stderr
        .take()
        .and_then(|stderr| keep_tail(stderr, Arc::clone(&tail)));
    let mut executive = Executive {
        child,
        dir,
        socket,
        tail,
        reader,
    };
    executive.wait_listening()?;
    Ok(executive)
}

/// What the private directories are called: `PREFIX` and 6 characters.
const PREFIX: &str = "rtlab-processes-";

/// A new directory only root (or the caller) can enter, for the socket.
/// The directories of runs SIGKILLed before their end are removed first.
fn private_dir() -> anyhow::Result<PathBuf> {
    clear_stale(&std::env::temp_dir(), LISTEN_TIMEOUT + STOP_GRACE);
    let template = std::env::temp_dir().join(format!("{PREFIX}XXXXXX"));
    let mut bytes = CString::new(template.as_os_str().as_bytes())?.into_bytes_with_nul();
    // SAFETY: a writable, NUL-terminated template, as mkdtemp requires.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        anyhow::bail!(
            "cannot make a private directory for the executive's socket ({}): {}",
            template.display(),
            std::io::Error::last_os_error()
        );
    }
    bytes.pop();
    Ok(PathBuf::from(OsStr::from_bytes(&bytes)))
}

/// Removes from `parent` the private directories a killed run left: ours
/// (owner and mode 0700), unchanged for `age` (a live run's executive
/// listens within [`LISTEN_TIMEOUT`] of its directory's making) and with
/// nobody listening at their socket; a dead socket in one goes with it.
/// Anything else, or a directory that is not empty, is left alone.
fn clear_stale(parent: &Path, age: Duration) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    // SAFETY: no preconditions.
    let euid = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_ours = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .is_some_and(|rest| rest.len() == 6);
        let dir = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        let old = meta.modified().ok().and_then(|m| m.elapsed().ok()) >= Some(age);
        if !is_ours || !meta.is_dir() || meta.uid() != euid || meta.mode() & 0o777 != 0o700 || !old
        {
            continue;
        }
        let socket = dir.join("exec.sock");
        if let Ok(s) = std::fs::symlink_metadata(&socket) {
            if !s.file_type().is_socket() || crate::serve::listen::is_live(&socket) {
                continue;
            }
            let _ = std::fs::remove_file(&socket);
        }
        let _ = std::fs::remove_dir(&dir);
    }
}

/// Keeps the last lines of the executive's stderr, in a thread of its own.
fn keep_tail(
    stderr: std::fs::File,
    tail: Arc<Mutex<Vec<String>>>,
) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("rtlab-serve-err".into())
        .spawn(move || {
            for line in BufReader::new(stderr).split(b'\n') {
                let Ok(line) = line else { break };
                if line.trim_ascii().is_empty() {
                    continue;
                }
                let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                if tail.len() == TAIL_LINES {
                    tail.remove(0);
                }
                tail.push(String::from_utf8_lossy(&line).trim_end().to_string());
            }
        })
        .ok()
}

impl Executive {
    /// Its last words, for a reason: once it has ended, all of them (the
    /// reader gets a second to reach the end of its stderr).
    fn said(&mut self) -> String {
        if self.child.exit().is_some() {
            let give_up = Instant::now() + Duration::from_secs(1);
            while self.reader.as_ref().is_some_and(|r| !r.is_finished()) && Instant::now() < give_up
            {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", tail.join(" | "))
        }
    }

    /// Waits until the executive answers a status request on the socket
    /// (a SOCK_SEQPACKET socket: a stream connect() is refused there).
    fn wait_listening(&mut self) -> anyhow::Result<()> {
        let give_up = Instant::now() + LISTEN_TIMEOUT;
        loop {
            if rtlab_client::executive_status(Some(&self.socket)).is_ok() {
                return Ok(());
            }
            if let Some(exit) = self.child.exit() {
                let said = self.said();
                anyhow::bail!(
                    "the executive (rtlab exec serve) {} before it listened on {}{said}",
                    exit.describe(),
                    self.socket.display(),
                );
            }
            if Instant::now() >= give_up {
                let said = self.said();
                anyhow::bail!(
                    "the executive (rtlab exec serve) did not listen on {} within {}{said}",
                    self.socket.display(),
                    human_duration(LISTEN_TIMEOUT.as_nanos() as u64),
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Why it ended before being told to, if it has.
    pub fn died(&mut self) -> Option<String> {
        let exit = self.child.exit()?;
        let said = self.said();
        Some(format!(
            "the executive (rtlab exec serve, pid {}) {} during the run{said}",
            self.child.pid,
            exit.describe(),
        ))
    }

    /// SIGTERM, [`STOP_GRACE`] to leave, then SIGKILL; removes what it
    /// left. Returns what went wrong, as warnings.
    pub fn stop(mut self) -> Vec<String> {
        let mut notes = Vec::new();
        let ended_alone = self.child.exit();
        self.child.signal(libc::SIGTERM);
        let (exit, killed) = self.child.reap(STOP_GRACE);
        if killed {
            notes.push(format!(
                "the executive did not leave within {} of SIGTERM and was killed",
                human_duration(STOP_GRACE.as_nanos() as u64)
            ));
        } else if let (None, Some(exit)) = (ended_alone, exit) {
            if !exit.is_success() {
                notes.push(format!(
                    "the executive {} when stopped{}",
                    exit.describe(),
                    self.said()
                ));
            }
        }
        self.clean_up(&mut notes);
        notes
    }

    /// Removes the socket (if the executive left it) and the directory.
    fn clean_up(&mut self, notes: &mut Vec<String>) {
        if self.socket.exists() {
            if !self.child_was_killed() {
                notes.push(format!(
                    "the executive left its socket {}: removed",
                    self.socket.display()
                ));
            }
            let _ = std::fs::remove_file(&self.socket);
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            notes.push(format!("could not remove {}: {e}", self.dir.display()));
        }
    }

    fn child_was_killed(&mut self) -> bool {
        self.child.exit().is_some_and(|e| e.was_killed())
    }
}

impl Drop for Executive {
    fn drop(&mut self) {
        // On an error path: no notes to give, nothing left behind.
        self.child.kill_and_reap();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for `rtlab exec serve` that runs `body` (sh). One that
    /// listens is in tests/processes.rs.
    fn fake(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("fake-rtlab");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn the_directories_of_killed_runs_are_cleared_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let make = |name: &str, mode: u32, old: bool| {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            if old {
                let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
                let handle = std::fs::File::open(&dir).unwrap();
                handle.set_modified(an_hour_ago).unwrap();
            }
            dir
        };
        let empty = make("rtlab-processes-aaaaaa", 0o700, true);
        let dead = make("rtlab-processes-bbbbbb", 0o700, true);
        drop(std::os::unix::net::UnixListener::bind(dead.join("exec.sock")).unwrap());
        let dead_times = std::fs::File::open(&dead).unwrap();
        dead_times
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        let fresh = make("rtlab-processes-cccccc", 0o700, false);
        let open = make("rtlab-processes-dddddd", 0o755, true);
        let other = make("rtlab-processes-other", 0o700, true);
        let full = make("rtlab-processes-eeeeee", 0o700, true);
        std::fs::write(full.join("keep"), "x").unwrap();
        let full_times = std::fs::File::open(&full).unwrap();
        full_times
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        clear_stale(tmp.path(), LISTEN_TIMEOUT + STOP_GRACE);
        assert!(!empty.exists() && !dead.exists(), "a killed run's are gone");
        for kept in [&fresh, &open, &other, &full] {
            assert!(kept.exists(), "{} is left alone", kept.display());
        }
        assert!(full.join("keep").exists());
    }

    #[test]
    fn an_executive_that_cannot_start_is_an_error_with_what_it_said() {
        let tmp = tempfile::tempdir().unwrap();
        let program = fake(
            tmp.path(),
            "echo 'error: unexpected argument --cpus' >&2\nexit 2",
        );
        let error = start(&program, 0, 1, 1_000_000_000, None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with(
                "the executive (rtlab exec serve) exited with status 2 before it listened on"
            ),
            "{error}"
        );
        assert!(
            error.ends_with("it said: error: unexpected argument --cpus"),
            "{error}"
        );
    }
}
