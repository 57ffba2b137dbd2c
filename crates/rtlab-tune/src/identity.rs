//! Who a process is, as far as a user cannot forge it: what a rule must
//! check before it hands out real-time priority.
//!
//! A process's name and command line are whatever its owner chose (`cp
//! /bin/sleep ~/alarmd; ~/alarmd`), so a rule that names only those would
//! let any user have a real-time thread from root's `tune apply`. The
//! kernel vouches for other things: the real and effective uid, the file a
//! process runs (`/proc/PID/exe`, with its owner and mode, and those of each
//! directory on its path) and the cgroup it was put in (which a user cannot
//! leave for a system unit's). A rule names those with `exe`, `user`,
//! `unit` and `cgroup`; a rule that names none promotes only root's
//! processes running a file only root can change, unless it says
//! `allow_any_user`. `exe` alone does not say who runs the file (anyone may
//! run root's file with code of their own), so it keeps the root-only
//! check. See docs/tune.md ("Who rules may promote").
//!
//! Everything is read through one open /proc/PID directory whose thread
//! start time is checked first: a directory opened for one process never
//! shows another (reads fail once it has ended), so a reused pid cannot
//! lend its identity to the process the rule matched.

use crate::task::Task;
use rtlab_core::process::Stat;
use serde::Serialize;
use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a rule asks of a process besides its name or command line. Every
/// key given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Vouch {
    /// The executable, resolved; checked at load to be root's and
    /// writable by no one else, along its whole path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<PathBuf>,
    /// The real and effective uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<u32>,
    /// The systemd unit (the first `.service` or `.scope` on the cgroup
    /// path: the system manager's unit, not one a user's manager made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// A cgroup (v2 path, or v1 `name=systemd`): the process's or an
    /// ancestor of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Promote the processes of any user, whatever they run (the rule's
    /// author takes the risk that another user names a process after it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_any_user: bool,
}

/// A process's identity as the kernel shows it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub uid: u32,
    pub euid: u32,
    /// `/proc/PID/exe` with a trailing " (deleted)" removed; None for
    /// kernel threads (and a process whose file cannot be read).
    pub exe: Option<PathBuf>,
    /// Whether the file it runs was deleted or replaced since it started.
    pub exe_deleted: bool,
    /// Why `exe` could not be read, when the kernel refused it.
    pub exe_refused: Option<String>,
    /// The open executable's metadata (the file the process runs, even
    /// when its path names another one now).
    pub exe_meta: Option<fs::Metadata>,
    pub cgroup: Option<String>,
}

impl Vouch {
    /// The identity keys of a rule or of `tune set`, checked: an `exe` must
    /// be a file only root can change (else the rule would vouch for
    /// whatever another user puts there), a `user` must exist, a `unit` must
    /// be a unit name and a `cgroup` a path. The error names the key.
    pub fn new(
        exe: Option<&str>,
        user: Option<&str>,
        unit: Option<&str>,
        cgroup: Option<&str>,
        allow_any_user: bool,
    ) -> Result<Vouch, (&'static str, String)> {
        let exe = match exe {
            Some(given) => {
                let path = Path::new(given);
                if !path.is_absolute() {
                    return Err(("exe", format!("'{given}' is not an absolute path")));
                }
                crate::trust::check_root_only(path, None).map_err(|reason| {
                    (
                        "exe",
                        format!(
                            "{given} {reason}; a rule names only executables no one but root \
                             can change, or it would vouch for whatever another user puts there"
                        ),
                    )
                })?;
                if !fs::metadata(path).is_ok_and(|m| m.is_file()) {
                    return Err((
                        "exe",
                        format!("{given} is not a file (a process runs a file, such as /usr/sbin/alarmd)"),
                    ));
                }
                Some(fs::canonicalize(path).map_err(|e| ("exe", format!("{given}: {e}")))?)
            }
            None => None,
        };
        let user = user
            .map(|u| resolve_user(u).map_err(|m| ("user", m)))
            .transpose()?;
        if let Some(name) = unit {
            if !(name.ends_with(".service") || name.ends_with(".scope")) || name.contains('/') {
                return Err((
                    "unit",
                    format!("'{name}' is not a service or scope name (such as alarmd.service)"),
                ));
            }
        }
        if let Some(path) = cgroup {
            if path.starts_with('/') && path.trim_matches('/').is_empty() {
                return Err((
                    "cgroup",
                    format!(
                        "'{path}' is the root cgroup, above every process: it would vouch for \
                         any user's; name a cgroup below it (/rt.slice), or say \
                         allow_any_user = true if any process of that name is meant"
                    ),
                ));
            }
            if !path.starts_with('/') {
                return Err((
                    "cgroup",
                    format!(
                        "'{path}' is not a cgroup path (as /proc/PID/cgroup shows it: /rt.slice)"
                    ),
                ));
            }
        }
        Ok(Vouch {
            exe,
            user,
            unit: unit.map(str::to_string),
            cgroup: cgroup.map(str::to_string),
            allow_any_user,
        })
    }

    /// Whether the rule names only a name or command line.
    pub fn names_no_identity(&self) -> bool {
        self.exe.is_none() && self.user.is_none() && self.unit.is_none() && self.cgroup.is_none()
    }

    /// Whether the rule says nothing of who runs the process: no `user`,
    /// `unit` or `cgroup`, and no `allow_any_user`. An `exe` alone names
    /// the file, not whose code runs: any user may run a file that is root's
    /// (`LD_PRELOAD=~/x.so /usr/sbin/alarmd`, an interpreter such as
    /// `/usr/bin/python3 ~/x.py`, a debugger attached to their own copy),
    /// so such a rule still promotes only root's processes.
    pub fn names_no_owner(&self) -> bool {
        self.user.is_none() && self.unit.is_none() && self.cgroup.is_none() && !self.allow_any_user
    }

    /// Ok when `task`'s process may be promoted by a rule that matched its
    /// name; else why not (a skip, said in the output, never an error).
    pub fn judge(&self, task: &Task) -> Result<(), String> {
        if task.kernel_thread && self.names_no_identity() {
            // Only a rule with `kernel = true` gets here, and PF_KTHREAD is
            // the kernel's own flag.
            return Ok(());
        }
        if self.names_no_identity() && self.allow_any_user {
            return Ok(());
        }
        let id = read(task)?;
        if self.names_no_identity() {
            return root_and_trusted(&id);
        }
        if let Some(want) = &self.exe {
            let Some(exe) = &id.exe else {
                return Err(format!(
                    "runs no executable rtlab can read{}; the rule asks for exe {}",
                    id.exe_refused
                        .as_ref()
                        .map(|why| format!(" ({why})"))
                        .unwrap_or_default(),
                    want.display()
                ));
            };
            if exe != want {
                return Err(format!(
                    "runs {}, not {} (exe)",
                    exe.display(),
                    want.display()
                ));
            }
            let same_file = match (&id.exe_meta, fs::metadata(want)) {
                (Some(m), Ok(w)) => (m.dev(), m.ino()) == (w.dev(), w.ino()),
                _ => false,
            };
            if id.exe_deleted || !same_file {
                return Err(format!(
                    "runs an older copy of {} (deleted or replaced since it started), which \
                     rtlab cannot vouch for; restart it",
                    want.display()
                ));
            }
            exe_trusted(exe, &id)?;
            if self.names_no_owner() {
                root_or_me(&id).map_err(|e| {
                    format!(
                        "{e}: an exe rule names the file, not who runs it (any user may run \
                         {} with code of their own: LD_PRELOAD, a script for an interpreter), \
                         so without user, unit or cgroup it promotes only root's processes \
                         (or allow any user explicitly: allow_any_user = true, tune set \
                         --allow-any-user)",
                        want.display()
                    )
                })?;
            }
        }
        if let Some(uid) = self.user {
            if id.uid != uid || id.euid != uid {
                return Err(format!(
                    "runs as uid {} (effective {}), not {uid} (user)",
                    id.uid, id.euid
                ));
            }
        }
        if let Some(want) = &self.unit {
            let unit = id.cgroup.as_deref().and_then(unit_of);
            if unit != Some(want.as_str()) {
                return Err(format!(
                    "belongs to {}, not {want} (unit)",
                    unit.map_or("no systemd unit".to_string(), |u| format!("unit {u}"))
                ));
            }
        }
        if let Some(want) = &self.cgroup {
            let cgroup = id.cgroup.as_deref().unwrap_or("");
            if !within(cgroup, want) {
                return Err(format!(
                    "is in cgroup {}, not in {want} (cgroup)",
                    if cgroup.is_empty() {
                        "(unknown)"
                    } else {
                        cgroup
                    }
                ));
            }
        }
        Ok(())
    }
}

/// The default for a rule that names only a name or command line.
fn root_and_trusted(id: &Identity) -> Result<(), String> {
    const HOW: &str = "any user can give a process that name, so such a rule promotes only \
        root's processes; name who runs it by user, unit or cgroup (tune set: --user, \
        --unit), or allow any user explicitly (allow_any_user = true, \
        tune set --allow-any-user)";
    root_or_me(id).map_err(|e| format!("{e}: {HOW}"))?;
    if id.uid != 0 {
        // rtlab's own user's process, rtlab being run by them.
        return Ok(());
    }
    let Some(exe) = &id.exe else {
        return Err(format!(
            "its executable cannot be read{}: {HOW}",
            id.exe_refused
                .as_ref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default()
        ));
    };
    exe_trusted(exe, id).map_err(|reason| format!("{reason}: {HOW}"))
}

/// The process runs as root (real and effective uid 0); or, when rtlab is
/// run by a user, as that user: rtlab can change only that user's own
/// processes then (the kernel's rule), which they may promote as they like.
fn root_or_me(id: &Identity) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if me != 0 && id.uid == me && id.euid == me {
        return Ok(());
    }
    if id.uid != 0 || id.euid != 0 {
        return Err(format!(
            "runs as uid {} (effective {}), not root",
            id.uid, id.euid
        ));
    }
    Ok(())
}

/// The file a process runs and every directory to it are root's alone.
fn exe_trusted(exe: &Path, id: &Identity) -> Result<(), String> {
    let meta = id
        .exe_meta
        .as_ref()
        .ok_or_else(|| format!("its executable {} cannot be read", exe.display()))?;
    let parent = exe.parent().unwrap_or(Path::new("/"));
    crate::trust::check_file(exe, meta)
        .and_then(|()| crate::trust::check_directory(parent))
        .map_err(|reason| {
            format!(
                "runs {}, which a user other than root could have written: it {reason}",
                exe.display()
            )
        })
}

/// The systemd unit of a cgroup path: its first `.service` or `.scope`,
/// where systemd puts units: at the top or under slices only. A cgroup
/// delegated to a user elsewhere (`/build/` chowned to them, without
/// systemd) may hold one they named `alarmd.service`; it is no unit.
pub fn unit_of(cgroup: &str) -> Option<&str> {
    for name in cgroup.split('/').filter(|c| !c.is_empty()) {
        if name.ends_with(".service") || name.ends_with(".scope") {
            return Some(name);
        }
        if !name.ends_with(".slice") {
            return None;
        }
    }
    None
}

fn within(cgroup: &str, ancestor: &str) -> bool {
    let ancestor = ancestor.trim_end_matches('/');
    if ancestor.is_empty() {
        return cgroup.starts_with('/');
    }
    cgroup == ancestor
        || cgroup
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The reason [`read`] gives for a thread that has ended.
pub const GONE: &str = "ended before it could be checked";

/// `task`'s process's identity, read through one /proc/PID directory after
/// checking that it holds `task` (same thread id and start time).
pub fn read(task: &Task) -> Result<Identity, String> {
    let gone = || GONE.to_string();
    let dir = File::open(format!("/proc/{}", task.pid)).map_err(|_| gone())?;
    let stat = Stat::of_task_at(&dir, task.tid).map_err(|_| gone())?;
    if stat.starttime() != Some(task.starttime) {
        return Err(gone());
    }
    let status = read_at(&dir, "status").map_err(|_| gone())?;
    let (uid, euid) =
        uids(&status).ok_or_else(|| "its /proc status has no Uid line".to_string())?;
    let mut exe_refused = None;
    let (exe, exe_deleted) = match readlink_at(&dir, "exe") {
        Ok(link) => {
            let text = link.as_os_str().as_bytes();
            match text.strip_suffix(b" (deleted)") {
                Some(kept) => (Some(PathBuf::from(std::ffi::OsStr::from_bytes(kept))), true),
                None => (Some(link), false),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            exe_refused = Some(format!(
                "/proc/{}/exe: {e}; the kernel shows another user's or a more privileged \
                 process's executable only to one with CAP_SYS_PTRACE",
                task.pid
            ));
            (None, false)
        }
        Err(_) => (None, false),
    };
    let exe_meta = open_at(&dir, "exe", libc::O_PATH)
        .and_then(|f| f.metadata())
        .ok();
    let cgroup = read_at(&dir, "cgroup")
        .ok()
        .and_then(|text| cgroup_path(&text));
    // Everything above came from the process checked first, or failed.
    let again = Stat::of_task_at(&dir, task.tid).map_err(|_| gone())?;
    if again.starttime() != Some(task.starttime) {
        return Err(gone());
    }
    Ok(Identity {
        uid,
        euid,
        exe,
        exe_deleted,
        exe_refused,
        exe_meta,
        cgroup,
    })
}

fn open_at(dir: &File, name: &str, flags: i32) -> io::Result<File> {
    let name = CString::new(name).map_err(io::Error::other)?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the
    // returned descriptor is owned by the File.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by no one else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Read as bytes: `stat` and `status` hold the process's name, any bytes
/// its user chose, and a name that is not UTF-8 must not make the process
/// look gone.
fn read_at(dir: &File, name: &str) -> io::Result<String> {
    let mut bytes = Vec::new();
    open_at(dir, name, 0)?.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn readlink_at(dir: &File, name: &str) -> io::Result<PathBuf> {
    let name = CString::new(name).map_err(io::Error::other)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 16];
    // SAFETY: a valid descriptor, NUL-terminated name, and a buffer of the
    // length given.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(PathBuf::from(std::ffi::OsString::from_vec(buf)))
}

/// The real and effective uid from /proc/PID/status.
fn uids(status: &str) -> Option<(u32, u32)> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    let mut ids = line["Uid:".len()..].split_whitespace();
    Some((ids.next()?.parse().ok()?, ids.next()?.parse().ok()?))
}

/// The cgroup v2 path, or the v1 `name=systemd` one.
fn cgroup_path(text: &str) -> Option<String> {
    let mut v1 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            return Some(path.to_string());
        }
        if controllers == "name=systemd" {
            v1 = Some(path.to_string());
        }
    }
    v1
}

/// A user name or uid, as a uid.
pub fn resolve_user(user: &str) -> Result<u32, String> {
    if let Ok(uid) = user.parse::<u32>() {
        return Ok(uid);
    }
    let name = CString::new(user).map_err(|_| format!("'{user}' is not a user name"))?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all-zero is a valid passwd (pointers null, numbers 0).
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid pointers to a passwd, a buffer of the length given and
    // the result pointer, as getpwnam_r requires.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() {
        return Err(format!("no user '{user}' on this machine"));
    }
    Ok(pwd.pw_uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_cgroups() {
        assert_eq!(
            unit_of("/system.slice/alarmd.service"),
            Some("alarmd.service")
        );
        // A user's manager makes units too: the system's unit is the first.
        assert_eq!(
            unit_of("/user.slice/user-1000.slice/user@1000.service/app.slice/alarmd.service"),
            Some("user@1000.service")
        );
        assert_eq!(unit_of("/"), None);
        assert_eq!(unit_of("/init.scope"), Some("init.scope"));
        // A cgroup a user was given outside systemd's tree: what they
        // create in it is no unit.
        assert_eq!(unit_of("/build/alarmd.service"), None);
        assert_eq!(unit_of("/rt.slice/build/alarmd.service"), None);
        assert_eq!(
            unit_of("/a.slice/a-b.slice/x.scope/y.service"),
            Some("x.scope")
        );
        assert!(within("/rt.slice/a.service", "/rt.slice"));
        assert!(within("/rt.slice", "/rt.slice/"));
        assert!(!within("/rt.slice-evil/a.service", "/rt.slice"));
        assert_eq!(
            cgroup_path("12:cpuset:/\n1:name=systemd:/system.slice/x.service\n"),
            Some("/system.slice/x.service".into())
        );
        assert_eq!(cgroup_path("0::/init.scope\n"), Some("/init.scope".into()));
    }

    #[test]
    fn users_resolve() {
        assert_eq!(resolve_user("root"), Ok(0));
        assert_eq!(resolve_user("4242"), Ok(4242));
        assert!(resolve_user("no-such-user-here").is_err());
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = crate::task::thread(
            std::process::id() as i32,
            std::process::id() as i32,
            crate::task::Detail::Full,
        )
        .unwrap();
        let id = read(&me).unwrap();
        // SAFETY: getuid has no preconditions.
        assert_eq!(id.uid, unsafe { libc::getuid() });
        assert_eq!(id.exe.as_deref(), std::env::current_exe().ok().as_deref());
        let mut other = me.clone();
        other.starttime += 1;
        assert!(read(&other).unwrap_err().contains("ended"));
    }
}
