//! A global allocator that refuses absurd allocations while a fuzz input
//! runs: a parser that sizes a buffer by a number in its input (a
//! histogram limit, a count) must not ask for gigabytes. A refused
//! allocation is recorded for the harness; an infallible one then aborts
//! the process with Rust's "memory allocation of N bytes failed", after
//! the harness has saved the input in flight (see [`crate::run`]).
//! Refusing, rather than passing it on, keeps a shared machine from
//! being swapped to death by a fuzz run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

/// The largest single allocation an input may cause: 256 MiB, 1000 times
/// the largest fuzz input.
pub const ALLOC_LIMIT: usize = 256 << 20;

thread_local! {
    // Const-initialized, without destructors: usable from the allocator.
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static REFUSED: Cell<usize> = const { Cell::new(0) };
}

/// Install in a test binary: `#[global_allocator] static A: AllocGuard = AllocGuard;`.
pub struct AllocGuard;

impl AllocGuard {
    fn refuse(size: usize) -> bool {
        if size <= ALLOC_LIMIT || !ARMED.try_with(Cell::get).unwrap_or(false) {
            return false;
        }
        let _ = REFUSED.try_with(|r| r.set(r.get().max(size)));
        // No formatting (it could allocate): the size in decimal by hand.
        let mut digits = [0u8; 20];
        let mut n = size;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut err = std::io::stderr();
        let _ = err.write_all(b"rtlab-fuzz: refused an allocation of ");
        let _ = err.write_all(&digits[i..]);
        let _ = err.write_all(
            b" bytes asked for while running a fuzz input (its file: the 'in flight' line above)\n",
        );
        true
    }
}

// SAFETY: every call is passed to System unchanged, or refused with null
// as the GlobalAlloc contract allows.
unsafe impl GlobalAlloc for AllocGuard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Self::refuse(layout.size()) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Self::refuse(layout.size()) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if Self::refuse(new_size) {
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Arms the limit on this thread (while an input runs).
pub(crate) fn arm(on: bool) {
    ARMED.with(|a| a.set(on));
}

/// The largest allocation refused on this thread since the last call.
pub(crate) fn take_refused() -> Option<usize> {
    let size = REFUSED.with(|r| r.replace(0));
    (size > 0).then_some(size)
}
