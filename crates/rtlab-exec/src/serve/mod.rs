//! The executive as a service (`rtlab exec serve`, paper 002's SCHED_KURT
//! in user space): processes attach over a Unix socket (the kernel's
//! peer credentials checked), each is promoted (journaled first) and
//! released at its planned instants through a futex in a page it shares
//! with the server, and each attachment becomes one run when it ends.
//!
//! * [`config`]: the settings and the one judge of an attach request.
//! * [`access`]: who is at the other end, and who may attach.
//! * [`listen`]: the socket: its directory, a stale one replaced.
//! * [`executive`]: the executive threads and their lock-free tables.
//! * [`attachment`]: one process, from its promotion to its run.
//! * [`watch`]: the kernel's word on whether a process yields.
//! * [`control`]: the control thread that joins them.
//! * [`focused`]: `--focus`: the CPUs given to them alone.
//!
//! Usable in-process: [`Server::start`] gives a [`Handle`] whose events
//! say what happened (one line each) and carry each ended attachment's
//! [`RunResult`](rtlab_core::result::RunResult); [`Handle::stop`] ends it.

pub mod access;
pub mod attachment;
pub mod config;
mod control;
pub mod executive;
pub mod focused;
pub mod listen;
mod watch;

pub use config::{
    ServeConfig, DEFAULT_MAX_PRIORITY, DEFAULT_MAX_TASKS, DEFAULT_PRIORITY, MAX_SERVE_TASKS,
};

use anyhow::Context;
use control::Control;
pub use control::Event;
use executive::Executive;
use focused::Partition;
use rtlab_core::journal::Journal;
use rtlab_focus::FocusReport;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The server.
pub struct Server;

/// A running server.
pub struct Handle {
    stop: Arc<AtomicBool>,
    /// The control thread, which gives the partition back when it ends.
    control: Option<JoinHandle<Option<Partition>>>,
    events: Receiver<Event>,
    journal: Arc<Mutex<Journal>>,
    socket: std::path::PathBuf,
    /// The executives' warnings (a priority or CPU refused).
    pub warnings: Vec<String>,
    /// With admission on: the overheads measured at start.
    pub admission: Option<crate::admission::Measured>,
    /// What `--focus` did (None: not focused).
    pub focus: Option<FocusReport>,
}

impl Server {
    /// Checks `config`, listens at its socket (journaled in `journal`),
    /// starts one executive per CPU and the control thread. Ready (a
    /// connect succeeds) when this returns.
    pub fn start(config: ServeConfig, journal: Arc<Mutex<Journal>>) -> anyhow::Result<Handle> {
        config
            .validate()
            .map_err(|e| anyhow::anyhow!(e.render(rtlab_core::settings::flag)))?;
        // Focused before anything else: the executive threads are pinned
        // inside the partition, and nobody attaches before it exists.
        let partition = match &config.focus {
            Some(cpus) => Some(
                Partition::start(cpus, Arc::clone(&journal))
                    .with_context(|| format!("--focus {cpus}"))?,
            ),
            None => None,
        };
        let focus = partition.as_ref().map(|p| p.report().clone());
        let give_back = |partition: Option<Partition>| {
            for line in partition.map(Partition::end).unwrap_or_default() {
                eprintln!("error: {line}");
            }
        };
        // Measured before anything of the server runs on its CPUs.
        let admission = config
            .admission
            .then(|| crate::admission::ServeAdmission::start(&config));
        let others = !config.allow_users.is_empty() || !config.allow_groups.is_empty();
        let listener = match listen::listen(&config.socket, others, &journal) {
            Ok(listener) => listener,
            Err(e) => {
                give_back(partition);
                return Err(e);
            }
        };
        let mut executives = Vec::with_capacity(config.cpus.len());
        let mut warnings = Vec::new();
        for &cpu in &config.cpus {
            let executive = Executive::start(
                cpu,
                config.priority,
                config.max_tasks,
                config.guard_ns,
                config.release_early_ns,
            )
            .with_context(|| format!("starting the executive of CPU {cpu}"));
            match executive {
                Ok(executive) => {
                    warnings.extend(executive.warnings.iter().cloned());
                    executives.push(executive);
                }
                Err(e) => {
                    lock(&journal).remove_socket(&config.socket);
                    drop(executives);
                    give_back(partition);
                    return Err(e);
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (events_tx, events) = std::sync::mpsc::channel();
        let socket = config.socket.clone();
        let mut control = Control::new(
            config,
            listener,
            executives,
            Arc::clone(&journal),
            events_tx,
            Arc::clone(&stop),
        )
        .focused(partition);
        let measured = admission.as_ref().map(|a| a.measured.clone());
        control.admission = admission;
        let control = std::thread::Builder::new()
            .name("rtlab-serve".into())
            .spawn(move || control.run())
            .context("starting the control thread")?;
        Ok(Handle {
            stop,
            control: Some(control),
            events,
            journal,
            socket,
            warnings,
            admission: measured,
            focus,
        })
    }
}

fn lock(journal: &Mutex<Journal>) -> std::sync::MutexGuard<'_, Journal> {
    journal.lock().unwrap_or_else(|p| p.into_inner())
}

impl Handle {
    /// The next event, waiting up to `timeout`.
    pub fn next_event(&self, timeout: Duration) -> Option<Event> {
        self.events.recv_timeout(timeout).ok()
    }

    /// Whether the control thread still serves.
    pub fn is_running(&self) -> bool {
        self.control.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops: every attached process is told and put back, its run among
    /// the events returned (with every event not taken yet), the
    /// executives stopped, the socket removed.
    pub fn stop(mut self) -> Vec<Event> {
        let given_back = self.shut_down();
        let mut events: Vec<Event> = self.events.try_iter().collect();
        events.extend(given_back.into_iter().map(|line| Event { line, run: None }));
        events
    }

    /// Stops the control thread, then gives the focused CPUs back (every
    /// process has left them by then); what could not be put back.
    fn shut_down(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Release);
        let partition = self.control.take().and_then(|c| c.join().ok().flatten());
        lock(&self.journal).remove_socket(&self.socket);
        partition.map(Partition::end).unwrap_or_default()
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        for line in self.shut_down() {
            eprintln!("error: {line}");
        }
    }
}
