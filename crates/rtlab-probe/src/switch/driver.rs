//! The driver: a plain SCHED_OTHER thread that runs the mechanisms one
//! after the other. For each it sets the mechanism up, starts the task
//! (a thread, or a forked process) and the timer thread, publishes a common
//! start a little in the future, waits for both, reaps the task and tears
//! the mechanism down. A mechanism that could not measure what was asked
//! (it could not be set up or started, its task died or its wait failed)
//! is a failure naming it, which fails the run; the next mechanism runs
//! all the same. Lesser trouble is a warning naming the mechanism.

use super::interrupt::{self, Rings, TimerEnd, TimerPlan};
use super::mechanism::{Ops, Setup};
use super::options::{InjectDelay, Mechanism, Pacing};
use super::paced::{self, GoAhead};
use super::release::Releaser;
use super::shared::{Block, Region, GO_ABANDON, GO_RUN, TASK_READY, TASK_STARTING};
use super::sys::{self, describe_errno, futex_wait_for, futex_wake};
use super::task::{self, ChildPlan, TaskReady};
use rtlab_core::clock;
use rtlab_core::journal::Journal;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::{self, SchedParams};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

/// Margin between both sides being ready and the first deadline.
const START_MARGIN_NS: u64 = 50_000_000;
/// How long the timer thread and the task may take to set themselves up
/// (a forked child re-locks the parent's memory, which copies it).
const READY_WAIT: Duration = Duration::from_secs(10);
/// How long a task process may take to exit after its last release.
const REAP_WAIT: Duration = Duration::from_secs(1);
/// Stack of the measuring threads and of the driver (whose stack a forked
/// child inherits and prefaults).
pub const STACK_BYTES: usize = sched::PREFAULT_STACK_BYTES + 512 * 1024;

/// State the driver shares with the run's handle (off the hot path).
pub struct RunState {
    /// Start of the first mechanism's grid; 0 until it is known.
    pub origin_ns: AtomicU64,
    /// When the driver was done; 0 while it runs.
    pub end_ns: AtomicU64,
    /// Per series, in series order.
    pub settings: Mutex<Vec<ThreadSettings>>,
    pub warnings: Mutex<Vec<String>>,
    /// Why mechanisms did not measure what was asked (each names its
    /// mechanism): the run's failure.
    pub failures: Mutex<Vec<String>>,
}

impl RunState {
    pub fn warn(&self, warning: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(warning);
    }

    pub fn fail(&self, failure: String) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(failure);
    }

    fn set_settings(&self, index: usize, settings: ThreadSettings) {
        if let Some(slot) = self
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(index)
        {
            *slot = settings;
        }
    }
}

/// What the driver runs.
pub struct DriverPlan {
    pub mechanisms: Vec<Mechanism>,
    pub cpu: usize,
    pub task_cpu: usize,
    pub process: bool,
    pub sched: SchedParams,
    pub task_sched: SchedParams,
    pub pacing: Pacing,
    pub interval_ns: u64,
    pub events: u64,
    pub inject: Option<InjectDelay>,
    pub stop: Arc<AtomicBool>,
    pub state: Arc<RunState>,
    /// Where a SysV semaphore set is recorded while it exists.
    pub journal: Option<Arc<Mutex<Journal>>>,
}

/// How the driver ended.
pub struct DriverEnd {
    /// `stop` cut a mechanism short or skipped some.
    pub stopped_early: bool,
}

/// Runs every mechanism; `first` is the first mechanism, already set up
/// (so that `start` could report its failure), and `lanes` the rings of
/// every mechanism in order.
pub fn drive(plan: DriverPlan, region: Region, first: Setup, lanes: Vec<Rings>) -> DriverEnd {
    let block = region.block();
    let mut first = Some(first);
    let mut stopped_early = false;
    for (index, (&mechanism, rings)) in plan.mechanisms.iter().zip(lanes).enumerate() {
        if stopped_early || plan.stop.load(Ordering::Relaxed) {
            // Dropping the rings tells the recorder this series is complete.
            stopped_early = true;
            continue;
        }
        block.reset();
        let setup = match first.take() {
            Some(setup) => setup,
            None => match Setup::new(
                mechanism,
                block,
                plan.process,
                plan.pacing,
                plan.journal.as_ref(),
            ) {
                Ok(setup) => setup,
                Err(e) => {
                    plan.state.fail(format!(
                        "{mechanism}: could not be set up ({e:#}); its series have no samples"
                    ));
                    continue;
                }
            },
        };
        let ops = setup.ops(block);
        let ran = run_mechanism(&plan, index, ops, block, rings);
        stopped_early |= ran.stopped;
        if let Some(warning) = setup.teardown(block, ran.task_left_cleanly) {
            plan.state.warn(warning);
        }
    }
    plan.state.end_ns.store(clock::now_ns(), Ordering::Release);
    DriverEnd { stopped_early }
}

/// The task of one mechanism.
enum Task<'scope> {
    Thread(ScopedJoinHandle<'scope, ()>, mpsc::Receiver<TaskReady>),
    Child(Child),
}

/// A forked task process, reaped at most once.
struct Child {
    pid: libc::pid_t,
    status: Option<libc::c_int>,
}

impl Child {
    /// Reaps the child if it has exited; true once it is reaped.
    fn poll(&mut self) -> bool {
        if self.status.is_none() {
            let mut status = 0;
            // SAFETY: status is a valid out-parameter; the pid is our child.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if rc == self.pid {
                self.status = Some(status);
            } else if rc < 0 {
                // Reaped elsewhere (ECHILD): gone all the same.
                self.status = Some(0);
            }
        }
        self.status.is_some()
    }

    /// Waits up to `grace` for the child to exit, then kills it; always
    /// reaps it. Returns whether it had to be killed.
    fn reap(&mut self, grace: Duration) -> bool {
        let give_up = std::time::Instant::now() + grace;
        while !self.poll() {
            if std::time::Instant::now() >= give_up {
                // SAFETY: plain syscalls on our own child.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    let mut status = 0;
                    libc::waitpid(self.pid, &mut status, 0);
                    self.status = Some(status);
                }
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}

/// How one mechanism's run ended.
struct MechanismEnd {
    /// `stop` cut it short.
    stopped: bool,
    /// The task thread ended, or the task process exited with status 0:
    /// the shared objects may be destroyed.
    task_left_cleanly: bool,
}

/// Runs one mechanism to its end.
fn run_mechanism(
    plan: &DriverPlan,
    index: usize,
    ops: Ops<'_>,
    block: &Block,
    rings: Rings,
) -> MechanismEnd {
    let mechanism = ops.mechanism;
    let state = &plan.state;
    std::thread::scope(|scope| {
        // The task first: a fork before the timer thread exists keeps that
        // thread's stack out of copy-on-write.
        let mut task = match start_task(scope, plan, ops, block) {
            Ok(task) => task,
            Err(e) => {
                state.fail(format!(
                    "{mechanism}: could not start the task ({e}); its series have no samples"
                ));
                // No task: nothing can still use the objects.
                return MechanismEnd {
                    stopped: false,
                    task_left_cleanly: true,
                };
            }
        };
        let (timer_tx, timer_rx) = mpsc::channel::<(ThreadSettings, Vec<String>)>();
        let timer = std::thread::Builder::new()
            .name("rtlab-switch-timer".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || {
                timer_thread(plan, ops, block, rings, timer_tx)
            });
        let timer = match timer {
            Ok(timer) => Some(timer),
            Err(e) => {
                state.fail(format!(
                    "{mechanism}: could not start the timer thread ({e}); its series have no samples"
                ));
                None
            }
        };

        let mut stopped = false;
        let ready =
            timer.is_some() && wait_ready(plan, index, &timer_rx, &mut task, block, &mut stopped);
        let control = &block.control;
        if ready {
            let start_ns = clock::now_ns() + START_MARGIN_NS;
            let _ =
                state
                    .origin_ns
                    .compare_exchange(0, start_ns, Ordering::AcqRel, Ordering::Acquire);
            control.start_ns.store(start_ns, Ordering::Release);
            control.go.store(GO_RUN, Ordering::Release);
        } else {
            control.go.store(GO_ABANDON, Ordering::Release);
        }
        futex_wake(&control.go, i32::MAX);

        // While the timer thread measures, watch a task process: if it dies,
        // the timer thread must not wait for it.
        if let (Task::Child(child), Some(timer)) = (&mut task, &timer) {
            while !timer.is_finished() {
                if child.status.is_none() && child.poll() {
                    control.abort.store(1, Ordering::Release);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let end = timer.and_then(|timer| match timer.join() {
            Ok(end) => end,
            Err(_) => {
                state.fail(format!("{mechanism}: the timer thread panicked"));
                None
            }
        });
        let exit = finish_task(task);
        // Without an end the mechanism was abandoned before its start, for
        // a reason already reported.
        if let Some(end) = &end {
            report_end(plan, mechanism, end, &exit, block);
            stopped |= end.stopped;
        }
        MechanismEnd {
            stopped,
            task_left_cleanly: exit.trouble.is_none(),
        }
    })
}

/// The timer thread: set up, report, wait for the start, measure, and let
/// the task go. None when the mechanism was abandoned before its start.
fn timer_thread(
    plan: &DriverPlan,
    ops: Ops<'_>,
    block: &Block,
    mut rings: Rings,
    ready: mpsc::Sender<(ThreadSettings, Vec<String>)>,
) -> Option<TimerEnd> {
    let (settings, mut warnings) =
        crate::thread::set_up_measuring_thread(Some(plan.cpu), &plan.sched);
    let mut releaser = Releaser::new(ops);
    releaser.init();
    let mut go_ahead = GoAhead::new(ops);
    let blocked = match plan.pacing {
        Pacing::RtTests => go_ahead.init(),
        Pacing::Grid => Ok(()),
    };
    if let Err(e) = blocked {
        warnings.push(format!(
            "{}: the sender could not block its go-ahead signal ({})",
            ops.mechanism,
            describe_errno(e)
        ));
    }
    rings.prefault();
    block
        .control
        .sender_tid
        .store(settings.tid, Ordering::Release);
    // SAFETY: no arguments.
    let me = unsafe { libc::pthread_self() };
    block
        .control
        .sender_pthread
        .store(me as u64, Ordering::Release);
    let _ = ready.send((settings, warnings));
    if !task::wait_for_go(block) {
        releaser.abandon();
        return None;
    }
    // The task's thread: in process mode the child, whose pid is its tid.
    let tid = block.report.tid.load(Ordering::Relaxed);
    // SAFETY: plain syscall.
    let tgid = if plan.process {
        tid
    } else {
        unsafe { libc::getpid() }
    };
    releaser.set_target(tgid, tid);
    if plan.pacing == Pacing::RtTests {
        let task = block.control.task_pthread.load(Ordering::Acquire);
        releaser.set_pthread(task as libc::pthread_t);
    }
    let timer_plan = TimerPlan {
        interval_ns: plan.interval_ns,
        events: plan.events,
        inject: plan.inject,
        stop: &plan.stop,
        origin_ns: plan.state.origin_ns.load(Ordering::Acquire),
    };
    let start_ns = block.control.start_ns.load(Ordering::Acquire);
    Some(match plan.pacing {
        Pacing::Grid => interrupt::measure(&timer_plan, start_ns, &mut releaser, block, &mut rings),
        Pacing::RtTests => paced::measure(
            &timer_plan,
            start_ns,
            &mut releaser,
            &mut go_ahead,
            block,
            &mut rings,
        ),
    })
}

/// Forks the task process or spawns the task thread.
fn start_task<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    plan: &'env DriverPlan,
    ops: Ops<'env>,
    block: &'env Block,
) -> std::io::Result<Task<'scope>> {
    if plan.process {
        let child_plan = ChildPlan {
            ops,
            block,
            // SAFETY: plain syscall.
            parent: unsafe { libc::getpid() },
            cpu: plan.task_cpu,
            sched: plan.task_sched,
            lock_memory: sys::memory_locked(),
        };
        // SAFETY: the child runs only `run_child`, which is fork-safe in a
        // multi-threaded parent (no allocation, no lock, `_exit`).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            task::run_child(&child_plan);
        }
        Ok(Task::Child(Child { pid, status: None }))
    } else {
        let (tx, rx) = mpsc::channel();
        let sched = plan.task_sched;
        let cpu = plan.task_cpu;
        let interval_ns = plan.interval_ns;
        let handle = std::thread::Builder::new()
            .name("rtlab-switch-task".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || {
                task::run_thread(ops, block, cpu, &sched, interval_ns, tx)
            })?;
        Ok(Task::Thread(handle, rx))
    }
}

/// Waits until the timer thread and the task are set up; records their
/// settings and warnings. False when the mechanism must be abandoned.
fn wait_ready(
    plan: &DriverPlan,
    index: usize,
    timer_rx: &mpsc::Receiver<(ThreadSettings, Vec<String>)>,
    task: &mut Task<'_>,
    block: &Block,
    stopped: &mut bool,
) -> bool {
    let mechanism = plan.mechanisms[index];
    let state = &plan.state;
    match timer_rx.recv_timeout(READY_WAIT) {
        Ok((settings, warnings)) => {
            state.set_settings(2 * index, settings);
            warnings.into_iter().for_each(|w| state.warn(w));
        }
        Err(_) => {
            state.fail(format!("{mechanism}: the timer thread did not get ready"));
            return false;
        }
    }
    match task {
        Task::Thread(_, rx) => match rx.recv_timeout(READY_WAIT) {
            Ok(ready) => {
                if plan.pacing == Pacing::RtTests {
                    // Its interrupt series is the task's sleep: the task's thread.
                    state.set_settings(2 * index, ready.settings.clone());
                }
                state.set_settings(2 * index + 1, ready.settings);
                ready.warnings.into_iter().for_each(|w| state.warn(w));
            }
            Err(_) => {
                state.fail(format!("{mechanism}: the task thread did not get ready"));
                return false;
            }
        },
        Task::Child(child) => {
            let give_up = std::time::Instant::now() + READY_WAIT;
            while block.report.state.load(Ordering::Acquire) == TASK_STARTING {
                if plan.stop.load(Ordering::Relaxed) {
                    *stopped = true;
                    return false;
                }
                if child.poll() {
                    state.fail(format!(
                        "{mechanism}: the task process ended while setting up ({})",
                        describe_status(child.status.unwrap_or(0))
                    ));
                    return false;
                }
                if std::time::Instant::now() >= give_up {
                    state.fail(format!(
                        "{mechanism}: the task process did not get ready within {} s",
                        READY_WAIT.as_secs()
                    ));
                    return false;
                }
                futex_wait_for(&block.report.state, TASK_STARTING, 10_000_000);
            }
            let settings = child_settings(plan, child.pid, block);
            state.set_settings(2 * index + 1, settings);
            child_warnings(plan, block)
                .into_iter()
                .for_each(|w| state.warn(w));
        }
    }
    // A thread task publishes its state right after its settings.
    while block.report.state.load(Ordering::Acquire) == TASK_STARTING {
        futex_wait_for(&block.report.state, TASK_STARTING, 10_000_000);
    }
    if block.report.state.load(Ordering::Acquire) != TASK_READY {
        let e = block.report.init_errno.load(Ordering::Relaxed);
        state.fail(format!(
            "{mechanism}: the task could not prepare its wait ({}); its series have no samples",
            describe_errno(e)
        ));
        return false;
    }
    if plan.stop.load(Ordering::Relaxed) {
        *stopped = true;
        return false;
    }
    true
}

/// The forked task's settings, as it reported them and as the kernel
/// sees it now.
fn child_settings(plan: &DriverPlan, pid: libc::pid_t, block: &Block) -> ThreadSettings {
    let report = &block.report;
    let pinned = report.pin_errno.load(Ordering::Relaxed) == 0;
    let slack_ok = report.slack_errno.load(Ordering::Relaxed) == 0;
    ThreadSettings {
        tid: pid,
        pinned_cpu: pinned.then_some(plan.task_cpu),
        requested: plan.task_sched,
        actual: sys::sched_of(pid).ok(),
        timer_slack_ns: slack_ok.then(|| report.slack_ns.load(Ordering::Relaxed)),
    }
}

/// The forked task's set-up failures as warnings, worded as for a thread.
fn child_warnings(plan: &DriverPlan, block: &Block) -> Vec<String> {
    let report = &block.report;
    let mut warnings = Vec::new();
    let errno = |field: &std::sync::atomic::AtomicI32| field.load(Ordering::Relaxed);
    let e = errno(&report.pdeathsig_errno);
    if e != 0 {
        warnings.push(format!(
            "the switch task process could not ask for SIGKILL when rtlab dies ({}): it may outlive a killed rtlab",
            describe_errno(e)
        ));
    }
    let e = errno(&report.pin_errno);
    if e != 0 {
        warnings.push(format!(
            "could not pin a thread to CPU {}: {}",
            plan.task_cpu,
            describe_errno(e)
        ));
    }
    let e = errno(&report.sched_errno);
    if e != 0 {
        let hint = match e {
            libc::EPERM => format!("; to allow it, {}", sched::RT_PRIVILEGE_HINT),
            _ => String::new(),
        };
        warnings.push(format!(
            "could not set {} ({}): measuring with the policy the thread already had{hint}",
            plan.task_sched,
            describe_errno(e)
        ));
    }
    let e = errno(&report.slack_errno);
    if e != 0 {
        warnings.push(format!(
            "could not set the timer slack to 1 ns: {}",
            describe_errno(e)
        ));
    }
    let e = errno(&report.mlock_errno);
    if e != 0 {
        warnings.push(format!(
            "the switch task process could not lock its memory (mlockall: {}): page faults may show up as latency; to allow it, {}",
            describe_errno(e),
            sched::MEMLOCK_PRIVILEGE_HINT
        ));
    }
    warnings
}

/// How the task ended.
struct TaskExit {
    /// What went wrong, in words after "the task " (None: the thread
    /// ended, or the process exited with status 0).
    trouble: Option<String>,
}

/// Joins the task thread, or reaps the task process (killing it if it does
/// not leave within [`REAP_WAIT`]).
fn finish_task(task: Task<'_>) -> TaskExit {
    let trouble = match task {
        Task::Thread(handle, _) => handle
            .join()
            .is_err()
            .then(|| "thread panicked".to_string()),
        Task::Child(mut child) => {
            let killed = child.reap(REAP_WAIT);
            let status = child.status.unwrap_or(0);
            if killed {
                Some(format!(
                    "process did not exit within {} ms of the end and was killed",
                    REAP_WAIT.as_millis()
                ))
            } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                None
            } else {
                Some(format!("process {}", describe_status(status)))
            }
        }
    };
    TaskExit { trouble }
}

/// Failures and warnings about how the timer thread's measuring ended.
fn report_end(
    plan: &DriverPlan,
    mechanism: Mechanism,
    end: &TimerEnd,
    exit: &TaskExit,
    block: &Block,
) {
    let state = &plan.state;
    let wait_errno = block.task.wait_errno.load(Ordering::Relaxed);
    let why = if wait_errno != 0 {
        format!("the task's wait failed ({})", describe_errno(wait_errno))
    } else {
        match &exit.trouble {
            Some(how) => format!("the task {how}"),
            None => "the task stopped running".to_string(),
        }
    };
    if end.task_gone && !end.stopped {
        // The events after it are not measured: the run did not do what
        // was asked.
        state.fail(format!(
            "{mechanism}: {why} after {} of {} events; the rest of {mechanism} was not measured",
            end.deadlines, end.planned
        ));
    } else if end.task_gone {
        state.warn(format!(
            "{mechanism}: {why} while the run was being stopped"
        ));
    } else if let Some(how) = &exit.trouble {
        state.warn(format!("{mechanism}: the task {how}"));
    }
    if end.unacked > 0 {
        state.warn(format!(
            "{mechanism}: the task did not run within 1 s of the last release; \
             that event and the {} missed before it are counted as missed",
            end.unacked - 1
        ));
    }
    if end.release_errno != 0 {
        state.warn(format!(
            "{mechanism}: a release call failed ({})",
            describe_errno(end.release_errno)
        ));
    }
    if !end.timerfd && end.deadlines > 0 {
        state.warn(format!(
            "{mechanism}: no timerfd, the timer thread slept with clock_nanosleep: the switch series also holds the arming of its next deadline"
        ));
    }
}

/// A wait status in words.
fn describe_status(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("ended with wait status {status}")
    }
}
