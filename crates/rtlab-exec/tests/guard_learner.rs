//! The guard learner on the hot path allocates nothing after it is built:
//! this binary counts the allocations of the thread that drives it.

use rtlab_exec::guard::{Learner, Learning};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call goes to the system allocator; the count is a
// thread-local Cell of a const initializer (no allocation of its own).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn the_learner_allocates_nothing_after_it_is_built() {
    let mut learner = Learner::new(Learning::default(), 100_000, 50_000, true);
    let before = allocations();
    // A run's worth of sleeps of every idle length, lateness spread over
    // every histogram bin and beyond, through several windows.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut guards = 0u64;
    for i in 0..200_000u64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let idle = (state % 20_000_000).max(1);
        let late = (state >> 20) % (1 << (i % 40));
        let guard = learner.guard_for(idle + 100_000, idle + 200_000);
        learner.observe_wake(idle, late);
        learner.observe_release(late / 8);
        learner.add_spin(guard / 2);
        guards = guards.wrapping_add(guard + learner.release_early_ns());
    }
    let after = allocations();
    assert!(guards > 0);
    assert_eq!(after - before, 0, "the learner allocated on its hot path");
    // Its report (off the hot path) is what allocates.
    let report = learner.report("executive", Some(0), 0, 1_000_000_000);
    assert!(allocations() > after);
    assert!(report.guards.iter().map(|b| b.observations).sum::<u64>() == 200_000);
}
