//! The timer thread's side of each mechanism. A release is split in two:
//! [`Releaser::prepare`] runs before the release stamp (anything that is
//! not the release itself: taking the next mutex, taking the condition's
//! mutex and bumping its sequence), [`Releaser::fire`] after it (the call
//! that makes the task runnable). The injected delay lands between the two.
//!
//! Hot path: no allocation, no formatting, no lock other than the mechanism
//! under test; EINTR is retried; the first failure's errno is kept for a
//! warning after the run.

use super::mechanism::{Ops, MQ_MSG_BYTES};
use super::options::{Mechanism, Pacing};
use super::sys::{errno, futex_wake};
use std::sync::atomic::Ordering;

pub struct Releaser<'a> {
    ops: Ops<'a>,
    /// Releases fired so far (the futex word and mq payload).
    seq: u64,
    /// pthread-mutex: the index of the mutex the timer thread holds, the
    /// one the task waits for next.
    held: usize,
    /// pthread-mutex: 1 when the two mutexes take turns (grid pacing), 0
    /// when mutex 0 is always the one released (rt-tests pacing, as
    /// ptsematest's test mutex; mutex 1 is its sync mutex).
    turn: usize,
    /// signal: thread group and thread id of the task.
    tgid: libc::pid_t,
    tid: libc::pid_t,
    /// rt-tests pacing's `signal`: the task's pthread, sent to with
    /// `pthread_kill` as sigwaittest does (glibc's pthread_kill blocks
    /// every signal around its tgkill: three more system calls than
    /// tgkill alone, in the measured path).
    pthread: Option<libc::pthread_t>,
    /// errno of the first failed release call (0: none).
    pub failed_errno: i32,
}

impl<'a> Releaser<'a> {
    pub fn new(ops: Ops<'a>) -> Releaser<'a> {
        Releaser {
            ops,
            seq: 0,
            held: 0,
            turn: usize::from(ops.pacing == Pacing::Grid),
            tgid: 0,
            tid: 0,
            pthread: None,
            failed_errno: 0,
        }
    }

    /// Before the task may wait: pthread-mutex takes mutex 0, the one the
    /// task blocks on first (in rt-tests pacing ptsematest's main thread
    /// does the same: "wait on first attempt").
    pub fn init(&mut self) {
        if self.ops.mechanism == Mechanism::PthreadMutex {
            self.lock(self.mutex(0));
            self.held = 0;
        }
    }

    /// Where `signal` sends (the task's thread; in process mode the child,
    /// whose pid is its tid).
    pub fn set_target(&mut self, tgid: libc::pid_t, tid: libc::pid_t) {
        self.tgid = tgid;
        self.tid = tid;
    }

    /// rt-tests pacing: `signal` releases with `pthread_kill` of `pthread`.
    pub fn set_pthread(&mut self, pthread: libc::pthread_t) {
        self.pthread = Some(pthread);
    }

    /// The mechanism was abandoned before the first deadline: undo `init`.
    pub fn abandon(&mut self) {
        if self.ops.mechanism == Mechanism::PthreadMutex {
            self.unlock(self.mutex(self.held));
        }
    }

    /// Before the release stamp.
    ///
    /// pthread-mutex: a mutex cannot be posted, so two mutexes take turns.
    /// The timer thread holds mutex `held` and the task is blocked locking
    /// it. To release, the timer thread first takes the other mutex (the
    /// task unlocked it before acknowledging its previous run, and the
    /// timer thread only releases once that acknowledgement is in, so this
    /// never waits), then (in `fire`) unlocks `held`: the task wakes owning
    /// it, stamps, unlocks it, acknowledges and blocks on the other mutex,
    /// which the timer thread now holds. The roles swap every event.
    #[inline]
    pub fn prepare(&mut self) {
        match self.ops.mechanism {
            Mechanism::PthreadMutex => self.lock(self.mutex(1 - self.held)),
            Mechanism::PthreadCond => {
                self.lock(self.ops.objects.cond_mutex.get());
                self.ops.objects.cond_seq.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// After the release stamp: the call that makes the task runnable.
    #[inline]
    pub fn fire(&mut self) {
        self.seq += 1;
        let objects = self.ops.objects;
        match self.ops.mechanism {
            Mechanism::Futex => {
                objects.futex.store(self.seq as u32, Ordering::Release);
                futex_wake(&objects.futex, 1);
            }
            Mechanism::PthreadMutex => {
                self.unlock(self.mutex(self.held));
                self.held ^= self.turn;
            }
            Mechanism::PthreadCond => {
                // SAFETY: the cond is initialised and shared.
                let rc = unsafe { libc::pthread_cond_signal(objects.cond.get()) };
                self.note(rc);
                self.unlock(objects.cond_mutex.get());
            }
            Mechanism::PosixSem => loop {
                // SAFETY: the semaphore is initialised and shared.
                if unsafe { libc::sem_post(objects.sem.get()) } == 0 {
                    break;
                }
                if !self.retry() {
                    break;
                }
            },
            Mechanism::SysvSem => loop {
                let mut op = libc::sembuf {
                    sem_num: 0,
                    sem_op: 1,
                    sem_flg: 0,
                };
                // SAFETY: op is a valid single operation on our set.
                if unsafe { libc::semop(self.ops.tx, &mut op, 1) } == 0 {
                    break;
                }
                if !self.retry() {
                    break;
                }
            },
            Mechanism::Pipe => {
                let byte = 1u8;
                self.write_all(&byte as *const u8, 1);
            }
            Mechanism::Eventfd => {
                let one = 1u64;
                self.write_all((&one as *const u64).cast(), 8);
            }
            Mechanism::Mq => loop {
                let payload = self.seq.to_ne_bytes();
                // SAFETY: payload is MQ_MSG_BYTES long, the queue's message size.
                let rc =
                    unsafe { libc::mq_send(self.ops.tx, payload.as_ptr().cast(), MQ_MSG_BYTES, 0) };
                if rc == 0 || !self.retry() {
                    break;
                }
            },
            Mechanism::Signal => match self.pthread {
                Some(pthread) => {
                    // SAFETY: the task thread lives until after the last release.
                    let rc = unsafe { libc::pthread_kill(pthread, self.ops.signo) };
                    self.note(rc);
                }
                None => loop {
                    // SAFETY: plain syscall; the target keeps the signal blocked.
                    if unsafe { libc::tgkill(self.tgid, self.tid, self.ops.signo) } == 0 {
                        break;
                    }
                    if !self.retry() {
                        break;
                    }
                },
            },
        }
    }

    /// The last release, after `quit` is set: wakes the task once more so
    /// it leaves its loop. pthread-mutex just gives up the mutex the task
    /// waits for (no further mutex is taken: nothing is left locked).
    /// `task_there`: false when the task is gone (its wait failed or its
    /// process died): then nothing is released (a condition variable must
    /// not be signalled for a dead waiter), only the held mutex given up.
    pub fn finish(&mut self, task_there: bool) {
        if self.ops.mechanism == Mechanism::PthreadMutex {
            self.unlock(self.mutex(self.held));
        } else if task_there {
            self.prepare();
            self.fire();
        }
    }

    pub(super) fn mutex(&self, index: usize) -> *mut libc::pthread_mutex_t {
        self.ops.objects.mutexes[index].get()
    }

    #[inline]
    pub(super) fn lock(&mut self, mutex: *mut libc::pthread_mutex_t) {
        // SAFETY: the mutex is initialised and shared.
        let rc = unsafe { libc::pthread_mutex_lock(mutex) };
        if rc == libc::EOWNERDEAD {
            // The task process died holding it (robust mutex): take it over.
            // SAFETY: we own the mutex now.
            unsafe { libc::pthread_mutex_consistent(mutex) };
        } else {
            self.note(rc);
        }
    }

    #[inline]
    pub(super) fn unlock(&mut self, mutex: *mut libc::pthread_mutex_t) {
        // SAFETY: the mutex is initialised and held by this thread.
        let rc = unsafe { libc::pthread_mutex_unlock(mutex) };
        self.note(rc);
    }

    #[inline]
    fn write_all(&mut self, buf: *const u8, len: usize) {
        loop {
            // SAFETY: buf points to len readable bytes.
            let n = unsafe { libc::write(self.ops.tx, buf.cast(), len) };
            // A pipe or eventfd write of 1 or 8 bytes is all or nothing.
            if n >= 0 || !self.retry() {
                break;
            }
        }
    }

    /// After a failed call: true to retry (EINTR), else keeps the errno.
    #[inline]
    pub(super) fn retry(&mut self) -> bool {
        let e = errno();
        if e == libc::EINTR {
            return true;
        }
        self.note(e);
        false
    }

    #[inline]
    fn note(&mut self, rc: i32) {
        if rc != 0 && self.failed_errno == 0 {
            self.failed_errno = rc;
        }
    }
}
