//! The kernel's software transmit timestamps (SO_TIMESTAMPING): asked for
//! on each flow's socket, read back from its error queue off the hot path.
//!
//! With `SOF_TIMESTAMPING_OPT_ID` each stamp carries the socket's own
//! count of the datagrams sent before it (`ee_data`), which the sender
//! counts too: that is how a stamp finds its packet. `OPT_TSONLY` keeps
//! the datagram's bytes out of the error queue. The stamp is
//! CLOCK_REALTIME; [`ClockOffset`] brings it to CLOCK_MONOTONIC, the
//! dispatcher's clock.

use rtlab_core::clock;
use std::io;
use std::os::fd::RawFd;

/// The flags a replay's sockets get.
const TX_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_TX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_OPT_ID
    | libc::SOF_TIMESTAMPING_OPT_TSONLY;

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option, its size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks the kernel for a software transmit stamp of every datagram sent
/// on `fd` from now on (the OPT_ID count starts at 0 here).
pub fn enable(fd: RawFd) -> io::Result<()> {
    set_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        TX_FLAGS as libc::c_int,
    )
}

/// A send buffer of `bytes` (SO_SNDBUFFORCE as root, past net.core.wmem_max;
/// else SO_SNDBUF, which the kernel caps there): a burst the plan asks
/// for must not find it full.
pub fn set_send_buffer(fd: RawFd, bytes: usize) -> io::Result<()> {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, bytes)
        .or_else(|_| set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, bytes))
}

/// One transmit stamp from an error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxStamp {
    /// The socket's count of datagrams sent before this one.
    pub id: u32,
    /// CLOCK_REALTIME, ns.
    pub realtime_ns: u64,
}

/// What the error queue says of a sent packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    Stamp(TxStamp),
    /// The qdisc dropped a packet sent with SO_TXTIME (its time passed).
    TxtimeDropped,
}

/// The next transmit stamp or SO_TXTIME drop queued on `fd`: Ok(None)
/// when the queue is empty; other queued errors are passed over.
pub fn next(fd: RawFd) -> io::Result<Option<Queued>> {
    loop {
        // u64s: the control buffer must be aligned for cmsghdr.
        let mut control = [0u64; 64];
        let mut data = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        // SAFETY: zeroed msghdr is valid; its pointers are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at live buffers of the sizes given.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(None),
                Some(libc::EINTR) => continue,
                _ => Err(e),
            };
        }
        if let Some(stamp) = parse(&msg) {
            return Ok(Some(stamp));
        }
    }
}

/// The stamp or drop in a message of the error queue, if it holds one.
fn parse(msg: &libc::msghdr) -> Option<Queued> {
    let mut realtime_ns = None;
    let mut id = None;
    // SAFETY: walking the control messages the kernel wrote into msg.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            let body = libc::CMSG_DATA(cmsg);
            if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPING {
                // Three timespecs: software, (deprecated), hardware.
                let ts: libc::timespec = std::ptr::read_unaligned(body.cast());
                if ts.tv_sec != 0 || ts.tv_nsec != 0 {
                    realtime_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
            } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
            {
                let err: libc::sock_extended_err = std::ptr::read_unaligned(body.cast());
                if err.ee_origin == super::txtime::SO_EE_ORIGIN_TXTIME {
                    return Some(Queued::TxtimeDropped);
                }
                if err.ee_errno == libc::ENOMSG as u32
                    && err.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                {
                    id = Some(err.ee_data);
                }
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    Some(Queued::Stamp(TxStamp {
        id: id?,
        realtime_ns: realtime_ns?,
    }))
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, measured by reading the real-time
/// clock between two monotonic reads (the narrowest bracket of a few
/// tries): its error is half that bracket, tens of ns. Both clocks run at
/// the same (NTP-adjusted) rate; a step of the real-time clock
/// (clock_settime, an NTP step) changes the offset, so the collector
/// measures it again every second.
#[derive(Debug, Clone, Copy)]
pub struct ClockOffset {
    offset_ns: i128,
    measured_at: u64,
}

fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How often the offset is measured again.
const REMEASURE_NS: u64 = 1_000_000_000;

impl ClockOffset {
    /// CLOCK_REALTIME's offset (the transmit stamps' clock).
    pub fn measure() -> ClockOffset {
        ClockOffset::of(libc::CLOCK_REALTIME)
    }

    /// `other` − CLOCK_MONOTONIC (CLOCK_TAI for an etf qdisc).
    pub fn of(other: libc::clockid_t) -> ClockOffset {
        let mut best = (u64::MAX, 0i128);
        for _ in 0..7 {
            let before = clock::now_ns();
            let real = read_clock(other);
            let after = clock::now_ns();
            let width = after - before;
            if width < best.0 {
                let middle = before + width / 2;
                best = (width, i128::from(real) - i128::from(middle));
            }
        }
        ClockOffset {
            offset_ns: best.1,
            measured_at: clock::now_ns(),
        }
    }

    /// Measures again if the last measurement is a second old.
    pub fn refresh(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.measured_at) >= REMEASURE_NS {
            *self = ClockOffset::measure();
        }
    }

    /// An instant of the other clock on CLOCK_MONOTONIC.
    pub fn monotonic(&self, realtime_ns: u64) -> u64 {
        (i128::from(realtime_ns) - self.offset_ns).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The ns to add to a CLOCK_MONOTONIC instant to have it on the other
    /// clock.
    pub fn ahead_ns(&self) -> i64 {
        self.offset_ns
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_brings_the_real_time_clock_to_the_monotonic_one() {
        let offset = ClockOffset::measure();
        let mono = clock::now_ns();
        let back = offset.monotonic(read_clock(libc::CLOCK_REALTIME));
        // Only that it converts (no timing asserted): the converted read
        // comes after the monotonic one, within a generous minute.
        assert!(back + 1_000_000 >= mono && back < mono + 60_000_000_000);
    }

    #[test]
    fn a_send_on_loopback_is_stamped_with_its_count() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        use std::os::fd::AsRawFd;
        enable(tx.as_raw_fd()).unwrap();
        for _ in 0..3 {
            tx.send(b"hello").unwrap();
        }
        let mut ids = Vec::new();
        let until = clock::now_ns() + 2_000_000_000;
        while ids.len() < 3 && clock::now_ns() < until {
            match next(tx.as_raw_fd()).unwrap() {
                Some(Queued::Stamp(s)) => ids.push(s.id),
                Some(Queued::TxtimeDropped) => panic!("no SO_TXTIME here"),
                None => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        if ids.is_empty() {
            eprintln!("skipped: this kernel gave no software transmit stamp on lo");
            return;
        }
        assert_eq!(ids, vec![0, 1, 2]);
    }
}
