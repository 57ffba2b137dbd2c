//! The one memory region the timer thread and the task share: a
//! `mmap(MAP_SHARED|MAP_ANONYMOUS)` mapping created before any thread or
//! fork, so the same code works whether the task is a thread or a forked
//! process. It holds the control block (acknowledgements, start/quit
//! flags, the task's set-up report) and every mechanism object that must
//! be shared (futex word, pthread mutexes and condition variable, POSIX
//! semaphore). A fresh mapping is all zeroes: a valid initial state for
//! every atomic here.

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Keeps fields written by different sides on their own cache lines.
#[repr(C, align(64))]
pub struct CacheLine<T>(pub T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Written by the task after each run, read by the timer thread.
#[repr(C)]
pub struct TaskSide {
    /// How many releases the task has run for (its acknowledgement).
    pub ack: AtomicU64,
    /// CLOCK_MONOTONIC time the task started running after its last
    /// release; published before `ack` (Release), read after it (Acquire).
    pub run_ns: AtomicU64,
    /// Set when the task has left its loop (quit, or a failed wait).
    pub gone: AtomicU32,
    /// errno of a wait call that failed for good (0: none).
    pub wait_errno: AtomicI32,
    /// rt-tests pacing: the end of the task's last relative sleep (its
    /// deadline) and how late it woke from it; published before `ack`.
    pub sleep_end_ns: AtomicU64,
    pub sleep_late_ns: AtomicU64,
}

/// Values of [`Control::go`].
pub const GO_WAIT: u32 = 0;
pub const GO_RUN: u32 = 1;
/// The mechanism is abandoned before its first deadline: leave at once.
pub const GO_ABANDON: u32 = 2;

/// Written by the driver and the timer thread.
#[repr(C)]
pub struct Control {
    /// A futex word: [`GO_WAIT`] until the start time is published.
    pub go: AtomicU32,
    /// Set (Release) by the timer thread before its last release: the task
    /// leaves its loop at its next wake-up.
    pub quit: AtomicU32,
    /// Set by the driver when the task process died: the timer thread ends.
    pub abort: AtomicU32,
    /// Start of the mechanism's grid, published before `go`.
    pub start_ns: AtomicU64,
    /// The releasing thread's kernel thread id, set before it reports ready.
    pub sender_tid: AtomicI32,
    /// rt-tests pacing (threads only): the releasing thread's and the
    /// task's `pthread_t`, for sigwaittest's `pthread_kill`; set before
    /// each reports ready.
    pub sender_pthread: AtomicU64,
    pub task_pthread: AtomicU64,
}

/// Values of [`TaskReport::state`].
pub const TASK_STARTING: u32 = 0;
pub const TASK_READY: u32 = 1;
pub const TASK_FAILED: u32 = 2;

/// The task's set-up as it went: a forked child cannot format or allocate,
/// so it reports errno values and the driver turns them into warnings.
#[repr(C)]
pub struct TaskReport {
    /// A futex word: [`TASK_STARTING`], then [`TASK_READY`] or [`TASK_FAILED`].
    pub state: AtomicU32,
    /// The task's kernel thread id (the child's pid in process mode).
    pub tid: AtomicI32,
    pub pdeathsig_errno: AtomicI32,
    pub pin_errno: AtomicI32,
    pub sched_errno: AtomicI32,
    pub slack_errno: AtomicI32,
    pub mlock_errno: AtomicI32,
    /// The mechanism's wait side could not be prepared (fatal).
    pub init_errno: AtomicI32,
    pub slack_ns: AtomicU64,
}

/// The mechanism objects that must live in shared memory. Only the one of
/// the running mechanism is initialised; each is initialised before its
/// mechanism's threads start and destroyed after they are gone.
#[repr(C)]
pub struct Objects {
    pub futex: CacheLine<AtomicU32>,
    pub mutexes: [CacheLine<UnsafeCell<libc::pthread_mutex_t>>; 2],
    pub cond_mutex: CacheLine<UnsafeCell<libc::pthread_mutex_t>>,
    pub cond: CacheLine<UnsafeCell<libc::pthread_cond_t>>,
    /// Bumped under `cond_mutex` by each release of `pthread-cond`.
    pub cond_seq: CacheLine<AtomicU64>,
    pub sem: CacheLine<UnsafeCell<libc::sem_t>>,
}

/// Everything in the shared mapping.
#[repr(C)]
pub struct Block {
    pub task: CacheLine<TaskSide>,
    pub control: CacheLine<Control>,
    pub report: CacheLine<TaskReport>,
    pub objects: Objects,
}

// SAFETY: the atomics are Sync; the UnsafeCells hold pthread/sem objects
// that are only ever touched through their own (thread- and
// process-safe) C functions, after being initialised by one thread while
// no other thread or process used them.
unsafe impl Sync for Objects {}

impl Block {
    /// Back to the initial state for the next mechanism (no thread or task
    /// of the previous one is left).
    pub fn reset(&self) {
        let task = &self.task;
        task.ack.store(0, Ordering::Relaxed);
        task.run_ns.store(0, Ordering::Relaxed);
        task.gone.store(0, Ordering::Relaxed);
        task.wait_errno.store(0, Ordering::Relaxed);
        task.sleep_end_ns.store(0, Ordering::Relaxed);
        task.sleep_late_ns.store(0, Ordering::Relaxed);
        let control = &self.control;
        control.go.store(GO_WAIT, Ordering::Relaxed);
        control.quit.store(0, Ordering::Relaxed);
        control.abort.store(0, Ordering::Relaxed);
        control.start_ns.store(0, Ordering::Relaxed);
        control.sender_tid.store(0, Ordering::Relaxed);
        control.sender_pthread.store(0, Ordering::Relaxed);
        control.task_pthread.store(0, Ordering::Relaxed);
        let report = &self.report;
        report.state.store(TASK_STARTING, Ordering::Relaxed);
        report.tid.store(0, Ordering::Relaxed);
        for errno in [
            &report.pdeathsig_errno,
            &report.pin_errno,
            &report.sched_errno,
            &report.slack_errno,
            &report.mlock_errno,
            &report.init_errno,
        ] {
            errno.store(0, Ordering::Relaxed);
        }
        report.slack_ns.store(0, Ordering::Relaxed);
        self.objects.futex.store(0, Ordering::Relaxed);
        self.objects.cond_seq.store(0, Ordering::Release);
    }

    /// Touches every page of the block so no page fault is left for the
    /// measuring loops (a forked child maps shared pages lazily).
    pub fn prefault(&self) {
        let base = self as *const Block as *const u8;
        let len = std::mem::size_of::<Block>();
        let mut offset = 0;
        while offset < len {
            // SAFETY: reading a byte inside the block.
            unsafe { std::ptr::read_volatile(base.add(offset)) };
            offset += 4096;
        }
        // Writes too: the task's and the control lines are written.
        self.task.run_ns.fetch_add(0, Ordering::Relaxed);
        self.control.abort.fetch_add(0, Ordering::Relaxed);
        self.report.slack_ns.fetch_add(0, Ordering::Relaxed);
    }
}

/// The mapping; unmapped when dropped (by then no thread uses it and any
/// child process has been reaped).
pub struct Region {
    block: *mut Block,
    len: usize,
}

// SAFETY: Region only hands out &Block, which is Sync.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    pub fn new() -> io::Result<Region> {
        let page = 4096;
        let len = std::mem::size_of::<Block>().div_ceil(page) * page;
        // SAFETY: anonymous shared mapping, no fd; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let region = Region {
            block: ptr.cast(),
            len,
        };
        region.block().prefault();
        Ok(region)
    }

    pub fn block(&self) -> &Block {
        // SAFETY: the mapping is zero-initialised, page-aligned and large
        // enough; all-zero is a valid Block (atomics at 0, pthread objects
        // not yet initialised and not used before they are).
        unsafe { &*self.block }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and unmapped once.
        unsafe { libc::munmap(self.block.cast(), self.len) };
    }
}
