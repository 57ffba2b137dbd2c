//! The supervisor: a plain SCHED_OTHER thread of the run that reads every
//! worker's records (their stdout pipes) into the recorder's rings and
//! their stderr into warnings and last words, passes a stop on (SIGTERM),
//! watches every child (a worker that dies, hangs or says something it
//! should not, the executive that dies: the run fails with the reason
//! and the others are stopped), and at the end kills and reaps every
//! child whatever happened. It may allocate and block; the workers never
//! wait for it (their pipes are non-blocking).

use super::children::Child;
use super::record::{Inbox, Record, TaskSample};
use super::serve::Executive;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::SchedParams;
use rtlab_probe::recorder::Sample;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long every worker gets to set itself up.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after its planned end a run may go on before its workers are
/// taken for hung (the executive form attaches after the start).
const HANG_MARGIN_NS: u64 = 10_000_000_000;
/// How long, beyond one period, a worker told to stop gets to leave.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long a worker whose pipes closed gets to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// Lines of a worker's stderr kept for the reason of a failure.
const TAIL_LINES: usize = 4;
/// A poll's longest wait: how soon a stop or a death is seen.
const POLL_MS: i32 = 20;

/// One worker's side of the recorder.
pub struct Rings {
    pub lateness: rtrb::Producer<Sample>,
    pub response: rtrb::Producer<Sample>,
    pub dropped_lateness: Arc<AtomicU64>,
    pub dropped_response: Arc<AtomicU64>,
}

/// One worker process as the supervisor sees it.
pub struct Worker {
    task: usize,
    child: Child,
    stdout: Option<File>,
    stderr: Option<File>,
    inbox: Inbox,
    stderr_partial: Vec<u8>,
    rings: Rings,
    ready: bool,
    /// Its end record: activations accounted for.
    end: Option<u64>,
    /// Activations its samples account for (started or missed).
    reported: u64,
    /// Its end has been judged (failure or not).
    judged: bool,
    tail: Vec<String>,
}

impl Worker {
    pub fn new(task: usize, mut child: Child, rings: Rings) -> Worker {
        let stdout = child.stdout.take();
        if let Some(out) = &stdout {
            // Room for a long recorder hiccup (best effort; 64 KiB else).
            // SAFETY: plain fcntl on our own fd.
            unsafe { libc::fcntl(out.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        }
        Worker {
            task,
            stderr: child.stderr.take(),
            stdout,
            child,
            inbox: Inbox::default(),
            stderr_partial: Vec::new(),
            rings,
            ready: false,
            end: None,
            reported: 0,
            judged: false,
            tail: Vec::new(),
        }
    }

    /// "task2's process (pid 1234)".
    fn who(&self) -> String {
        format!("task{}'s process (pid {})", self.task, self.child.pid)
    }

    /// Its last words, for a reason.
    fn said(&self) -> String {
        if self.tail.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", self.tail.join(" | "))
        }
    }

    fn gone(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none()
    }
}

/// What the run shares with the supervisor while it runs.
pub struct Live {
    /// Per task, its scheduling as it reported it.
    pub settings: Mutex<Vec<ThreadSettings>>,
}

/// How the supervisor ended.
pub struct SupervisorEnd {
    /// Per task, the activations accounted for.
    pub accounted: Vec<u64>,
    /// Why the run did not measure what was asked.
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
}

/// Every child of the run, and what the supervisor knows of them.
pub struct Supervisor {
    pub workers: Vec<Worker>,
    pub executive: Option<Executive>,
    pub live: Arc<Live>,
    /// The tasks' requested scheduling.
    pub requested: SchedParams,
    pub start_ns: u64,
    pub warnings: Vec<String>,
    failures: Vec<String>,
    /// When the workers were told to stop.
    stopping_since: Option<Instant>,
}

impl Supervisor {
    pub fn new(
        workers: Vec<Worker>,
        executive: Option<Executive>,
        live: Arc<Live>,
        requested: SchedParams,
    ) -> Supervisor {
        Supervisor {
            workers,
            executive,
            live,
            requested,
            start_ns: 0,
            warnings: Vec::new(),
            failures: Vec::new(),
            stopping_since: None,
        }
    }

    /// Waits until every worker said it is ready; the error names the one
    /// that is not and why.
    pub fn wait_ready(&mut self) -> Result<(), String> {
        let give_up = Instant::now() + READY_TIMEOUT;
        while !self.workers.iter().all(|w| w.ready) {
            self.pump();
            if let Some(why) = self.failures.first() {
                return Err(why.clone());
            }
            for w in &mut self.workers {
                if !w.ready && w.child.exit().is_some() {
                    // Its last words are read to their end first.
                    while w.stderr.is_some() {
                        drain_stderr(w, &mut self.warnings);
                    }
                    let exit = w.child.exit().expect("seen above");
                    return Err(format!(
                        "{} {} before it was ready{}",
                        w.who(),
                        exit.describe(),
                        w.said()
                    ));
                }
            }
            if Instant::now() >= give_up {
                let late: Vec<String> = self
                    .workers
                    .iter()
                    .filter(|w| !w.ready)
                    .map(Worker::who)
                    .collect();
                return Err(format!(
                    "{} did not get ready within {} s",
                    late.join(", "),
                    READY_TIMEOUT.as_secs()
                ));
            }
        }
        Ok(())
    }

    /// Gives every worker the common start.
    pub fn go(&mut self, start_ns: u64) -> Result<(), String> {
        self.start_ns = start_ns;
        for w in &mut self.workers {
            let Some(stdin) = w.child.stdin.as_mut() else {
                continue;
            };
            use std::io::Write;
            if let Err(e) = stdin.write_all(&start_ns.to_le_bytes()) {
                return Err(format!("cannot give {} its start: {e}", w.who()));
            }
        }
        Ok(())
    }

    /// Reads whatever the workers wrote (waiting at most [`POLL_MS`]).
    fn pump(&mut self) {
        let mut fds = Vec::new();
        let mut owners = Vec::new();
        for (index, w) in self.workers.iter().enumerate() {
            for (is_stdout, file) in [(true, &w.stdout), (false, &w.stderr)] {
                if let Some(file) = file {
                    fds.push(libc::pollfd {
                        fd: file.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    owners.push((index, is_stdout));
                }
            }
        }
        if fds.is_empty() {
            std::thread::sleep(Duration::from_millis(POLL_MS as u64));
            return;
        }
        // SAFETY: fds is a valid array of its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_MS) };
        if n <= 0 {
            return;
        }
        for (pollfd, &(index, is_stdout)) in fds.iter().zip(&owners) {
            if pollfd.revents == 0 {
                continue;
            }
            let w = &mut self.workers[index];
            if !is_stdout {
                drain_stderr(w, &mut self.warnings);
            } else if let Some(why) = drain_stdout(w, self.start_ns, self.requested, &self.live) {
                self.failures.push(why);
            }
        }
    }

    /// Tells every worker to stop after its current activation (once).
    fn stop_all(&mut self) {
        if self.stopping_since.is_none() {
            for w in &self.workers {
                w.child.signal(libc::SIGTERM);
            }
            self.stopping_since = Some(Instant::now());
        }
    }

    /// Runs until every worker is gone: see the module's doc.
    pub fn run(
        mut self,
        stop: &AtomicBool,
        planned: u64,
        period_ns: u64,
        hang_after_ns: u64,
    ) -> SupervisorEnd {
        let grace = Duration::from_nanos(period_ns) + STOP_GRACE;
        let hang_at = self
            .start_ns
            .saturating_add(hang_after_ns)
            .saturating_add(HANG_MARGIN_NS);
        while !self.workers.iter().all(Worker::gone) {
            self.pump();
            if stop.load(Ordering::Relaxed) || !self.failures.is_empty() {
                self.stop_all();
            }
            if let Some(why) = self.executive.as_mut().and_then(Executive::died) {
                self.failures.push(why);
                self.stop_all();
                self.executive = None;
            }
            self.judge_ended(planned);
            if self.stopping_since.is_none() && rtlab_core::clock::now_ns() >= hang_at {
                for w in self.workers.iter().filter(|w| w.child_running()) {
                    self.failures.push(format!(
                        "{} did not finish its {planned} activations within {} s of their planned end (after {}): killed",
                        w.who(),
                        HANG_MARGIN_NS / 1_000_000_000,
                        w.reported
                    ));
                }
                self.stop_all();
            }
            if self
                .stopping_since
                .is_some_and(|since| since.elapsed() >= grace)
            {
                for w in &mut self.workers {
                    // Its pipes then close: it is gone at the next look.
                    w.child.kill_and_reap();
                }
            }
        }
        // Gone (its pipes closed) is exited, or a moment from it.
        for w in &mut self.workers {
            w.child.reap(EXIT_GRACE);
        }
        self.judge_ended(planned);
        self.end()
    }

    /// A worker that ended without its end record, or with a failure, when
    /// nobody stopped it: the run's failure, and the others are stopped.
    fn judge_ended(&mut self, planned: u64) {
        let stopping = self.stopping_since.is_some();
        let mut failed = false;
        for w in &mut self.workers {
            if w.judged || !w.gone() {
                continue;
            }
            let Some(exit) = w.child.exit() else {
                continue;
            };
            w.judged = true;
            let clean = exit.is_success() && w.end.is_some();
            if !clean && !stopping {
                self.failures.push(format!(
                    "{} {} after {} of {planned} activations{}",
                    w.who(),
                    exit.describe(),
                    w.reported,
                    w.said()
                ));
                failed = true;
            }
        }
        if failed {
            self.stop_all();
        }
    }

    /// Reaps every worker, stops the executive.
    fn end(mut self) -> SupervisorEnd {
        for w in &mut self.workers {
            w.child.kill_and_reap();
        }
        if let Some(mut executive) = self.executive.take() {
            // Dead after the last look: the processes were done with it.
            self.warnings.extend(executive.died());
            self.warnings.extend(executive.stop());
        }
        SupervisorEnd {
            accounted: self
                .workers
                .iter()
                .map(|w| w.end.unwrap_or(w.reported))
                .collect(),
            failures: std::mem::take(&mut self.failures),
            warnings: std::mem::take(&mut self.warnings),
        }
    }
}

impl Worker {
    fn child_running(&self) -> bool {
        !self.gone()
    }
}

/// Reads a worker's records into its rings; the reason of a failure when
/// it says something this run does not understand.
fn drain_stdout(
    w: &mut Worker,
    start_ns: u64,
    requested: SchedParams,
    live: &Live,
) -> Option<String> {
    let out = w.stdout.as_mut()?;
    let mut buf = [0u8; 16 * 1024];
    let n = match out.read(&mut buf) {
        Ok(0) | Err(_) => {
            w.stdout = None;
            if w.inbox.leftover() > 0 {
                return Some(format!("{} ended in the middle of a record", w.who()));
            }
            return None;
        }
        Ok(n) => n,
    };
    let mut unknown = false;
    let mut records = Vec::new();
    w.inbox.feed(&buf[..n], |record| match record {
        Some(record) => records.push(record),
        None => unknown = true,
    });
    for record in records {
        match record {
            Record::Ready => w.ready = true,
            Record::Settings(settings) => {
                let mut all = live.settings.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(slot) = all.get_mut(w.task) {
                    *slot = settings.thread_settings(requested);
                }
            }
            Record::Sample(sample) => push_sample(&mut w.rings, start_ns, &sample, &mut w.reported),
            Record::End { accounted, dropped } => {
                w.end = Some(accounted);
                w.rings
                    .dropped_lateness
                    .fetch_add(dropped, Ordering::Relaxed);
                w.rings
                    .dropped_response
                    .fetch_add(dropped, Ordering::Relaxed);
            }
        }
    }
    unknown.then(|| format!("{} sent a record this run does not understand", w.who()))
}

/// One activation into the task's two series (ns since the start).
fn push_sample(rings: &mut Rings, start_ns: u64, sample: &TaskSample, reported: &mut u64) {
    let at_ns = sample.activation_ns.saturating_sub(start_ns);
    let lateness = Sample {
        at_ns,
        latency_ns: sample.lateness_ns,
        missed: sample.missed,
    };
    if rings.lateness.push(lateness).is_err() {
        rings.dropped_lateness.fetch_add(1, Ordering::Relaxed);
    }
    let response = Sample {
        at_ns,
        latency_ns: sample.response_ns,
        missed: u64::from(sample.deadline_miss),
    };
    if rings.response.push(response).is_err() {
        rings.dropped_response.fetch_add(1, Ordering::Relaxed);
    }
    *reported += 1 + sample.missed;
}

/// Reads a worker's stderr: `warning: …` lines become the run's warnings,
/// the others its last words.
fn drain_stderr(w: &mut Worker, warnings: &mut Vec<String>) {
    let Some(err) = w.stderr.as_mut() else {
        return;
    };
    let mut buf = [0u8; 4096];
    match err.read(&mut buf) {
        Ok(0) | Err(_) => {
            w.stderr = None;
            let rest = std::mem::take(&mut w.stderr_partial);
            if !rest.is_empty() {
                take_line(w, &rest, warnings);
            }
        }
        Ok(n) => {
            w.stderr_partial.extend_from_slice(&buf[..n]);
            while let Some(at) = w.stderr_partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = w.stderr_partial.drain(..=at).collect();
                take_line(w, &line, warnings);
            }
        }
    }
}

fn take_line(w: &mut Worker, line: &[u8], warnings: &mut Vec<String>) {
    let text = String::from_utf8_lossy(line).trim_end().to_string();
    match text.strip_prefix("warning: ") {
        Some(warning) => warnings.push(warning.to_string()),
        None if !text.is_empty() => {
            if w.tail.len() == TAIL_LINES {
                w.tail.remove(0);
            }
            w.tail.push(text);
        }
        None => {}
    }
}
