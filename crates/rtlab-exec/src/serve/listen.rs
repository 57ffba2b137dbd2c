//! The executive's listening socket: where it may live, a stale one
//! replaced and a live one refused, bound and journaled at once.
//!
//! The directory must not let another user swap the socket: it must be
//! owned by root (or us) and not writable by group or others, unless it
//! is sticky (`/tmp`), where nobody else can remove or rename our file;
//! there a file already at the path that is not ours is refused. The
//! default directory, `/run/rtlab`, is created root-owned 0755 (0755 too
//! when it exists and other users may attach, so they can reach the
//! socket; the journals in it are 0600).

use anyhow::{bail, Context};
use rtlab_core::journal::Journal;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;

fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

fn address(path: &Path) -> anyhow::Result<libc::sockaddr_un> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        bail!(
            "{}: a socket path has 1-{} bytes",
            path.display(),
            addr.sun_path.len() - 1
        );
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    Ok(addr)
}

fn seqpacket(flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall.
    let raw = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | flags,
            0,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Whether an executive answers at `path` (a connect succeeds).
pub fn is_live(path: &Path) -> bool {
    let (Ok(addr), Ok(socket)) = (address(path), seqpacket(0)) else {
        return false;
    };
    // SAFETY: addr is valid for the call, its size given.
    unsafe {
        libc::connect(
            socket.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        ) == 0
    }
}

/// Checks (and for the default place, creates) the socket's directory.
fn check_directory(dir: &Path, others_may_attach: bool) -> anyhow::Result<()> {
    if dir == Path::new("/run/rtlab") && !dir.exists() {
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    // Judged and opened to others through one descriptor (never a
    // symlink): a chmod by path could follow a link swapped in meanwhile.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir);
    let handle = match opened {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            bail!("{} is not a directory", dir.display())
        }
        other => other.with_context(|| format!("the socket's directory {}", dir.display()))?,
    };
    let meta = handle
        .metadata()
        .with_context(|| format!("the socket's directory {}", dir.display()))?;
    // The owner of a sticky directory may still remove anyone's file in
    // it: sticky helps only in a directory of root's (or ours).
    let foreign_owner = meta.uid() != 0 && meta.uid() != euid();
    let sticky = meta.mode() & 0o1000 != 0 && !foreign_owner;
    let foreign_writable = meta.mode() & 0o022 != 0 || foreign_owner;
    if foreign_writable && !sticky {
        bail!(
            "{} can be written by another user (owner uid {}, mode {:o}): they could replace the socket; use a directory of root's (default /run/rtlab)",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    if others_may_attach && meta.uid() == euid() && meta.mode() & 0o001 == 0 {
        // Our own directory (/run/rtlab is 0700 when the journal made it):
        // others must be able to reach the socket in it.
        handle
            .set_permissions(std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("opening {} to other users (mode 0755)", dir.display()))?;
    }
    Ok(())
}

/// Removes a stale socket at `path` (nobody listens), refuses a live one
/// or a file that is not ours.
fn clear_path(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
        Ok(meta) => meta,
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket: not replaced",
            path.display()
        );
    }
    if is_live(path) {
        bail!("another executive listens at {}", path.display());
    }
    if meta.uid() != euid() {
        bail!(
            "{} is a stale socket of uid {}: not replaced (remove it if it is yours to remove)",
            path.display(),
            meta.uid()
        );
    }
    std::fs::remove_file(path)
        .with_context(|| format!("removing the stale socket {}", path.display()))
}

/// Binds and listens at `path`, journaled (a SIGKILLed server's socket is
/// removed by `rtlab restore`); 0666 when others may attach (who may is
/// decided from the kernel's peer credentials, never from the file's mode).
pub fn listen(
    path: &Path,
    others_may_attach: bool,
    journal: &Mutex<Journal>,
) -> anyhow::Result<OwnedFd> {
    address(path)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_directory(dir, others_may_attach)?;
    clear_path(path)?;
    // Bound at a temporary name beside it, listening, then renamed into
    // place: the path appears only once connections are accepted (a
    // script that waits for the socket file, then starts its program, is
    // never refused), and a rename never follows a symlink.
    let temporary = dir.join(format!(".rtlab-exec-{}.sock", std::process::id()));
    let addr = address(&temporary).context("the socket's temporary name beside it")?;
    let _ = std::fs::remove_file(&temporary);
    // Non-blocking: the control thread accepts until EAGAIN after a poll.
    let socket = seqpacket(libc::SOCK_NONBLOCK).context("socket(AF_UNIX, SOCK_SEQPACKET)")?;
    // SAFETY: addr is valid for the call, its size given.
    let bound = unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    };
    if bound != 0 {
        let e = io::Error::last_os_error();
        return Err(e).with_context(|| format!("binding {}", temporary.display()));
    }
    // Its mode set at the temporary name, which nobody else can replace
    // (the directory was judged above: ours or root's and not writable by
    // others, or sticky) and nobody can reach (not listening, not at the
    // path yet). Not through the umask: it is the process's, and another
    // thread creating a file meanwhile would get the socket's.
    let mode = if others_may_attach { 0o666 } else { 0o600 };
    if let Err(e) = std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(mode)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(e).with_context(|| format!("setting mode {mode:o} on {}", temporary.display()));
    }
    // SAFETY: plain syscall on our socket.
    if unsafe { libc::listen(socket.as_raw_fd(), 64) } != 0 {
        let e = io::Error::last_os_error();
        let _ = std::fs::remove_file(&temporary);
        return Err(e).context("listen");
    }
    if let Err(e) = std::fs::rename(&temporary, path) {
        let _ = std::fs::remove_file(&temporary);
        return Err(e)
            .with_context(|| format!("moving the socket into place at {}", path.display()));
    }
    let noted = journal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .note_socket(path, "rtlab exec serve's socket");
    if let Err(e) = noted {
        let _ = std::fs::remove_file(path);
        return Err(e.into());
    }
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn a_stale_socket_is_replaced_and_a_live_one_refused() {
        let tmp = TempDir::new().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let journal = Mutex::new(Journal::new(tmp.path().join("state")));
        let path = tmp.path().join("exec.sock");
        let first = listen(&path, false, &journal).unwrap();
        assert!(is_live(&path));
        let again = listen(&path, false, &journal).unwrap_err();
        assert!(
            format!("{again:#}").contains("another executive listens at"),
            "{again:#}"
        );
        drop(first);
        assert!(!is_live(&path), "nobody listens any more: stale");
        let _second = listen(&path, false, &journal).unwrap();
        assert!(is_live(&path));
    }

    #[test]
    fn a_directory_others_can_write_is_refused_unless_sticky() {
        let tmp = TempDir::new().unwrap();
        let journal = Mutex::new(Journal::new(tmp.path().join("state")));
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = listen(&open.join("x.sock"), false, &journal).unwrap_err();
        assert!(
            format!("{e:#}").contains("can be written by another user"),
            "{e:#}"
        );
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let own = listen(&open.join("x.sock"), false, &journal).unwrap();
        let mode = std::fs::metadata(open.join("x.sock")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "its mode set before it is in place");
        drop(own);
        std::fs::remove_file(open.join("x.sock")).unwrap();
        // Sticky but another user's: its owner may remove our socket.
        if euid() == 0 {
            std::os::unix::fs::chown(&open, Some(65534), None).unwrap();
            let e = listen(&open.join("x.sock"), false, &journal).unwrap_err();
            assert!(
                format!("{e:#}").contains("can be written by another user"),
                "{e:#}"
            );
            std::os::unix::fs::chown(&open, Some(0), None).unwrap();
        }
        listen(&open.join("y.sock"), true, &journal).unwrap();
        let mode = std::fs::metadata(open.join("y.sock")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o666);
        // A symlink as the directory is never followed (nor chmodded through).
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        let e = listen(&link.join("z.sock"), true, &journal).unwrap_err();
        assert!(format!("{e:#}").contains("is not a directory"), "{e:#}");
        let file = open.join("plain");
        std::fs::write(&file, "x").unwrap();
        let e = listen(&file, false, &journal).unwrap_err();
        assert!(format!("{e:#}").contains("not a socket"), "{e:#}");
    }
}
