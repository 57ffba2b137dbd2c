//! The measuring thread's loop (hot path, ARCHITECTURE.md): wait for a
//! batch of datagrams, and for each push one fixed-size [`Arrival`] into
//! a preallocated ring; a full ring is counted, never waited on. No
//! allocation, lock, formatting or logging until the loop ends; the
//! system calls are the receive itself and the clock.
//!
//! The payload's digest is computed here (the payload is gone after the
//! next batch, and keeping payloads would make memory a peer's choice):
//! it costs this thread time between batches, never the arrival stamps,
//! which the kernel took before.

use super::socket::RxSocket;
use crate::traffic::format::{self, Stamp};
use rtlab_core::clock;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One datagram as it crosses the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The kernel's receive stamp (CLOCK_REALTIME ns), or the user-space
    /// CLOCK_REALTIME after the receive when the kernel gave none.
    pub stamp_ns: u64,
    pub kernel_stamped: bool,
    /// ns from the run's start (CLOCK_MONOTONIC), for the series' time axis.
    pub at_ns: u64,
    pub size: u32,
    pub digest: u64,
    pub src: Option<SocketAddr>,
    pub stamp: Option<Stamp>,
}

/// When the loop stops by itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// CLOCK_MONOTONIC instant.
    pub end_ns: Option<u64>,
    pub count: Option<u64>,
    pub idle_ns: Option<u64>,
}

/// How the loop ended.
#[derive(Debug, Default)]
pub struct End {
    /// CLOCK_MONOTONIC.
    pub end_ns: u64,
    pub received: u64,
    pub truncated: u64,
    /// The kernel's count of datagrams dropped for a full buffer, when it
    /// gave one.
    pub kernel_dropped: Option<u32>,
    /// Stopped by the stop flag (a signal), not by a limit.
    pub stopped: bool,
    /// Why the socket failed.
    pub error: Option<String>,
}

/// CLOCK_REALTIME now, ns: the kernel stamps' clock.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Receives until a limit or `stop`; `start_ns` is the run's start
/// (CLOCK_MONOTONIC).
pub fn receive_loop(
    socket: &mut RxSocket,
    ring: &mut rtrb::Producer<Arrival>,
    ring_dropped: &AtomicU64,
    limits: Limits,
    stop: &AtomicBool,
    start_ns: u64,
) -> End {
    // REALTIME − MONOTONIC, to place kernel stamps on the run's time axis.
    let realtime_ahead = realtime_ns().wrapping_sub(clock::now_ns());
    let mut end = End::default();
    let mut last_batch_ns = None;
    'receive: loop {
        if stop.load(Ordering::Relaxed) {
            end.stopped = true;
            break;
        }
        let now = clock::now_ns();
        if limits.end_ns.is_some_and(|end_ns| now >= end_ns) {
            break;
        }
        if let (Some(idle), Some(last)) = (limits.idle_ns, last_batch_ns) {
            if now.saturating_sub(last) >= idle {
                break;
            }
        }
        let n = match socket.receive() {
            Ok(n) => n,
            Err(e) => {
                end.error = Some(format!("receiving: {e}"));
                break;
            }
        };
        if n == 0 {
            continue;
        }
        let after_ns = clock::now_ns();
        last_batch_ns = Some(after_ns);
        let user_stamp_ns = after_ns.wrapping_add(realtime_ahead);
        for i in 0..n {
            if limits.count.is_some_and(|count| end.received >= count) {
                break 'receive;
            }
            let datagram = socket.datagram(i);
            end.received += 1;
            end.truncated += u64::from(datagram.truncated);
            if datagram.dropped.is_some() {
                end.kernel_dropped = datagram.dropped;
            }
            let stamp_ns = datagram.kernel_ns.unwrap_or(user_stamp_ns);
            let arrival = Arrival {
                stamp_ns,
                kernel_stamped: datagram.kernel_ns.is_some(),
                at_ns: stamp_ns
                    .wrapping_sub(realtime_ahead)
                    .saturating_sub(start_ns)
                    .min(after_ns.saturating_sub(start_ns)),
                size: datagram.payload.len() as u32,
                digest: format::digest(datagram.payload),
                src: datagram.src,
                stamp: Stamp::read(datagram.payload),
            };
            if ring.push(arrival).is_err() {
                ring_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        if limits.count.is_some_and(|count| end.received >= count) {
            break;
        }
    }
    end.end_ns = clock::now_ns();
    // Drops after the last datagram received rode on none.
    end.kernel_dropped = end.kernel_dropped.max(socket.drops());
    end
}
