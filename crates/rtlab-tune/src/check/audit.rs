//! The audit: every check in order over one context.

use rtlab_core::env::Environment;

use super::context::Ctx;
use super::input::AuditInput;
use super::report::{Host, Report};
use super::{cpu, irq, kernel, limits, memory, rank, sched, watchdog};

/// Runs every check. Never fails and never panics on odd input: what cannot
/// be read is reported as unknown.
pub fn audit(input: &AuditInput) -> Report {
    let env = Environment::capture_from(&input.root, input.uname.clone());
    let isolated = cpu::Isolation::read(&env).quiet_cpus();
    let ctx = Ctx::new(input, env, isolated);

    let mut findings = Vec::new();
    findings.extend(kernel::checks(&ctx));
    findings.extend(sched::checks(&ctx));
    findings.extend(watchdog::checks(&ctx));
    findings.extend(cpu::checks(&ctx));
    findings.extend(memory::checks(&ctx));
    findings.extend(irq::checks(&ctx));
    findings.extend(limits::checks(&input.limits));
    findings.extend(rank::checks(&ctx));

    Report {
        host: Host {
            hostname: ctx.env.hostname.clone(),
            kernel_release: ctx.env.kernel_release.clone(),
            kernel_version: ctx.env.kernel_version.clone(),
            preempt_model: ctx.env.preempt_model.clone(),
            cpu_count: ctx.env.cpu_count,
            virtualization: ctx.env.virtualization.clone(),
        },
        findings,
    }
}
