//! What every probe's settings share: the default length of a measurement,
//! the default priority, and the scheduling rules a config's `validate()`
//! applies to its measuring threads (see [`rtlab_core::settings`]).

use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;

/// The real-time priority (SCHED_FIFO or SCHED_RR) of a measuring thread
/// when none is given: the timer, switch, noise and net probes, the plan
/// dispatcher and the executive, from the command line or a campaign.
pub const DEFAULT_PRIORITY: u32 = 90;

/// How long `rtlab measure timer` and `rtlab measure switch` (per
/// mechanism) measure when given neither a duration nor a count.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// The longest period, delay or run a probe's clock arithmetic takes: it
/// adds them to CLOCK_MONOTONIC nanoseconds in a u64, which needs room for
/// the clock's own value (`i64::MAX` ns, about 292 years, as a timespec
/// holds it). Longer ones wrapped: a run of nonsense, a panic in a debug
/// build.
pub const MAX_SPAN_NS: u64 = i64::MAX as u64;

/// Refuses `ns` of the setting `key` over [`MAX_SPAN_NS`].
pub fn check_span(key: &'static str, ns: u64) -> Result<(), FieldError> {
    if ns > MAX_SPAN_NS {
        return Err(FieldError::new(
            key,
            format!(
                "{{{key}}} {} is too long: at most {}",
                human_duration(ns),
                human_duration(MAX_SPAN_NS)
            ),
        ));
    }
    Ok(())
}

/// The scheduling of a thread from its policy and the priority given, if
/// any: [`DEFAULT_PRIORITY`] for fifo and rr, 0 for the others. A priority
/// given with a policy that has none is kept, for [`check_priority`] to
/// refuse by name.
pub fn sched_of(policy: Policy, priority: Option<u32>) -> SchedParams {
    let default = if policy.takes_priority() {
        DEFAULT_PRIORITY
    } else {
        0
    };
    SchedParams {
        policy,
        priority: priority.unwrap_or(default),
        deadline: None,
    }
}

/// A static priority 1-99 exactly when the policy takes one (fifo, rr).
/// Field `priority`; the message names `policy` too.
pub fn check_priority(sched: &SchedParams) -> Result<(), FieldError> {
    let (policy, p) = (sched.policy, sched.priority);
    if !policy.takes_priority() && p != 0 {
        return Err(FieldError::new(
            "priority",
            format!(
                "{{priority}} {p} applies only to {{policy}} fifo or rr (policy {policy} has no static priority)"
            ),
        ));
    }
    if policy.takes_priority() && !(1..=99).contains(&p) {
        return Err(FieldError::new(
            "priority",
            format!("{{priority}} {p} is out of range 1-99"),
        ));
    }
    Ok(())
}

/// Refuses SCHED_DEADLINE for a probe whose threads have no period of
/// their own to give it; `why` completes `policy deadline: …`.
pub fn refuse_deadline(sched: &SchedParams, why: &str) -> Result<(), FieldError> {
    if sched.policy == Policy::Deadline {
        return Err(FieldError::new(
            "policy",
            format!("{{policy}} deadline: {why}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    #[test]
    fn the_default_priority_goes_to_fifo_and_rr_only() {
        assert_eq!(sched_of(Policy::Fifo, None).priority, DEFAULT_PRIORITY);
        assert_eq!(sched_of(Policy::Rr, Some(30)).priority, 30);
        assert_eq!(sched_of(Policy::Other, None).priority, 0);
        assert_eq!(sched_of(Policy::Other, Some(10)).priority, 10);
    }

    #[test]
    fn a_priority_needs_a_policy_that_takes_one() {
        assert_eq!(check_priority(&sched_of(Policy::Fifo, Some(1))), Ok(()));
        assert_eq!(check_priority(&sched_of(Policy::Batch, None)), Ok(()));
        let e = check_priority(&sched_of(Policy::Other, Some(10))).unwrap_err();
        assert_eq!(e.field, "priority");
        assert_eq!(
            e.render(flag),
            "--priority 10 applies only to --policy fifo or rr (policy other has no static priority)"
        );
        let e = check_priority(&sched_of(Policy::Fifo, Some(100))).unwrap_err();
        assert_eq!(e.field, "priority");
        assert!(e.message.contains("out of range 1-99"), "{e}");
    }

    #[test]
    fn deadline_is_refused_where_it_has_no_period() {
        assert_eq!(
            refuse_deadline(&sched_of(Policy::Idle, None), "no period"),
            Ok(())
        );
        let e = refuse_deadline(&sched_of(Policy::Deadline, None), "no period").unwrap_err();
        assert_eq!(e.field, "policy");
        assert_eq!(e.render(flag), "--policy deadline: no period");
    }
}
