//! SO_TXTIME: each packet handed to the kernel ahead of its instant with
//! its transmit time, which a qdisc that honours it (`fq`, on
//! CLOCK_MONOTONIC, or `etf`, on CLOCK_TAI) holds until then.
//!
//! rtlab never changes a qdisc (that would be a host change to journal
//! and undo): without one of those on the route's device, `--txtime` is
//! refused with the `tc` command that would add it.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::process::Command;

/// Not in the libc crate (asm-generic/socket.h, linux/errqueue.h).
const SO_TXTIME: libc::c_int = 61;
const SCM_TXTIME: libc::c_int = SO_TXTIME;
pub const SO_EE_ORIGIN_TXTIME: u8 = 6;

/// The qdisc that holds the packets, and the clock it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    pub device: String,
    pub kind: String,
    pub clock: libc::clockid_t,
}

/// The device `ip route get` says packets to `dest` leave by.
fn route_device(dest: SocketAddr) -> Result<String, String> {
    let out = Command::new("ip")
        .args(["-j", "route", "get", &dest.ip().to_string()])
        .output()
        .map_err(|e| format!("cannot run `ip route get` to find the device to {dest}: {e}"))?;
    let routes: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "`ip -j route get {}`: {}",
            dest.ip(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    routes[0]["dev"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no route to {}", dest.ip()))
}

/// The root qdisc of `device`, and of each of its classes (mq).
fn qdisc_kinds(device: &str) -> Result<Vec<String>, String> {
    let out = Command::new("tc")
        .args(["-j", "qdisc", "show", "dev", device])
        .output()
        .map_err(|e| format!("cannot run `tc qdisc show dev {device}`: {e}"))?;
    let list: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|_| format!("`tc -j qdisc show dev {device}`: no JSON"))?;
    Ok(list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|q| q["kind"].as_str().map(str::to_string))
        .collect())
}

/// The qdisc that will hold packets to `dest`, or what to run to have one.
pub fn qdisc_for(dest: SocketAddr) -> Result<Qdisc, String> {
    let device = route_device(dest)?;
    let kinds = qdisc_kinds(&device)?;
    let clock = |kind: &str| match kind {
        "fq" => Some(libc::CLOCK_MONOTONIC),
        "etf" => Some(libc::CLOCK_TAI),
        _ => None,
    };
    match kinds.iter().find_map(|k| clock(k).map(|c| (k, c))) {
        Some((kind, clock)) => Ok(Qdisc {
            device,
            kind: kind.clone(),
            clock,
        }),
        None => Err(format!(
            "packets to {dest} leave by {device}, whose qdisc ({}) does not honour transmit times; rtlab does not change qdiscs: add one with `tc qdisc replace dev {device} root fq` (or an etf qdisc, CLOCK_TAI), or use --txtime off",
            if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") }
        )),
    }
}

/// Transmit times on `fd`, read on `clock`; a packet the qdisc drops (its
/// time passed, with etf) comes back on the error queue.
pub fn enable(fd: RawFd, clock: libc::clockid_t) -> io::Result<()> {
    let value = libc::sock_txtime {
        clockid: clock,
        flags: libc::SOF_TXTIME_REPORT_ERRORS,
    };
    // SAFETY: a sock_txtime, its size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_TXTIME,
            (&value as *const libc::sock_txtime).cast(),
            std::mem::size_of::<libc::sock_txtime>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `payload` on the connected `fd` to leave at `txtime_ns` (the
/// qdisc's clock). Hot path: no allocation (the control message is on the
/// stack), non-blocking.
pub fn send_at(fd: RawFd, payload: &[u8], txtime_ns: u64) -> io::Result<usize> {
    // u64s: aligned for cmsghdr; room for one u64 message.
    let mut control = [0u64; 4];
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    // SAFETY: zeroed msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a size computation.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(8) } as _;
    // SAFETY: the control buffer holds one message of 8 bytes.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = SCM_TXTIME;
        (*cmsg).cmsg_len = libc::CMSG_LEN(8) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u64>(), txtime_ns);
    }
    // SAFETY: msg points at live buffers of the sizes given.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_kernel_takes_a_transmit_time_and_sends_at_once_without_such_qdisc() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let tx = crate::module::connected_udp(rx.local_addr().unwrap()).unwrap();
        enable(tx.as_raw_fd(), libc::CLOCK_MONOTONIC).unwrap();
        // lo's qdisc is noqueue here (no fq, no etf): the time is carried,
        // not waited for; a malformed control message would be EINVAL.
        let soon = rtlab_core::clock::now_ns() + 1_000_000;
        assert_eq!(send_at(tx.as_raw_fd(), b"at a time", soon).unwrap(), 9);
        let mut buf = [0u8; 16];
        assert_eq!(rx.recv(&mut buf).unwrap(), 9);
        assert_eq!(&buf[..9], b"at a time");
    }

    #[test]
    fn a_route_without_a_qdisc_for_transmit_times_says_what_to_run() {
        let Err(e) = qdisc_for("127.0.0.1:9".parse().unwrap()) else {
            // This host's lo has fq or etf: nothing to refuse.
            return;
        };
        if e.starts_with("cannot run") {
            eprintln!("skipped: {e}");
            return;
        }
        assert!(
            e.contains("leave by lo") && e.contains("tc qdisc replace dev lo root fq"),
            "{e}"
        );
    }
}
