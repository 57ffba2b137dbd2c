//! The lockup detectors: the NMI (hard-lockup) watchdog and the soft-lockup
//! watchdog, both of which interrupt every CPU they watch.

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};
use super::util::intersection;

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    vec![nmi_watchdog(ctx), soft_watchdog(ctx)]
}

fn nmi_watchdog(ctx: &Ctx) -> Finding {
    let id = "nmi-watchdog";
    let path = "/proc/sys/kernel/nmi_watchdog";
    let evidence = [ctx.root.evidence(path)];
    match ctx.root.read_i64(path) {
        Some(0) => Finding::new(
            id,
            Area::Kernel,
            Severity::Ok,
            "NMI watchdog: off (kernel.nmi_watchdog = 0)",
        ),
        Some(v) => {
            let exposed = watchdog_on_isolated(ctx);
            let severity = if exposed.is_empty() {
                Severity::Info
            } else {
                Severity::Warning
            };
            let on_isolated = if exposed.is_empty() {
                String::new()
            } else {
                format!(", including isolated CPUs {exposed}")
            };
            Finding::new(
                id,
                Area::Kernel,
                severity,
                format!("NMI watchdog: on (kernel.nmi_watchdog = {v}){on_isolated}"),
            )
            .detail(
                "A performance-counter NMI hits every watched CPU every watchdog_thresh \
                 seconds; it cannot be masked or preempted, and each costs microseconds. \
                 Real-time tuning guides turn it off.",
            )
            .fix("sysctl -w kernel.nmi_watchdog=0, or boot with nmi_watchdog=0")
        }
        None => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            "NMI watchdog: not present (no kernel.nmi_watchdog)",
        ),
    }
    .evidence(evidence)
}

/// Isolated CPUs still in kernel.watchdog_cpumask (the list format). Boot
/// with nohz_full= already drops those CPUs from the mask.
fn watchdog_on_isolated(ctx: &Ctx) -> rtlab_core::cpuset::CpuSet {
    if ctx.isolated.is_empty() {
        return Default::default();
    }
    let watched = ctx
        .root
        .read("/proc/sys/kernel/watchdog_cpumask")
        .and_then(|m| rtlab_core::cpuset::CpuSet::parse(&m).ok())
        .unwrap_or_else(|| ctx.online.clone());
    intersection(&ctx.isolated, &watched)
}

fn soft_watchdog(ctx: &Ctx) -> Finding {
    let id = "soft-watchdog";
    let path = "/proc/sys/kernel/soft_watchdog";
    let evidence = [
        ctx.root.evidence(path),
        ctx.root.evidence("/proc/sys/kernel/watchdog_cpumask"),
    ];
    match ctx.root.read_i64(path) {
        Some(0) => Finding::new(
            id,
            Area::Kernel,
            Severity::Ok,
            "soft-lockup watchdog: off (kernel.soft_watchdog = 0)",
        ),
        Some(v) => {
            let exposed = watchdog_on_isolated(ctx);
            if exposed.is_empty() {
                let why = if ctx.isolated.is_empty() {
                    "no isolated CPUs to disturb"
                } else {
                    "isolated CPUs not watched"
                };
                Finding::new(
                    id,
                    Area::Kernel,
                    Severity::Ok,
                    format!("soft-lockup watchdog: on (kernel.soft_watchdog = {v}), {why}"),
                )
            } else {
                let housekeeping = ctx.housekeeping();
                Finding::new(
                    id,
                    Area::Kernel,
                    Severity::Info,
                    format!(
                        "soft-lockup watchdog: on (kernel.soft_watchdog = {v}) on isolated CPUs {exposed}"
                    ),
                )
                .detail(
                    "Its hrtimer interrupts each watched CPU every few seconds and wakes a \
                     stopper thread above every real-time priority.",
                )
                .fix(format!(
                    "sysctl -w kernel.watchdog_cpumask={housekeeping}, or boot with nohz_full= \
                     for those CPUs (which drops them from the mask)"
                ))
            }
        }
        None => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            "soft-lockup watchdog: unknown (kernel.soft_watchdog not readable)",
        ),
    }
    .evidence(evidence)
}
