//! The parent side: starts one worker process per load, watches them,
//! stops them and collects their records. Nothing is ever stopped by name:
//! only by the process group (and cgroup) each worker was given.

use super::spec::LoadSpec;
use super::sys;
use super::worker::{Ready, PARENT_DEATH_SIGNAL};
use anyhow::{anyhow, Context};
use rtlab_core::result::LoadRecord;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long `start` waits for every worker to report it is loading.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `stop` waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// How to start a worker process: `program args… <spec-json>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    program: PathBuf,
    args: Vec<OsString>,
    arg0: Option<OsString>,
}

impl Launcher {
    pub fn new(program: PathBuf, args_before_spec: Vec<OsString>) -> Launcher {
        Launcher {
            program,
            args: args_before_spec,
            arg0: None,
        }
    }

    /// The running executable (through /proc/self/exe, so a binary
    /// replaced on disk since, e.g. by a rebuild, still starts the same
    /// code) with `args_before_spec`, e.g. `["__load-worker"]`.
    pub fn this_executable(args_before_spec: &[&str]) -> std::io::Result<Launcher> {
        let exe = std::fs::read_link("/proc/self/exe")?;
        Ok(Launcher {
            program: PathBuf::from("/proc/self/exe"),
            args: args_before_spec.iter().map(OsString::from).collect(),
            arg0: Some(exe.into_os_string()),
        })
    }
}

enum Event {
    Ready(Ready),
    Status(BTreeMap<String, u64>),
    Failed(String),
    Done(LoadRecord),
    /// stdout closed: the worker has ended (or is ending).
    Eof,
}

fn parse_event(line: &str) -> Option<Event> {
    let (kind, json) = line.split_once(' ')?;
    Some(match kind {
        "ready" => Event::Ready(serde_json::from_str(json).ok()?),
        "status" => Event::Status(serde_json::from_str(json).ok()?),
        "failed" => Event::Failed(serde_json::from_str(json).ok()?),
        "done" => Event::Done(serde_json::from_str(json).ok()?),
        _ => return None,
    })
}

struct Worker {
    /// The spec as asked for, as text.
    label: String,
    name: String,
    child: Child,
    /// Held, never written: its closing (when this process ends, however
    /// it ends) tells the worker its parent is gone.
    _stdin: Option<ChildStdin>,
    pid: i32,
    events: Receiver<Event>,
    ready: Option<Ready>,
    live: BTreeMap<String, u64>,
    failure: Option<String>,
    record: Option<LoadRecord>,
    stdout_closed: bool,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    reaped: bool,
    /// How the worker ended, once it has.
    exit: Option<String>,
}

/// Lines of a worker's stderr kept for error messages.
const STDERR_LINES: usize = 20;

impl Worker {
    fn spawn(spec: &LoadSpec, launcher: &Launcher) -> anyhow::Result<Worker> {
        let json = serde_json::to_string(spec)?;
        let parent = std::process::id() as i32;
        let cpus = sys::online_cpu_set();
        let nice = spec.params.nice;
        let mut command = Command::new(&launcher.program);
        if let Some(arg0) = &launcher.arg0 {
            command.arg0(arg0);
        }
        command
            .args(&launcher.args)
            .arg(json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || child_setup(parent, &cpus, nice));
        }
        let mut child = command.spawn().with_context(|| {
            format!(
                "load {spec}: cannot start its worker {}",
                launcher.program.display()
            )
        })?;
        let pid = child.id() as i32;
        let (tx, events) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::Builder::new()
            .name("load-events".into())
            .spawn(move || {
                let reader = std::io::BufReader::new(stdout);
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    if let Some(event) = parse_event(&line) {
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                }
                let _ = tx.send(Event::Eof);
            })
            .context("starting a thread to read a load worker")?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::Builder::new()
            .name("load-stderr".into())
            .spawn(move || {
                let reader = std::io::BufReader::new(stderr);
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            })
            .context("starting a thread to read a load worker")?;
        Ok(Worker {
            label: spec.to_string(),
            name: spec.name().to_string(),
            _stdin: child.stdin.take(),
            child,
            pid,
            events,
            ready: None,
            live: BTreeMap::new(),
            failure: None,
            record: None,
            stdout_closed: false,
            stderr_tail,
            reaped: false,
            exit: None,
        })
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Ready(ready) => self.ready = Some(ready),
            Event::Status(work) => self.live = work,
            Event::Failed(why) => {
                self.failure.get_or_insert(why);
            }
            Event::Done(record) => {
                self.live = record.work.clone();
                self.record = Some(record);
            }
            Event::Eof => self.stdout_closed = true,
        }
    }

    fn drain(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.handle(event);
        }
    }

    /// Waits for an event until `deadline`; false on timeout.
    fn next_event(&mut self, deadline: Instant) -> bool {
        if self.stdout_closed {
            return false;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(wait) {
            Ok(event) => {
                self.handle(event);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                self.stdout_closed = true;
                false
            }
        }
    }

    fn stderr_text(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            String::new()
        } else {
            format!(
                "; its stderr: {}",
                tail.iter().cloned().collect::<Vec<_>>().join(" | ")
            )
        }
    }

    /// Why the worker is not running (None while it runs normally).
    fn trouble(&mut self) -> Option<String> {
        self.drain();
        if let Some(why) = &self.failure {
            return Some(why.clone());
        }
        if self.stdout_closed || sys::exited_nowait(self.pid) {
            // Give the last lines a moment to arrive.
            let deadline = Instant::now() + Duration::from_millis(200);
            while !self.stdout_closed && self.next_event(deadline) {}
            if let Some(why) = &self.failure {
                return Some(why.clone());
            }
            let how = sys::exit_nowait(self.pid).unwrap_or_else(|| "closed its output".into());
            return Some(format!(
                "its worker (pid {}) {how}{}",
                self.pid,
                self.stderr_text()
            ));
        }
        None
    }

    fn wait_ready(&mut self, deadline: Instant) -> Result<(), String> {
        while self.ready.is_none() {
            if let Some(why) = &self.failure {
                return Err(why.clone());
            }
            if !self.next_event(deadline) {
                if let Some(why) = self.trouble() {
                    return Err(why);
                }
                if Instant::now() >= deadline {
                    return Err(format!(
                        "its worker (pid {}) did not report ready within {} s",
                        self.pid,
                        READY_TIMEOUT.as_secs()
                    ));
                }
            }
        }
        Ok(())
    }

    /// SIGKILL to the group (and cgroup), everything reaped and removed.
    /// The worker is reaped last: until then its pid, which is the process
    /// group id, cannot be reused, so the group signal never hits a
    /// stranger.
    fn kill_and_clean(&mut self, notes: &mut Vec<String>) {
        if self.reaped {
            return;
        }
        if !sys::exited_nowait(self.pid) {
            sys::signal_group(self.pid, libc::SIGKILL);
            sys::wait_exited_nowait(self.pid, Duration::from_secs(5));
        }
        let left = sys::group_members(self.pid);
        if !left.is_empty() {
            sys::signal_group(self.pid, libc::SIGKILL);
            notes.push(format!(
                "{} process(es) left in the load's process group were killed",
                left.len()
            ));
        }
        if let Some(ready) = &self.ready {
            if let Some(path) = ready.cgroup.as_ref().filter(|p| p.exists()) {
                let cgroup = super::cgroup::Cgroup { path: path.clone() };
                if cgroup.populated() {
                    notes.push(format!(
                        "{} process(es) left in {} were killed",
                        cgroup.pids().len(),
                        path.display()
                    ));
                }
                cgroup.kill_all(Duration::from_secs(2));
                if let Err(e) = cgroup.remove() {
                    notes.push(format!("could not remove {}: {e}", path.display()));
                }
            }
            for dir in ready.temp_dirs.iter().filter(|d| d.exists()) {
                match std::fs::remove_dir_all(dir) {
                    Ok(()) => notes.push(format!("removed {} left by the worker", dir.display())),
                    Err(e) => notes.push(format!("could not remove {}: {e}", dir.display())),
                }
            }
        }
        self.exit = sys::exit_nowait(self.pid);
        let _ = self.child.wait();
        self.reaped = true;
    }
}

/// What runs in the worker between fork and exec (async-signal-safe only).
fn child_setup(parent: i32, cpus: &libc::cpu_set_t, nice: Option<i32>) -> std::io::Result<()> {
    // A standard signal state whatever the caller blocked or ignored.
    sys::reset_signals();
    // SAFETY: plain syscalls on the calling (child) process.
    unsafe {
        // Own process group: the whole load is signalled as one.
        if libc::setpgid(0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Told when the parent dies; the parent may be gone already.
        libc::prctl(libc::PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        // SCHED_OTHER even when the caller is SCHED_FIFO (this also clears
        // SCHED_RESET_ON_FORK), the default timer slack, every online CPU.
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::prctl(libc::PR_SET_TIMERSLACK, 50_000, 0, 0, 0);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), cpus);
        match nice {
            Some(n) => {
                if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // 0 where allowed; a caller that is niced itself keeps its nice.
            None => {
                libc::setpriority(libc::PRIO_PROCESS, 0, 0);
            }
        }
    }
    Ok(())
}

/// Loads running beside a measurement, one supervised worker process each.
///
/// Spawn from a thread that lives as long as the loads (normally the main
/// thread) for the quickest clean-up: the workers' parent-death signal
/// fires when the spawning *thread* exits. Workers started from a
/// short-lived thread keep running (they check that the parent process is
/// really gone) and still end with the process through their stdin pipe.
pub struct RunningLoads {
    workers: Vec<Worker>,
}

impl RunningLoads {
    /// Starts one worker per spec and returns once every worker reported
    /// that it is loading. An error names the load that failed and why,
    /// and leaves nothing running.
    pub fn start(specs: &[LoadSpec], launcher: &Launcher) -> anyhow::Result<RunningLoads> {
        let mut loads = RunningLoads {
            workers: Vec::new(),
        };
        for spec in specs {
            spec.validate().map_err(|e| anyhow!("load {spec}: {e}"))?;
            loads.workers.push(Worker::spawn(spec, launcher)?);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        for worker in &mut loads.workers {
            if let Err(why) = worker.wait_ready(deadline) {
                // `loads` is dropped on return: every worker is killed.
                return Err(anyhow!("load {} could not start: {why}", worker.label));
            }
        }
        Ok(loads)
    }

    /// Err naming the load when a worker failed or ended before `stop`.
    pub fn check(&mut self) -> anyhow::Result<()> {
        for worker in &mut self.workers {
            if let Some(why) = worker.trouble() {
                return Err(anyhow!("load {} stopped early: {why}", worker.label));
            }
        }
        Ok(())
    }

    /// The process group of every worker (its pid): everything a load
    /// runs is in it, unless it moved itself out (then the cgroup holds it).
    pub fn process_groups(&self) -> Vec<i32> {
        self.workers
            .iter()
            .map(|w| w.ready.as_ref().map_or(w.pid, |r| r.pgid))
            .collect()
    }

    /// The private cgroup of each load that has one.
    pub fn cgroups(&self) -> Vec<PathBuf> {
        self.workers
            .iter()
            .filter_map(|w| w.ready.as_ref()?.cgroup.clone())
            .collect()
    }

    /// Private temporary directories of the loads (removed at stop).
    pub fn temp_dirs(&self) -> Vec<PathBuf> {
        self.workers
            .iter()
            .filter_map(|w| w.ready.as_ref())
            .flat_map(|r| r.temp_dirs.iter().cloned())
            .collect()
    }

    /// Each load's spec with every default resolved, as its record shows it.
    pub fn specs(&self) -> Vec<String> {
        self.workers
            .iter()
            .map(|w| w.ready.as_ref().map_or(w.label.clone(), |r| r.spec.clone()))
            .collect()
    }

    /// What the loads said when they started (caps applied, no cgroup, ...),
    /// each prefixed with its load's name.
    pub fn notes(&self) -> Vec<String> {
        self.workers
            .iter()
            .filter_map(|w| Some((w, w.ready.as_ref()?)))
            .flat_map(|(w, r)| r.notes.iter().map(move |n| prefix_note(&w.name, n)))
            .collect()
    }

    /// The work done so far, as last reported (about every second).
    pub fn live(&mut self) -> Vec<LoadRecord> {
        self.workers
            .iter_mut()
            .map(|w| {
                w.drain();
                LoadRecord {
                    name: w.name.clone(),
                    spec: w.ready.as_ref().map_or(w.label.clone(), |r| r.spec.clone()),
                    work: w.live.clone(),
                    notes: Vec::new(),
                }
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// Stops every load: SIGTERM to each process group, up to
    /// [`STOP_TIMEOUT`] for the workers to report and exit, then SIGKILL to
    /// the group and its cgroup. Returns each load's record (work counters
    /// and notes), in the order the loads were given.
    pub fn stop(mut self) -> Vec<LoadRecord> {
        let mut workers = std::mem::take(&mut self.workers);
        for w in &mut workers {
            w.drain();
            if !sys::exited_nowait(w.pid) {
                sys::signal_group(w.pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut records = Vec::new();
        for w in &mut workers {
            while w.record.is_none() && !w.stdout_closed && w.next_event(deadline) {}
            let mut notes = Vec::new();
            if !sys::wait_exited_nowait(
                w.pid,
                deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(500),
            ) {
                notes.push(format!(
                    "the worker did not end within {} s of SIGTERM and was killed",
                    STOP_TIMEOUT.as_secs()
                ));
            }
            w.kill_and_clean(&mut notes);
            // A record written just before the exit may still be in the pipe.
            let late = Instant::now() + Duration::from_millis(500);
            while w.record.is_none() && !w.stdout_closed && w.next_event(late) {}
            let mut record = w.record.take().unwrap_or_else(|| {
                let why = w.failure.clone().unwrap_or_else(|| {
                    let how = w.exit.clone().unwrap_or_else(|| "ended".into());
                    format!("its worker {how}{}", w.stderr_text())
                });
                LoadRecord {
                    name: w.name.clone(),
                    spec: w.ready.as_ref().map_or(w.label.clone(), |r| r.spec.clone()),
                    work: w.live.clone(),
                    notes: vec![format!("no final report (work as last reported): {why}")],
                }
            });
            for note in notes {
                if !record.notes.contains(&note) {
                    record.notes.push(note);
                }
            }
            records.push(record);
        }
        records
    }
}

impl std::fmt::Debug for RunningLoads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.workers
                    .iter()
                    .map(|w| format!("{} (pgid {})", w.label, w.pid)),
            )
            .finish()
    }
}

fn prefix_note(name: &str, note: &str) -> String {
    if note.starts_with(&format!("{name}:")) {
        note.to_string()
    } else {
        format!("{name}: {note}")
    }
}

impl Drop for RunningLoads {
    /// Kills every process group still running: early returns and panics
    /// never leak loads.
    fn drop(&mut self) {
        for w in &mut self.workers {
            w.kill_and_clean(&mut Vec::new());
        }
    }
}
