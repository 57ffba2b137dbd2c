//! The drop-in that makes systemd start a service real-time: its settings,
//! checked, and rendered.

use super::error::SystemdError;
use super::names::comment_safe;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;
use std::time::Duration;

/// The scheduling a service is started with: the contents of its drop-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIn {
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 for other/batch/idle.
    pub priority: u32,
    /// `CPUAffinity=`; `None` leaves the unit's affinity as it is.
    pub affinity: Option<CpuSet>,
    /// `CPUSchedulingResetOnFork=yes`: children start at SCHED_OTHER.
    pub reset_on_fork: bool,
    /// `LimitRTPRIO=`; `None` means the priority for fifo/rr (so the service
    /// may raise itself back to it) and no limit line for other policies.
    pub limit_rtprio: Option<u32>,
    /// `LimitRTTIME=`: CPU time a real-time process may use without blocking
    /// before the kernel kills it (whole microseconds).
    pub limit_rttime: Option<Duration>,
    /// `LimitMEMLOCK=infinity`, so the service may `mlockall()`.
    pub memlock_infinity: bool,
}

impl DropIn {
    /// A drop-in that sets only the policy and priority (and the default
    /// `LimitRTPRIO=` for fifo/rr).
    pub fn new(policy: Policy, priority: u32) -> DropIn {
        DropIn {
            policy,
            priority,
            affinity: None,
            reset_on_fork: false,
            limit_rtprio: None,
            limit_rttime: None,
            memlock_infinity: false,
        }
    }

    /// Refuses what systemd cannot do or what would not work: deadline,
    /// priorities outside the policy's range, 99 without `allow_99`, an
    /// `LimitRTPRIO=` below the priority or above 99, an empty affinity, an
    /// `LimitRTTIME=` that is zero or not whole microseconds.
    pub fn validate(&self, allow_99: bool) -> Result<(), SystemdError> {
        match self.policy {
            Policy::Deadline => return Err(SystemdError::Deadline),
            Policy::Fifo | Policy::Rr => {
                if !(1..=99).contains(&self.priority) {
                    return Err(SystemdError::RealtimePriority {
                        policy: self.policy,
                        priority: self.priority,
                    });
                }
                if self.priority == 99 && !allow_99 {
                    return Err(SystemdError::Priority99);
                }
            }
            Policy::Other | Policy::Batch | Policy::Idle => {
                if self.priority != 0 {
                    return Err(SystemdError::NonRealtimePriority {
                        policy: self.policy,
                        priority: self.priority,
                    });
                }
            }
        }
        if let Some(limit) = self.limit_rtprio {
            if limit > 99 {
                return Err(SystemdError::LimitAbove99 { limit });
            }
            if limit < self.priority {
                return Err(SystemdError::LimitBelowPriority {
                    limit,
                    priority: self.priority,
                });
            }
        }
        if self.affinity.as_ref().is_some_and(CpuSet::is_empty) {
            return Err(SystemdError::EmptyAffinity);
        }
        if let Some(rttime) = self.limit_rttime {
            rttime_micros(rttime)?;
        }
        Ok(())
    }

    /// The `LimitRTPRIO=` value written: the explicit limit, else the
    /// priority for fifo/rr, else none.
    pub fn effective_limit_rtprio(&self) -> Option<u32> {
        self.limit_rtprio
            .or(self.policy.takes_priority().then_some(self.priority))
    }
}

/// `LimitRTTIME=` in microseconds, systemd's unit for it.
fn rttime_micros(d: Duration) -> Result<u64, SystemdError> {
    let err = |reason: &str| SystemdError::LimitRtTime {
        value: humantime::format_duration(d).to_string(),
        reason: reason.to_string(),
    };
    if d.is_zero() {
        return Err(err(
            "zero would kill the service the moment it runs real-time; give a duration such as 200ms",
        ));
    }
    if !d.subsec_nanos().is_multiple_of(1_000) {
        return Err(err("the limit is counted in whole microseconds"));
    }
    u64::try_from(d.as_micros())
        .ok()
        .filter(|&us| us < u64::MAX)
        .ok_or_else(|| err("too long for the kernel's limit"))
}

/// A time span in systemd's notation, in the largest unit that keeps it exact.
fn format_timespan_us(us: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (3_600_000_000, "h"),
        (60_000_000, "min"),
        (1_000_000, "s"),
        (1_000, "ms"),
    ];
    for (size, unit) in UNITS {
        if us.is_multiple_of(size) {
            return format!("{}{unit}", us / size);
        }
    }
    format!("{us}us")
}

/// The drop-in's text: a header (who wrote it, the command, how to undo)
/// and the `[Service]` directives. Call [`DropIn::validate`] first.
pub fn render_dropin(d: &DropIn, command_line: &str) -> String {
    let mut out = String::new();
    out.push_str("# Written by rtlab (`rtlab tune systemd`); rerun the command to change it.\n");
    out.push_str(&format!("# Command: {}\n", comment_safe(command_line)));
    out.push_str(
        "# Undo: `rtlab tune undo`, or delete this file and run `systemctl daemon-reload`.\n",
    );
    out.push_str("[Service]\n");
    // systemd's names for CPUSchedulingPolicy= are rtlab's (other, batch,
    // idle, fifo, rr); deadline, refused by validate(), is written as it
    // is so that systemd-analyze flags it.
    out.push_str(&format!("CPUSchedulingPolicy={}\n", d.policy));
    // Written for every policy: a unit that sets a priority of its own must
    // not keep it under a policy that takes 0 (systemd would fail the start).
    out.push_str(&format!("CPUSchedulingPriority={}\n", d.priority));
    out.push_str(&format!(
        "CPUSchedulingResetOnFork={}\n",
        if d.reset_on_fork { "yes" } else { "no" }
    ));
    if let Some(cpus) = &d.affinity {
        // CPUAffinity= assignments accumulate; the empty one drops what the
        // unit or an earlier drop-in set, so the service runs on these only.
        out.push_str("CPUAffinity=\n");
        out.push_str(&format!("CPUAffinity={cpus}\n"));
    }
    if let Some(limit) = d.effective_limit_rtprio() {
        out.push_str(&format!("LimitRTPRIO={limit}\n"));
    }
    if let Some(rttime) = d.limit_rttime {
        match rttime_micros(rttime) {
            Ok(us) => out.push_str(&format!("LimitRTTIME={}\n", format_timespan_us(us))),
            // Refused by validate(); never write a wrong limit silently.
            Err(e) => out.push_str(&format!("# LimitRTTIME= not written: {e}\n")),
        }
    }
    if d.memlock_infinity {
        out.push_str("LimitMEMLOCK=infinity\n");
    }
    out
}
