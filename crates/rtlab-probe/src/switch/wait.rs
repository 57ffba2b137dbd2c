//! The task's side of each mechanism: block until released. Used by the
//! task thread and by the forked child alike, so nothing here allocates,
//! formats or takes a lock other than the mechanism under test; EINTR is
//! retried, any other failure is returned as an errno and ends the task.

use super::mechanism::{Ops, MQ_MSG_BYTES};
use super::options::{Mechanism, Pacing};
use super::shared::TaskSide;
use super::sys::{errno, futex_wait};
use std::sync::atomic::Ordering;

pub struct Waiter<'a> {
    ops: Ops<'a>,
    /// futex: the last word seen; pthread-cond: the last sequence seen.
    seen: u64,
    /// pthread-mutex: the mutex to lock next (see `Releaser::prepare`).
    next_mutex: usize,
    /// signal: the set holding the mechanism's signal.
    sigset: libc::sigset_t,
}

impl<'a> Waiter<'a> {
    pub fn new(ops: Ops<'a>) -> Waiter<'a> {
        Waiter {
            ops,
            seen: 0,
            next_mutex: 0,
            // SAFETY: sigset_t is plain data; emptied in `init`.
            sigset: unsafe { std::mem::zeroed() },
        }
    }

    /// Before the first release, in the task's own thread. signal: blocks
    /// the signal in this thread's mask, so it stays pending for
    /// sigwaitinfo instead of being delivered (its default action would end
    /// the process).
    pub fn init(&mut self) -> Result<(), i32> {
        let objects = self.ops.objects;
        match self.ops.mechanism {
            Mechanism::Futex => self.seen = u64::from(objects.futex.load(Ordering::Acquire)),
            Mechanism::PthreadCond => self.seen = objects.cond_seq.load(Ordering::Acquire),
            Mechanism::Signal => {
                // SAFETY: the set is ours; pthread_sigmask changes only this thread.
                unsafe {
                    libc::sigemptyset(&mut self.sigset);
                    libc::sigaddset(&mut self.sigset, self.ops.signo);
                    let rc =
                        libc::pthread_sigmask(libc::SIG_BLOCK, &self.sigset, std::ptr::null_mut());
                    if rc != 0 {
                        return Err(rc);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Blocks until released. pthread-mutex and pthread-cond return holding
    /// their mutex: the caller stamps, then calls [`Waiter::after_run`].
    #[inline]
    pub fn wait(&mut self) -> Result<(), i32> {
        let objects = self.ops.objects;
        match self.ops.mechanism {
            Mechanism::Futex => loop {
                let word = objects.futex.load(Ordering::Acquire);
                if u64::from(word) != self.seen {
                    self.seen = u64::from(word);
                    return Ok(());
                }
                futex_wait(&objects.futex, word);
            },
            Mechanism::PthreadMutex => lock(objects.mutexes[self.next_mutex].get()),
            Mechanism::PthreadCond => {
                let mutex = objects.cond_mutex.get();
                lock(mutex)?;
                loop {
                    let seq = objects.cond_seq.load(Ordering::Relaxed);
                    if seq != self.seen {
                        self.seen = seq;
                        return Ok(());
                    }
                    // SAFETY: initialised shared cond and mutex, mutex held.
                    let rc = unsafe { libc::pthread_cond_wait(objects.cond.get(), mutex) };
                    if rc == libc::EOWNERDEAD {
                        // SAFETY: we own the mutex now.
                        unsafe { libc::pthread_mutex_consistent(mutex) };
                    } else if rc != 0 {
                        return Err(rc);
                    }
                }
            }
            Mechanism::PosixSem => loop {
                // SAFETY: initialised shared semaphore.
                if unsafe { libc::sem_wait(objects.sem.get()) } == 0 {
                    return Ok(());
                }
                retry()?;
            },
            Mechanism::SysvSem => loop {
                let mut op = libc::sembuf {
                    sem_num: 0,
                    sem_op: -1,
                    sem_flg: 0,
                };
                // SAFETY: op is a valid single operation on the set.
                if unsafe { libc::semop(self.ops.rx, &mut op, 1) } == 0 {
                    return Ok(());
                }
                retry()?;
            },
            Mechanism::Pipe => {
                let mut byte = 0u8;
                read_exact(self.ops.rx, (&mut byte as *mut u8).cast(), 1)
            }
            Mechanism::Eventfd => {
                let mut count = 0u64;
                read_exact(self.ops.rx, (&mut count as *mut u64).cast(), 8)
            }
            Mechanism::Mq => loop {
                let mut payload = [0u8; MQ_MSG_BYTES];
                // SAFETY: payload is as long as the queue's message size.
                let n = unsafe {
                    libc::mq_receive(
                        self.ops.rx,
                        payload.as_mut_ptr().cast(),
                        MQ_MSG_BYTES,
                        std::ptr::null_mut(),
                    )
                };
                if n >= 0 {
                    return Ok(());
                }
                retry()?;
            },
            Mechanism::Signal => loop {
                // SAFETY: the set is initialised; no siginfo wanted.
                if unsafe { libc::sigwaitinfo(&self.sigset, std::ptr::null_mut()) } > 0 {
                    return Ok(());
                }
                retry()?;
            },
        }
    }

    pub fn ops(&self) -> Ops<'a> {
        self.ops
    }

    /// Leaving at the quit, after `wait`: rt-tests pacing's pthread-mutex
    /// gives back the test mutex it keeps between runs.
    pub fn leave(&mut self) {
        if self.ops.mechanism == Mechanism::PthreadMutex && self.ops.pacing == Pacing::RtTests {
            // SAFETY: this thread holds the mutex.
            unsafe { libc::pthread_mutex_unlock(self.ops.objects.mutexes[0].get()) };
        } else {
            self.after_run();
        }
    }

    /// Waits, then stamps the run (CLOCK_MONOTONIC ns) at once; None when
    /// the wait failed for good, its errno kept in `task`.
    #[inline]
    pub fn wait_stamped(&mut self, task: &TaskSide) -> Option<u64> {
        if let Err(e) = self.wait() {
            task.wait_errno.store(e, Ordering::Relaxed);
            return None;
        }
        Some(rtlab_core::clock::now_ns())
    }

    /// After the run stamp: gives back the mutex `wait` returned holding
    /// (rt-tests pacing keeps it, as ptsematest's receiver: its next lock
    /// blocks until the sender unlocks it).
    #[inline]
    pub fn after_run(&mut self) {
        let objects = self.ops.objects;
        match self.ops.mechanism {
            Mechanism::PthreadMutex if self.ops.pacing == Pacing::Grid => {
                // SAFETY: this thread holds the mutex.
                unsafe { libc::pthread_mutex_unlock(objects.mutexes[self.next_mutex].get()) };
                self.next_mutex = 1 - self.next_mutex;
            }
            Mechanism::PthreadCond => {
                // SAFETY: this thread holds the mutex.
                unsafe { libc::pthread_mutex_unlock(objects.cond_mutex.get()) };
            }
            _ => {}
        }
    }
}

#[inline]
pub(super) fn lock(mutex: *mut libc::pthread_mutex_t) -> Result<(), i32> {
    // SAFETY: initialised shared mutex.
    match unsafe { libc::pthread_mutex_lock(mutex) } {
        0 => Ok(()),
        libc::EOWNERDEAD => {
            // The timer side's process died holding it (robust mutex).
            // SAFETY: we own the mutex now.
            unsafe { libc::pthread_mutex_consistent(mutex) };
            Ok(())
        }
        rc => Err(rc),
    }
}

/// After a failed call: Ok to retry (EINTR), else the errno.
#[inline]
pub(super) fn retry() -> Result<(), i32> {
    match errno() {
        libc::EINTR => Ok(()),
        e => Err(e),
    }
}

#[inline]
fn read_exact(fd: libc::c_int, buf: *mut libc::c_void, len: usize) -> Result<(), i32> {
    loop {
        // SAFETY: buf points to len writable bytes.
        let n = unsafe { libc::read(fd, buf, len) };
        if n == len as isize {
            return Ok(());
        }
        if n >= 0 {
            // End of file or a short read: the writer is gone.
            return Err(libc::EPIPE);
        }
        retry()?;
    }
}
