//! The process a journal belongs to, and whether it still runs: a pid, its
//! start time and the boot tell it from a later process that reused the pid.

use std::fs;
use std::io;

use serde::{Deserialize, Serialize};

use crate::process::{boot_id, Stat};

/// The process a journal belongs to. `starttime` (field 22 of
/// /proc/<pid>/stat) tells a reused pid from the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    pub starttime: u64,
    pub command: String,
    /// /proc/sys/kernel/random/boot_id: starttimes repeat across boots, so
    /// an owner from another boot is dead even if pid and starttime match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

impl Owner {
    pub fn this_process() -> io::Result<Owner> {
        let pid = std::process::id();
        let starttime = read_starttime(pid)?;
        let command = fs::read("/proc/self/cmdline")
            .map(|raw| {
                raw.split(|&b| b == 0)
                    .filter(|arg| !arg.is_empty())
                    .map(|arg| String::from_utf8_lossy(arg).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        Ok(Owner {
            pid,
            starttime,
            command,
            boot_id: boot_id(),
        })
    }

    /// Alive iff /proc/<pid>/stat exists, its starttime matches, it is not
    /// a zombie (all its threads have exited) and we are in the same boot.
    ///
    /// A zombie (state `Z`, or `X` while it is being reaped) has exited:
    /// its parent just has not collected its status yet, which may never
    /// happen (a parent that does not reap). Nothing of it runs any more,
    /// and its journal is as dead as one whose pid is gone.
    pub fn is_alive(&self) -> bool {
        if let (Some(theirs), Some(ours)) = (&self.boot_id, boot_id()) {
            if *theirs != ours {
                return false;
            }
        }
        match read_stat(self.pid) {
            Ok(stat) if stat.starttime != self.starttime => false,
            // The main thread shows Z as soon as it has exited, while the
            // process's other threads may still run (or finish a write
            // under a SIGKILL): dead once they have all exited.
            Ok(stat) if stat.has_exited() => other_task_runs(self.pid),
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => false,
            // The process exists but we cannot look at it: never restore
            // under a possibly live owner.
            Err(_) => true,
        }
    }
}

pub(super) fn read_starttime(pid: u32) -> io::Result<u64> {
    read_stat(pid).map(|stat| stat.starttime)
}

/// What tells the owner of a journal from anything else with its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcStat {
    /// Field 3: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub(super) state: char,
    /// Field 22, in clock ticks since boot.
    starttime: u64,
}

impl ProcStat {
    /// Fields 3 and 22 of a stat line, None if either is missing.
    fn from_stat(stat: &Stat) -> Option<ProcStat> {
        Some(ProcStat {
            state: stat.state()?,
            starttime: stat.starttime()?,
        })
    }

    /// The process has exited: a zombie waiting for its parent, or dead.
    fn has_exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Whether a thread of process `pid` other than its main one has not
/// exited (one that cannot be read is taken as running).
fn other_task_runs(pid: u32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        let name = task.file_name();
        if name.to_str() == Some(pid.to_string().as_str()) {
            return false;
        }
        match fs::read(task.path().join("stat")) {
            Ok(stat) => Stat::parse(&stat)
                .as_ref()
                .and_then(ProcStat::from_stat)
                .is_none_or(|s| !s.has_exited()),
            // Gone since the listing.
            Err(e) => e.kind() != io::ErrorKind::NotFound && e.raw_os_error() != Some(libc::ESRCH),
        }
    })
}

pub(super) fn read_stat(pid: u32) -> io::Result<ProcStat> {
    // Read as bytes (process::Stat does): the name (field 2) is whatever
    // its process chose, or 15 bytes of it cut inside a character, and
    // need not be UTF-8; a read that failed on it would make any process
    // look alive.
    ProcStat::from_stat(&Stat::of(pid)?).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse /proc/{pid}/stat"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tempfile::TempDir;

    /// A child whose main thread has exited (with exit(2), not
    /// exit_group) while another of its threads runs on; killed and reaped
    /// when dropped.
    struct LeaderGone(libc::pid_t);

    impl LeaderGone {
        fn new() -> LeaderGone {
            extern "C" fn sleep_on(_: *mut libc::c_void) -> libc::c_int {
                loop {
                    // SAFETY: a raw system call, nothing of libc's state.
                    unsafe { libc::syscall(libc::SYS_pause) };
                }
            }
            // The thread's stack, allocated before the fork: the child
            // may not allocate.
            let mut stack = vec![0u8; 64 * 1024];
            // SAFETY: the child only makes raw system calls on memory it
            // owns (its copy of `stack`) before it ends.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
            if pid == 0 {
                // SAFETY: a thread of this process on its own stack, which
                // stays valid (its leader never frees it); then the main
                // thread alone exits.
                unsafe {
                    let top = stack.as_mut_ptr().add(stack.len()) as *mut libc::c_void;
                    let flags = libc::CLONE_VM
                        | libc::CLONE_FS
                        | libc::CLONE_FILES
                        | libc::CLONE_SIGHAND
                        | libc::CLONE_THREAD
                        | libc::CLONE_SYSVSEM;
                    if libc::clone(sleep_on, top, flags, std::ptr::null_mut()) < 0 {
                        libc::_exit(1);
                    }
                    libc::syscall(libc::SYS_exit, 0);
                }
                unreachable!();
            }
            let gone = LeaderGone(pid);
            let tasks = format!("/proc/{pid}/task");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while read_stat(pid as u32).ok().map(|s| s.state) != Some('Z')
                || fs::read_dir(&tasks).map(|d| d.count()).unwrap_or(0) != 2
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{pid}: its main thread never ended with another running"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            gone
        }
    }

    impl Drop for LeaderGone {
        fn drop(&mut self) {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }

    #[test]
    fn an_owner_whose_main_thread_ended_while_others_run_is_alive() {
        // Its /proc/PID/stat says Z, but a thread of it may still be
        // writing a file its journal records (a SIGKILL takes the threads
        // down one after the other): its journal is not to be replayed.
        let gone = LeaderGone::new();
        let owner = Owner {
            pid: gone.0 as u32,
            starttime: read_starttime(gone.0 as u32).unwrap(),
            command: "rtlab measure timer".into(),
            boot_id: boot_id(),
        };
        assert!(owner.is_alive());
        drop(gone);
        assert!(!owner.is_alive());
    }

    #[test]
    fn a_zombie_owner_is_dead() {
        let zombie = Zombie::new();
        let owner = zombie.owner();
        assert!(!owner.is_alive(), "a zombie runs nothing any more");
        // A live process with the same kind of record is alive.
        assert!(Owner::this_process().unwrap().is_alive());
    }

    #[test]
    fn a_reused_pid_with_a_name_that_is_not_utf8_is_not_the_owner() {
        // Anyone can name a process (exec through a link, PR_SET_NAME) and
        // the kernel cuts names at 15 bytes, even inside a character: a
        // process that took a dead owner's pid with such a name must not
        // pass for it, which would keep its journal from being restored
        // and refuse every later change of its files.
        use std::os::unix::ffi::OsStrExt;
        let tmp = TempDir::new().unwrap();
        let link = tmp.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link).arg("60").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // Until it has exec'd under its new name.
        let named = |stat: Vec<u8>| stat.windows(8).any(|w| w == b"(sl\xffeep)");
        while !named(fs::read(format!("/proc/{pid}/stat")).unwrap()) {
            assert!(std::time::Instant::now() < deadline, "{pid} never ran");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let starttime = read_starttime(pid);
        let reused = Owner {
            pid,
            starttime: 1,
            command: "rtlab measure timer".into(),
            boot_id: boot_id(),
        };
        let alive = reused.is_alive();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            !alive,
            "another process with the owner's pid is not the owner"
        );
        assert!(starttime.unwrap() > 1);
    }

    #[test]
    fn an_owner_from_another_boot_is_dead() {
        // This very process, as a journal written before a reboot that
        // reused its pid and start time would record it.
        let mut owner = Owner::this_process().unwrap();
        assert!(owner.is_alive());
        owner.boot_id = Some("00000000-0000-0000-0000-000000000000".into());
        assert!(!owner.is_alive());
        // A journal without a boot id falls back to pid and start time.
        owner.boot_id = None;
        assert!(owner.is_alive());
    }

    #[test]
    fn starttime_parsing() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let view = |line: &str| {
            Stat::parse(line.as_bytes())
                .as_ref()
                .and_then(ProcStat::from_stat)
        };
        assert_eq!(
            view(stat),
            Some(ProcStat {
                state: 'S',
                starttime: 98765
            })
        );
        assert_eq!(view("42 (x"), None);
        assert_eq!(view("42 (x) Z 1"), None);
        assert!(view(&stat.replace(" S ", " Z ")).unwrap().has_exited());
        assert!(read_starttime(std::process::id()).unwrap() > 0);
    }
}
