//! The receiving socket: bound UDP, every datagram stamped by the kernel
//! as it arrives, read in batches (recvmmsg) into buffers allocated once.
//!
//! SO_TIMESTAMPNS rather than SO_TIMESTAMPING with RX_SOFTWARE: both give
//! the same software receive stamp (taken when the packet enters the
//! stack, before any queueing to this thread), SO_TIMESTAMPNS in one
//! plain timespec on every kernel and without the flags' variants. The
//! stamp is CLOCK_REALTIME: only differences between stamps are used, so
//! its epoch does not matter (a clock step during a recording does; the
//! offsets written never go backwards, see `tally`).
//!
//! SO_RXQ_OVFL adds to each datagram the kernel's count of datagrams the
//! socket dropped because its buffer was full: the one loss a receiver
//! cannot see otherwise, and must not hide. The count rides on the next
//! datagram queued after a drop, so the end of a recording asks the
//! socket itself (SO_MEMINFO) for drops no later datagram reported.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Datagrams read per system call.
pub const BATCH: usize = 32;
/// Room for any UDP payload (65507 over IPv4, 65527 over IPv6).
const BUFFER_BYTES: usize = 65_536;
/// Room for the timestamp's and the drop count's control messages.
const CONTROL_BYTES: usize = 128;
/// How long one wait for datagrams lasts: a stop, the duration's end or
/// the idle limit are seen within this.
pub const RECEIVE_TIMEOUT_NS: u64 = 20_000_000;

/// SO_MEMINFO (asm-generic's value, that of x86, arm and riscv; libc does
/// not name it) and the index of the drop count in what it returns.
const SO_MEMINFO: libc::c_int = 55;
const MEMINFO_DROPS: usize = libc::SK_MEMINFO_DROPS as usize;

/// One datagram of the last batch.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    pub payload: &'a [u8],
    /// The payload did not fit the buffer (cannot happen for UDP; said
    /// rather than assumed).
    pub truncated: bool,
    pub src: Option<SocketAddr>,
    /// The kernel's receive stamp, CLOCK_REALTIME ns.
    pub kernel_ns: Option<u64>,
    /// The kernel's count of datagrams dropped for a full buffer so far.
    pub dropped: Option<u32>,
}

/// A bound socket and its receive buffers.
pub struct RxSocket {
    socket: UdpSocket,
    local: SocketAddr,
    payloads: Vec<u8>,
    /// u64 words: control messages need cmsghdr alignment.
    controls: Vec<u64>,
    names: Vec<libc::sockaddr_storage>,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    /// Receive buffer the kernel granted, bytes.
    pub buffer_bytes: usize,
}

// SAFETY: the raw pointers in `iovecs` and `headers` point into this
// struct's own heap buffers, which move with it and are never shared.
unsafe impl Send for RxSocket {}

fn set_int(fd: i32, level: i32, option: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt with a valid int option value.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_int(fd: i32, option: i32) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into a valid int.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

impl RxSocket {
    /// Binds `listen` with the kernel's receive stamps, the drop count, a
    /// large buffer and a receive timeout.
    pub fn bind(listen: SocketAddr) -> io::Result<RxSocket> {
        let socket = UdpSocket::bind(listen)?;
        let local = socket.local_addr()?;
        let fd = socket.as_raw_fd();
        set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(|e| io::Error::new(e.kind(), format!("SO_TIMESTAMPNS: {e}")))?;
        // Older kernels lack it: the drops are then not counted (said in
        // the report's warnings by their absence of a count).
        let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1);
        rtlab_probe::net::client::set_receive_buffer(fd);
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: (RECEIVE_TIMEOUT_NS / 1_000) as libc::suseconds_t,
        };
        // SAFETY: setsockopt with a valid timeval.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("SO_RCVTIMEO: {e}")));
        }
        let buffer_bytes = get_int(fd, libc::SO_RCVBUF).unwrap_or(0).max(0) as usize;
        let mut rx = RxSocket {
            socket,
            local,
            payloads: vec![0u8; BATCH * BUFFER_BYTES],
            controls: vec![0u64; BATCH * CONTROL_BYTES / 8],
            // SAFETY: sockaddr_storage is plain data; all zeros is valid.
            names: vec![unsafe { zeroed() }; BATCH],
            iovecs: Vec::with_capacity(BATCH),
            headers: Vec::with_capacity(BATCH),
            buffer_bytes,
        };
        for i in 0..BATCH {
            rx.iovecs.push(libc::iovec {
                iov_base: rx.payloads[i * BUFFER_BYTES..].as_mut_ptr().cast(),
                iov_len: BUFFER_BYTES,
            });
        }
        for i in 0..BATCH {
            // SAFETY: mmsghdr is plain data; all zeros is valid.
            let mut header: libc::mmsghdr = unsafe { zeroed() };
            header.msg_hdr.msg_name = (&mut rx.names[i] as *mut libc::sockaddr_storage).cast();
            header.msg_hdr.msg_iov = &mut rx.iovecs[i];
            header.msg_hdr.msg_iovlen = 1;
            header.msg_hdr.msg_control = rx.controls[i * CONTROL_BYTES / 8..].as_mut_ptr().cast();
            rx.headers.push(header);
        }
        Ok(rx)
    }

    /// Where the socket is bound (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The kernel's count of datagrams the socket dropped so far (None:
    /// the kernel does not say).
    pub fn drops(&self) -> Option<u32> {
        let mut info = [0u32; 16];
        let mut len = size_of::<[u32; 16]>() as libc::socklen_t;
        // SAFETY: getsockopt into a buffer of `len` bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_MEMINFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        (rc == 0 && len as usize > MEMINFO_DROPS * 4).then_some(info[MEMINFO_DROPS])
    }

    /// Waits up to [`RECEIVE_TIMEOUT_NS`] for datagrams: how many the
    /// batch holds, 0 when none came (or a signal interrupted the wait).
    /// No allocation: the hot path calls it.
    pub fn receive(&mut self) -> io::Result<usize> {
        for header in &mut self.headers {
            header.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            header.msg_hdr.msg_controllen = CONTROL_BYTES as _;
            header.msg_hdr.msg_flags = 0;
            header.msg_len = 0;
        }
        // SAFETY: every header points into buffers of this struct, sized
        // as their lengths say; MSG_WAITFORONE: block for the first only.
        let n = unsafe {
            libc::recvmmsg(
                self.socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => Ok(0),
            _ => Err(e),
        }
    }

    /// The `i`-th datagram of the last batch (`i` < what
    /// [`receive`](Self::receive) returned).
    pub fn datagram(&self, i: usize) -> Datagram<'_> {
        let header = &self.headers[i];
        let len = (header.msg_len as usize).min(BUFFER_BYTES);
        let start = i * BUFFER_BYTES;
        let mut datagram = Datagram {
            payload: &self.payloads[start..start + len],
            truncated: header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            src: socket_addr(&self.names[i], header.msg_hdr.msg_namelen),
            kernel_ns: None,
            dropped: None,
        };
        // SAFETY: the kernel filled msg_control up to msg_controllen with
        // well-formed control messages; the CMSG macros stay inside it.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&header.msg_hdr);
            while !cmsg.is_null() {
                let data = libc::CMSG_DATA(cmsg);
                match ((*cmsg).cmsg_level, (*cmsg).cmsg_type) {
                    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                        let ts = std::ptr::read_unaligned(data.cast::<libc::timespec>());
                        datagram.kernel_ns = Some(
                            (ts.tv_sec as u64)
                                .saturating_mul(1_000_000_000)
                                .saturating_add(ts.tv_nsec as u64),
                        );
                    }
                    (libc::SOL_SOCKET, libc::SO_RXQ_OVFL) => {
                        datagram.dropped = Some(std::ptr::read_unaligned(data.cast::<u32>()));
                    }
                    _ => {}
                }
                cmsg = libc::CMSG_NXTHDR(&header.msg_hdr, cmsg);
            }
        }
        datagram
    }
}

/// The source address the kernel wrote, if it is IPv4 or IPv6.
fn socket_addr(name: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match i32::from(name.ss_family) {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a =
                unsafe { &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                u32::from_be(a.sin_addr.s_addr).into(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a =
                unsafe { &*(name as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_come_with_their_source_size_and_kernel_stamp() {
        let mut rx = RxSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"hello", rx.local_addr()).unwrap();
        tx.send_to(&[7u8; 1400], rx.local_addr()).unwrap();
        let mut got = Vec::new();
        for _ in 0..100 {
            let n = rx.receive().unwrap();
            for i in 0..n {
                let d = rx.datagram(i);
                got.push((d.payload.to_vec(), d.src, d.kernel_ns, d.truncated));
            }
            if got.len() == 2 {
                break;
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, b"hello");
        assert_eq!(got[1].0.len(), 1400);
        assert_eq!(got[0].1, Some(tx.local_addr().unwrap()));
        assert!(got.iter().all(|g| g.2.is_some() && !g.3));
        assert!(got[1].2 >= got[0].2, "kernel stamps in arrival order");
    }

    #[test]
    fn an_empty_wait_ends_with_no_datagrams() {
        let mut rx = RxSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_eq!(rx.receive().unwrap(), 0);
    }

    #[test]
    fn the_kernel_says_how_many_datagrams_a_full_buffer_dropped() {
        let mut rx = RxSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        // The smallest buffer the kernel allows holds a few datagrams.
        set_int(rx.socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 1).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..200 {
            tx.send_to(&[1u8; 1000], rx.local_addr()).unwrap();
        }
        let n = rx.receive().unwrap();
        assert!(n > 0 && n < 200, "{n}");
        let lost = 200 - n as u32;
        assert_eq!(rx.drops(), Some(lost));
        // The datagrams queued before the drops carry no count; the next
        // one queued carries it.
        assert!((0..n).all(|i| rx.datagram(i).dropped.is_none()));
        tx.send_to(b"after", rx.local_addr()).unwrap();
        assert_eq!(rx.receive().unwrap(), 1);
        assert_eq!(rx.datagram(0).dropped, Some(lost));
    }

    #[test]
    fn ipv6_sources_are_read() {
        let Ok(mut rx) = RxSocket::bind("[::1]:0".parse().unwrap()) else {
            eprintln!("skipped: no IPv6 loopback");
            return;
        };
        let tx = UdpSocket::bind("[::1]:0").unwrap();
        tx.send_to(b"six", rx.local_addr()).unwrap();
        assert_eq!(rx.receive().unwrap(), 1);
        assert_eq!(rx.datagram(0).src, Some(tx.local_addr().unwrap()));
    }
}
