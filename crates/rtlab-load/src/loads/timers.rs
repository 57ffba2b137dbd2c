//! The `timers` load: many short periodic timers, waited on with epoll.

use super::super::ctx::Ctx;
use super::started::Started;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;

pub(super) fn start_timers(
    ctx: &Ctx,
    started: &mut Started,
    workers: u32,
    timers: u32,
    interval_ns: u64,
) -> Result<(), String> {
    for w in 0..workers {
        // Made here so that a lack of descriptors fails before "ready".
        let mut fds = Vec::new();
        for k in 0..timers {
            fds.push(arm_timerfd(
                interval_ns,
                interval_ns * u64::from(k + 1) / u64::from(timers),
            )?);
        }
        // SAFETY: plain syscall; checked below.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(format!(
                "timers: epoll_create1: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        for (i, fd) in fds.iter().enumerate() {
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: valid descriptors and event.
            if unsafe {
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    fd.as_raw_fd(),
                    &mut event,
                )
            } != 0
            {
                return Err(format!(
                    "timers: epoll_ctl: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        let c = ctx.clone();
        started.spawn(ctx, format!("timers-{w}"), move || {
            timers_loop(&c, &epoll, &fds)
        })?;
    }
    Ok(())
}

fn arm_timerfd(interval_ns: u64, first_ns: u64) -> Result<OwnedFd, String> {
    // SAFETY: plain syscalls; the fd is checked and owned.
    unsafe {
        let fd = libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        );
        if fd < 0 {
            return Err(format!(
                "timers: timerfd_create: {} (too many timers for the open-files limit?)",
                std::io::Error::last_os_error()
            ));
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let ts = |ns: u64| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts(interval_ns),
            it_value: ts(first_ns.max(1)),
        };
        if libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) != 0 {
            return Err(format!(
                "timers: timerfd_settime: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(fd)
    }
}

/// Waits on many short periodic timers and consumes their expirations.
fn timers_loop(ctx: &Ctx, epoll: &OwnedFd, fds: &[OwnedFd]) {
    let expirations = ctx.counters.get("expirations");
    let wakeups = ctx.counters.get("wakeups");
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().max(1)];
    while !ctx.stopping() {
        // SAFETY: events is a valid buffer of the length given.
        let n = unsafe {
            libc::epoll_wait(
                epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                100,
            )
        };
        if n <= 0 {
            continue;
        }
        wakeups.fetch_add(1, Ordering::Relaxed);
        for event in &events[..n as usize] {
            let fd = &fds[event.u64 as usize];
            let mut count = 0u64;
            // SAFETY: reads 8 bytes into count.
            let r = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    &mut count as *mut u64 as *mut libc::c_void,
                    8,
                )
            };
            if r == 8 {
                expirations.fetch_add(count, Ordering::Relaxed);
            }
        }
    }
}
