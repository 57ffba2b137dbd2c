//! The executive threads of `exec serve`: one per CPU in use, each with a
//! fixed table of slots it reads without locks. The control thread arms a
//! slot (a process attached) and asks to retire one; the executive adopts
//! and acknowledges at its next look at the table, which a "table
//! changed" futex word brings forward. For each activation it sleeps
//! (absolute) to the instant minus the guard, spins to the instant minus
//! the release margin, and releases every due process that finished its
//! previous activation (the activation instant on the page, the release
//! word bumped, FUTEX_WAKE), counting the others as missed — as `exec
//! periodic`'s executive.
//!
//! Hot path: no allocation, lock or syscall other than the clock, the
//! futex wait and the futex wake. The release counts live in server
//! memory; the page only shows them (the client can write the page).

use rtlab_client::futex;
use rtlab_client::shm::Page;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::{Policy, SchedParams};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const FREE: u32 = 0;
/// Set up by the control thread, not yet seen by the executive.
const ARMED: u32 = 1;
/// Released by the executive.
const ACTIVE: u32 = 2;
/// The control thread asks the executive to let go.
const RETIRING: u32 = 3;
/// The executive let go: the control thread may unmap the page.
const RETIRED: u32 = 4;

/// Longest sleep of an idle executive between two looks at its stop flag.
const IDLE_CHECK_NS: u64 = 50_000_000;

/// One process's place in an executive's table, on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
pub struct Slot {
    state: AtomicU32,
    page: AtomicPtr<Page>,
    period_ns: AtomicU64,
    /// The next activation instant (the control thread's at arm, then the
    /// executive's).
    next_ns: AtomicU64,
    /// Releases so far (the executive's own count).
    released: AtomicU32,
    /// Activations not released because the process was still working.
    missed: AtomicU64,
    /// The instant of the latest release.
    activation_ns: AtomicU64,
}

impl Slot {
    /// Releases so far.
    pub fn released(&self) -> u32 {
        self.released.load(Ordering::Acquire)
    }
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Acquire)
    }
    /// The instant of the latest release (0 before the first).
    pub fn activation_ns(&self) -> u64 {
        self.activation_ns.load(Ordering::Acquire)
    }
}

/// An executive's table, shared with the control thread.
pub struct Table {
    slots: Box<[Slot]>,
    /// Bumped (and woken) by the control thread at every change.
    changed: AtomicU32,
    stop: AtomicBool,
}

impl Table {
    fn touch(&self) {
        self.changed.fetch_add(1, Ordering::Release);
        futex::wake_all(&self.changed);
    }

    /// Arms a free slot for `page` (mapped until the slot is retired),
    /// first activation `first_ns`; its index, or None when full.
    pub fn arm(&self, page: &Page, period_ns: u64, first_ns: u64) -> Option<usize> {
        let index = self
            .slots
            .iter()
            .position(|slot| slot.state.load(Ordering::Acquire) == FREE)?;
        let slot = &self.slots[index];
        slot.page
            .store(page as *const Page as *mut Page, Ordering::Relaxed);
        slot.period_ns.store(period_ns, Ordering::Relaxed);
        slot.next_ns.store(first_ns, Ordering::Relaxed);
        slot.released.store(0, Ordering::Relaxed);
        slot.missed.store(0, Ordering::Relaxed);
        slot.activation_ns.store(0, Ordering::Relaxed);
        slot.state.store(ARMED, Ordering::Release);
        self.touch();
        Some(index)
    }

    pub fn slot(&self, index: usize) -> &Slot {
        &self.slots[index]
    }

    /// Takes slot `index` out of the plan and waits (up to `timeout_ns`)
    /// for the executive to let go; true once its page may be unmapped.
    /// False: the executive did not answer (it is gone or wedged) and the
    /// page must stay mapped.
    pub fn retire(&self, index: usize, running: bool, timeout_ns: u64) -> bool {
        let slot = &self.slots[index];
        let was = slot.state.swap(RETIRING, Ordering::AcqRel);
        if was == FREE || was == RETIRED {
            slot.state.store(FREE, Ordering::Release);
            return true;
        }
        self.touch();
        let give_up = futex::now_ns() + timeout_ns;
        while running && futex::now_ns() < give_up {
            if slot.state.load(Ordering::Acquire) == RETIRED {
                slot.state.store(FREE, Ordering::Release);
                return true;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // Not running any more (joined): nobody reads the page.
        if !running {
            slot.state.store(FREE, Ordering::Release);
        }
        !running
    }
}

/// One executive thread and its table.
pub struct Executive {
    pub cpu: usize,
    pub table: Arc<Table>,
    thread: Option<JoinHandle<()>>,
    pub settings: Option<ThreadSettings>,
    pub warnings: Vec<String>,
}

impl Executive {
    /// Starts the executive of `cpu` (SCHED_FIFO `priority`, pinned,
    /// memory locked by the caller) with room for `capacity` processes,
    /// waking `guard_ns` before an activation and releasing
    /// `release_early_ns` before it.
    pub fn start(
        cpu: usize,
        priority: u32,
        capacity: usize,
        guard_ns: u64,
        release_early_ns: u64,
    ) -> std::io::Result<Executive> {
        let table = Arc::new(Table {
            slots: (0..capacity).map(|_| Slot::default()).collect(),
            changed: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        });
        let shared = Arc::clone(&table);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("rtlab-exec{cpu}"))
            .stack_size(rtlab_core::sched::PREFAULT_STACK_BYTES + 512 * 1024)
            .spawn(move || {
                let sched = SchedParams {
                    policy: Policy::Fifo,
                    priority,
                    deadline: None,
                };
                let set_up = rtlab_probe::thread::set_up_measuring_thread(Some(cpu), &sched);
                let _ = ready_tx.send(set_up);
                release_loop(&shared, guard_ns, release_early_ns);
            })?;
        let (settings, warnings) = ready_rx.recv().map_or(
            (
                None,
                vec![format!("the executive of CPU {cpu} did not start")],
            ),
            |(s, w)| (Some(s), w),
        );
        Ok(Executive {
            cpu,
            table,
            thread: Some(thread),
            settings,
            warnings,
        })
    }

    /// Whether the thread still runs.
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Processes in its table.
    pub fn load(&self) -> usize {
        self.table
            .slots
            .iter()
            .filter(|slot| slot.state.load(Ordering::Acquire) != FREE)
            .count()
    }

    /// Stops the thread and waits for it.
    pub fn stop(&mut self) {
        self.table.stop.store(true, Ordering::Release);
        self.table.touch();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Executive {
    fn drop(&mut self) {
        self.stop();
    }
}

#[inline(always)]
fn spin_until(instant_ns: u64) {
    while futex::now_ns() < instant_ns {
        std::hint::spin_loop();
    }
}

/// Looks at the table: adopts armed slots, acknowledges retiring ones;
/// the earliest next activation of the active ones (u64::MAX: none).
#[inline]
fn look(table: &Table) -> u64 {
    let mut earliest = u64::MAX;
    for slot in table.slots.iter() {
        match slot.state.load(Ordering::Acquire) {
            ARMED => {
                // Only the control thread moves a slot out of ARMED (to
                // RETIRING): adopt it unless that happened just now.
                if slot
                    .state
                    .compare_exchange(ARMED, ACTIVE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
            }
            ACTIVE => {}
            RETIRING => {
                slot.state.store(RETIRED, Ordering::Release);
                continue;
            }
            _ => continue,
        }
        earliest = earliest.min(slot.next_ns.load(Ordering::Relaxed));
    }
    earliest
}

/// Releases (or counts as missed) the activation of `slot` now due.
#[inline]
fn release(slot: &Slot) {
    // SAFETY: the page stays mapped while the slot is ACTIVE: the control
    // thread unmaps it only after this thread acknowledged its retirement.
    let page = unsafe { &*slot.page.load(Ordering::Relaxed) };
    let next = slot.next_ns.load(Ordering::Relaxed);
    let released = slot.released.load(Ordering::Relaxed);
    if page.client.done_seq.load(Ordering::Acquire) != released {
        // Still working on an earlier activation: this one is missed.
        let missed = slot.missed.load(Ordering::Relaxed) + 1;
        slot.missed.store(missed, Ordering::Release);
        page.server.missed.store(missed, Ordering::Release);
    } else {
        let released = released.wrapping_add(1);
        slot.activation_ns.store(next, Ordering::Release);
        slot.released.store(released, Ordering::Release);
        page.server.activation_ns.store(next, Ordering::Release);
        page.server.release_seq.store(released, Ordering::Release);
        futex::wake_all(&page.server.release_seq);
    }
    slot.next_ns.store(
        next + slot.period_ns.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
}

/// The executive's loop, until its table's stop flag.
fn release_loop(table: &Table, guard_ns: u64, release_early_ns: u64) {
    while !table.stop.load(Ordering::Acquire) {
        let seen = table.changed.load(Ordering::Acquire);
        let earliest = look(table);
        let now = futex::now_ns();
        if earliest == u64::MAX {
            futex::wait_until(&table.changed, seen, now + IDLE_CHECK_NS);
            continue;
        }
        let wake = earliest.saturating_sub(guard_ns);
        if now < wake {
            // Woken early by a change of the table: look again.
            futex::wait_until(&table.changed, seen, wake);
            continue;
        }
        spin_until(earliest.saturating_sub(release_early_ns));
        let due = futex::now_ns() + release_early_ns;
        for slot in table.slots.iter() {
            if slot.state.load(Ordering::Acquire) == ACTIVE
                && slot.next_ns.load(Ordering::Relaxed) <= due
            {
                release(slot);
            }
        }
    }
}
