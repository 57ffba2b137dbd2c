//! The processes and threads of the machine as /proc shows them: what
//! `rtlab tune show` prints and what rules are matched against.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{DeadlineParams, Policy};
use serde::Serialize;
use std::fmt;
use std::io;

/// The kernel's PF_KTHREAD flag in /proc/PID/stat's `flags` field.
const PF_KTHREAD: u32 = 0x0020_0000;

/// A thread's identity: its id and the time it started (clock ticks after
/// boot). The kernel reuses ids; the pair names one thread for the life of
/// the boot, so a reused id is never mistaken for the thread it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ThreadId {
    pub tid: i32,
    pub starttime: u64,
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.tid)
    }
}

/// One thread (a process is its main thread, `tid == pid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub pid: i32,
    pub tid: i32,
    pub starttime: u64,
    /// The thread's name (`comm`, at most 15 bytes).
    pub name: String,
    /// The name of the process the thread belongs to.
    pub process_name: String,
    /// The process's command line, arguments joined by spaces; empty for
    /// kernel threads and zombies.
    pub cmdline: String,
    pub kernel_thread: bool,
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 otherwise.
    pub priority: u32,
    pub nice: i64,
    /// CPU list in the kernel's notation, e.g. `0-1`.
    pub affinity: String,
    /// The CPU the thread last ran on.
    pub cpu: Option<i32>,
    pub voluntary_switches: Option<u64>,
    pub involuntary_switches: Option<u64>,
}

impl Task {
    pub fn id(&self) -> ThreadId {
        ThreadId {
            tid: self.tid,
            starttime: self.starttime,
        }
    }
}

/// How much of a thread to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything `tune show` prints.
    Full,
    /// What rules match on: names, the kernel-thread flag and (when a rule
    /// needs it) the command line; no affinity or switch counts. A watch
    /// reads this for every fork and exec on the machine, and reading a
    /// command line takes the process's memory lock.
    Matching { cmdline: bool },
}

impl Detail {
    fn cmdline(self) -> bool {
        matches!(self, Detail::Full | Detail::Matching { cmdline: true })
    }
}

/// Every thread of every process. Processes and threads that end while
/// being read are skipped: /proc is a moving picture.
pub fn scan() -> io::Result<Vec<Task>> {
    scan_with(Detail::Full)
}

/// [`scan`], reading `detail` of each thread.
pub fn scan_with(detail: Detail) -> io::Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for process in procfs::process::all_processes().map_err(to_io)? {
        let Ok(process) = process else { continue };
        let Ok(main) = process.stat() else { continue };
        let cmdline = read_cmdline(&process, detail);
        let Ok(threads) = process.tasks() else {
            continue;
        };
        for thread in threads.flatten() {
            if let Some(task) = read_thread(&thread, &main.comm, &cmdline, detail) {
                tasks.push(task);
            }
        }
    }
    tasks.sort_by_key(|t| (t.pid, t.tid));
    Ok(tasks)
}

/// The threads of one process (empty when it has gone).
pub fn threads_of(pid: i32, detail: Detail) -> Vec<Task> {
    let Ok(process) = procfs::process::Process::new(pid) else {
        return Vec::new();
    };
    let Ok(main) = process.stat() else {
        return Vec::new();
    };
    let cmdline = read_cmdline(&process, detail);
    let Ok(threads) = process.tasks() else {
        return Vec::new();
    };
    let mut tasks: Vec<Task> = threads
        .flatten()
        .filter_map(|thread| read_thread(&thread, &main.comm, &cmdline, detail))
        .collect();
    tasks.sort_by_key(|t| t.tid);
    tasks
}

/// One thread by id, with its process (None when it has gone).
pub fn thread(pid: i32, tid: i32, detail: Detail) -> Option<Task> {
    let process = procfs::process::Process::new(pid).ok()?;
    let main = process.stat().ok()?;
    let cmdline = read_cmdline(&process, detail);
    let thread = process.task_from_tid(tid).ok()?;
    read_thread(&thread, &main.comm, &cmdline, detail)
}

fn read_cmdline(process: &procfs::process::Process, detail: Detail) -> String {
    if !detail.cmdline() {
        return String::new();
    }
    process
        .read::<_, Lossy<Cmdline>>("cmdline")
        .map(|args| args.0 .0.join(" "))
        .unwrap_or_default()
}

/// A /proc file read as bytes and parsed with what is not UTF-8 replaced:
/// a process's name and command line are whatever bytes its user chose
/// (and the kernel cuts a name at 15 bytes, even inside a character).
/// procfs reads `status` and `cmdline` as text, so such a process would
/// have no affinity, no switch counts and an empty command line (which no
/// `cmdline` rule matches).
struct Lossy<T>(T);

impl<T: procfs::FromRead> procfs::FromRead for Lossy<T> {
    fn from_read<R: io::Read>(mut r: R) -> procfs::ProcResult<Self> {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes)?;
        T::from_read(String::from_utf8_lossy(&bytes).as_bytes()).map(Lossy)
    }
}

/// /proc/PID/cmdline: the arguments.
struct Cmdline(Vec<String>);

impl procfs::FromRead for Cmdline {
    fn from_read<R: io::Read>(mut r: R) -> procfs::ProcResult<Self> {
        let mut text = String::new();
        r.read_to_string(&mut text)?;
        Ok(Cmdline(
            text.split('\0')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect(),
        ))
    }
}

/// The start time of thread `tid` now, or None when no such thread exists.
pub fn starttime_of(tid: i32) -> Option<u64> {
    // /proc/TID works for any thread id, not only process ids.
    rtlab_core::process::Stat::of(u32::try_from(tid).ok()?)
        .ok()?
        .starttime()
}

fn read_thread(
    thread: &procfs::process::Task,
    process_name: &str,
    cmdline: &str,
    detail: Detail,
) -> Option<Task> {
    let stat = thread.stat().ok()?;
    let status = match detail {
        Detail::Full => thread
            .read::<_, Lossy<procfs::process::Status>>("status")
            .ok()
            .map(|s| s.0),
        Detail::Matching { .. } => None,
    };
    let policy = stat
        .policy
        .and_then(Policy::from_kernel)
        .unwrap_or(Policy::Other);
    let affinity = status
        .as_ref()
        .and_then(|s| s.cpus_allowed_list.as_ref())
        .map(|ranges| {
            let cpus = ranges
                .iter()
                .flat_map(|&(lo, hi)| lo as usize..=hi as usize)
                .collect();
            CpuSet::from_cpus(cpus).to_string()
        })
        .unwrap_or_default();
    Some(Task {
        pid: thread.pid,
        tid: thread.tid,
        starttime: stat.starttime,
        name: stat.comm.clone(),
        process_name: process_name.to_string(),
        cmdline: cmdline.to_string(),
        kernel_thread: stat.flags & PF_KTHREAD != 0,
        policy,
        priority: stat.rt_priority.unwrap_or(0),
        nice: stat.nice,
        affinity,
        cpu: stat.processor,
        voluntary_switches: status.as_ref().and_then(|s| s.voluntary_ctxt_switches),
        involuntary_switches: status.as_ref().and_then(|s| s.nonvoluntary_ctxt_switches),
    })
}

fn to_io(e: procfs::ProcError) -> io::Error {
    io::Error::other(e.to_string())
}

/// What a thread's scheduling is or should be: the fields `rtlab tune`
/// sets, journals and restores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Settings {
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 otherwise.
    pub priority: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineParams>,
    /// Kept across a real-time spell by the kernel, so restored with it.
    #[serde(default)]
    pub nice: i32,
    pub reset_on_fork: bool,
    /// CPU list in the kernel's notation.
    pub affinity: String,
}

impl Settings {
    /// Thread `tid`'s settings now, from the kernel.
    pub fn read(tid: i32) -> io::Result<Settings> {
        let sched = rtlab_core::sched::thread_sched(tid)?;
        let affinity = rtlab_core::sched::thread_affinity(tid)?;
        Ok(Settings {
            policy: sched.params.policy,
            priority: sched.params.priority,
            deadline: sched.params.deadline,
            nice: sched.nice,
            reset_on_fork: sched.reset_on_fork,
            affinity: affinity.to_string(),
        })
    }

    /// Gives thread `tid` these settings. The kernel refuses SCHED_DEADLINE
    /// to a thread whose affinity is narrower than its root domain, and
    /// refuses to narrow a deadline thread's affinity, so the affinity goes
    /// first when the target is deadline and last otherwise (then a failed
    /// policy change also leaves the affinity alone).
    pub fn write(&self, tid: i32) -> Result<(), WriteError> {
        let cpus = CpuSet::parse(&self.affinity).map_err(|e| WriteError {
            call: "sched_setaffinity",
            tid,
            what: format!("cpus {}", self.affinity),
            source: io::Error::new(io::ErrorKind::InvalidInput, e.to_string()),
        })?;
        let set_affinity = || -> Result<(), WriteError> {
            let err = |source| WriteError {
                call: "sched_setaffinity",
                tid,
                what: format!("cpus {cpus}"),
                source,
            };
            if rtlab_core::sched::thread_affinity(tid).map_err(err)? != cpus {
                rtlab_core::sched::set_thread_affinity(tid, &cpus).map_err(err)?;
            }
            Ok(())
        };
        let set_sched = || {
            rtlab_core::sched::set_thread(tid, &self.sched()).map_err(|source| WriteError {
                call: "sched_setattr",
                tid,
                what: self.sched().params.to_string(),
                source,
            })
        };
        if self.policy == Policy::Deadline {
            set_affinity()?;
            set_sched()
        } else {
            set_sched()?;
            set_affinity()
        }
    }

    pub fn sched(&self) -> rtlab_core::sched::ThreadSched {
        rtlab_core::sched::ThreadSched {
            params: rtlab_core::sched::SchedParams {
                policy: self.policy,
                priority: self.priority,
                deadline: self.deadline,
            },
            reset_on_fork: self.reset_on_fork,
            nice: self.nice,
        }
    }
}

/// A system call that refused a change, with what was asked of it.
#[derive(Debug, thiserror::Error)]
#[error("{call}(tid {tid}, {what}): {source}")]
pub struct WriteError {
    pub call: &'static str,
    pub tid: i32,
    pub what: String,
    #[source]
    pub source: io::Error,
}

impl WriteError {
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

/// The CPUs thread `tid`'s cpuset allows (the kernel narrows any affinity
/// to them), or all online CPUs when that cannot be read.
pub fn allowed_cpus(tid: i32) -> CpuSet {
    cpuset_cpus(tid).unwrap_or_else(CpuSet::online)
}

fn cpuset_cpus(tid: i32) -> Option<CpuSet> {
    let cgroups = std::fs::read_to_string(format!("/proc/{tid}/cgroup")).ok()?;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        let (base, file) = if controllers.split(',').any(|c| c == "cpuset") {
            ("/sys/fs/cgroup/cpuset", "cpuset.effective_cpus")
        } else if controllers.is_empty() {
            ("/sys/fs/cgroup", "cpuset.cpus.effective")
        } else {
            continue;
        };
        // A cgroup without the controller enabled takes its parent's CPUs.
        let mut dir = std::path::Path::new(base).join(path);
        loop {
            if let Ok(cpus) = CpuSet::from_sysfs(&dir.join(file)) {
                if !cpus.is_empty() {
                    return Some(cpus);
                }
            }
            if dir.as_path() == std::path::Path::new(base) || !dir.pop() {
                break;
            }
        }
    }
    None
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.sched().params)?;
        if !self.policy.is_realtime() && self.nice != 0 {
            write!(f, " nice {}", self.nice)?;
        }
        write!(f, ", cpus {}", self.affinity)?;
        if self.reset_on_fork {
            write!(f, ", reset-on-fork")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_sees_this_process_and_its_threads() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let helper = std::thread::Builder::new()
            .name("scan-probe".into())
            .spawn(move || {
                let _ = rx.recv();
            })
            .unwrap();
        let pid = std::process::id() as i32;
        let tasks = scan().unwrap();
        let mine: Vec<&Task> = tasks.iter().filter(|t| t.pid == pid).collect();
        assert!(mine.iter().any(|t| t.tid == pid));
        assert!(mine.iter().any(|t| t.name == "scan-probe"));
        assert!(mine
            .iter()
            .all(|t| !t.kernel_thread && !t.cmdline.is_empty()));
        // kthreadd (pid 2) is a kernel thread wherever /proc shows it.
        if let Some(kthreadd) = tasks.iter().find(|t| t.pid == 2) {
            assert!(kthreadd.kernel_thread);
        }
        // Other tests' threads come and go in this process: look for ours.
        assert!(threads_of(pid, Detail::Full)
            .iter()
            .any(|t| t.name == "scan-probe"));
        drop(tx);
        helper.join().unwrap();
    }

    #[test]
    fn own_settings_read_back() {
        let settings = Settings::read(0).unwrap();
        assert!(!settings.affinity.is_empty());
        let me = thread(
            std::process::id() as i32,
            rtlab_core::sched::gettid(),
            Detail::Full,
        )
        .unwrap();
        assert_eq!(me.policy, settings.policy);
        assert_eq!(me.affinity, settings.affinity);
        assert_eq!(starttime_of(me.tid), Some(me.starttime));
    }
}
