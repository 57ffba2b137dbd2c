//! `--pacing rt-tests`: the hand-off of ptsematest, pmqtest, sigwaittest
//! and svsematest (rt-tests 2.x), copied step for step so that rtlab and
//! the tool measure the same thing. Per cycle:
//!
//! - the sender (rtlab's releasing thread) stamps, releases the receiver
//!   (`signal`: with `pthread_kill`, as sigwaittest, not a bare `tgkill`)
//!   and blocks at once for the go-ahead, on the same kind of object in the
//!   other direction (ptsematest: relocking its sync mutex; pmqtest:
//!   `mq_receive` on the sync queue; sigwaittest: `sigwait` for the other
//!   signal; svsematest: `semop(-1)` on the receiver's semaphore, then on
//!   the sender's);
//! - the receiver (the task) returns from its wait, stamps, (svsematest:
//!   posts the receiver's semaphore), sleeps `interval` relative to now and
//!   hands the go-ahead back.
//!
//! Both threads run at the same priority (the tools' one pair), so on one
//! CPU the receiver runs when the sender blocks: the sample is the
//! release, the sender's path into its blocking call and the switch.
//! There is no timer thread and no grid: a cycle lasts `interval` plus the
//! two hand-offs, and nothing is ever late, so nothing is missed while
//! both threads live. The sender pushes the previous cycle's samples
//! after the go-ahead, before its next stamp: its measured path holds
//! nothing of rtlab's. The interrupt series holds the receiver's wake-up
//! lateness from its relative sleep (the tools do not measure it).
//!
//! Accounting: every cycle the sender starts is an event; the receiver
//! acknowledges it with both samples after its sleep, so `samples +
//! missed == events` in both series, missed only when the receiver is gone.

use super::interrupt::{
    collect, injected, stamp_and_release, task_is_gone, Pending, Rings, TimerEnd, TimerPlan,
};
use super::mechanism::Ops;
use super::options::Mechanism;
use super::release::Releaser;
use super::shared::{Block, TaskSide};
use super::wait::{self, Waiter};
use crate::recorder::Sample;
use rtlab_core::clock;
use std::sync::atomic::Ordering;

/// SysV set of the rt-tests pacing: semaphore 0 is svsematest's
/// SEM_WAIT_FOR_SENDER (the release, and the go-ahead's second half),
/// semaphore 1 its SEM_WAIT_FOR_RECEIVER.
const SEM_RELEASE: u16 = 0;
const SEM_RECEIVER: u16 = 1;
/// pthread-mutex: ptsematest's sync mutex (mutex 0 is its test mutex).
const SYNC_MUTEX: usize = 1;

/// One `semop` of `op` on semaphore `num` of `set`, EINTR retried.
#[inline]
fn semop(set: libc::c_int, num: u16, op: i16) -> Result<(), i32> {
    loop {
        let mut buf = libc::sembuf {
            sem_num: num,
            sem_op: op,
            sem_flg: 0,
        };
        // SAFETY: buf is a valid single operation on the set.
        if unsafe { libc::semop(set, &mut buf, 1) } == 0 {
            return Ok(());
        }
        wait::retry()?;
    }
}

/// The sender's side of the go-ahead.
pub struct GoAhead<'a> {
    ops: Ops<'a>,
    /// signal: the set holding the go-ahead signal.
    sigset: libc::sigset_t,
}

impl<'a> GoAhead<'a> {
    pub fn new(ops: Ops<'a>) -> GoAhead<'a> {
        GoAhead {
            ops,
            // SAFETY: plain data; filled in `init`.
            sigset: unsafe { std::mem::zeroed() },
        }
    }

    /// In the sender's thread, before it reports ready: `signal` blocks the
    /// go-ahead signal here so it stays pending for `sigwaitinfo`.
    pub fn init(&mut self) -> Result<(), i32> {
        if self.ops.mechanism == Mechanism::Signal {
            // SAFETY: the set is ours; pthread_sigmask changes only this thread.
            unsafe {
                libc::sigemptyset(&mut self.sigset);
                libc::sigaddset(&mut self.sigset, self.ops.back_signo);
                let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &self.sigset, std::ptr::null_mut());
                if rc != 0 {
                    return Err(rc);
                }
            }
        }
        Ok(())
    }

    /// Before the first release: ptsematest's sender takes its (free) sync
    /// mutex, which it then relocks to wait.
    pub fn first(&mut self, releaser: &mut Releaser<'_>) {
        if self.ops.mechanism == Mechanism::PthreadMutex {
            releaser.lock(releaser.mutex(SYNC_MUTEX));
        }
    }

    /// Blocks until the receiver hands the go-ahead back.
    #[inline]
    pub fn wait(&mut self, releaser: &mut Releaser<'_>) -> Result<(), i32> {
        let ops = self.ops;
        match ops.mechanism {
            // A normal mutex this thread holds: the lock blocks until the
            // receiver unlocks it.
            Mechanism::PthreadMutex => wait::lock(releaser.mutex(SYNC_MUTEX)),
            Mechanism::Mq => loop {
                let mut payload = [0u8; super::mechanism::MQ_MSG_BYTES];
                // SAFETY: payload is as long as the queue's message size.
                let n = unsafe {
                    libc::mq_receive(
                        ops.back,
                        payload.as_mut_ptr().cast(),
                        payload.len(),
                        std::ptr::null_mut(),
                    )
                };
                if n >= 0 {
                    return Ok(());
                }
                wait::retry()?;
            },
            Mechanism::Signal => loop {
                // SAFETY: the set is initialised; no siginfo wanted.
                if unsafe { libc::sigwaitinfo(&self.sigset, std::ptr::null_mut()) } > 0 {
                    return Ok(());
                }
                wait::retry()?;
            },
            Mechanism::SysvSem => {
                semop(ops.rx, SEM_RECEIVER, -1)?;
                semop(ops.rx, SEM_RELEASE, -1)
            }
            _ => Ok(()),
        }
    }

    /// The end: gives up the sync mutex (the last release has let the
    /// receiver leave).
    pub fn finish(&mut self, releaser: &mut Releaser<'_>) {
        if self.ops.mechanism == Mechanism::PthreadMutex {
            releaser.unlock(releaser.mutex(SYNC_MUTEX));
        }
    }
}

/// The sender's loop. Hot path between the stamp and the blocking call:
/// the release only (and the injected delay, when asked).
pub fn measure(
    plan: &TimerPlan<'_>,
    start_ns: u64,
    releaser: &mut Releaser<'_>,
    go_ahead: &mut GoAhead<'_>,
    block: &Block,
    rings: &mut Rings,
) -> TimerEnd {
    let planned = plan.events;
    let task = &block.task;
    let control = &block.control;
    let mut end = TimerEnd {
        planned,
        // The sender arms no timer: nothing of a timer's to warn about.
        timerfd: true,
        ..TimerEnd::default()
    };
    // Both threads are set up; the start is a little in the future so the
    // receiver is surely blocked in its wait at the first release.
    clock::sleep_until(start_ns);
    go_ahead.first(releaser);
    let mut releases: u64 = 0;
    let mut pending: Option<Pending> = None;
    let mut missed: u64 = 0;
    loop {
        // After the go-ahead: the previous cycle's samples.
        if let Some(p) = pending.take() {
            if collect(task, releases, p, 0, rings) {
                push_sleep(task, plan.origin_ns, rings);
            } else {
                missed += 1;
            }
        }
        if task_is_gone(task, control) {
            // Before the quit the receiver only leaves on a failure.
            end.task_gone = true;
            break;
        }
        if releases >= planned {
            break;
        }
        if plan.stop.load(Ordering::Relaxed) {
            end.stopped = true;
            break;
        }
        let inject = injected(plan.inject, releases);
        releases += 1;
        let release = stamp_and_release(releaser, inject);
        let waited = go_ahead.wait(releaser);
        pending = Some(Pending {
            release_ns: release,
            at_ns: release.saturating_sub(plan.origin_ns),
        });
        if let Err(e) = waited {
            if end.release_errno == 0 {
                end.release_errno = e;
            }
            break;
        }
    }
    // A release whose go-ahead never came (its wait failed): missed.
    if let Some(p) = pending {
        if collect(task, releases, p, 0, rings) {
            push_sleep(task, plan.origin_ns, rings);
        } else {
            missed += 1;
        }
    }
    end.deadlines = releases;
    rings.switch_missed_tail.store(missed, Ordering::Release);
    rings.interrupt_missed_tail.store(missed, Ordering::Release);
    // Let the receiver leave its wait; a receiver that is gone is not
    // released again.
    control.quit.store(1, Ordering::Release);
    releaser.finish(!task_is_gone(task, control));
    go_ahead.finish(releaser);
    if end.release_errno == 0 {
        end.release_errno = releaser.failed_errno;
    }
    end
}

/// The receiver's sleep lateness of the cycle just collected.
#[inline]
fn push_sleep(task: &TaskSide, origin_ns: u64, rings: &mut Rings) {
    let deadline = task.sleep_end_ns.load(Ordering::Relaxed);
    rings.push_interrupt(Sample {
        at_ns: deadline.saturating_sub(origin_ns),
        latency_ns: task.sleep_late_ns.load(Ordering::Relaxed),
        missed: 0,
    });
}

/// The receiver's side of the go-ahead.
struct Receiver<'a> {
    ops: Ops<'a>,
    /// The sender's thread (for the `signal` go-ahead).
    sender: libc::pthread_t,
}

impl Receiver<'_> {
    /// Right after the stamp: svsematest's receiver posts its own
    /// semaphore, which the sender takes while the receiver sleeps.
    #[inline]
    fn after_stamp(&self) -> Result<(), i32> {
        match self.ops.mechanism {
            Mechanism::SysvSem => semop(self.ops.rx, SEM_RECEIVER, 1),
            _ => Ok(()),
        }
    }

    /// After the sleep: the go-ahead.
    #[inline]
    fn give(&self) -> Result<(), i32> {
        let ops = self.ops;
        match ops.mechanism {
            Mechanism::PthreadMutex => {
                // SAFETY: an initialised normal mutex the sender holds; a
                // normal mutex may be unlocked by another thread in glibc,
                // which ptsematest relies on.
                match unsafe { libc::pthread_mutex_unlock(ops.objects.mutexes[SYNC_MUTEX].get()) } {
                    0 => Ok(()),
                    rc => Err(rc),
                }
            }
            Mechanism::Mq => loop {
                let payload = [0u8; super::mechanism::MQ_MSG_BYTES];
                // SAFETY: payload is the queue's message size.
                if unsafe { libc::mq_send(ops.back, payload.as_ptr().cast(), payload.len(), 0) }
                    == 0
                {
                    return Ok(());
                }
                wait::retry()?;
            },
            // As sigwaittest's receiver: pthread_kill of the sender.
            Mechanism::Signal => {
                // SAFETY: the sender thread lives until after the receiver's end.
                match unsafe { libc::pthread_kill(self.sender, ops.back_signo) } {
                    0 => Ok(()),
                    rc => Err(rc),
                }
            }
            Mechanism::SysvSem => semop(ops.rx, SEM_RELEASE, 1),
            _ => Ok(()),
        }
    }
}

/// The receiver's loop: wait, stamp, sleep `interval_ns`, go-ahead. Hot
/// path: the wait, the clock, the relative sleep, atomic stores and the
/// go-ahead call.
pub fn receive(waiter: &mut Waiter<'_>, block: &Block, interval_ns: u64) {
    let task = &block.task;
    let quit = &block.control.quit;
    let receiver = Receiver {
        ops: waiter.ops(),
        sender: block.control.sender_pthread.load(Ordering::Acquire) as libc::pthread_t,
    };
    let mut runs: u64 = 0;
    while let Some(run) = waiter.wait_stamped(task) {
        if quit.load(Ordering::Acquire) != 0 {
            waiter.leave();
            break;
        }
        if let Err(e) = receiver.after_stamp() {
            task.wait_errno.store(e, Ordering::Relaxed);
            break;
        }
        let sleep_from = clock::now_ns();
        clock::sleep_for(interval_ns);
        let woke = clock::now_ns();
        let sleep_end = sleep_from + interval_ns;
        task.run_ns.store(run, Ordering::Relaxed);
        task.sleep_end_ns.store(sleep_end, Ordering::Relaxed);
        task.sleep_late_ns
            .store(woke.saturating_sub(sleep_end), Ordering::Relaxed);
        runs += 1;
        task.ack.store(runs, Ordering::Release);
        if let Err(e) = receiver.give() {
            task.wait_errno.store(e, Ordering::Relaxed);
            break;
        }
    }
    task.gone.store(1, Ordering::Release);
    // A sender waiting for a go-ahead that will not come: wake it (it sees
    // the task gone). Nothing to do when it is the quit.
    if quit.load(Ordering::Acquire) == 0 {
        let _ = receiver.give();
    }
}
