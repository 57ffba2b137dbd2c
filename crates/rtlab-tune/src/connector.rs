//! The kernel's process-event connector (NETLINK_CONNECTOR, CN_IDX_PROC):
//! a message for every fork, exec and rename, so `watch` reacts as a
//! matching thread appears instead of scanning /proc in a loop. It needs
//! CAP_NET_ADMIN; `watch` falls back to polling without it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// include/uapi/linux/connector.h and cn_proc.h; fixed by the kernel ABI.
const NETLINK_CONNECTOR: i32 = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_EVENT_FORK: u32 = 0x0000_0001;
const PROC_EVENT_EXEC: u32 = 0x0000_0002;
const PROC_EVENT_COMM: u32 = 0x0000_0200;

const NLMSG_HEADER: usize = 16;
/// struct cn_msg: id (idx, val), seq, ack, len (u16), flags (u16).
const CN_MSG_HEADER: usize = 20;
/// struct proc_event before its union: what, cpu, timestamp_ns.
const PROC_EVENT_HEADER: usize = 16;

/// A thread the kernel says has appeared or changed name or program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadEvent {
    /// The process (thread group).
    pub pid: i32,
    pub tid: i32,
}

pub struct ProcEvents {
    fd: OwnedFd,
    buffer: Vec<u8>,
}

impl ProcEvents {
    /// Subscribes to process events.
    pub fn open() -> io::Result<ProcEvents> {
        // SAFETY: plain socket(2); the descriptor is owned right after.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_CONNECTOR,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor no one else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_nl is plain data; zero is a valid start.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as u16;
        addr.nl_groups = CN_IDX_PROC;
        // nl_pid 0: the kernel assigns a unique port (a process may hold
        // several sockets).
        // SAFETY: addr is a valid sockaddr_nl of the size given.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &addr as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // A bigger receive buffer rides out bursts (a build forking
        // thousands of processes); an overrun still forces a rescan.
        let size: libc::c_int = 4 << 20;
        // SAFETY: a valid int option.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            )
        };
        send_listen(fd.as_raw_fd())?;
        Ok(ProcEvents {
            fd,
            buffer: vec![0; 64 * 1024],
        })
    }

    /// Reads every queued message, adding the threads to look at to `out`.
    /// `Ok(false)` means messages were lost (the socket overran): the
    /// caller must rescan everything.
    pub fn drain(&mut self, out: &mut Vec<ThreadEvent>) -> io::Result<bool> {
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buffer.as_mut_ptr() as *mut libc::c_void,
                    self.buffer.len(),
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) => Ok(true),
                    Some(libc::ENOBUFS) => Ok(false),
                    Some(libc::EINTR) => continue,
                    _ => Err(e),
                };
            }
            parse_datagram(&self.buffer[..n as usize], out);
        }
    }
}

impl AsRawFd for ProcEvents {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn send_listen(fd: RawFd) -> io::Result<()> {
    let total = NLMSG_HEADER + CN_MSG_HEADER + 4;
    let mut msg = Vec::with_capacity(total);
    // nlmsghdr: len, type NLMSG_DONE, flags, seq, pid.
    msg.extend_from_slice(&(total as u32).to_ne_bytes());
    msg.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&std::process::id().to_ne_bytes());
    // cn_msg: idx, val, seq, ack, len, flags.
    msg.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    msg.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&4u16.to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    // SAFETY: msg is valid for its length.
    let n = unsafe { libc::send(fd, msg.as_ptr() as *const libc::c_void, msg.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Parses one datagram (one or more netlink messages).
fn parse_datagram(mut bytes: &[u8], out: &mut Vec<ThreadEvent>) {
    while let Some(len) = u32_at(bytes, 0) {
        let len = len as usize;
        if len < NLMSG_HEADER || len > bytes.len() {
            return;
        }
        parse_event(&bytes[NLMSG_HEADER..len], out);
        // Netlink messages are 4-byte aligned.
        let next = (len + 3) & !3;
        bytes = bytes.get(next..).unwrap_or(&[]);
    }
}

/// Parses a cn_msg carrying a proc_event.
fn parse_event(cn: &[u8], out: &mut Vec<ThreadEvent>) {
    if u32_at(cn, 0) != Some(CN_IDX_PROC) || u32_at(cn, 4) != Some(CN_VAL_PROC) {
        return;
    }
    let event = &cn[CN_MSG_HEADER.min(cn.len())..];
    let Some(what) = u32_at(event, 0) else { return };
    let data = &event[PROC_EVENT_HEADER.min(event.len())..];
    let pair = |at: usize| -> Option<ThreadEvent> {
        // The union's members start (pid, tgid) for exec and comm, and
        // (parent pid, parent tgid, child pid, child tgid) for fork.
        Some(ThreadEvent {
            tid: u32_at(data, at)? as i32,
            pid: u32_at(data, at + 4)? as i32,
        })
    };
    let found = match what {
        PROC_EVENT_FORK => pair(8),
        PROC_EVENT_EXEC | PROC_EVENT_COMM => pair(0),
        _ => None,
    };
    out.extend(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(what: u32, data: &[u32]) -> Vec<u8> {
        let mut event = Vec::new();
        event.extend_from_slice(&what.to_ne_bytes());
        event.extend_from_slice(&0u32.to_ne_bytes());
        event.extend_from_slice(&0u64.to_ne_bytes());
        for d in data {
            event.extend_from_slice(&d.to_ne_bytes());
        }
        let mut cn = Vec::new();
        cn.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
        cn.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
        cn.extend_from_slice(&[0; 8]);
        cn.extend_from_slice(&(event.len() as u16).to_ne_bytes());
        cn.extend_from_slice(&0u16.to_ne_bytes());
        cn.extend_from_slice(&event);
        let len = NLMSG_HEADER + cn.len();
        let mut msg = Vec::new();
        msg.extend_from_slice(&(len as u32).to_ne_bytes());
        msg.extend_from_slice(&[0; 12]);
        msg.extend_from_slice(&cn);
        while msg.len() % 4 != 0 {
            msg.push(0);
        }
        msg
    }

    #[test]
    fn fork_exec_and_comm_events_name_the_thread() {
        let mut datagram = message(PROC_EVENT_FORK, &[100, 100, 205, 200]);
        datagram.extend(message(PROC_EVENT_EXEC, &[300, 300]));
        datagram.extend(message(PROC_EVENT_COMM, &[401, 400, 0x6b726f77, 0, 0, 0]));
        datagram.extend(message(0x8000_0000, &[500, 500, 0, 0, 1, 1])); // exit
        let mut out = Vec::new();
        parse_datagram(&datagram, &mut out);
        assert_eq!(
            out,
            vec![
                ThreadEvent { pid: 200, tid: 205 },
                ThreadEvent { pid: 300, tid: 300 },
                ThreadEvent { pid: 400, tid: 401 },
            ]
        );
    }

    #[test]
    fn truncated_and_foreign_messages_are_ignored() {
        let full = message(PROC_EVENT_EXEC, &[300, 300]);
        for cut in 0..full.len() {
            let mut out = Vec::new();
            parse_datagram(&full[..cut], &mut out);
            assert!(out.is_empty(), "cut at {cut}");
        }
        let mut foreign = message(PROC_EVENT_EXEC, &[300, 300]);
        foreign[NLMSG_HEADER] = 9; // another connector index
        let mut out = Vec::new();
        parse_datagram(&foreign, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_fork_is_seen_live_where_permitted() {
        let mut events = match ProcEvents::open() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("skipped: the process-event connector is not available here: {e}");
                return;
            }
        };
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let mut child = child;
        child.wait().unwrap();
        let mut seen = Vec::new();
        for _ in 0..200 {
            events.drain(&mut seen).unwrap();
            if seen.iter().any(|e| e.pid == pid) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no event for child {pid} in {seen:?}");
    }
}
