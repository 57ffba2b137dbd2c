//! The task W: blocked in the mechanism's wait, it stamps when it runs and
//! publishes the stamp and an acknowledgement in the shared block. It never
//! touches a ring: the timer thread does all the pushing, so the same loop
//! serves a thread and a forked process.

use super::mechanism::Ops;
use super::options::Pacing;
use super::paced;
use super::shared::{Block, GO_RUN, GO_WAIT, TASK_FAILED, TASK_READY};
use super::sys::{errno, futex_wait, futex_wake};
use super::wait::Waiter;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::{self, SchedParams};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

/// Blocks until the driver publishes the start (true) or abandons the
/// mechanism (false).
pub fn wait_for_go(block: &Block) -> bool {
    let go = &block.control.go;
    loop {
        let state = go.load(Ordering::Acquire);
        if state != GO_WAIT {
            return state == GO_RUN;
        }
        futex_wait(go, GO_WAIT);
    }
}

/// The measuring loop of the task. Hot path: the wait under test, the
/// clock and three atomic stores.
fn task_loop(waiter: &mut Waiter<'_>, block: &Block) {
    let task = &block.task;
    let quit = &block.control.quit;
    let mut runs: u64 = 0;
    while let Some(run) = waiter.wait_stamped(task) {
        waiter.after_run();
        if quit.load(Ordering::Acquire) != 0 {
            break;
        }
        task.run_ns.store(run, Ordering::Relaxed);
        runs += 1;
        task.ack.store(runs, Ordering::Release);
    }
    task.gone.store(1, Ordering::Release);
}

/// Publishes the task's state and wakes the driver.
fn report_state(block: &Block, init: Result<(), i32>) -> bool {
    let report = &block.report;
    let ok = match init {
        Ok(()) => true,
        Err(e) => {
            report.init_errno.store(e, Ordering::Relaxed);
            false
        }
    };
    let state = if ok { TASK_READY } else { TASK_FAILED };
    report.state.store(state, Ordering::Release);
    futex_wake(&report.state, i32::MAX);
    ok
}

/// What the task thread reports once set up (threads mode).
pub struct TaskReady {
    pub settings: ThreadSettings,
    pub warnings: Vec<String>,
}

/// The task as a thread of this process: set up like a measuring thread,
/// then the loop (rt-tests pacing: the receiver's, which sleeps
/// `interval_ns` after each run).
pub fn run_thread(
    ops: Ops<'_>,
    block: &Block,
    cpu: usize,
    sched: &SchedParams,
    interval_ns: u64,
    ready: mpsc::Sender<TaskReady>,
) {
    let (settings, warnings) = crate::thread::set_up_measuring_thread(Some(cpu), sched);
    let mut waiter = Waiter::new(ops);
    let init = waiter.init();
    block.report.tid.store(settings.tid, Ordering::Relaxed);
    // SAFETY: no arguments.
    let me = unsafe { libc::pthread_self() };
    block
        .control
        .task_pthread
        .store(me as u64, Ordering::Release);
    // The driver waits for this before it reads the state.
    let _ = ready.send(TaskReady { settings, warnings });
    if report_state(block, init) && wait_for_go(block) {
        match ops.pacing {
            Pacing::Grid => task_loop(&mut waiter, block),
            Pacing::RtTests => paced::receive(&mut waiter, block, interval_ns),
        }
    }
}

/// Everything the forked child needs, prepared before the fork.
pub struct ChildPlan<'a> {
    pub ops: Ops<'a>,
    pub block: &'a Block,
    pub parent: libc::pid_t,
    pub cpu: usize,
    pub sched: SchedParams,
    /// The parent has its memory locked: the child, which does not inherit
    /// the locks, takes them again.
    pub lock_memory: bool,
}

/// The task as a forked process; never returns. The parent may have had
/// other threads at the fork, holding locks (malloc, stdio): the child only
/// makes raw libc calls, uses atomics and the objects in the shared block,
/// never allocates, and leaves with `_exit`. Its set-up failures are
/// published as errno values for the driver to report.
pub fn run_child(plan: &ChildPlan<'_>) -> ! {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child_body(plan)));
    // SAFETY: leaves without running the parent's destructors or atexit handlers.
    unsafe { libc::_exit(if outcome.is_ok() { 0 } else { 101 }) }
}

fn child_body(plan: &ChildPlan<'_>) {
    let block = plan.block;
    let report = &block.report;
    // SAFETY: async-signal-safe calls only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            report.pdeathsig_errno.store(errno(), Ordering::Relaxed);
        }
        if libc::getppid() != plan.parent {
            // The parent died before the death signal was armed.
            libc::_exit(1);
        }
        // Terminal and termination signals are the parent's to handle: it
        // ends the task itself, and kills it if it must.
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
    // pin_current_thread, set_current_thread and set_timer_slack make one
    // syscall each and do not allocate (an io::Error from errno is inline).
    if let Err(e) = sched::pin_current_thread(plan.cpu) {
        report
            .pin_errno
            .store(e.raw_os_error().unwrap_or(libc::EINVAL), Ordering::Relaxed);
    }
    if let Err(e) = sched::set_current_thread(&plan.sched) {
        report
            .sched_errno
            .store(e.raw_os_error().unwrap_or(libc::EINVAL), Ordering::Relaxed);
    }
    if let Err(e) = sched::set_timer_slack(1) {
        report
            .slack_errno
            .store(e.raw_os_error().unwrap_or(libc::EINVAL), Ordering::Relaxed);
    }
    report
        .slack_ns
        .store(sched::timer_slack(), Ordering::Relaxed);
    // SAFETY: plain syscall.
    if plan.lock_memory && unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        report.mlock_errno.store(errno(), Ordering::Relaxed);
    }
    sched::prefault_stack();
    block.prefault();
    let mut waiter = Waiter::new(plan.ops);
    let init = waiter.init();
    // SAFETY: plain syscall.
    report
        .tid
        .store(unsafe { libc::getpid() }, Ordering::Relaxed);
    if report_state(block, init) && wait_for_go(block) {
        task_loop(&mut waiter, block);
    }
}
