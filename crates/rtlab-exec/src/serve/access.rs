//! Who is at the other end of a connection, as the kernel says (never as
//! the peer says), and whether it may attach: root always, then the users
//! and groups `--allow-user` and `--allow-group` name (supplementary
//! groups count). The peer's pidfd pins the process: a pid reused after
//! it died is never mistaken for it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// SO_PEERPIDFD (Linux 6.5): a pidfd of the peer as of connect().
const SO_PEERPIDFD: libc::c_int = 77;
/// SO_PEERGROUPS (Linux 4.13): the peer's supplementary groups.
const SO_PEERGROUPS: libc::c_int = 59;

/// The process at the other end of a connection, as of its connect().
#[derive(Debug)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    /// Readable once the process has exited.
    pub pidfd: OwnedFd,
}

fn sockopt<T>(fd: BorrowedFd<'_>, option: libc::c_int, value: &mut T) -> io::Result<usize> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: value is a valid buffer of len bytes for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (value as *mut T).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

impl Peer {
    /// The peer of an accepted connection.
    pub fn of(connection: BorrowedFd<'_>) -> io::Result<Peer> {
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        sockopt(connection, libc::SO_PEERCRED, &mut cred)?;
        let mut raw: libc::c_int = -1;
        sockopt(connection, SO_PEERPIDFD, &mut raw)
            .map_err(|e| io::Error::new(e.kind(), format!("SO_PEERPIDFD (Linux 6.5+): {e}")))?;
        // SAFETY: a new descriptor the kernel made for us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut groups = [0u32; 256];
        let groups = match sockopt(connection, SO_PEERGROUPS, &mut groups) {
            Ok(bytes) => groups[..bytes / 4].to_vec(),
            // More than 256 groups: the primary one only (a refusal at worst).
            Err(_) => Vec::new(),
        };
        Ok(Peer {
            pid: cred.pid,
            uid: cred.uid,
            gid: cred.gid,
            groups,
            pidfd,
        })
    }

    /// Whether the process is still the one that connected and alive.
    pub fn is_alive(&self) -> bool {
        // SAFETY: signal 0 through our pidfd only checks it is alive.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                0,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        rc == 0
    }

    /// Whether thread `tid` belongs to this process (so a client cannot
    /// have another process promoted or demoted): its task directory is
    /// there, then the pidfd says the pid was not reused meanwhile.
    pub fn owns_thread(&self, tid: i32) -> bool {
        tid > 0
            && std::path::Path::new(&format!("/proc/{}/task/{tid}", self.pid)).exists()
            && self.is_alive()
    }
}

/// Who may attach besides root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    pub users: Vec<u32>,
    pub groups: Vec<u32>,
}

impl Access {
    pub fn allows(&self, peer: &Peer) -> bool {
        peer.uid == 0
            || self.users.contains(&peer.uid)
            || self.groups.contains(&peer.gid)
            || peer.groups.iter().any(|g| self.groups.contains(g))
    }

    /// Whether anyone besides root may attach.
    pub fn lets_others_in(&self) -> bool {
        !self.users.is_empty() || !self.groups.is_empty()
    }
}

/// A user given by name or number (`--allow-user`).
pub fn user_id(text: &str) -> Result<u32, String> {
    // SAFETY: getpwnam's entry is read at once, before any other lookup.
    id_of(text, "user", |name| unsafe {
        let entry = libc::getpwnam(name);
        (!entry.is_null()).then(|| (*entry).pw_uid)
    })
}

/// A group given by name or number (`--allow-group`).
pub fn group_id(text: &str) -> Result<u32, String> {
    // SAFETY: getgrnam's entry is read at once, before any other lookup.
    id_of(text, "group", |name| unsafe {
        let entry = libc::getgrnam(name);
        (!entry.is_null()).then(|| (*entry).gr_gid)
    })
}

/// `text` as a number, else looked up by name with `lookup`.
fn id_of(
    text: &str,
    what: &str,
    lookup: impl FnOnce(*const libc::c_char) -> Option<u32>,
) -> Result<u32, String> {
    if let Ok(id) = text.parse::<u32>() {
        return Ok(id);
    }
    let name = CString::new(text).map_err(|_| format!("{text:?}: not a {what} name"))?;
    lookup(name.as_ptr()).ok_or_else(|| format!("no {what} named {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_kernel_names_the_peer_and_its_threads() {
        let (a, _b) = UnixStream::pair().unwrap();
        let peer = Peer::of(a.as_fd()).unwrap();
        assert_eq!(peer.pid, std::process::id() as i32);
        assert!(peer.is_alive());
        assert!(peer.owns_thread(rtlab_core::sched::gettid()));
        assert!(
            !peer.owns_thread(1),
            "pid 1 is not a thread of this process"
        );
        assert!(!peer.owns_thread(-5));
        let root_only = Access::default();
        assert_eq!(root_only.allows(&peer), peer.uid == 0);
        let nobody = Access {
            users: vec![65534],
            groups: vec![],
        };
        assert!(nobody.lets_others_in());
    }

    #[test]
    fn names_resolve() {
        assert_eq!(user_id("root"), Ok(0));
        assert_eq!(user_id("42"), Ok(42));
        assert!(user_id("no-such-user-rtlab")
            .unwrap_err()
            .contains("no user"));
        assert_eq!(group_id("root"), Ok(0));
    }
}
