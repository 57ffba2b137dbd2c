//! Real-time scheduling, affinity, memory locking and the other per-thread
//! settings a measuring thread needs, with errors that say how to allow
//! what was refused.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::str::FromStr;

use crate::cpuset::CpuSet;

/// A Linux scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl Policy {
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
    /// Whether a static priority 1-99 applies.
    pub fn takes_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
    fn raw(self) -> u32 {
        (match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Deadline => SCHED_DEADLINE,
        }) as u32
    }
    /// The policy for the kernel's number (sched_getattr, /proc/PID/stat).
    pub fn from_kernel(raw: u32) -> Option<Policy> {
        Some(match raw as i32 {
            libc::SCHED_OTHER => Policy::Other,
            libc::SCHED_BATCH => Policy::Batch,
            libc::SCHED_IDLE => Policy::Idle,
            libc::SCHED_FIFO => Policy::Fifo,
            libc::SCHED_RR => Policy::Rr,
            SCHED_DEADLINE => Policy::Deadline,
            _ => return None,
        })
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
        })
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        Ok(match s {
            "other" | "normal" => Policy::Other,
            "batch" => Policy::Batch,
            "idle" => Policy::Idle,
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            "deadline" => Policy::Deadline,
            _ => {
                return Err(format!(
                    "unknown policy '{s}' (expected fifo, rr, other, batch, idle or deadline)"
                ))
            }
        })
    }
}

/// SCHED_DEADLINE parameters (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineParams {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// What to ask of the scheduler for one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedParams {
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 otherwise.
    pub priority: u32,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub deadline: Option<DeadlineParams>,
}

impl fmt::Display for SchedParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.policy, self.deadline) {
            (Policy::Deadline, Some(dl)) => write!(
                f,
                "deadline runtime {}ns deadline {}ns period {}ns",
                dl.runtime_ns, dl.deadline_ns, dl.period_ns
            ),
            (p, _) if p.takes_priority() => write!(f, "{p} {}", self.priority),
            (p, _) => write!(f, "{p}"),
        }
    }
}

// Not in every libc release: the values are fixed by the kernel ABI.
const SCHED_DEADLINE: i32 = 6;
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

/// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h),
/// first version (48 bytes); utilization clamps are not used.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Applies `params` to the calling thread via sched_setattr, the one call
/// that covers every policy including SCHED_DEADLINE.
pub fn set_current_thread(params: &SchedParams) -> io::Result<()> {
    set_thread(
        0,
        &ThreadSched {
            params: *params,
            reset_on_fork: false,
            nice: 0,
        },
    )
}

/// The calling thread's policy and priority as the kernel sees them now.
pub fn current_thread() -> io::Result<SchedParams> {
    thread_sched(0).map(|sched| sched.params)
}

/// Everything sched_setattr sets for one thread: what `rtlab tune` reads,
/// changes and restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSched {
    pub params: SchedParams,
    /// Children start at SCHED_OTHER instead of inheriting the policy.
    pub reset_on_fork: bool,
    /// The nice value; only the fair policies (other, batch) use it, but
    /// the kernel keeps it across a real-time spell, so it is restored too.
    pub nice: i32,
}

/// Sets the scheduling of thread `tid` (0 = the calling thread).
pub fn set_thread(tid: i32, sched: &ThreadSched) -> io::Result<()> {
    let params = &sched.params;
    let mut attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: params.policy.raw(),
        sched_flags: if sched.reset_on_fork {
            SCHED_FLAG_RESET_ON_FORK
        } else {
            0
        },
        sched_nice: sched.nice,
        sched_priority: if params.policy.takes_priority() {
            params.priority
        } else {
            0
        },
        ..SchedAttr::default()
    };
    if let Some(dl) = params.deadline {
        attr.sched_runtime = dl.runtime_ns;
        attr.sched_deadline = dl.deadline_ns;
        attr.sched_period = dl.period_ns;
    }
    // SAFETY: attr is a valid, fully initialised sched_attr.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &mut attr as *mut SchedAttr, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Thread `tid`'s scheduling (0 = the calling thread) as the kernel sees
/// it now.
pub fn thread_sched(tid: i32) -> io::Result<ThreadSched> {
    let mut attr = SchedAttr::default();
    // SAFETY: attr is a valid buffer of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let policy = Policy::from_kernel(attr.sched_policy)
        .ok_or_else(|| io::Error::other(format!("unknown policy {}", attr.sched_policy)))?;
    let params = SchedParams {
        policy,
        priority: attr.sched_priority,
        deadline: (policy == Policy::Deadline).then_some(DeadlineParams {
            runtime_ns: attr.sched_runtime,
            deadline_ns: attr.sched_deadline,
            period_ns: attr.sched_period,
        }),
    };
    Ok(ThreadSched {
        params,
        reset_on_fork: attr.sched_flags & SCHED_FLAG_RESET_ON_FORK != 0,
        // sched_getattr reports 0 for a real-time thread, yet the kernel
        // keeps its nice value for when it returns to a fair policy.
        nice: thread_nice(tid).unwrap_or(attr.sched_nice),
    })
}

/// Thread `tid`'s nice value (0 = the calling thread), whatever its policy.
fn thread_nice(tid: i32) -> io::Result<i32> {
    let id = if tid == 0 { gettid() } else { tid };
    // getpriority returns -1 both as a value and as an error: errno tells.
    // SAFETY: errno is thread-local; getpriority has no memory effects.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, id as libc::id_t);
        if nice == -1 && *libc::__errno_location() != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(nice)
    }
}

/// Thread `tid`'s CPU affinity (0 = the calling thread).
pub fn thread_affinity(tid: i32) -> io::Result<CpuSet> {
    // SAFETY: cpu_set_t is plain data and the size passed is its size.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        set
    };
    let cpus = (0..CPU_SET_BITS)
        // SAFETY: i is below the set's size in bits.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect();
    Ok(CpuSet::from_cpus(cpus))
}

/// Restricts thread `tid` (0 = the calling thread) to `cpus`.
pub fn set_thread_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked first.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus.iter() {
            if cpu >= CPU_SET_BITS {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

const CPU_SET_BITS: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
}

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::gettid() }
}

/// Locks all current and future memory so no page fault lands in a
/// measuring loop.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: plain syscall.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Undoes [`lock_memory`] (for the end of a run in a long-lived process).
pub fn unlock_memory() {
    // SAFETY: plain syscall.
    unsafe { libc::munlockall() };
}

/// Timer slack of the calling thread: the kernel may delay a timer wake-up
/// by up to this much to batch wake-ups (default 50 µs), which a probe must
/// not allow.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: plain prctl with an integer argument.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Current timer slack of the calling thread, in ns.
pub fn timer_slack() -> u64 {
    // SAFETY: plain prctl.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    slack.max(0) as u64
}

/// Bytes of stack touched by [`prefault_stack`].
pub const PREFAULT_STACK_BYTES: usize = 256 * 1024;

/// Touches the next [`PREFAULT_STACK_BYTES`] of the calling thread's stack
/// so that with mlockall they are resident before the first sample. The
/// thread must have been created with a larger stack than that.
#[inline(never)]
pub fn prefault_stack() {
    let mut buffer = [0u8; PREFAULT_STACK_BYTES];
    for page in buffer.chunks_mut(4096) {
        // black_box keeps the compiler from removing the writes.
        std::hint::black_box(&mut page[0]);
        page[0] = 1;
    }
    std::hint::black_box(&buffer);
}

/// How to allow real-time scheduling for a user who was refused it.
pub const RT_PRIVILEGE_HINT: &str =
    "run as root, or `sudo setcap cap_sys_nice+ep $(command -v rtlab)`, \
or raise the rtprio limit (`ulimit -r 99`; LimitRTPRIO=99 in a systemd unit; \
`@group - rtprio 99` in /etc/security/limits.conf)";

/// How to allow locking memory for a user who was refused it.
pub const MEMLOCK_PRIVILEGE_HINT: &str =
    "run as root, or `sudo setcap cap_ipc_lock+ep $(command -v rtlab)`, \
or raise the memlock limit (`ulimit -l unlimited`; LimitMEMLOCK=infinity in a systemd unit)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print() {
        for name in ["fifo", "rr", "other", "batch", "idle", "deadline"] {
            assert_eq!(name.parse::<Policy>().unwrap().to_string(), name);
        }
        assert!("realtime"
            .parse::<Policy>()
            .unwrap_err()
            .contains("'realtime'"));
    }

    #[test]
    fn sched_attr_matches_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<SchedAttr>(), 48);
    }

    #[test]
    fn reads_own_policy() {
        // A test thread is normally SCHED_OTHER unless the harness was promoted.
        let params = current_thread().unwrap();
        assert!(params.priority <= 99);
    }

    #[test]
    fn other_policy_is_always_allowed() {
        std::thread::spawn(|| {
            set_current_thread(&SchedParams {
                policy: Policy::Batch,
                priority: 0,
                deadline: None,
            })
            .unwrap();
            assert_eq!(current_thread().unwrap().policy, Policy::Batch);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn timer_slack_round_trips() {
        std::thread::spawn(|| {
            set_timer_slack(1).unwrap();
            assert_eq!(timer_slack(), 1);
        })
        .join()
        .unwrap();
    }
}
