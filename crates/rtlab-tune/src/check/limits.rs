//! The calling process's RLIMIT_RTPRIO and RLIMIT_MEMLOCK, and the
//! capabilities that override them: what decides whether promotion and
//! memory locking work for a user or a service.

use serde::{Deserialize, Serialize};

use super::finding::{Area, Finding, Severity};

/// Resource limits and capabilities of the calling process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// RLIMIT_MEMLOCK soft limit in bytes; `None` is unlimited.
    pub memlock_soft: Option<u64>,
    /// RLIMIT_MEMLOCK hard limit in bytes; `None` is unlimited.
    pub memlock_hard: Option<u64>,
    /// RLIMIT_RTPRIO soft limit (highest priority settable without
    /// CAP_SYS_NICE); `None` is unlimited.
    pub rtprio_soft: Option<u64>,
    pub rtprio_hard: Option<u64>,
    pub euid: u32,
    /// Effective CAP_SYS_NICE: any real-time priority, whatever RLIMIT_RTPRIO says.
    pub cap_sys_nice: bool,
    /// Effective CAP_IPC_LOCK: any amount of locked memory.
    pub cap_ipc_lock: bool,
}

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

impl Limits {
    /// This process's limits, from getrlimit(2) and /proc/self/status.
    pub fn current() -> Limits {
        // SAFETY (both): getrlimit only writes the rlimit it is given.
        let (memlock_soft, memlock_hard) =
            rlimit(|lim| unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, lim) });
        let (rtprio_soft, rtprio_hard) =
            rlimit(|lim| unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, lim) });
        // SAFETY: geteuid cannot fail and has no preconditions.
        let euid = unsafe { libc::geteuid() };
        let caps = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| effective_caps(&s));
        // Without /proc, assume the classic rule: root has every capability.
        let has = |cap: u32| caps.map_or(euid == 0, |c| c & (1u64 << cap) != 0);
        Limits {
            memlock_soft,
            memlock_hard,
            rtprio_soft,
            rtprio_hard,
            euid,
            cap_sys_nice: has(CAP_SYS_NICE),
            cap_ipc_lock: has(CAP_IPC_LOCK),
        }
    }
}

/// (soft, hard), `None` for RLIM_INFINITY or when getrlimit fails (which it
/// only does for an invalid resource). Takes the call as a closure because
/// the resource argument's type differs between glibc and musl.
fn rlimit(getrlimit: impl FnOnce(&mut libc::rlimit) -> libc::c_int) -> (Option<u64>, Option<u64>) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    if getrlimit(&mut lim) != 0 {
        return (None, None);
    }
    // rlim_t is 32 bits on some 32-bit targets, so the cast is needed there.
    #[allow(clippy::unnecessary_cast)]
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v as u64);
    (finite(lim.rlim_cur), finite(lim.rlim_max))
}

/// The CapEff bit mask from /proc/PID/status.
fn effective_caps(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

pub(super) fn checks(limits: &Limits) -> Vec<Finding> {
    vec![rtprio(limits), memlock(limits)]
}

fn limit_text(v: Option<u64>) -> String {
    v.map_or("unlimited".to_string(), |v| v.to_string())
}

fn bytes_text(v: Option<u64>) -> String {
    match v {
        None => "unlimited".into(),
        Some(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        Some(b) if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        Some(b) => format!("{b} bytes"),
    }
}

const RTPRIO_FIX: &str = "for a systemd service: LimitRTPRIO=98 in its [Service] section \
     (rtlab tune systemd --limit-rtprio writes the drop-in); for users: '@realtime - rtprio 98' in \
     /etc/security/limits.d/rt.conf and log in again; in a shell whose hard limit allows it: \
     ulimit -r 98";

fn rtprio(limits: &Limits) -> Finding {
    let id = "rtprio-limit";
    let values = format!(
        "RLIMIT_RTPRIO soft {}, hard {}",
        limit_text(limits.rtprio_soft),
        limit_text(limits.rtprio_hard)
    );
    let evidence = [
        format!(
            "getrlimit(RLIMIT_RTPRIO) = {}",
            values.trim_start_matches("RLIMIT_RTPRIO ")
        ),
        format!(
            "euid = {}, CAP_SYS_NICE = {}",
            limits.euid, limits.cap_sys_nice
        ),
    ];
    let soft = limits.rtprio_soft.unwrap_or(u64::MAX);
    let hard = limits.rtprio_hard.unwrap_or(u64::MAX);
    let finding = if limits.cap_sys_nice {
        if soft == 0 {
            Finding::new(
                id,
                Area::Limits,
                Severity::Info,
                format!(
                    "{values}: no limit for this process (euid {}, CAP_SYS_NICE), \
                     but a service or user without the capability cannot use real-time priorities",
                    limits.euid
                ),
            )
            .detail(
                "Paper 000's services needed LimitRTPRIO= in their unit before they could \
                 promote themselves: a process started by systemd as a non-root user, or with \
                 its capabilities dropped, is bound by RLIMIT_RTPRIO, which is 0 by default.",
            )
            .fix(RTPRIO_FIX)
        } else {
            Finding::new(
                id,
                Area::Limits,
                Severity::Ok,
                format!("{values}, CAP_SYS_NICE present"),
            )
        }
    } else if soft == 0 {
        let raise = if hard > 0 {
            format!(
                " The hard limit allows {}: ulimit -r raises it.",
                limit_text(limits.rtprio_hard)
            )
        } else {
            String::new()
        };
        Finding::new(
            id,
            Area::Limits,
            Severity::Warning,
            format!("{values}, no CAP_SYS_NICE: this process cannot use real-time priorities"),
        )
        .detail(format!(
            "sched_setscheduler to SCHED_FIFO or SCHED_RR fails with EPERM, so neither \
             rtlab's probes nor an application started from here can be promoted.{raise}"
        ))
        .fix(RTPRIO_FIX)
    } else if soft < 99 {
        Finding::new(
            id,
            Area::Limits,
            Severity::Info,
            format!("{values}, no CAP_SYS_NICE: real-time priorities up to {soft} only"),
        )
        .fix(RTPRIO_FIX)
    } else {
        Finding::new(id, Area::Limits, Severity::Ok, values)
    };
    finding.evidence(evidence)
}

fn memlock(limits: &Limits) -> Finding {
    let id = "memlock-limit";
    let values = format!(
        "RLIMIT_MEMLOCK soft {}, hard {}",
        bytes_text(limits.memlock_soft),
        bytes_text(limits.memlock_hard)
    );
    let evidence = [
        format!(
            "getrlimit(RLIMIT_MEMLOCK) = soft {:?}, hard {:?} (bytes, None = unlimited)",
            limits.memlock_soft, limits.memlock_hard
        ),
        format!(
            "euid = {}, CAP_IPC_LOCK = {}",
            limits.euid, limits.cap_ipc_lock
        ),
    ];
    let fix = "for a systemd service: LimitMEMLOCK=infinity (rtlab tune systemd --memlock-infinity); for users: '@realtime - memlock \
               unlimited' in /etc/security/limits.d/rt.conf; in a shell whose hard limit allows \
               it: ulimit -l unlimited";
    let finding = if limits.memlock_soft.is_none() {
        Finding::new(id, Area::Limits, Severity::Ok, values)
    } else if limits.cap_ipc_lock {
        Finding::new(
            id,
            Area::Limits,
            Severity::Info,
            format!(
                "{values}: no limit for this process (euid {}, CAP_IPC_LOCK), but a service \
                 or user without the capability can lock only that much",
                limits.euid
            ),
        )
        .fix(fix)
    } else {
        Finding::new(
            id,
            Area::Limits,
            Severity::Warning,
            format!(
                "{values}, no CAP_IPC_LOCK: at most {} of locked memory",
                bytes_text(limits.memlock_soft)
            ),
        )
        .detail(
            "A real-time process locks all its memory (mlockall(MCL_CURRENT | MCL_FUTURE)) \
             so that no page fault stalls it; with this limit mlockall fails, or later \
             allocations fail once the locked total reaches it.",
        )
        .fix(fix)
    };
    finding.evidence(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_parse() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000804000\n";
        let caps = effective_caps(status).unwrap();
        assert!(caps & (1 << CAP_SYS_NICE) != 0);
        assert!(caps & (1 << CAP_IPC_LOCK) != 0);
        assert_eq!(effective_caps("Name:\tx\n"), None);
    }

    #[test]
    fn current_limits_are_consistent() {
        let limits = Limits::current();
        if let (Some(soft), Some(hard)) = (limits.memlock_soft, limits.memlock_hard) {
            assert!(soft <= hard);
        }
        if let (Some(soft), Some(hard)) = (limits.rtprio_soft, limits.rtprio_hard) {
            assert!(soft <= hard);
        }
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes_text(Some(8 << 20)), "8 MiB");
        assert_eq!(bytes_text(Some(64 << 10)), "64 KiB");
        assert_eq!(bytes_text(Some(1000)), "1000 bytes");
        assert_eq!(bytes_text(None), "unlimited");
    }
}
