//! Setting a mechanism up and tearing it down: its objects in the shared
//! region (initialised for threads and processes alike) and its kernel
//! objects (fds, a SysV semaphore set, a message queue), which a forked
//! task inherits. Nothing may be left on the host: fds are closed, the
//! message queue is unlinked right after it is opened, and the SysV set
//! (which outlives a killed rtlab) is recorded in the journal as soon as it
//! exists, before it is used, and removed at the end (or by `rtlab
//! restore` after a SIGKILL).
//!
//! Teardown never waits for the task: after a task process that did not
//! exit cleanly, the shared objects are not destroyed (glibc's
//! `pthread_cond_destroy` waits for every waiter to leave, which a killed
//! waiter never does); the mapping that holds them is unmapped at the end
//! of the run anyway, and no object is used twice in a run.

use super::options::{Mechanism, Pacing};
use super::shared::{Block, Objects};
use super::sys::errno;
use anyhow::{bail, Context};
use rtlab_core::journal::{self, Journal, Outcome, SysvSemSet};
use std::io;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Offset of the signal the `signal` mechanism uses above SIGRTMIN. It is
/// only ever sent with tgkill to the task's thread, which keeps it
/// blocked, so no other thread of rtlab can receive it.
pub const SIGNAL_OFFSET: i32 = 7;
/// The `rt-tests` pacing's go-ahead signal (receiver to sender), sent and
/// kept blocked the same way in the sender's thread.
pub const BACK_SIGNAL_OFFSET: i32 = 8;

/// Size of one `mq` message (a u64 sequence number).
pub const MQ_MSG_BYTES: usize = 8;

/// What the timer thread and the task call to release and to wait: plain
/// handles into the shared region and kernel objects, valid while the
/// [`Setup`] they came from is alive. Copy, so the forked child takes its
/// own without touching the parent's state.
#[derive(Clone, Copy)]
pub struct Ops<'a> {
    pub mechanism: Mechanism,
    pub objects: &'a Objects,
    /// Where the task waits: pipe read end, eventfd, mq descriptor or
    /// SysV set id.
    pub rx: libc::c_int,
    /// Where the timer thread posts: pipe write end, else as `rx`.
    pub tx: libc::c_int,
    /// The `signal` mechanism's signal number.
    pub signo: libc::c_int,
    /// `rt-tests` pacing, the go-ahead from the receiver back to the
    /// sender: mq descriptor of the second queue; for `signal` its signal
    /// (`back_signo`). pthread-mutex uses the second mutex, sysv-sem the
    /// set's second semaphore.
    pub back: libc::c_int,
    pub back_signo: libc::c_int,
    pub pacing: Pacing,
}

/// A SysV semaphore set this process created, journaled when there is a
/// journal. Removed by [`SysvSet::remove`] at the end, or when dropped (on
/// any error and while unwinding from a panic).
struct SysvSet {
    id: libc::c_int,
    /// The set as created, to tell it from a later set reusing its id.
    stat: Option<SysvSemSet>,
    journal: Option<Arc<Mutex<Journal>>>,
    removed: bool,
}

/// What the journal entry of a set says it is.
const SYSV_NOTE: &str = "the switch probe's sysv-sem mechanism";

impl SysvSet {
    /// A new private set of `count` semaphores (Linux zeroes their
    /// values), recorded in `journal` before anything uses it.
    fn create(journal: Option<&Arc<Mutex<Journal>>>, count: i32) -> anyhow::Result<SysvSet> {
        // SAFETY: plain syscall.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, count, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error()).context("semget(IPC_PRIVATE)");
        }
        let mut set = SysvSet {
            id,
            stat: None,
            journal: None,
            removed: false,
        };
        match journal {
            Some(journal) => {
                let noted = journal
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .note_sysv_sem(id, SYSV_NOTE);
                // On error `set` is dropped: removed, nothing journaled.
                set.stat = Some(noted.context("journaling the SysV semaphore set")?);
                set.journal = Some(Arc::clone(journal));
            }
            None => set.stat = SysvSemSet::stat(id).ok(),
        }
        Ok(set)
    }

    /// Removes the set (once); a warning when that failed.
    fn remove(&mut self) -> Option<String> {
        if std::mem::replace(&mut self.removed, true) {
            return None;
        }
        let outcome = match &self.journal {
            // No entry left: the journal was restored already (e.g. a
            // second SIGINT), and the set with it.
            Some(journal) => journal
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove_sysv_sem(self.id)
                .map(|restored| restored.outcome),
            None => Some(match self.stat {
                Some(stat) => journal::remove_sysv_sem_set(stat),
                None => {
                    // SAFETY: plain syscall on an id we created.
                    if unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) } == 0 {
                        Outcome::Removed
                    } else {
                        Outcome::Failed {
                            error: io::Error::last_os_error().to_string(),
                        }
                    }
                }
            }),
        };
        match outcome {
            Some(Outcome::Failed { error }) => Some(format!(
                "sysv-sem: could not remove SysV semaphore set {} ({error}); {}",
                self.id,
                if self.journal.is_some() {
                    "it stays in the journal: run `rtlab restore`"
                } else {
                    "remove it with `ipcrm -s ID`"
                }
            )),
            _ => None,
        }
    }
}

impl Drop for SysvSet {
    fn drop(&mut self) {
        if let Some(warning) = self.remove() {
            eprintln!("rtlab: {warning}");
        }
    }
}

/// Closes an fd when dropped.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// Closes a message queue descriptor when dropped (its name is already
/// unlinked).
struct MqDescriptor(libc::mqd_t);

impl Drop for MqDescriptor {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::mq_close(self.0) };
    }
}

/// One mechanism, set up; dropping it releases its kernel objects.
pub struct Setup {
    pub mechanism: Mechanism,
    rx: libc::c_int,
    tx: libc::c_int,
    signo: libc::c_int,
    back: libc::c_int,
    back_signo: libc::c_int,
    pacing: Pacing,
    _fds: Vec<Fd>,
    _mq: Vec<MqDescriptor>,
    sysv: Option<SysvSet>,
}

/// Numbers the message queues of this process so names never collide.
static MQ_COUNTER: AtomicU32 = AtomicU32::new(0);

impl Setup {
    /// Sets `mechanism` up in `block`, whose objects no thread or process
    /// uses now. `process`: the task will be a forked process, so the
    /// pthread mutexes are made robust (a task that dies holding one must
    /// not hang the timer thread); with threads the objects are
    /// process-private, as a program's threads use them (a process-shared
    /// futex costs the kernel a page lookup at every wait and wake).
    /// `pacing`: `rt-tests` adds the go-ahead objects (a second queue, a
    /// second semaphore, a second signal). `journal`: where a SysV set is
    /// recorded.
    pub fn new(
        mechanism: Mechanism,
        block: &Block,
        process: bool,
        pacing: Pacing,
        journal: Option<&Arc<Mutex<Journal>>>,
    ) -> anyhow::Result<Setup> {
        let objects = &block.objects;
        let paced = pacing == Pacing::RtTests;
        let mut setup = Setup {
            mechanism,
            rx: -1,
            tx: -1,
            signo: 0,
            back: -1,
            back_signo: 0,
            pacing,
            _fds: Vec::new(),
            _mq: Vec::new(),
            sysv: None,
        };
        match mechanism {
            Mechanism::Futex => objects.futex.store(0, Ordering::Release),
            Mechanism::PthreadMutex => {
                for mutex in &objects.mutexes {
                    init_mutex(mutex.get(), process).context("pthread_mutex_init")?;
                }
            }
            Mechanism::PthreadCond => {
                init_mutex(objects.cond_mutex.get(), process).context("pthread_mutex_init")?;
                init_cond(objects.cond.get(), process).context("pthread_cond_init")?;
                objects.cond_seq.store(0, Ordering::Release);
            }
            Mechanism::PosixSem => {
                // SAFETY: the sem_t lives in the shared mapping.
                if unsafe { libc::sem_init(objects.sem.get(), libc::c_int::from(process), 0) } != 0
                {
                    return Err(io::Error::last_os_error()).context("sem_init");
                }
            }
            Mechanism::SysvSem => {
                // rt-tests pacing: semaphore 1 is the go-ahead, as svsematest's.
                let set = SysvSet::create(journal, if paced { 2 } else { 1 })?;
                let id = set.id;
                setup.sysv = Some(set);
                setup.rx = id;
                setup.tx = id;
            }
            Mechanism::Pipe => {
                let mut fds = [-1; 2];
                // SAFETY: fds is a valid 2-int array.
                if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return Err(io::Error::last_os_error()).context("pipe2");
                }
                setup._fds = vec![Fd(fds[0]), Fd(fds[1])];
                setup.rx = fds[0];
                setup.tx = fds[1];
            }
            Mechanism::Eventfd => {
                // SAFETY: plain syscall.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if fd < 0 {
                    return Err(io::Error::last_os_error()).context("eventfd");
                }
                setup._fds = vec![Fd(fd)];
                setup.rx = fd;
                setup.tx = fd;
            }
            Mechanism::Mq => {
                let mqd = open_private_queue()?;
                setup._mq.push(MqDescriptor(mqd));
                setup.rx = mqd;
                setup.tx = mqd;
                if paced {
                    let back = open_private_queue()?;
                    setup._mq.push(MqDescriptor(back));
                    setup.back = back;
                }
            }
            Mechanism::Signal => {
                let signo = libc::SIGRTMIN() + SIGNAL_OFFSET;
                if signo > libc::SIGRTMAX() {
                    bail!("no real-time signal SIGRTMIN+{SIGNAL_OFFSET} on this system");
                }
                setup.signo = signo;
                let back = libc::SIGRTMIN() + BACK_SIGNAL_OFFSET;
                if paced && back > libc::SIGRTMAX() {
                    bail!("no real-time signal SIGRTMIN+{BACK_SIGNAL_OFFSET} on this system");
                }
                setup.back_signo = back;
            }
        }
        Ok(setup)
    }

    pub fn ops<'a>(&self, block: &'a Block) -> Ops<'a> {
        Ops {
            mechanism: self.mechanism,
            objects: &block.objects,
            rx: self.rx,
            tx: self.tx,
            signo: self.signo,
            back: self.back,
            back_signo: self.back_signo,
            pacing: self.pacing,
        }
    }

    /// Destroys the shared objects (no thread or task of this mechanism is
    /// left) and releases the kernel objects. `task_left_cleanly`: false
    /// when the task process was killed or exited abnormally; then the
    /// shared objects are left as they are (see the module doc): destroying
    /// a condition variable a dead waiter still counts on blocks for ever.
    /// Returns a warning when the SysV set could not be removed.
    pub fn teardown(mut self, block: &Block, task_left_cleanly: bool) -> Option<String> {
        let objects = &block.objects;
        if task_left_cleanly {
            // SAFETY: the objects were initialised by `new` and nothing uses them.
            unsafe {
                match self.mechanism {
                    Mechanism::PthreadMutex => {
                        for mutex in &objects.mutexes {
                            libc::pthread_mutex_destroy(mutex.get());
                        }
                    }
                    Mechanism::PthreadCond => {
                        libc::pthread_cond_destroy(objects.cond.get());
                        libc::pthread_mutex_destroy(objects.cond_mutex.get());
                    }
                    Mechanism::PosixSem => {
                        libc::sem_destroy(objects.sem.get());
                    }
                    _ => {}
                }
            }
        }
        self.sysv.as_mut().and_then(SysvSet::remove)
    }
}

/// A mutex of the default type: process-shared and robust when the task
/// is another process, else private (as a tool's `pthread_mutex_init(m,
/// NULL)`).
fn init_mutex(mutex: *mut libc::pthread_mutex_t, process: bool) -> io::Result<()> {
    let mut attr = MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
    // SAFETY: attr is initialised by pthread_mutexattr_init before use and
    // destroyed after; mutex points into the shared mapping.
    unsafe {
        check(libc::pthread_mutexattr_init(attr.as_mut_ptr()))?;
        let mut rc = libc::pthread_mutexattr_setpshared(attr.as_mut_ptr(), sharing(process));
        if rc == 0 && process {
            rc = libc::pthread_mutexattr_setrobust(attr.as_mut_ptr(), libc::PTHREAD_MUTEX_ROBUST);
        }
        if rc == 0 {
            rc = libc::pthread_mutex_init(mutex, attr.as_ptr());
        }
        libc::pthread_mutexattr_destroy(attr.as_mut_ptr());
        check(rc)
    }
}

/// The pthread sharing attribute: shared only with a forked task.
fn sharing(process: bool) -> libc::c_int {
    if process {
        libc::PTHREAD_PROCESS_SHARED
    } else {
        libc::PTHREAD_PROCESS_PRIVATE
    }
}

/// A condition variable, process-shared only with a forked task.
fn init_cond(cond: *mut libc::pthread_cond_t, process: bool) -> io::Result<()> {
    let mut attr = MaybeUninit::<libc::pthread_condattr_t>::uninit();
    // SAFETY: as in init_mutex.
    unsafe {
        check(libc::pthread_condattr_init(attr.as_mut_ptr()))?;
        let mut rc = libc::pthread_condattr_setpshared(attr.as_mut_ptr(), sharing(process));
        if rc == 0 {
            rc = libc::pthread_cond_init(cond, attr.as_ptr());
        }
        libc::pthread_condattr_destroy(attr.as_mut_ptr());
        check(rc)
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Opens a new POSIX message queue under a unique name and unlinks the
/// name at once: the descriptor (inherited by a forked task) keeps the
/// queue alive, and nothing is left in /dev/mqueue even if rtlab dies.
fn open_private_queue() -> anyhow::Result<libc::mqd_t> {
    let name = format!(
        "/rtlab-switch-{}-{}\0",
        std::process::id(),
        MQ_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    // SAFETY: mq_attr is plain data; zero is valid for every field.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    // At most two messages are ever outstanding (a release, then the quit).
    attr.mq_maxmsg = 4;
    attr.mq_msgsize = MQ_MSG_BYTES as libc::c_long;
    // SAFETY: name is NUL-terminated; mode and attr are the variadic
    // arguments O_CREAT requires.
    let mqd = unsafe {
        libc::mq_open(
            name.as_ptr().cast(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
            &attr as *const libc::mq_attr,
        )
    };
    if mqd < 0 {
        let e = io::Error::last_os_error();
        let hint = match e.raw_os_error() {
            Some(libc::ENOSYS) => " (the kernel has no POSIX message queues)",
            Some(libc::EMFILE) | Some(libc::ENOSPC) => {
                " (the message queue limits of /proc/sys/fs/mqueue or RLIMIT_MSGQUEUE are reached)"
            }
            _ => "",
        };
        bail!("mq_open({}): {e}{hint}", name.trim_end_matches('\0'));
    }
    // SAFETY: name is NUL-terminated.
    if unsafe { libc::mq_unlink(name.as_ptr().cast()) } != 0 {
        let e = errno();
        // SAFETY: the descriptor is ours.
        unsafe { libc::mq_close(mqd) };
        bail!(
            "mq_unlink({}): {}",
            name.trim_end_matches('\0'),
            io::Error::from_raw_os_error(e)
        );
    }
    Ok(mqd)
}
