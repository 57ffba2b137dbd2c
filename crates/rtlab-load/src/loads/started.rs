//! What a started load owns (threads, temporary directories, a command,
//! a cgroup) until it is stopped.

use super::super::ctx::Ctx;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Everything a started load owns until it is stopped.
#[derive(Default)]
pub struct Started {
    pub threads: Vec<(String, JoinHandle<()>)>,
    /// Private directories made for the load; removed at stop.
    pub temp_dirs: Vec<PathBuf>,
    /// Caps applied and anything else a reader must know.
    pub notes: Vec<String>,
    /// The external command of a `cmd` load.
    pub command: Option<super::super::cmd::CommandLoad>,
    /// The load's private cgroup, when it has one (a `cmd` load puts its
    /// processes in a child of it).
    pub cgroup: Option<super::super::cgroup::Cgroup>,
}

const STACK: usize = 256 * 1024;

impl Started {
    /// Starts one thread of the load; a panic in it is a fatal error of the load.
    pub fn spawn(
        &mut self,
        ctx: &Ctx,
        name: String,
        body: impl FnOnce() + Send + 'static,
    ) -> Result<(), String> {
        let fail_ctx = ctx.clone();
        let thread_name = name.clone();
        let handle = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .stack_size(STACK)
            .spawn(move || {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
                    fail_ctx.fail(format!("thread {thread_name} panicked"));
                }
            })
            .map_err(|e| format!("cannot start thread {name}: {e}"))?;
        self.threads.push((name, handle));
        Ok(())
    }

    /// Stops the threads (they see `ctx.stop`), waiting at most `timeout`;
    /// threads still busy are left to die with the process (noted).
    pub fn join(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline && self.threads.iter().any(|(_, h)| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut busy = Vec::new();
        for (name, handle) in self.threads.drain(..) {
            if handle.is_finished() {
                let _ = handle.join();
            } else {
                busy.push(name);
            }
        }
        if !busy.is_empty() {
            self.notes.push(format!(
                "{} thread(s) still busy {} after the stop: {}",
                busy.len(),
                rtlab_core::units::human_duration(timeout.as_nanos() as u64),
                busy.join(", ")
            ));
        }
    }

    /// Removes the private temporary directories.
    pub fn remove_temp_dirs(&mut self) {
        for dir in self.temp_dirs.drain(..) {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    self.notes
                        .push(format!("could not remove {}: {e}", dir.display()));
                }
            }
        }
    }
}
