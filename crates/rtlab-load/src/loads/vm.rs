//! The `vm` load: allocate, touch, verify and free memory, as `stress --vm`.

use super::super::ctx::Ctx;
use super::started::Started;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub(super) fn start_vm(
    ctx: &Ctx,
    started: &mut Started,
    workers: u32,
    bytes: u64,
) -> Result<(), String> {
    for i in 0..workers {
        let c = ctx.clone();
        started.spawn(ctx, format!("vm-{i}"), move || {
            vm_loop(&c, bytes as usize, u64::from(i))
        })?;
    }
    Ok(())
}

/// Allocate (mmap), touch every page with a pattern, verify it, free
/// (munmap); again and again, as `stress --vm`.
fn vm_loop(ctx: &Ctx, bytes: usize, seed: u64) {
    let page = super::super::sys::page_size();
    let pages = bytes.div_ceil(page);
    let allocations = ctx.counters.get("allocations");
    let touched = ctx.counters.get("bytes_touched");
    let freed = ctx.counters.get("bytes_freed");
    let verify_errors = ctx.counters.get("verify_errors");
    let alloc_failures = ctx.counters.get("alloc_failures");
    let mut round = seed << 32;
    const CHUNK: usize = 256; // pages between counter updates and stop checks
    while !ctx.stopping() {
        // SAFETY: anonymous private mapping; checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            alloc_failures.fetch_add(1, Ordering::Relaxed);
            ctx.nap(Duration::from_millis(100));
            continue;
        }
        allocations.fetch_add(1, Ordering::Relaxed);
        round += 1;
        let base = ptr as *mut u8;
        let mut done = 0;
        while done < pages && !ctx.stopping() {
            let end = (done + CHUNK).min(pages);
            for i in done..end {
                // SAFETY: i < pages, so the word lies inside the mapping.
                unsafe {
                    std::ptr::write_volatile(base.add(i * page) as *mut u64, round ^ i as u64)
                };
            }
            touched.fetch_add(((end - done) * page) as u64, Ordering::Relaxed);
            done = end;
        }
        let mut errors = 0;
        for i in 0..done {
            // SAFETY: as above; only pages written are read.
            let v = unsafe { std::ptr::read_volatile(base.add(i * page) as *const u64) };
            if v != round ^ i as u64 {
                errors += 1;
            }
        }
        verify_errors.fetch_add(errors, Ordering::Relaxed);
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(ptr, pages * page) };
        freed.fetch_add((pages * page) as u64, Ordering::Relaxed);
    }
}
