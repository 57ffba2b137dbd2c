//! Other real-time threads that can take the CPU from a measuring thread.
//!
//! A thread at SCHED_FIFO/RR at or above a real-time measuring thread's
//! priority (or any SCHED_DEADLINE thread) that may run on its CPU
//! preempts it: whatever it runs shows up as latency, and two probes at
//! the default priority starve each other without a trace in either
//! result. Measuring threads that are not real-time have no rivals (see
//! `outranks` below). The runner looks for such threads when the probe
//! starts and again during the run, from its own SCHED_OTHER thread
//! (never from a measuring loop), and turns each one found into a warning
//! of the run.
//!
//! Everything is read from `/proc/PID/task/TID/stat` (state, parent,
//! flags, start time, `rt_priority` and `policy`: fields 3, 4, 9, 22, 40
//! and 41) and `/proc/PID/task/TID/status` (`Cpus_allowed_list`). Left
//! out: the threads of this process and of its descendants (rtlab's own
//! threads, its switch task process, its loads), exited threads, and the
//! per-CPU kernel threads `migration/N` and `watchdog/N` (stop class or
//! FIFO 99, idle almost always, one on every CPU whatever runs there: a
//! warning about them would be on every run and say nothing). Any other
//! kernel thread is listed: a threaded interrupt above the probe's
//! priority is exactly what this is for. The name (`comm`) is chosen by
//! whoever runs the thread, so it is shown without control characters.

use crate::cpuset::CpuSet;
use crate::process::{self, Stat};
use crate::result::Series;
use crate::sched::{Policy, SchedParams};
use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// `PF_KTHREAD` in the flags of /proc/PID/stat (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// Kernel threads never reported (see the module's documentation). Only
/// kernel threads (PF_KTHREAD) are matched: a user thread may call itself
/// `migration/0`.
const QUIET_KERNEL_THREADS: [&str; 2] = ["migration/", "watchdog/"];

/// At most this many rivals are warned about in one run, then one warning
/// says there are more and the run stops looking: threads that come and go
/// or change priority (each a warning of its own) must not grow a result
/// and its terminal output without bound.
pub const MAX_WARNED: usize = 20;

/// How far up the parent chain a process is looked for among this
/// process's descendants.
const MAX_ANCESTRY: usize = 64;

/// One measuring thread, as the rivals are judged against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// The CPUs the thread may run on.
    pub cpus: CpuSet,
    /// What it runs at.
    pub sched: SchedParams,
}

impl Watched {
    /// The measuring threads of a probe from its series: each series'
    /// thread at the policy the kernel reported (else the one requested),
    /// on the CPU it is pinned to, else its affinity, else `online`.
    /// Series of one thread give one entry.
    pub fn of_series(series: &[Series], online: &CpuSet) -> Vec<Watched> {
        let mut watched: Vec<Watched> = Vec::new();
        for s in series {
            let thread = &s.thread;
            let cpus = match (thread.pinned_cpu, s.cpu) {
                (Some(cpu), _) => CpuSet::from_cpus(vec![cpu]),
                _ if thread.tid > 0 => {
                    crate::sched::thread_affinity(thread.tid).unwrap_or_else(|_| online.clone())
                }
                (None, Some(cpu)) => CpuSet::from_cpus(vec![cpu]),
                (None, None) => online.clone(),
            };
            let entry = Watched {
                cpus,
                sched: thread.actual.unwrap_or(thread.requested),
            };
            if !watched.contains(&entry) {
                watched.push(entry);
            }
        }
        watched
    }
}

/// A thread that can preempt a measuring thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rival {
    pub pid: u32,
    pub tid: u32,
    /// Its name, control characters replaced by `?`.
    pub comm: String,
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 for deadline.
    pub priority: u32,
    /// Where it may run.
    pub cpus: CpuSet,
    /// The measuring threads' CPUs it may take.
    pub shared: CpuSet,
    /// The highest measuring priority it outranks, as `fifo 90`.
    pub outranks: String,
    /// Tells a reused tid from this thread.
    starttime: u64,
}

impl fmt::Display for Rival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sched = match self.policy {
            Policy::Deadline => "deadline".to_string(),
            policy => format!("{policy} {}", self.priority),
        };
        write!(f, "{sched} thread {:?} (pid {}", self.comm, self.pid)?;
        if self.tid != self.pid {
            write!(f, ", tid {}", self.tid)?;
        }
        write!(
            f,
            ", allowed on CPU{} {}) can preempt the measuring threads ({}) on CPU{} {}",
            if self.cpus.len() == 1 { "" } else { "s" },
            self.cpus,
            self.outranks,
            if self.shared.len() == 1 { "" } else { "s" },
            self.shared
        )
    }
}

/// Whether a thread at `policy`/`priority` preempts (or, at the same
/// priority, can keep the CPU from) a real-time thread at `victim`.
///
/// A measuring thread that is not real-time (`--policy other`, the
/// not-promoted cell of a campaign, or a promotion the kernel refused,
/// which has its own warning) is preempted by every real-time thread by
/// design: that is what such a run measures, and listing every threaded
/// interrupt would bury the warnings that matter. It has no rivals.
fn outranks(policy: Policy, priority: u32, victim: &SchedParams) -> bool {
    match (policy, victim.policy) {
        (_, Policy::Other | Policy::Batch | Policy::Idle) => false,
        // Deadline runs before every fifo/rr thread, and competes with
        // other deadline threads by deadline.
        (Policy::Deadline, _) => true,
        (Policy::Fifo | Policy::Rr, Policy::Deadline) => false,
        (Policy::Fifo | Policy::Rr, _) => priority >= victim.priority,
        _ => false,
    }
}

/// What /proc/PID/task/TID/stat says of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskStat {
    comm: String,
    state: char,
    ppid: u32,
    flags: u64,
    starttime: u64,
    rt_priority: u32,
    policy: u32,
}

/// The fields of a /proc/PID/task/TID/stat line a rival is judged by (see
/// [`Stat::parse`] for the name, which may hold spaces and parentheses).
fn parse_stat(stat: &Stat) -> Option<TaskStat> {
    Some(TaskStat {
        comm: printable(&String::from_utf8_lossy(stat.comm())),
        state: stat.state()?,
        ppid: stat.number(process::PPID)?,
        flags: stat.number(process::FLAGS)?,
        starttime: stat.starttime()?,
        rt_priority: stat.number(process::RT_PRIORITY)?,
        policy: stat.number(process::POLICY)?,
    })
}

/// `text` without control characters (each shown as `?`).
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// `Cpus_allowed_list` of a /proc status file.
fn parse_allowed_cpus(status: &str) -> Option<CpuSet> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuSet::parse(line.trim()).ok()
}

fn numeric_entries(dir: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Looks for rivals under a proc file system (`/proc`, or a copy of its
/// shape in tests), on behalf of process `own_pid`.
#[derive(Debug)]
pub struct RivalScan {
    proc_root: PathBuf,
    own_pid: u32,
    /// Already reported: (tid, start time, policy, priority).
    seen: HashSet<(u32, u64, u32, u32)>,
    /// [`MAX_WARNED`] warned about, and the last warning said so.
    done: bool,
}

impl Default for RivalScan {
    fn default() -> Self {
        RivalScan::new()
    }
}

impl RivalScan {
    /// For the calling process, in `/proc`.
    pub fn new() -> RivalScan {
        RivalScan::under(Path::new("/proc"), std::process::id())
    }

    pub fn under(proc_root: &Path, own_pid: u32) -> RivalScan {
        RivalScan {
            proc_root: proc_root.to_path_buf(),
            own_pid,
            seen: HashSet::new(),
            done: false,
        }
    }

    /// The rivals of `watched` not reported by an earlier call (a thread
    /// that changes its policy or priority is reported again).
    pub fn new_rivals(&mut self, watched: &[Watched]) -> Vec<Rival> {
        let rivals = self.scan(watched);
        rivals
            .into_iter()
            .filter(|r| {
                self.seen
                    .insert((r.tid, r.starttime, r.policy_raw(), r.priority))
            })
            .collect()
    }

    /// The warnings of the rivals of `watched` not warned about before,
    /// `when` saying when they were found (see [`Rival::warning`]); at
    /// most [`MAX_WARNED`] in all, then one saying there are more, then
    /// none.
    pub fn new_warnings(&mut self, watched: &[Watched], when: &str) -> Vec<String> {
        if self.done {
            return Vec::new();
        }
        let rivals = self.new_rivals(watched);
        let room = MAX_WARNED.saturating_sub(self.seen.len() - rivals.len());
        let mut warnings: Vec<String> = rivals
            .iter()
            .take(room)
            .map(|rival| rival.warning(when))
            .collect();
        if self.seen.len() > MAX_WARNED {
            self.done = true;
            warnings.push(format!(
                "more real-time threads than the {MAX_WARNED} above can preempt the measuring \
threads ({} more {when}): not looked for any more in this run",
                self.seen.len() - MAX_WARNED
            ));
        }
        warnings
    }

    /// Every rival of `watched` now, by pid and tid.
    pub fn scan(&self, watched: &[Watched]) -> Vec<Rival> {
        let mut rivals = Vec::new();
        if watched.is_empty() {
            return rivals;
        }
        let mut pids = numeric_entries(&self.proc_root);
        pids.sort_unstable();
        for pid in pids {
            if pid == self.own_pid {
                continue;
            }
            let tasks = self.proc_root.join(pid.to_string()).join("task");
            let mut tids = numeric_entries(&tasks);
            tids.sort_unstable();
            for tid in tids {
                let dir = tasks.join(tid.to_string());
                // Threads come and go while we look: skip what is gone.
                // Read as bytes: a name that is not UTF-8 must not hide
                // a thread.
                let Some(stat) = Stat::read(&dir.join("stat"))
                    .ok()
                    .and_then(|s| parse_stat(&s))
                else {
                    continue;
                };
                if let Some(rival) = self.judge(pid, tid, &stat, &dir, watched) {
                    rivals.push(rival);
                }
            }
        }
        rivals
    }

    fn judge(
        &self,
        pid: u32,
        tid: u32,
        stat: &TaskStat,
        dir: &Path,
        watched: &[Watched],
    ) -> Option<Rival> {
        let policy = Policy::from_kernel(stat.policy)?;
        if !policy.is_realtime() || matches!(stat.state, 'Z' | 'X' | 'x') {
            return None;
        }
        let priority = if policy == Policy::Deadline {
            0
        } else {
            stat.rt_priority
        };
        let victims: Vec<&Watched> = watched
            .iter()
            .filter(|w| outranks(policy, priority, &w.sched))
            .collect();
        if victims.is_empty() {
            return None;
        }
        if stat.flags & PF_KTHREAD != 0
            && QUIET_KERNEL_THREADS
                .iter()
                .any(|prefix| stat.comm.starts_with(prefix))
        {
            return None;
        }
        // As bytes too: its Name line holds the name as the thread chose
        // it (only '\n' and '\\' escaped), UTF-8 or not.
        let status = fs::read(dir.join("status")).ok()?;
        let cpus = parse_allowed_cpus(&String::from_utf8_lossy(&status))?;
        let mut shared = Vec::new();
        let mut outranked: Option<&SchedParams> = None;
        for w in victims {
            let common: Vec<usize> = w.cpus.iter().filter(|&c| cpus.contains(c)).collect();
            if common.is_empty() {
                continue;
            }
            shared.extend(common);
            // The highest priority it outranks says the most.
            if outranked.is_none_or(|o| w.sched.priority > o.priority) {
                outranked = Some(&w.sched);
            }
        }
        let outranked = outranked?;
        if self.descends_from_us(stat.ppid, stat.starttime) {
            return None;
        }
        Some(Rival {
            pid,
            tid,
            comm: stat.comm.clone(),
            policy,
            priority,
            cpus,
            shared: CpuSet::from_cpus(shared),
            outranks: outranked.to_string(),
            starttime: stat.starttime,
        })
    }

    /// Whether the process with parent `ppid`, started at `starttime`, is
    /// a descendant of ours. A parent starts before its children: a
    /// "parent" that started later is another process that took the pid of
    /// one that has exited since it was read, and the chain ends there.
    fn descends_from_us(&self, mut ppid: u32, mut starttime: u64) -> bool {
        for _ in 0..MAX_ANCESTRY {
            if ppid == self.own_pid {
                return true;
            }
            if ppid <= 1 {
                return false;
            }
            let stat = Stat::read(&self.proc_root.join(ppid.to_string()).join("stat"));
            match stat.ok().and_then(|s| parse_stat(&s)) {
                Some(parent) if parent.starttime <= starttime => {
                    (ppid, starttime) = (parent.ppid, parent.starttime);
                }
                _ => return false,
            }
        }
        false
    }
}

impl Rival {
    fn policy_raw(&self) -> u32 {
        match self.policy {
            Policy::Fifo => 1,
            Policy::Rr => 2,
            Policy::Deadline => 6,
            _ => 0,
        }
    }

    /// The warning of a run, `when` saying when it was seen.
    pub fn warning(&self, when: &str) -> String {
        format!(
            "another real-time thread: {self}, {when}; what it runs shows up as latency, and \
at the same priority it and the probe can starve each other: stop it, or measure on other \
CPUs or above its priority"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    const OWN: u32 = 1000;

    fn fifo(priority: u32) -> SchedParams {
        SchedParams {
            policy: Policy::Fifo,
            priority,
            deadline: None,
        }
    }

    fn on(cpus: &str, sched: SchedParams) -> Watched {
        Watched {
            cpus: CpuSet::parse(cpus).unwrap(),
            sched,
        }
    }

    /// A fake /proc with threads written by [`FakeProc::thread`].
    struct FakeProc(TempDir);

    impl FakeProc {
        fn new() -> FakeProc {
            let proc = FakeProc(TempDir::new().unwrap());
            // Our own process (a thread at fifo 99 on every CPU).
            proc.thread(OWN, OWN, 1, b"rtlab", 0, 1, 99, "0-3");
            proc
        }

        #[allow(clippy::too_many_arguments)]
        fn thread(
            &self,
            pid: u32,
            tid: u32,
            ppid: u32,
            comm: &[u8],
            flags: u64,
            policy: u32,
            priority: u32,
            cpus: &str,
        ) {
            self.thread_in_state(pid, tid, ppid, comm, 'S', flags, policy, priority, cpus);
        }

        #[allow(clippy::too_many_arguments)]
        fn thread_in_state(
            &self,
            pid: u32,
            tid: u32,
            ppid: u32,
            comm: &[u8],
            state: char,
            flags: u64,
            policy: u32,
            priority: u32,
            cpus: &str,
        ) {
            let process = self.0.path().join(pid.to_string());
            let task = process.join("task").join(tid.to_string());
            fs::create_dir_all(&task).unwrap();
            // Fields 3..=41: state, ppid, 4 ids, flags (9), ..., starttime
            // (22), ..., rt_priority (40), policy (41).
            let mut fields: Vec<String> = (3..=41).map(|_| "0".to_string()).collect();
            fields[0] = state.to_string();
            fields[1] = ppid.to_string();
            fields[9 - 3] = flags.to_string();
            fields[22 - 3] = (tid as u64 * 10).to_string();
            fields[40 - 3] = priority.to_string();
            fields[41 - 3] = policy.to_string();
            let mut stat = format!("{tid} (").into_bytes();
            stat.extend_from_slice(comm);
            stat.extend_from_slice(format!(") {}\n", fields.join(" ")).as_bytes());
            fs::write(task.join("stat"), &stat).unwrap();
            // The kernel escapes only '\n' and '\\' in the status file's
            // name: other bytes, not UTF-8 ones included, are there as such.
            let mut status = b"Name:\t".to_vec();
            for &byte in comm {
                match byte {
                    b'\n' => status.extend_from_slice(b"\\n"),
                    b'\\' => status.extend_from_slice(b"\\\\"),
                    byte => status.push(byte),
                }
            }
            status.extend_from_slice(
                format!("\nCpus_allowed:\tf\nCpus_allowed_list:\t{cpus}\n").as_bytes(),
            );
            fs::write(task.join("status"), status).unwrap();
            if pid == tid {
                fs::write(process.join("stat"), &stat).unwrap();
            }
        }

        fn scan(&self) -> RivalScan {
            RivalScan::under(self.0.path(), OWN)
        }
    }

    fn tids(rivals: &[Rival]) -> Vec<u32> {
        rivals.iter().map(|r| r.tid).collect()
    }

    #[test]
    fn finds_realtime_threads_at_or_above_on_shared_cpus() {
        let proc = FakeProc::new();
        proc.thread(2000, 2000, 1, b"spin", 0, 1, 95, "0");
        proc.thread(2001, 2001, 1, b"same", 0, 2, 90, "0-1");
        proc.thread(2002, 2002, 1, b"below", 0, 1, 89, "0");
        proc.thread(2003, 2003, 1, b"elsewhere", 0, 1, 99, "1");
        proc.thread(2004, 2004, 1, b"normal", 0, 0, 0, "0");
        proc.thread(2005, 2005, 1, b"dl", 0, 6, 0, "0-3");
        // A second thread of a process.
        proc.thread(2000, 2010, 1, b"spin-2", 0, 1, 99, "0-3");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        assert_eq!(tids(&rivals), vec![2000, 2010, 2001, 2005]);
        let text = rivals[1].warning("seen at the start");
        assert!(
            text.contains(
                "fifo 99 thread \"spin-2\" (pid 2000, tid 2010, allowed on CPUs 0-3) \
                 can preempt the measuring threads (fifo 90) on CPU 0, seen at the start"
            ),
            "{text}"
        );
        assert!(rivals[3].to_string().starts_with("deadline thread \"dl\""));
    }

    #[test]
    fn only_realtime_measuring_threads_have_rivals() {
        let proc = FakeProc::new();
        proc.thread(2000, 2000, 1, b"low", 0, 1, 1, "0");
        proc.thread(2001, 2001, 1, b"normal", 0, 0, 0, "0");
        let other = SchedParams {
            policy: Policy::Other,
            priority: 0,
            deadline: None,
        };
        assert!(proc.scan().scan(&[on("0", other)]).is_empty());
        // A deadline probe only meets deadline rivals.
        let deadline = SchedParams {
            policy: Policy::Deadline,
            priority: 0,
            deadline: None,
        };
        assert!(proc.scan().scan(&[on("0", deadline)]).is_empty());
        proc.thread(2002, 2002, 1, b"dl", 0, 6, 0, "0");
        assert_eq!(tids(&proc.scan().scan(&[on("0", deadline)])), vec![2002]);
        // Beside a real-time one, the other is ignored.
        let both = [on("0", other), on("0", fifo(1))];
        assert_eq!(tids(&proc.scan().scan(&both)), vec![2000, 2002]);
    }

    #[test]
    fn leaves_out_ourselves_our_descendants_the_dead_and_quiet_kernel_threads() {
        let proc = FakeProc::new();
        // Our child and grandchild (the switch task, a load's command).
        proc.thread(3000, 3000, OWN, b"task", 0, 1, 90, "0");
        proc.thread(3001, 3001, 3000, b"grandchild", 0, 1, 99, "0");
        // A zombie.
        proc.thread_in_state(3002, 3002, 1, b"gone", 'Z', 0, 1, 99, "0");
        // Per-CPU kernel threads; a user thread that calls itself so does
        // not hide; other kernel threads are listed.
        proc.thread(18, 18, 2, b"migration/0", PF_KTHREAD, 1, 99, "0");
        proc.thread(19, 19, 2, b"watchdog/0", PF_KTHREAD | 0x40, 1, 99, "0");
        proc.thread(3003, 3003, 1, b"migration/0", 0, 1, 99, "0");
        proc.thread(50, 50, 2, b"irq/24-eth0", PF_KTHREAD, 1, 95, "0");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        assert_eq!(tids(&rivals), vec![50, 3003]);
    }

    #[test]
    fn a_parent_pid_taken_by_a_child_of_ours_does_not_make_a_descendant() {
        // 2000's parent 4000 has exited, and one of our children (a load
        // just started) took its pid before 2000 was reparented: it
        // started after 2000 (start times are tid × 10 here), so it is not
        // 2000's parent.
        let proc = FakeProc::new();
        proc.thread(2000, 2000, 4000, b"spin", 0, 1, 95, "0");
        proc.thread(4000, 4000, OWN, b"load", 0, 0, 0, "0");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        assert_eq!(tids(&rivals), vec![2000]);
        // A child of ours that started before is its parent.
        proc.thread(1500, 1500, OWN, b"load", 0, 0, 0, "0");
        proc.thread(2000, 2000, 1500, b"spin", 0, 1, 95, "0");
        assert!(proc.scan().scan(&[on("0", fifo(90))]).is_empty());
    }

    #[test]
    fn a_name_is_shown_without_control_characters() {
        let proc = FakeProc::new();
        proc.thread(2000, 2000, 1, b"\x1b[2J) (x\n", 0, 1, 95, "0");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        assert_eq!(rivals.len(), 1, "a name with ') (' still parses");
        assert_eq!(rivals[0].comm, "?[2J) (x?");
        let text = rivals[0].warning("now");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        // Nor a right-to-left override that would turn the line around on
        // a terminal: the name is quoted as Rust's Debug does.
        proc.thread(1999, 1999, 1, "a\u{202e}b".as_bytes(), 0, 1, 95, "0");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        let text = rivals[0].warning("now");
        assert!(text.contains("\"a\\u{202e}b\""), "{text:?}");
        fs::remove_dir_all(proc.0.path().join("1999")).unwrap();
        // A name that is not UTF-8 does not hide a thread.
        proc.thread(2001, 2001, 1, &[0xff, b'a'], 0, 1, 95, "0");
        let rivals = proc.scan().scan(&[on("0", fifo(90))]);
        assert_eq!(rivals.len(), 2);
        assert_eq!(rivals[1].comm, "\u{fffd}a");
    }

    #[test]
    fn each_rival_is_reported_once() {
        let proc = FakeProc::new();
        let watched = [on("0", fifo(90))];
        let mut scan = proc.scan();
        assert!(scan.new_rivals(&watched).is_empty());
        proc.thread(2000, 2000, 1, b"spin", 0, 1, 95, "0");
        assert_eq!(tids(&scan.new_rivals(&watched)), vec![2000]);
        assert!(scan.new_rivals(&watched).is_empty(), "reported once");
        // Raised: reported again, with its new priority.
        proc.thread(2000, 2000, 1, b"spin", 0, 1, 99, "0");
        let again = scan.new_rivals(&watched);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].priority, 99);
    }

    #[test]
    fn warnings_stop_after_max_warned() {
        let proc = FakeProc::new();
        let watched = [on("0", fifo(90))];
        let mut scan = proc.scan();
        let spawn = |from: u32, count: u32| {
            for tid in from..from + count {
                proc.thread(tid, tid, 1, b"spin", 0, 1, 95, "0");
            }
        };
        spawn(2000, 5);
        assert_eq!(scan.new_warnings(&watched, "at the start").len(), 5);
        // Threads that keep coming (or changing priority): the warnings
        // end with one saying there are more, then stop.
        spawn(3000, MAX_WARNED as u32);
        let warnings = scan.new_warnings(&watched, "found 2s into the run");
        assert_eq!(warnings.len(), MAX_WARNED - 5 + 1, "{warnings:#?}");
        let last = warnings.last().unwrap();
        assert!(
            last.starts_with("more real-time threads than the 20 above")
                && last.contains("(5 more found 2s into the run)"),
            "{last}"
        );
        spawn(4000, 10);
        assert!(scan.new_warnings(&watched, "at the end").is_empty());
        // Exactly MAX_WARNED: no "more".
        let proc = FakeProc::new();
        for tid in 2000..2000 + MAX_WARNED as u32 {
            proc.thread(tid, tid, 1, b"spin", 0, 1, 95, "0");
        }
        let warnings = proc.scan().new_warnings(&watched, "now");
        assert_eq!(warnings.len(), MAX_WARNED);
        assert!(warnings.iter().all(|w| w.starts_with("another")));
    }

    #[test]
    fn the_real_proc_parses() {
        // Our own threads are never rivals; the scan of the real /proc
        // runs through without error.
        let own = RivalScan::new().scan(&[on("0", fifo(1))]);
        assert!(own.iter().all(|r| r.pid != std::process::id()));
        let stat = Stat::read(Path::new("/proc/self/stat")).unwrap();
        let parsed = parse_stat(&stat).unwrap();
        assert_eq!(parsed.ppid, std::os::unix::process::parent_id());
    }
}
