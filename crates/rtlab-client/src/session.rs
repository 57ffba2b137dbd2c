//! One attachment of the calling thread: the connection to the executive,
//! the shared page, the statistics and what to put back at the end. The
//! bodies of [`crate::Periodic`]'s methods.

use crate::api::{Error, Params, Stats, DEFAULT_SOCKET, SOCKET_ENV};
use crate::futex::{self, Woken};
use crate::own_sched::Saved;
use crate::protocol::{
    self, AttachRequest, Attached, Empty, Reply, Request, MAX_MESSAGE, MAX_NAME,
};
use crate::shm::{Activation, Mapping, STATE_DROPPED, STATE_RUNNING};
use crate::stats::Accumulator;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// Longest single wait for a release before the client looks whether the
/// executive is still there: an executive that died is noticed within
/// about this (plus one period at most).
pub const WATCH_NS: u64 = 100_000_000;
/// How long the client waits for a reply of the executive.
const REPLY_TIMEOUT_S: libc::time_t = 10;

/// The socket a client connects to: `params.socket`, else `$RTLAB_SOCKET`,
/// else [`DEFAULT_SOCKET`].
pub fn socket_path(params: &Params) -> PathBuf {
    params
        .socket
        .clone()
        .or_else(|| {
            std::env::var_os(SOCKET_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

fn system(call: &str) -> Error {
    Error::System(format!("{call}: {}", std::io::Error::last_os_error()))
}

/// Connects a SOCK_SEQPACKET socket to `path`, with a receive timeout.
pub fn connect(path: &Path) -> Result<OwnedFd, Error> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(Error::Invalid(format!(
            "socket {}: not a usable socket path (1-{} bytes, no NUL)",
            path.display(),
            addr.sun_path.len() - 1
        )));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: plain syscall.
    let raw = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(system("socket"));
    }
    // SAFETY: raw is a new descriptor nobody else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    let timeout = libc::timeval {
        tv_sec: REPLY_TIMEOUT_S,
        tv_usec: 0,
    };
    // SAFETY: addr and timeout are valid for the calls, their sizes given.
    unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        if libc::connect(
            raw,
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        ) != 0
        {
            let e = std::io::Error::last_os_error();
            return Err(Error::Connect(format!("{}: {e}", path.display())));
        }
    }
    Ok(socket)
}

/// Reads one reply (blocking, up to the receive timeout).
pub fn read_reply(socket: &OwnedFd) -> Result<(Reply, Option<OwnedFd>), Error> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let got = protocol::recv(socket.as_fd(), &mut buf, 0).map_err(|e| {
        if matches!(e.raw_os_error(), Some(libc::EAGAIN)) {
            Error::Protocol(format!(
                "no reply from the executive within {REPLY_TIMEOUT_S} s"
            ))
        } else if matches!(e.raw_os_error(), Some(libc::ECONNRESET)) {
            // It closed with our request unread: it died (or was killed)
            // between our connect and its reply.
            Error::ExecutiveGone
        } else {
            Error::System(format!("recvmsg: {e}"))
        }
    })?;
    if got.len == 0 {
        return Err(Error::ExecutiveGone);
    }
    if got.truncated {
        return Err(Error::Protocol(format!(
            "a reply longer than {MAX_MESSAGE} bytes"
        )));
    }
    let reply = serde_json::from_slice(&buf[..got.len])
        .map_err(|e| Error::Protocol(format!("unreadable reply: {e}")))?;
    Ok((reply, got.fd))
}

/// The error a reply of the executive stands for.
fn reply_error(reply: Reply) -> Error {
    match reply {
        Reply::Error(e) => match e.kind.as_str() {
            "invalid" => Error::Invalid(e.message),
            "refused" => Error::Refused(e.message),
            _ => Error::Protocol(e.message),
        },
        Reply::Dropped(why) => Error::Dropped(why.reason),
        Reply::Stopping(_) => Error::ExecutiveGone,
        other => Error::Protocol(format!("unexpected reply {other:?}")),
    }
}

/// Asks the executive at `socket` (None: as [`Params::socket`] None) for
/// its attached processes (`rtlab exec status`).
pub fn executive_status(socket: Option<&Path>) -> Result<protocol::StatusReply, Error> {
    let params = Params {
        socket: socket.map(Path::to_path_buf),
        ..Params::default()
    };
    let connection = connect(&socket_path(&params))?;
    let request = Request::Status(protocol::StatusRequest {
        version: protocol::VERSION,
    });
    protocol::send(connection.as_fd(), &request, None)
        .map_err(|e| Error::Connect(format!("sending the request: {e}")))?;
    match read_reply(&connection)?.0 {
        Reply::Status(status) => Ok(status),
        other => Err(reply_error(other)),
    }
}

/// The calling thread's attachment.
pub struct Session {
    socket: OwnedFd,
    mapping: Mapping,
    saved: Saved,
    stats: Accumulator,
    pub granted: Attached,
    /// The release count last seen.
    seen: u32,
    /// The activation being worked on: (instant, start).
    current: Option<(u64, u64)>,
    /// Set once the attachment has ended (dropped, executive gone).
    ended: Option<Error>,
    /// The scheduling is back to what it was before attaching.
    restored: bool,
}

impl Session {
    pub fn attach(params: &Params) -> Result<Session, Error> {
        if params.period_ns == 0 {
            return Err(Error::Invalid("period_ns: must be above 0".into()));
        }
        if params.name.as_ref().is_some_and(|n| n.len() > MAX_NAME) {
            return Err(Error::Invalid(format!(
                "name: longer than {MAX_NAME} bytes"
            )));
        }
        let socket = connect(&socket_path(params))?;
        let saved = Saved::now().map_err(Error::System)?;
        let request = Request::Attach(AttachRequest {
            version: protocol::VERSION,
            // SAFETY: no arguments.
            tid: unsafe { libc::gettid() },
            period_ns: params.period_ns,
            offset_ns: params.offset_ns,
            deadline_ns: params.deadline_ns,
            budget_ns: params.budget_ns,
            cpu: params.cpu,
            priority: params.priority,
            name: params.name.clone(),
        });
        protocol::send(socket.as_fd(), &request, None)
            .map_err(|e| Error::Connect(format!("sending the request: {e}")))?;
        let (reply, fd) = read_reply(&socket)?;
        let granted = match reply {
            Reply::Attached(granted) => granted,
            other => {
                // A refusal may come after a promotion was undone: put back anyway.
                let _ = saved.restore();
                return Err(reply_error(other));
            }
        };
        let fail = |e: Error| {
            let _ = saved.restore();
            e
        };
        let fd =
            fd.ok_or_else(|| fail(Error::Protocol("the attach reply carried no page".into())))?;
        let mapping = Mapping::open(&fd).map_err(|e| fail(Error::Protocol(e.to_string())))?;
        let seen = mapping.page().server.release_seq.load(Ordering::Acquire);
        Ok(Session {
            socket,
            mapping,
            stats: Accumulator::new(granted.deadline_ns, granted.budget_ns),
            saved,
            granted,
            seen,
            current: None,
            ended: None,
            restored: false,
        })
    }

    /// Ends the activation being worked on: its sample into the ring and
    /// the statistics, then the done word. Allocation-free.
    #[inline]
    fn finish_current(&mut self) {
        if let Some((activation_ns, start_ns)) = self.current.take() {
            let end_ns = futex::now_ns();
            self.stats.record(activation_ns, start_ns, end_ns);
            let page = self.mapping.page();
            page.push(Activation {
                activation_ns,
                start_ns,
                end_ns,
            });
            page.client.done_seq.store(self.seen, Ordering::Release);
        }
    }

    /// Ends the attachment with `error`: the scheduling put back.
    fn end(&mut self, error: Error) -> Error {
        self.restore();
        self.ended = Some(error.clone());
        error
    }

    fn restore(&mut self) {
        if !self.restored {
            // Nothing more can be done if the kernel refuses: the process
            // keeps what it has; lowering one's own policy is always allowed.
            let _ = self.saved.restore();
            self.restored = true;
        }
    }

    /// The executive's state seen through the socket (off the hot path:
    /// only after a wait timed out or the state word changed). None: it
    /// is still there and has nothing to say.
    fn check_socket(&mut self, wait_ms: i32) -> Option<Error> {
        let mut poll = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut poll, 1, wait_ms) };
        if n <= 0 {
            return None;
        }
        if poll.revents & libc::POLLIN != 0 {
            return Some(match read_reply(&self.socket) {
                Ok((reply, _)) => reply_error(reply),
                Err(e) => e,
            });
        }
        Some(Error::ExecutiveGone)
    }

    pub fn wait_next(&mut self) -> Result<u64, Error> {
        if let Some(error) = &self.ended {
            return Err(error.clone());
        }
        self.finish_current();
        loop {
            let page = self.mapping.page();
            let state = page.server.state.load(Ordering::Acquire);
            if state != STATE_RUNNING {
                let why = self
                    .check_socket(1000)
                    .unwrap_or(if state == STATE_DROPPED {
                        Error::Dropped("dropped by the executive".into())
                    } else {
                        Error::ExecutiveGone
                    });
                return Err(self.end(why));
            }
            let seq = page.server.release_seq.load(Ordering::Acquire);
            if seq != self.seen {
                self.seen = seq;
                break;
            }
            if futex::wait_for(&page.server.release_seq, seq, WATCH_NS) == Woken::TimedOut {
                if let Some(why) = self.check_socket(0) {
                    return Err(self.end(why));
                }
            }
        }
        let activation_ns = self
            .mapping
            .page()
            .server
            .activation_ns
            .load(Ordering::Acquire);
        let mut start_ns = futex::now_ns();
        while start_ns < activation_ns {
            std::hint::spin_loop();
            start_ns = futex::now_ns();
        }
        self.current = Some((activation_ns, start_ns));
        Ok(activation_ns)
    }

    pub fn stats(&self) -> Stats {
        let missed = self.mapping.page().server.missed.load(Ordering::Acquire);
        self.stats.stats(missed)
    }

    pub fn detach(&mut self) -> Result<Stats, Error> {
        if self.ended.is_none() {
            self.finish_current();
            let outcome = self.say_detach();
            self.restore();
            if let Err(e) = outcome {
                self.ended = Some(e.clone());
                return Err(e);
            }
            self.ended = Some(Error::NotAttached);
        }
        Ok(self.stats())
    }

    fn say_detach(&mut self) -> Result<(), Error> {
        protocol::send(self.socket.as_fd(), &Request::Detach(Empty {}), None)
            .map_err(|_| Error::ExecutiveGone)?;
        match read_reply(&self.socket)? {
            // A drop or a stop that crossed the request: the run is
            // stored all the same.
            (Reply::Detached(_) | Reply::Dropped(_) | Reply::Stopping(_), _) => Ok(()),
            (other, _) => Err(reply_error(other)),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.ended.is_none() {
            self.finish_current();
            let _ = protocol::send(self.socket.as_fd(), &Request::Detach(Empty {}), None);
        }
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executive_that_dies_before_replying_is_gone() {
        let (client, server) = crate::protocol::tests::pair();
        let request = Request::Detach(Empty {});
        protocol::send(client.as_fd(), &request, None).unwrap();
        // Killed with the request unread: the kernel resets the connection.
        drop(server);
        assert_eq!(read_reply(&client).err(), Some(Error::ExecutiveGone));
    }
}
