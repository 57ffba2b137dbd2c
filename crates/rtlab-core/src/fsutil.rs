//! Writing an output file the way a tool that runs as root must: another
//! user who controls a directory on the way (a shared /tmp) must not be
//! able to make rtlab write, truncate or replace any file but the one
//! named, and a reader (or a crash) never sees half a file.
//!
//! [`write_atomic`] walks the path one component at a time from directory
//! file descriptors (so nothing can be swapped between a check and a use):
//!
//! - a missing or regular file is replaced atomically: a temporary file
//!   with an unpredictable name is created beside it (`O_CREAT|O_EXCL|
//!   O_NOFOLLOW`, the mode asked for, else that of the file replaced, else
//!   0644), written, fsynced, renamed over the name, and the directory is
//!   fsynced (so the new content survives a crash or a power loss once
//!   the call returns);
//! - an existing FIFO or character device (`/dev/null`, a terminal) is
//!   opened and written as it is, never created, truncated or renamed
//!   over; a block device, a socket or a directory is refused (so is a
//!   path ending in `/`, which names one);
//! - a symlink (as the file or as a directory on the way) is followed only
//!   if nobody but root (or the caller) could have planted or changed it:
//!   the link is owned by root or the caller, in a directory owned by one
//!   of them that no one else can write to (or that is sticky). Links
//!   inside /proc (`/dev/stdout`, `/dev/fd/N`) are the kernel's and are
//!   opened through, appending, like a shell redirection.
//!
//! [`write_atomic_with`] takes [`Options`]: a mode the file gets whatever
//! the umask and the file replaced (the journal's 0600), and `create_new`,
//! which never replaces anything (the temporary is linked to the name, so
//! a name taken, even by a dangling symlink, is `AlreadyExists`).
//! Temporary names are `.NAME.<16 hex digits>.tmp`; [`temporary_of`]
//! tells one (left by a killed writer) from other files.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

/// Symlinks followed at most while resolving one path (the kernel's limit).
const MAX_LINKS: usize = 40;
/// Temporary names tried before giving up (each is 64 random bits).
const TMP_TRIES: usize = 16;
/// The mode of a new file (set with fchmod, so the umask does not narrow it).
const NEW_MODE: u32 = 0o644;
/// The end of a temporary file's name, after its 16 hex digits.
const TMP_SUFFIX: &str = ".tmp";

/// How [`write_atomic_with`] writes a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The permission bits of the file written, whatever the umask and the
    /// mode of a file replaced (`None`: a replaced file's mode, else 0644).
    /// A FIFO or device written through keeps its own.
    pub mode: Option<u32>,
    /// Never replace: the name must be free (a symlink there counts as
    /// taken and is not followed), else the error is `AlreadyExists`.
    pub create_new: bool,
}

/// Writes what `body` produces to `path` safely (see the module's
/// documentation). `-` is stdout.
pub fn write_atomic(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    write_atomic_with(path, Options::default(), body)
}

/// [`write_atomic`] with [`Options`].
pub fn write_atomic_with(
    path: &Path,
    options: Options,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if path == Path::new("-") {
        let stdout = io::stdout();
        let mut lock = stdout.lock();
        body(&mut lock)?;
        return lock.flush();
    }
    match resolve(path, !options.create_new)? {
        Target::Direct(file) => {
            let mut out = io::BufWriter::new(file);
            body(&mut out)?;
            out.flush()
        }
        Target::Replace { dir, name, mode } => {
            let mode = options.mode.or(mode).unwrap_or(NEW_MODE);
            replace(&dir, &name, mode, options.create_new, body)
        }
    }
}

/// [`write_atomic`] of bytes.
pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(path, |out| out.write_all(bytes))
}

/// [`write_atomic_with`] of bytes.
pub fn write_atomic_bytes_with(path: &Path, bytes: &[u8], options: Options) -> io::Result<()> {
    write_atomic_with(path, options, |out| out.write_all(bytes))
}

/// Removes the file `path` (a link itself, never what it points to) and
/// fsyncs its directory, so the removal survives a crash once this
/// returns. A file already gone is not an error.
pub fn remove_durably(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // The name is gone already: the directory is only synced, so it may
    // be reached through a link.
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    sync_dir(&rustix::fs::openat(CWD, dir, flags, Mode::empty())?)
}

/// When `name` is the name of a temporary file of this module's, the name
/// of the file it was written for (`.NAME.<16 hex>.tmp` gives `NAME`): for
/// a writer that removes what a killed run of it left beside its file.
pub fn temporary_of(name: &OsStr) -> Option<&OsStr> {
    let bytes = name.as_bytes();
    let stem = bytes
        .strip_prefix(b".")?
        .strip_suffix(TMP_SUFFIX.as_bytes())?;
    let (target, random) = stem.split_at(stem.len().checked_sub(17)?);
    let hex = random.strip_prefix(b".")?;
    (!target.is_empty() && hex.iter().all(u8::is_ascii_hexdigit))
        .then_some(OsStr::from_bytes(target))
}

/// Opens `path` for writing without emptying it (an output checked before
/// a long run, written later): a missing file is created (0644) and the
/// flag says so; an existing regular file, FIFO or character device is
/// opened as it is. Symlinks are followed as by [`write_atomic`].
pub fn open_output(path: &Path) -> io::Result<(File, bool)> {
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
    match resolve(path, true)? {
        Target::Direct(file) => Ok((file, false)),
        Target::Replace {
            dir,
            name,
            mode: None,
        } => {
            let fd = rustix::fs::openat(
                &dir,
                name.as_os_str(),
                flags | OFlags::CREATE | OFlags::EXCL,
                Mode::from_raw_mode(NEW_MODE),
            )?;
            Ok((File::from(fd), true))
        }
        Target::Replace { dir, name, .. } => {
            let fd = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty())?;
            Ok((File::from(fd), false))
        }
    }
}

/// Where a path leads.
enum Target {
    /// A FIFO or character device (or a /proc link), opened for writing.
    Direct(File),
    /// A missing or regular file `name` in `dir`, replaced by a rename;
    /// `mode` is the replaced file's permission bits.
    Replace {
        dir: OwnedFd,
        name: OsString,
        mode: Option<u32>,
    },
}

/// Walks `path`; with `follow_last` false its last component is taken as
/// the name to create in the directory reached, whatever is there.
fn resolve(path: &Path, follow_last: bool) -> io::Result<Target> {
    // `out/` names a directory: components() drops the slash, and a file
    // `out` would be written where the user meant a directory.
    if path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(rustix::io::Errno::ISDIR.into());
    }
    let start = if path.is_absolute() { "/" } else { "." };
    let mut dir = open_dir(CWD, start)?;
    // Components still to walk, the next one last.
    let mut remaining: Vec<OsString> = Vec::new();
    push_components(&mut remaining, path);
    let mut links = 0;
    while let Some(name) = remaining.pop() {
        if name == "/" {
            dir = open_dir(CWD, "/")?;
            continue;
        }
        if name == ".." {
            dir = open_dir(&dir, "..")?;
            continue;
        }
        let last = remaining.is_empty();
        if last && !follow_last {
            return Ok(Target::Replace {
                dir,
                name,
                mode: None,
            });
        }
        let stat = match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Err(e) if e == rustix::io::Errno::NOENT && last => {
                return Ok(Target::Replace {
                    dir,
                    name,
                    mode: None,
                })
            }
            stat => stat.map_err(|e| at(path, &name, e.into()))?,
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink if in_proc(&dir) => {
                // The kernel's own links (/proc/self, /proc/PID/fd/N):
                // nobody else sets them, and what they point to (a pipe)
                // may have no path at all.
                if last {
                    return open_direct(&dir, &name, OFlags::empty())
                        .map_err(|e| at(path, &name, e));
                }
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                dir = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty())
                    .map_err(|e| at(path, &name, e.into()))?;
            }
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(at(path, &name, rustix::io::Errno::LOOP.into()));
                }
                trusted_link(&dir, &stat).map_err(|why| {
                    io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                            "refusing to follow the symlink {:?} in {}: {why}, so another user \
                             could point it at any file; give the path of the file itself",
                            name,
                            path.display()
                        ),
                    )
                })?;
                let target = rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new())
                    .map_err(|e| at(path, &name, e.into()))?;
                push_components(
                    &mut remaining,
                    Path::new(OsStr::from_bytes(target.as_bytes())),
                );
            }
            FileType::Directory if last => {
                return Err(at(path, &name, rustix::io::Errno::ISDIR.into()));
            }
            FileType::Directory => {
                dir = open_dir(&dir, name.as_os_str()).map_err(|e| at(path, &name, e))?;
            }
            _ if !last => return Err(at(path, &name, rustix::io::Errno::NOTDIR.into())),
            FileType::RegularFile => {
                return Ok(Target::Replace {
                    dir,
                    name,
                    mode: Some(stat.st_mode & 0o777),
                })
            }
            FileType::Fifo | FileType::CharacterDevice => {
                return open_direct(&dir, &name, OFlags::NOFOLLOW).map_err(|e| at(path, &name, e));
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is a {}: refusing to write to it",
                        path.display(),
                        match other {
                            FileType::BlockDevice => "block device",
                            FileType::Socket => "socket",
                            _ => "special file",
                        }
                    ),
                ));
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: not a file path", path.display()),
    ))
}

/// Pushes `path`'s components onto `remaining` so the first is popped first.
fn push_components(remaining: &mut Vec<OsString>, path: &Path) {
    let at = remaining.len();
    for component in path.components() {
        match component {
            Component::RootDir => remaining.push("/".into()),
            Component::ParentDir => remaining.push("..".into()),
            Component::Normal(name) => remaining.push(name.to_os_string()),
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    remaining[at..].reverse();
}

/// An error about `name` while resolving `path`, naming both.
fn at(path: &Path, name: &OsStr, e: io::Error) -> io::Error {
    if Path::new(name) == path {
        return e;
    }
    io::Error::new(e.kind(), format!("{:?} in {}: {e}", name, path.display()))
}

fn open_dir(dir: impl std::os::fd::AsFd, name: impl rustix::path::Arg) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// Opens an existing FIFO or character device for writing as it is (no
/// create, no truncate); appending, so a file behind /dev/stdout is not
/// written over.
fn open_direct(dir: &OwnedFd, name: &OsStr, extra: OFlags) -> io::Result<Target> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NOCTTY | OFlags::CLOEXEC | extra;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    // Checked again on what was opened: the name may have been swapped.
    match FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) {
        FileType::BlockDevice => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a block device: refusing to write to it",
        )),
        FileType::RegularFile if !extra.is_empty() => Err(io::Error::other(
            "changed from a FIFO or device to a file while being opened",
        )),
        _ => Ok(Target::Direct(File::from(fd))),
    }
}

fn in_proc(dir: &OwnedFd) -> bool {
    rustix::fs::fstatfs(dir).is_ok_and(|fs| fs.f_type == rustix::fs::PROC_SUPER_MAGIC)
}

/// Whether nobody but root or the caller could have set the link `link`
/// in `dir`; the reason when not.
fn trusted_link(dir: &OwnedFd, link: &rustix::fs::Stat) -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let ours = |uid: u32| uid == 0 || uid == euid;
    if !ours(link.st_uid) {
        return Err(format!("it belongs to uid {}", link.st_uid));
    }
    let d = rustix::fs::fstat(dir).map_err(|e| e.to_string())?;
    if !ours(d.st_uid) {
        return Err(format!("its directory belongs to uid {}", d.st_uid));
    }
    if d.st_mode & 0o022 != 0 && d.st_mode & libc::S_ISVTX == 0 {
        return Err("its directory can be written by others and is not sticky".into());
    }
    Ok(())
}

/// Replaces `name` in `dir` with what `body` writes (or, `create_new`,
/// gives it that name only if the name is free): temporary file, fsync,
/// rename (or link), directory fsync.
fn replace(
    dir: &OwnedFd,
    name: &OsStr,
    mode: u32,
    create_new: bool,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let (file, tmp) = create_tmp(dir, name)?;
    let written = (|| {
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
        let mut out = io::BufWriter::new(&file);
        body(&mut out)?;
        out.flush()?;
        drop(out);
        file.sync_all()?;
        if create_new {
            link_new(dir, &tmp, name)
        } else {
            Ok(rustix::fs::renameat(dir, tmp.as_os_str(), dir, name)?)
        }
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp.as_os_str(), AtFlags::empty());
        return written;
    }
    sync_dir(dir)
}

/// Gives the temporary `tmp` the name `name` only if nothing has it:
/// link(2) never replaces a name (rename would), then the temporary goes.
fn link_new(dir: &OwnedFd, tmp: &OsStr, name: &OsStr) -> io::Result<()> {
    match rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty()) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::EXIST => return Err(e.into()),
        // A file system without hard links: rename, when the name is free.
        Err(e) => {
            return match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Err(free) if free == rustix::io::Errno::NOENT => {
                    Ok(rustix::fs::renameat(dir, tmp, dir, name)?)
                }
                _ => Err(e.into()),
            };
        }
    }
    Ok(rustix::fs::unlinkat(dir, tmp, AtFlags::empty())?)
}

/// Creates `.NAME.RANDOM.tmp` in `dir`, never through a link nor over
/// anything already there.
fn create_tmp(dir: &OwnedFd, name: &OsStr) -> io::Result<(File, OsString)> {
    // A name near the 255-byte limit still leaves room for the suffix.
    let stem = &name.as_bytes()[..name.len().min(200)];
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = None;
    for _ in 0..TMP_TRIES {
        let mut tmp = b".".to_vec();
        tmp.extend_from_slice(stem);
        tmp.extend_from_slice(format!(".{:016x}{TMP_SUFFIX}", unpredictable()).as_bytes());
        let tmp = OsString::from_vec(tmp);
        match rustix::fs::openat(dir, tmp.as_os_str(), flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => return Ok((File::from(fd), tmp)),
            Err(e) if e == rustix::io::Errno::EXIST => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.map_or_else(|| io::Error::other("no temporary name"), io::Error::from))
}

/// 64 bits no other user can guess: std's per-process random hash keys
/// over the time, the pid and a counter.
fn unpredictable() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// Makes a rename in `dir` durable. A filesystem that cannot fsync a
/// directory (EINVAL) has nothing more to do.
fn sync_dir(dir: &OwnedFd) -> io::Result<()> {
    let fd = match rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        // A directory one may write to but not read: nothing to open it by.
        Err(e) if e == rustix::io::Errno::ACCESS => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    match rustix::fs::fsync(&fd) {
        Err(e) if e == rustix::io::Errno::INVAL => Ok(()),
        done => Ok(done?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

    fn euid() -> u32 {
        unsafe { libc::geteuid() }
    }

    #[test]
    fn writes_a_new_file_0644_and_replaces_keeping_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomic_bytes(&path, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic_bytes(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o640);
        // No temporary left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_body_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "old").unwrap();
        let err = write_atomic(&path, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("boom"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "boom");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn temporary_names_are_unpredictable() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(CWD, dir.path()).unwrap();
        let (_a, a) = create_tmp(&fd, OsStr::new("x")).unwrap();
        let (_b, b) = create_tmp(&fd, OsStr::new("x")).unwrap();
        assert_ne!(a, b);
        assert!(!a
            .to_string_lossy()
            .contains(&std::process::id().to_string()));
    }

    #[test]
    fn a_fifo_is_written_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic_bytes(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn a_directory_or_a_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic_bytes(dir.path(), b"x").unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let err = write_atomic_bytes(&sock, b"x").unwrap_err();
        assert!(err.to_string().contains("socket"), "{err}");
        assert!(std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket());
    }

    #[test]
    fn our_own_symlink_in_a_private_directory_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("real", &link).unwrap();
        write_atomic_bytes(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_symlink_in_a_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        // World-writable, not sticky: anyone could swap the link.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = shared.join("out");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = write_atomic_bytes(&link, b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert!(err.to_string().contains("not sticky"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        // A directory on the way counts too.
        let dirlink = shared.join("d");
        std::os::unix::fs::symlink(dir.path(), &dirlink).unwrap();
        let err = write_atomic_bytes(&dirlink.join("victim"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn dev_stdout_style_proc_links_are_opened_through() {
        if euid() != 0 && !Path::new("/proc/self/fd").exists() {
            eprintln!("skipped: no /proc");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let file = File::create(&path).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        write_atomic_bytes(Path::new(&format!("/proc/self/fd/{fd}")), b"via fd").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"via fd");
    }

    #[test]
    fn a_mode_asked_for_is_kept_under_a_permissive_umask() {
        // The umask is the process's: set to 0 here, it made the temporary
        // directories other tests create meanwhile writable by all
        // (tempfile makes them 0777 & !umask), and their symlinks were
        // refused (a flaky failure). So this test runs alone, in a child.
        const CHILD: &str = "RTLAB_FSUTIL_UMASK_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let name = "fsutil::tests::a_mode_asked_for_is_kept_under_a_permissive_umask";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{stdout}");
            assert!(stdout.contains("1 passed"), "{stdout}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        let private = Options {
            mode: Some(0o600),
            ..Options::default()
        };
        // SAFETY: umask cannot fail; the old mask is put back below.
        let old = unsafe { libc::umask(0) };
        let new = write_atomic_bytes_with(&path, b"one", private);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let replaced = write_atomic_bytes_with(&path, b"two", private);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        new.unwrap();
        replaced.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn create_new_never_replaces_nor_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let new = Options {
            create_new: true,
            mode: Some(0o600),
        };
        let path = dir.path().join("run.json");
        write_atomic_bytes_with(&path, b"first", new).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let err = write_atomic_bytes_with(&path, b"second", new).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        // A dangling link is a taken name, not a way to create its target.
        let target = dir.path().join("target");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_atomic_bytes_with(&link, b"x", new).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert!(!target.exists());
        // No temporary left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn remove_durably_removes_once_and_then_has_nothing_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        std::fs::write(&path, "x").unwrap();
        remove_durably(&path).unwrap();
        assert!(!path.exists());
        remove_durably(&path).unwrap();
    }

    #[test]
    fn temporary_names_are_told_from_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(CWD, dir.path()).unwrap();
        let (_f, tmp) = create_tmp(&fd, OsStr::new("journal-1-2.json")).unwrap();
        assert_eq!(
            temporary_of(&tmp),
            Some(OsStr::new("journal-1-2.json")),
            "{tmp:?}"
        );
        for other in [
            "journal-1-2.json",
            ".journal-1-2.json.tmp",
            ".x.0123456789abcdeg.tmp",
            "..0123456789abcdef.tmp",
        ] {
            assert_eq!(temporary_of(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn open_output_creates_or_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let (_, created) = open_output(&path).unwrap();
        assert!(created);
        std::fs::write(&path, "kept").unwrap();
        let (_, created) = open_output(&path).unwrap();
        assert!(!created);
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
    }
}
