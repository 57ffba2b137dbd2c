//! The wire protocol between a client and `rtlab exec serve`: one JSON
//! object per message over a SOCK_SEQPACKET Unix socket (message
//! boundaries kept by the kernel), at most [`MAX_MESSAGE`] bytes, every
//! request carrying [`VERSION`]. The attach reply carries the shared
//! page's memfd (SCM_RIGHTS). Unknown fields are refused on both sides.
//!
//! ```text
//! client → {"op":"attach","version":1,"tid":..,"period_ns":..,...}
//! server → {"op":"attached",...} + the page's fd | {"op":"error",...}
//! client → {"op":"detach"}          server → {"op":"detached"}
//! server → {"op":"dropped","reason":..} | {"op":"stopping"}  (unsolicited)
//! client → {"op":"status","version":1}  server → {"op":"status","tasks":[..]}
//! ```

use serde::{Deserialize, Serialize};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The protocol's version; a request of another version is refused.
pub const VERSION: u32 = 1;
/// Largest message either side sends or accepts, bytes: a status reply
/// of the most processes an executive takes (`exec serve --max-tasks`,
/// at most 80, each up to ~670 bytes) fits (tested in rtlab-exec).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Longest task name, bytes.
pub const MAX_NAME: usize = 64;

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Attach(AttachRequest),
    Detach(Empty),
    Status(StatusRequest),
}

/// A request or reply without fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Registers the calling thread (see [`crate::Params`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachRequest {
    pub version: u32,
    /// The thread to release: gettid() of the attaching thread, which the
    /// server checks belongs to the connecting process.
    pub tid: i32,
    pub period_ns: u64,
    #[serde(default)]
    pub offset_ns: u64,
    #[serde(default)]
    pub deadline_ns: Option<u64>,
    #[serde(default)]
    pub budget_ns: Option<u64>,
    #[serde(default)]
    pub cpu: Option<u32>,
    #[serde(default)]
    pub priority: Option<u32>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusRequest {
    pub version: u32,
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Reply {
    Attached(Attached),
    Detached(Empty),
    Dropped(Reason),
    Stopping(Empty),
    Status(StatusReply),
    Error(ErrorReply),
}

/// The registration as granted; the page's fd comes with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attached {
    pub version: u32,
    pub name: String,
    pub period_ns: u64,
    pub offset_ns: u64,
    pub deadline_ns: u64,
    pub budget_ns: Option<u64>,
    pub cpu: u32,
    pub priority: u32,
    /// The first activation instant (CLOCK_MONOTONIC, ns).
    pub first_activation_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reason {
    pub reason: String,
}

/// Why a request failed: `kind` is `invalid` (a parameter, named in the
/// message), `refused` (permission, limits, task set) or `protocol`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorReply {
    pub kind: String,
    pub message: String,
}

/// The registered processes (`rtlab exec status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusReply {
    /// The executive's pid.
    pub pid: u32,
    pub socket: String,
    pub cpus: Vec<usize>,
    pub tasks: Vec<TaskStatus>,
}

/// One registered process as the server counts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStatus {
    pub pid: i32,
    pub tid: i32,
    pub uid: u32,
    pub name: String,
    pub cpu: u32,
    pub priority: u32,
    pub period_ns: u64,
    /// As the server counts them (from the samples it drained).
    pub stats: crate::api::Stats,
}

/// Sends `message` as one datagram, with `fd` attached when given.
pub fn send(socket: BorrowedFd<'_>, message: &impl Serialize, fd: Option<RawFd>) -> io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    if bytes.len() > MAX_MESSAGE {
        return Err(io::Error::other(format!(
            "a message of {} bytes is larger than {MAX_MESSAGE}",
            bytes.len()
        )));
    }
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // Room for one descriptor, aligned as a cmsghdr.
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_* on a control buffer large enough for one int.
        unsafe {
            let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: msg is fully set up; MSG_NOSIGNAL: a gone peer is an error, not SIGPIPE.
    let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One received datagram.
pub struct Received {
    pub len: usize,
    /// A descriptor that came with it (closed when dropped).
    pub fd: Option<OwnedFd>,
    /// The datagram was longer than the buffer (its rest is lost).
    pub truncated: bool,
}

/// Receives one datagram into `buf` (blocking unless `flags` says
/// MSG_DONTWAIT). Every descriptor that came with it is taken (close on
/// exec); beyond the first they are closed at once. `len` 0 with no error
/// is the peer's hang-up.
pub fn recv(socket: BorrowedFd<'_>, buf: &mut [u8], flags: i32) -> io::Result<Received> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg is fully set up.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, flags | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let raw = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Received {
        len: n as usize,
        fd: fds.into_iter().next(),
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A connected SOCK_SEQPACKET pair (the other tests of the crate use it).
    pub(crate) fn pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid out-array of two ints.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: two new descriptors nobody else owns.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn a_request_crosses_with_a_descriptor() {
        let (a, b) = pair();
        let request = Request::Detach(Empty {});
        send(a.as_fd(), &request, Some(a.as_raw_fd())).unwrap();
        let mut buf = [0u8; MAX_MESSAGE];
        let got = recv(b.as_fd(), &mut buf, 0).unwrap();
        assert!(got.fd.is_some() && !got.truncated);
        let back: Request = serde_json::from_slice(&buf[..got.len]).unwrap();
        assert_eq!(back, request);
    }

    #[test]
    fn unknown_fields_and_ops_are_refused() {
        let ok = r#"{"op":"attach","version":1,"tid":5,"period_ns":1000000}"#;
        assert!(matches!(
            serde_json::from_str::<Request>(ok),
            Ok(Request::Attach(_))
        ));
        for bad in [
            r#"{"op":"attach","version":1,"tid":5,"period_ns":1000000,"evil":1}"#,
            r#"{"op":"promote","version":1}"#,
            r#"{"op":"detach","x":1}"#,
            r#"{"version":1}"#,
            "[1,2",
        ] {
            assert!(serde_json::from_str::<Request>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_message_larger_than_the_buffer_is_seen_truncated() {
        let (a, b) = pair();
        let big = vec![b'x'; 4096];
        // SAFETY: a valid buffer on our socket.
        unsafe { libc::send(a.as_raw_fd(), big.as_ptr().cast(), big.len(), 0) };
        let mut buf = [0u8; 64];
        assert!(recv(b.as_fd(), &mut buf, 0).unwrap().truncated);
    }
}
