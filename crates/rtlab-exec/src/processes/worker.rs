//! One task as a process (`rtlab exec process-worker PLAN`): it sets
//! itself up, says it is ready, waits for the common start on stdin, then
//! measures its activations and reports them on stdout
//! ([`super::record`]).
//!
//! * fifo (paper 002's Program 4.7): SCHED_FIFO at the task priority,
//!   pinned, sleeping with an absolute `clock_nanosleep` to each
//!   activation, stamping its lateness at wake-up;
//! * executive: attached to `rtlab exec serve` through rtlab-client (which
//!   pins it and gives it its priority), returning from `wait_next` at
//!   each activation, stamping its lateness right after.
//!
//! Either way it spins its work, stamps the end, and buffers the sample.
//! Hot path: no allocation, lock or formatting; system calls: the clock,
//! the sleep (or the client's wait) and, off the activation instant, one
//! batched write now and then. Memory is locked, the stack prefaulted, the
//! timer slack 1 ns. SIGTERM ends it after its next activation; a reader
//! gone (EPIPE) too.

use super::config::WorkerPlan;
use super::record::{Outbox, ProcessSettings, Record, TaskSample};
use rtlab_core::clock;
use rtlab_core::sched::{self, Policy, SchedParams};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit status of a worker whose plan is refused.
pub const EXIT_BAD_PLAN: i32 = 2;
/// Exit status of a worker that could not measure (its reason on stderr).
pub const EXIT_FAILED: i32 = 3;

/// Set by SIGTERM: leave after the next activation.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigterm(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The worker's main: its exit status. Warnings and the reason of a
/// failure go to stderr, one line each (`warning: …` for warnings).
pub fn worker_main(plan_arg: &str) -> i32 {
    let plan = match WorkerPlan::from_arg(plan_arg) {
        Ok(plan) => plan,
        Err(why) => {
            eprintln!("{why}");
            return EXIT_BAD_PLAN;
        }
    };
    // Named as its series in ps, top and the rival warnings ("rtlab-task3").
    if let Ok(name) = std::ffi::CString::new(format!("rtlab-{}", plan.name())) {
        // SAFETY: a NUL-terminated name; the kernel keeps its first 15 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    }
    // SAFETY: installing an async-signal-safe handler (one atomic store)
    // and ignoring SIGPIPE (a reader gone is seen as EPIPE).
    unsafe {
        libc::signal(libc::SIGTERM, on_sigterm as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let flags = libc::fcntl(1, libc::F_GETFL);
        libc::fcntl(1, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let mut outbox = Outbox::new(1);
    match measure(&plan, &mut outbox) {
        Ok(accounted) => match outbox.finish(accounted) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("could not report the end: {e}");
                EXIT_FAILED
            }
        },
        Err(why) => {
            // What was measured is still handed over (no end record: the
            // run sees the failure).
            let _ = outbox.finish_without_end();
            eprintln!("{why}");
            EXIT_FAILED
        }
    }
}

/// Sets up, waits for the start, measures: the activations accounted for.
fn measure(plan: &WorkerPlan, outbox: &mut Outbox) -> Result<u64, String> {
    if let Err(e) = sched::lock_memory() {
        // The same words from every process: one warning in the result.
        eprintln!(
            "warning: a task process could not lock its memory (mlockall: {e}): page faults may show up as latency; to allow it, {}",
            sched::MEMLOCK_PRIVILEGE_HINT
        );
    }
    if plan.executive_socket.is_none() {
        let fifo = SchedParams {
            policy: Policy::Fifo,
            priority: plan.priority,
            deadline: None,
        };
        let (_, warnings) = rtlab_probe::thread::set_up_measuring_thread(Some(plan.cpu), &fifo);
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
        report_settings(outbox);
    } else {
        // The executive pins the process and sets its priority at attach.
        if let Err(e) = sched::set_timer_slack(1) {
            eprintln!("warning: could not set the timer slack to 1 ns: {e}");
        }
        sched::prefault_stack();
    }
    outbox.push(&Record::Ready);
    outbox.flush_now();
    let Some(start_ns) = wait_for_start() else {
        // The run gave up before its start.
        return Ok(0);
    };
    match &plan.executive_socket {
        None => Ok(self_timed(plan, start_ns, outbox)),
        Some(socket) => released(plan, socket, outbox),
    }
}

/// The common start, read from stdin (8 bytes, little-endian ns); None
/// when stdin closes first.
fn wait_for_start() -> Option<u64> {
    let mut bytes = [0u8; 8];
    std::io::stdin().lock().read_exact(&mut bytes).ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// One activation's work and report, once its start is stamped: spins
/// `work_ns`, stamps the end, buffers the sample and, if due, a batch.
#[inline(always)]
fn work_and_report(
    plan: &WorkerPlan,
    activation: u64,
    started: u64,
    missed: u64,
    outbox: &mut Outbox,
) {
    let work_end = started + plan.work_ns;
    while clock::now_ns() < work_end {
        std::hint::spin_loop();
    }
    let end = clock::now_ns();
    let response = end - activation;
    outbox.push(&Record::Sample(TaskSample {
        activation_ns: activation,
        lateness_ns: started - activation,
        missed,
        response_ns: response,
        deadline_miss: response > plan.period_ns,
    }));
    let next = activation + (1 + missed) * plan.period_ns;
    outbox.flush_if_due(end, next);
}

/// Fifo: sleeps to each activation, stamps the wake-up, works, reports.
fn self_timed(plan: &WorkerPlan, start_ns: u64, outbox: &mut Outbox) -> u64 {
    let first = start_ns + plan.offset_ns;
    let planned = plan.activations;
    let mut k: u64 = 0;
    while k < planned && !stopping() && !outbox.is_broken() {
        let activation = first + k * plan.period_ns;
        // A signal does not cut the sleep short: a stop is seen after the
        // activation (the run waits a period and more for it).
        clock::sleep_until(activation);
        let started = clock::now_ns();
        // Activations that passed while this one was late: counted, never
        // measured as fake catch-up samples.
        let missed = ((started - activation) / plan.period_ns).min(planned - k - 1);
        work_and_report(plan, activation, started, missed, outbox);
        k += 1 + missed;
    }
    k
}

/// Executive: attached, returns from `wait_next` at each activation,
/// stamps, works, reports; detaches at the end.
fn released(
    plan: &WorkerPlan,
    socket: &std::path::Path,
    outbox: &mut Outbox,
) -> Result<u64, String> {
    let params = rtlab_client::Params {
        period_ns: plan.period_ns,
        offset_ns: plan.offset_ns,
        cpu: Some(plan.cpu as u32),
        priority: Some(plan.priority),
        name: Some(plan.name()),
        socket: Some(socket.to_path_buf()),
        ..rtlab_client::Params::default()
    };
    let mut task = rtlab_client::Periodic::attach(&params)
        .map_err(|e| format!("task{}: attach: {e}", plan.task))?;
    report_settings(outbox);
    let planned = plan.activations;
    let mut k: u64 = 0;
    let mut previous: Option<u64> = None;
    while k < planned && !stopping() && !outbox.is_broken() {
        let activation = task.wait_next().map_err(|e| {
            format!(
                "task{}: wait_next after {k} of {planned} activations: {e}",
                plan.task
            )
        })?;
        let started = clock::now_ns();
        // Activations the executive did not release (the process was still
        // working): the gap on its grid.
        let skipped = previous.map_or(0, |p| {
            (activation.saturating_sub(p) / plan.period_ns).saturating_sub(1)
        });
        let missed = skipped.min(planned - k - 1);
        work_and_report(plan, activation, started.max(activation), missed, outbox);
        previous = Some(activation);
        k += 1 + missed;
    }
    task.detach()
        .map_err(|e| format!("task{}: detach: {e}", plan.task))?;
    Ok(k)
}

/// The process's scheduling as it measures, as it sees it (fifo: as it
/// set it; executive: as the executive set it).
fn report_settings(outbox: &mut Outbox) {
    // SAFETY: plain syscall on the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let cpu = sched::thread_affinity(0).ok().and_then(|set| {
        let mut cpus = set.iter();
        match (cpus.next(), cpus.next()) {
            (Some(only), None) => Some(only as u32),
            _ => None,
        }
    });
    outbox.push(&Record::Settings(ProcessSettings {
        tid: sched::gettid(),
        cpu,
        // Without SCHED_RESET_ON_FORK, which the kernel ORs in.
        policy: (policy.max(0) & !libc::SCHED_RESET_ON_FORK) as u32,
        priority: sched::current_thread().map_or(0, |s| s.priority),
        timer_slack_ns: sched::timer_slack(),
    }));
}
