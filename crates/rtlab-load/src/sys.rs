//! Small Linux helpers: /proc parsing, process groups, signals, statfs.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rtlab_core::process::{self, Stat};

/// The fields of /proc/PID/stat a supervisor needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// utime + stime in clock ticks.
    pub cpu_ticks: u64,
}

/// Parses one /proc/PID/stat line (the command may hold spaces and ')').
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    from_stat(&Stat::parse(text.as_bytes())?)
}

fn from_stat(stat: &Stat) -> Option<ProcStat> {
    Some(ProcStat {
        pid: stat.id()?,
        state: stat.state()?,
        ppid: stat.number(process::PPID)?,
        pgrp: stat.number(process::PGRP)?,
        cpu_ticks: stat.number::<u64>(process::UTIME)? + stat.number::<u64>(process::STIME)?,
    })
}

/// Read as bytes (by [`Stat`]): a process's name is any bytes its user
/// picked (and the kernel cuts it at 15 bytes, even inside a character),
/// and a name that is not UTF-8 must not hide the process from its group's
/// cleanup. Only the fields after the last ')' are parsed, so the name is
/// harmless.
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    from_stat(&Stat::of(u32::try_from(pid).ok()?).ok()?)
}

/// Every process in /proc (threads are not listed there).
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_stat)
        .collect()
}

/// Live (not zombie) processes of a process group.
pub fn group_members(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid && p.state != 'Z' && p.state != 'X')
        .map(|p| p.pid)
        .collect()
}

/// Sends `signal` to one process of `pgid` without the risk of hitting a
/// recycled pid: the process is pinned with a pidfd, then checked to still
/// be in the group, then signalled through the pidfd.
pub fn signal_member(pid: i32, pgid: i32, signal: i32) {
    signal_pinned(pid, signal, || {
        proc_stat(pid).is_some_and(|p| p.pgrp == pgid)
    });
}

/// Sends `signal` to `pid` if `still_ours()` says, once the pid is pinned
/// with a pidfd, that it is still the process meant; signalled through the
/// pidfd, so a recycled pid is never hit. Without pidfds (kernel < 5.3) it
/// checks and signals by pid.
pub fn signal_pinned(pid: i32, signal: i32, still_ours: impl Fn() -> bool) {
    // SAFETY: plain syscalls on integers.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if fd < 0 {
            // No pidfd (kernel < 5.3): check and signal by pid.
            if still_ours() {
                libc::kill(pid, signal);
            }
            return;
        }
        if still_ours() {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
        libc::close(fd);
    }
}

/// kill(-pgid, signal); errors (ESRCH: group empty) are ignored.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: plain syscall; pgid > 1 so this never means "every process".
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Waits until `pid` (a child of ours) has exited, without reaping it, so
/// that its pid (and process group id) cannot be reused meanwhile.
pub fn wait_exited_nowait(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if exited_nowait(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether our child `pid` has exited (it stays a zombie for us to reap).
pub fn exited_nowait(pid: i32) -> bool {
    exit_nowait(pid).is_some()
}

/// How our child `pid` ended ("exited with status 1", "killed by signal 9
/// (SIGKILL)"), None while it runs; it stays a zombie for us to reap.
pub fn exit_nowait(pid: i32) -> Option<String> {
    // SAFETY: info is a valid out-parameter.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if rc != 0 {
            // ECHILD: already reaped or not ours; either way gone.
            return Some("ended".into());
        }
        if info.si_pid() == 0 {
            return None;
        }
        let status = info.si_status();
        Some(match info.si_code {
            libc::CLD_EXITED => format!("exited with status {status}"),
            _ => format!("killed by signal {status} ({})", signal_name(status)),
        })
    }
}

/// The statfs `f_type` (filesystem magic) of `path`.
pub fn fs_type(path: &Path) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: c is NUL-terminated, buf a valid out-parameter.
    unsafe {
        let mut buf: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut buf) != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast)]
        Some(buf.f_type as i64)
    }
}

const TMPFS_MAGIC: i64 = 0x0102_1994;

pub fn is_tmpfs(path: &Path) -> bool {
    fs_type(path) == Some(TMPFS_MAGIC)
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub root: String,
    pub super_options: String,
}

impl Mount {
    /// Where a cgroup shown as `path` (in /proc/PID/cgroup) lies under this
    /// mount: `path` taken relative to the mount's root.
    pub fn cgroup_dir(&self, path: &str) -> PathBuf {
        let rel = path.trim_start_matches('/');
        let root = self.root.trim_start_matches('/');
        let rel = rel
            .strip_prefix(root)
            .unwrap_or(rel)
            .trim_start_matches('/');
        self.mount_point.join(rel)
    }
}

pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            Some(Mount {
                root: unescape_mount(left.get(3)?),
                mount_point: PathBuf::from(unescape_mount(left.get(4)?)),
                fs_type: right.first()?.to_string(),
                super_options: right.get(2).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

pub fn mounts() -> Vec<Mount> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// mountinfo writes space, tab, newline and backslash as \040 etc.
fn unescape_mount(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let oct = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// /proc/meminfo as bytes by key (`MemTotal`, `MemAvailable`, ...).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, rest) = line.split_once(':')?;
            let mut parts = rest.split_whitespace();
            let value: u64 = parts.next()?.parse().ok()?;
            let scale = match parts.next() {
                Some("kB") => 1024,
                _ => 1,
            };
            Some((key.to_string(), value * scale))
        })
        .collect()
}

/// CPU time used by this process and its reaped children, µs: (user, system).
pub fn cpu_time_us() -> (u64, u64) {
    let mut user = 0;
    let mut system = 0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: usage is a valid out-parameter.
        unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(who, &mut usage) == 0 {
                user += usage.ru_utime.tv_sec as u64 * 1_000_000 + usage.ru_utime.tv_usec as u64;
                system += usage.ru_stime.tv_sec as u64 * 1_000_000 + usage.ru_stime.tv_usec as u64;
            }
        }
    }
    (user, system)
}

/// The online CPUs as an affinity mask.
pub fn online_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET is bounds-checked below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        for cpu in rtlab_core::cpuset::CpuSet::online().iter() {
            if cpu < max {
                libc::CPU_SET(cpu, &mut set);
            }
        }
        set
    }
}

/// Between fork and exec (async-signal-safe): an empty signal mask and the
/// default action for the signals a load is stopped with. Signal masks and
/// ignored signals are inherited across exec; a command that inherited a
/// blocked SIGTERM could only be stopped with SIGKILL.
pub fn reset_signals() {
    // SAFETY: sigemptyset/sigprocmask/signal are async-signal-safe.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        for s in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(s, libc::SIG_DFL);
        }
    }
}

pub fn page_size() -> usize {
    // SAFETY: plain sysconf.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

pub fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// "exited with status 1" / "killed by signal 9 (SIGKILL)".
pub fn describe_wait_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        format!("killed by signal {sig} ({})", signal_name(sig))
    } else {
        format!("ended with wait status {status}")
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names() {
        let line = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.pid, 1234);
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.pgrp, 1234);
        assert_eq!(stat.cpu_ticks, 10);
        let me = proc_stat(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
    }

    #[test]
    fn a_process_with_a_name_that_is_not_utf8_is_found_in_its_group() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link)
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Until it has exec'd under its new name.
        let deadline = Instant::now() + Duration::from_secs(30);
        let named = |stat: Vec<u8>| stat.windows(8).any(|w| w == b"(sl\xffeep)");
        while !named(std::fs::read(format!("/proc/{pid}/stat")).unwrap()) {
            assert!(Instant::now() < deadline, "{pid} never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        let stat = proc_stat(pid);
        let members = group_members(pid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(stat.map(|s| s.pgrp), Some(pid));
        assert_eq!(members, vec![pid]);
    }

    #[test]
    fn mountinfo_lines() {
        let text = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    23 22 0:21 / /proc rw - proc proc rw\n\
                    30 22 0:40 / /mnt/with\\040space rw - tmpfs tmpfs rw,size=1k\n";
        let mounts = parse_mountinfo(text);
        assert_eq!(mounts.len(), 3);
        assert_eq!(mounts[1].fs_type, "proc");
        assert_eq!(mounts[2].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(mounts[0].super_options, "rw");
    }

    #[test]
    fn meminfo_in_bytes() {
        let info = parse_meminfo(
            "MemTotal:       16384 kB\nMemAvailable:    8192 kB\nHugePages_Total: 0\n",
        );
        assert_eq!(info["MemTotal"], 16384 * 1024);
        assert_eq!(info["MemAvailable"], 8192 * 1024);
        assert_eq!(info["HugePages_Total"], 0);
    }

    #[test]
    fn wait_statuses() {
        assert_eq!(describe_wait_status(1 << 8), "exited with status 1");
        assert_eq!(describe_wait_status(9), "killed by signal 9 (SIGKILL)");
    }
}
