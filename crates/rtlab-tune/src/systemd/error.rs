//! What `rtlab tune systemd` refuses, and why.

use rtlab_core::sched::Policy;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemdError {
    #[error("invalid unit name '{input}': {reason}")]
    UnitName { input: String, reason: String },
    #[error(
        "unit '{unit}': rtlab tune systemd writes [Service] settings, so it needs a .service unit"
    )]
    NotAService { unit: String },
    #[error(
        "policy deadline refused: systemd cannot start a service under SCHED_DEADLINE \
         (CPUSchedulingPolicy= takes only other, batch, idle, fifo or rr)"
    )]
    Deadline,
    #[error("--priority {priority} is out of range for policy {policy}: fifo and rr take 1-99")]
    RealtimePriority { policy: Policy, priority: u32 },
    #[error(
        "--priority {priority} is invalid for policy {policy}: other, batch and idle take priority 0"
    )]
    NonRealtimePriority { policy: Policy, priority: u32 },
    #[error(
        "--priority 99 refused: it ranks the service with the kernel's own highest-priority \
         threads (migration, watchdogs); pass --allow-99 if that is really meant"
    )]
    Priority99,
    #[error(
        "--limit-rtprio {limit} is below --priority {priority}: the service could not regain \
         its priority after lowering it (or in a child started with reset-on-fork); \
         use --limit-rtprio {priority} or more"
    )]
    LimitBelowPriority { limit: u32, priority: u32 },
    #[error("--limit-rtprio {limit} is out of range: real-time priorities end at 99")]
    LimitAbove99 { limit: u32 },
    #[error("--limit-rttime {value}: {reason}")]
    LimitRtTime { value: String, reason: String },
    #[error("--affinity is empty: give at least one CPU (e.g. 1-3)")]
    EmptyAffinity,
    #[error("{what} '{path}' cannot go into the unit's ExecStart=: {reason}")]
    ExecPath {
        what: &'static str,
        path: String,
        reason: String,
    },
}
