//! Which threads ran on the watched CPUs, and for how long: every second
//! the thread list is read again (each task's `stat`: its CPU, policy and
//! priority) and the threads worth watching are kept open (real-time
//! threads anywhere, since they can move; threads last seen on a watched
//! CPU; the probe's own threads); every window reads only their
//! `schedstat` (CPU time and time spent waiting to run), and the `stat`
//! of those that ran, to learn where. A thread that moves onto a watched
//! CPU between two scans is seen from the next scan on; a probe thread
//! preempted, or kept waiting to run, calls the next scan at once (at most every 200 ms), and a
//! thread born since the last scan counts all its run time, so a new
//! real-time thread is named at its first stall.

use super::settings::{DEFAULT_RESCAN_NS, MAX_WATCHED_THREADS, PREEMPTED_RESCAN_NS};
use super::window::{CpuWindow, ThreadDelta};
use rtlab_core::process::{Stat, POLICY, PPID, RT_PRIORITY};
use rtlab_core::sched::Policy;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A probe thread that waited this long to run in a window makes the
/// thread list be read again at once.
const PROBE_WAIT_NS: u64 = 100_000;

/// Field 39 of a stat line (proc(5)): the CPU the task last ran on.
const PROCESSOR: usize = 39;

/// A measuring thread of the probe: its CPU and thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeThread {
    pub cpu: usize,
    pub tid: u32,
}

/// What a stat line says of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskInfo {
    name: Arc<str>,
    ppid: u32,
    cpu: usize,
    policy: Policy,
    priority: u32,
}

fn task_info(stat: &Stat) -> Option<TaskInfo> {
    let policy = Policy::from_kernel(stat.number(POLICY)?).unwrap_or(Policy::Other);
    Some(TaskInfo {
        name: Arc::from(String::from_utf8_lossy(stat.comm()).as_ref()),
        ppid: stat.number(PPID)?,
        cpu: stat.number(PROCESSOR)?,
        policy,
        priority: stat.number(RT_PRIORITY)?,
    })
}

/// `run_ns wait_ns timeslices` of a schedstat file.
pub fn parse_schedstat(text: &[u8]) -> Option<(u64, u64)> {
    let mut fields = text
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// `nonvoluntary_ctxt_switches` of a status file.
pub fn parse_involuntary(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// Scans at most this share of the time (1/N): a scan reads every
/// thread's stat, and another user's thread bomb must not keep the witness
/// scanning instead of reading its windows.
const SCAN_SHARE: u64 = 10;

/// Whether the thread list is read again `since_ns` after the last read,
/// which took `cost_ns`: every second, or soon after a probe thread was
/// `preempted`, but never more than [`SCAN_SHARE`] of the time.
fn scan_due(since_ns: u64, preempted: bool, cost_ns: u64) -> bool {
    let due = since_ns >= DEFAULT_RESCAN_NS || (preempted && since_ns >= PREEMPTED_RESCAN_NS);
    due && since_ns >= cost_ns.saturating_mul(SCAN_SHARE)
}

struct Watched {
    pid: u32,
    tid: u32,
    info: TaskInfo,
    /// The probe thread's CPU, for the probe's own threads.
    probe_cpu: Option<usize>,
    stat: File,
    schedstat: File,
    /// The probe's threads only: their involuntary switches.
    status: Option<File>,
    last_run: u64,
    last_wait: u64,
    last_involuntary: u64,
    /// The scan that last listed the thread.
    scan: u64,
}

fn read_at<'a>(file: &File, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let mut len = 0;
    loop {
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) => return Some(&buf[..len]),
            Ok(n) => {
                len += n;
                if len == buf.len() {
                    return Some(&buf[..len]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// The threads watched and their last readings.
pub struct ThreadWatch {
    proc_root: PathBuf,
    cpus: Vec<usize>,
    /// The witness's own thread: not watched.
    own_tid: u32,
    /// rtlab's own process: its real-time threads and those of its
    /// children (the switch probe's partner task, the executive's task
    /// processes) are the measurement's, not interference.
    own_pid: u32,
    threads: HashMap<u32, Watched>,
    scans: u64,
    /// Every thread id the last scan listed: one not among them is new.
    listed: HashSet<u32>,
    last_scan_ns: u64,
    /// How long the last scan took, ns: thousands of threads make a scan
    /// long, and scans are then spaced out (see [`scan_due`]).
    scan_cost_ns: u64,
    /// The most threads worth watching that a scan left unopened because
    /// [`MAX_WATCHED_THREADS`] were open already.
    pub unwatched: usize,
    buf: Vec<u8>,
}

impl ThreadWatch {
    /// Watches `cpus` under `proc_root` (`/proc`), the probe's threads
    /// among them; `own_tid` is never watched.
    pub fn new(proc_root: &Path, cpus: &[usize], probe: &[ProbeThread], own_tid: u32) -> Self {
        let mut watch = ThreadWatch {
            proc_root: proc_root.to_path_buf(),
            cpus: cpus.to_vec(),
            own_tid,
            own_pid: std::process::id(),
            threads: HashMap::new(),
            scans: 0,
            listed: HashSet::new(),
            last_scan_ns: rtlab_core::clock::now_ns(),
            scan_cost_ns: 0,
            unwatched: 0,
            buf: vec![0; 4096],
        };
        for thread in probe {
            // /proc/TID names any thread, listed or not.
            let dir = proc_root
                .join(thread.tid.to_string())
                .join("task")
                .join(thread.tid.to_string());
            if let Some(mut watched) = watch.open(&dir, thread.tid, thread.tid) {
                watched.probe_cpu = Some(thread.cpu);
                watched.status = File::open(dir.join("status")).ok();
                watched.last_involuntary = watched
                    .status
                    .as_ref()
                    .and_then(|f| read_at(f, &mut watch.buf))
                    .and_then(parse_involuntary)
                    .unwrap_or(0);
                watch.threads.insert(thread.tid, watched);
            }
        }
        watch.rescan();
        watch
    }

    /// Threads watched now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.threads.len()
    }

    fn open(&mut self, dir: &Path, pid: u32, tid: u32) -> Option<Watched> {
        let stat = File::open(dir.join("stat")).ok()?;
        let schedstat = File::open(dir.join("schedstat")).ok()?;
        let info = read_at(&stat, &mut self.buf)
            .and_then(Stat::parse)
            .and_then(|s| task_info(&s))?;
        let (last_run, last_wait) = read_at(&schedstat, &mut self.buf).and_then(parse_schedstat)?;
        Some(Watched {
            pid,
            tid,
            info,
            probe_cpu: None,
            stat,
            schedstat,
            status: None,
            last_run,
            last_wait,
            last_involuntary: 0,
            scan: self.scans,
        })
    }

    fn worth_watching(&self, info: &TaskInfo) -> bool {
        info.policy.is_realtime() || self.cpus.contains(&info.cpu)
    }

    /// Whether one more thread (real-time or not) may be opened: below
    /// [`MAX_WATCHED_THREADS`] others, or, for a real-time thread, once a
    /// thread of another policy was let go for it.
    fn make_room(&mut self, realtime: bool) -> bool {
        let others = self.threads.values().filter(|t| t.probe_cpu.is_none());
        if others.count() < MAX_WATCHED_THREADS {
            return true;
        }
        let not_rt = self
            .threads
            .values()
            .find(|t| t.probe_cpu.is_none() && !t.info.policy.is_realtime())
            .map(|t| t.tid);
        match not_rt {
            Some(tid) if realtime => {
                self.threads.remove(&tid);
                true
            }
            _ => false,
        }
    }

    /// Reads the thread list again: new threads worth watching are
    /// opened, threads gone or no longer worth it are let go.
    pub fn rescan(&mut self) {
        self.scans += 1;
        let Ok(processes) = std::fs::read_dir(&self.proc_root) else {
            return;
        };
        let mut listed = HashSet::with_capacity(self.listed.len() + 16);
        let mut unwatched = 0;
        for process in processes.flatten() {
            let Some(pid) = process
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(tasks) = std::fs::read_dir(process.path().join("task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let Some(tid) = task
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                if tid == self.own_tid {
                    continue;
                }
                listed.insert(tid);
                if let Some(known) = self.threads.get_mut(&tid) {
                    known.scan = self.scans;
                    continue;
                }
                let info = Stat::read(&task.path().join("stat"))
                    .ok()
                    .and_then(|s| task_info(&s));
                let Some(info) = info.filter(|i| self.worth_watching(i)) else {
                    continue;
                };
                if !self.make_room(info.policy.is_realtime()) {
                    unwatched += 1;
                    continue;
                }
                if let Some(mut watched) = self.open(&task.path(), pid, tid) {
                    if self.scans > 1 && !self.listed.contains(&tid) {
                        // Born since the last scan: all it ran, it ran in
                        // the run.
                        (watched.last_run, watched.last_wait) = (0, 0);
                    }
                    self.threads.insert(tid, watched);
                }
            }
        }
        self.listed = listed;
        self.unwatched = self.unwatched.max(unwatched);
        let scans = self.scans;
        let cpus = self.cpus.clone();
        self.threads.retain(|_, t| {
            t.probe_cpu.is_some()
                || (t.scan == scans && (t.info.policy.is_realtime() || cpus.contains(&t.info.cpu)))
        });
    }

    /// Adds to `windows` (one per watched CPU) what each watched thread
    /// did since the last read: the probe threads' involuntary switches,
    /// and every other thread that ran or waited on a watched CPU. Reads
    /// the thread list again first when it is due, or when a probe thread
    /// was preempted. `now_ns` is the read's time.
    pub fn read_into(&mut self, windows: &mut [CpuWindow], now_ns: u64) {
        let mut gone = Vec::new();
        let mut preempted = false;
        for watched in self.threads.values_mut().filter(|t| t.probe_cpu.is_some()) {
            let now = watched
                .status
                .as_ref()
                .and_then(|f| read_at(f, &mut self.buf))
                .and_then(parse_involuntary);
            let cpu = watched.probe_cpu.unwrap_or(usize::MAX);
            if let (Some(now), Some(window)) = (now, windows.iter_mut().find(|w| w.cpu == cpu)) {
                let rose = now.saturating_sub(watched.last_involuntary);
                window.probe_preempted += rose;
                preempted |= rose > 0;
                watched.last_involuntary = now;
            }
            // A probe thread that waited runnable (woken, but another
            // thread held its CPU) is as telling as one preempted.
            if let Some((run, wait)) =
                read_at(&watched.schedstat, &mut self.buf).and_then(parse_schedstat)
            {
                preempted |= wait.saturating_sub(watched.last_wait) >= PROBE_WAIT_NS;
                (watched.last_run, watched.last_wait) = (run, wait);
            }
        }
        let since = now_ns.saturating_sub(self.last_scan_ns);
        if scan_due(since, preempted, self.scan_cost_ns) {
            let start = rtlab_core::clock::now_ns();
            self.rescan();
            self.scan_cost_ns = rtlab_core::clock::now_ns().saturating_sub(start);
            self.last_scan_ns = now_ns;
        }
        for watched in self.threads.values_mut().filter(|t| t.probe_cpu.is_none()) {
            let Some((run, wait)) =
                read_at(&watched.schedstat, &mut self.buf).and_then(parse_schedstat)
            else {
                gone.push(watched.tid);
                continue;
            };
            let ran_ns = run.saturating_sub(watched.last_run);
            let waited_ns = wait.saturating_sub(watched.last_wait);
            (watched.last_run, watched.last_wait) = (run, wait);
            let ours = watched.pid == self.own_pid || watched.info.ppid == self.own_pid;
            if (ran_ns == 0 && waited_ns == 0) || (ours && watched.info.policy.is_realtime()) {
                continue;
            }
            // Where it ran: its stat now (policy and priority may have
            // changed too).
            if let Some(info) = read_at(&watched.stat, &mut self.buf)
                .and_then(Stat::parse)
                .and_then(|s| task_info(&s))
            {
                watched.info = info;
            }
            if let Some(window) = windows.iter_mut().find(|w| w.cpu == watched.info.cpu) {
                window.threads.push(ThreadDelta {
                    name: Arc::clone(&watched.info.name),
                    pid: watched.pid,
                    tid: watched.tid,
                    policy: watched.info.policy,
                    priority: watched.info.priority,
                    ran_ns,
                    waited_ns,
                });
            }
        }
        for tid in gone {
            self.threads.remove(&tid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_and_status_are_read() {
        assert_eq!(parse_schedstat(b"123 456 7\n"), Some((123, 456)));
        assert_eq!(parse_schedstat(b"123\n"), None);
        let status = b"Name:\tx\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_involuntary(status), Some(3));
        assert_eq!(parse_involuntary(b"Name: x\n"), None);
    }

    /// A copy of /proc's shape with one task per process.
    fn fake_task(root: &Path, pid: u32, comm: &str, cpu: usize, policy: u32, prio: u32) {
        let dir = root
            .join(pid.to_string())
            .join("task")
            .join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let mut fields = vec!["0".to_string(); 41 - 2];
        fields[0] = "S".into();
        fields[PROCESSOR - 3] = cpu.to_string();
        fields[RT_PRIORITY - 3] = prio.to_string();
        fields[POLICY - 3] = policy.to_string();
        std::fs::write(
            dir.join("stat"),
            format!("{pid} ({comm}) {}\n", fields.join(" ")),
        )
        .unwrap();
        std::fs::write(dir.join("schedstat"), "1000 10 1\n").unwrap();
    }

    #[test]
    fn long_scans_are_spaced_out() {
        assert!(scan_due(DEFAULT_RESCAN_NS, false, 1_000_000));
        assert!(!scan_due(DEFAULT_RESCAN_NS - 1, false, 0));
        assert!(scan_due(PREEMPTED_RESCAN_NS, true, 1_000_000));
        // A scan of a thread bomb that took 150 ms: the next not before 1.5 s.
        assert!(!scan_due(PREEMPTED_RESCAN_NS, true, 150_000_000));
        assert!(!scan_due(DEFAULT_RESCAN_NS, false, 150_000_000));
        assert!(scan_due(1_500_000_000, false, 150_000_000));
        assert!(!scan_due(u64::MAX - 1, false, u64::MAX), "no overflow");
    }

    #[test]
    fn a_thread_bomb_on_a_watched_cpu_is_watched_within_the_bound_and_rt_threads_first() {
        let root = tempfile::tempdir().unwrap();
        let bomb = MAX_WATCHED_THREADS as u32 + 50;
        for pid in 1000..1000 + bomb {
            fake_task(root.path(), pid, "bomb", 0, 0, 0);
        }
        let mut watch = ThreadWatch::new(root.path(), &[0], &[], 0);
        assert_eq!(watch.len(), MAX_WATCHED_THREADS, "two files per thread");
        assert_eq!(watch.unwatched, 50);
        // A real-time hog started after the bomb still takes a place.
        fake_task(root.path(), 5000, "hog", 0, 1, 99);
        watch.rescan();
        assert_eq!(watch.len(), MAX_WATCHED_THREADS);
        assert!(watch.threads.contains_key(&5000), "the RT hog is watched");
    }

    #[test]
    fn threads_on_watched_cpus_and_rt_threads_are_watched_and_report_their_run() {
        let root = tempfile::tempdir().unwrap();
        fake_task(root.path(), 100, "on-cpu1", 1, 0, 0);
        fake_task(root.path(), 101, "on-cpu0", 0, 0, 0);
        fake_task(root.path(), 102, "rt ) (anywhere", 0, 1, 95);
        let mut watch = ThreadWatch::new(root.path(), &[1], &[], 0);
        assert_eq!(watch.len(), 2);
        let task = |pid: u32| root.path().join(format!("{pid}/task/{pid}"));
        std::fs::write(task(100).join("schedstat"), "3000 10 2\n").unwrap();
        std::fs::write(task(101).join("schedstat"), "9000 10 2\n").unwrap();
        // The RT thread moved onto CPU 1 and ran there.
        fake_task(root.path(), 102, "rt ) (anywhere", 1, 1, 95);
        std::fs::write(task(102).join("schedstat"), "5000 510 2\n").unwrap();
        let mut windows = vec![CpuWindow {
            cpu: 1,
            ..CpuWindow::default()
        }];
        watch.read_into(&mut windows, 0);
        let mut seen: Vec<(String, u64, u64, Policy)> = windows[0]
            .threads
            .iter()
            .map(|t| (t.name.to_string(), t.ran_ns, t.waited_ns, t.policy))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            vec![
                ("on-cpu1".into(), 2000, 0, Policy::Other),
                ("rt ) (anywhere".into(), 4000, 500, Policy::Fifo),
            ]
        );
        // A thread that is gone (its files unreadable) is let go.
        std::fs::write(task(100).join("schedstat"), "").unwrap();
        watch.read_into(&mut windows, 0);
        assert_eq!(watch.len(), 1);
    }
}
