//! The kernel and the platform under it: preemption model, clocksource,
//! virtualization.

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    vec![preempt_model(ctx), clocksource(ctx), virtualization(ctx)]
}

const RT_KERNEL_PACKAGES: &str = "install an RT kernel: linux-image-rt-amd64 (Debian), \
     linux-realtime (Ubuntu Pro), kernel-rt (RHEL, Alma, Rocky), or any kernel >= 6.12 \
     built with CONFIG_PREEMPT_RT=y";

/// A kernel preempted only at explicit points (voluntary or none, chosen at
/// boot or at build); `how_fixed` ends the detail with how the model is set.
fn explicit_points(id: &str, model: &str, how_fixed: &str) -> Finding {
    Finding::new(
        id,
        Area::Kernel,
        Severity::Warning,
        format!("preemption model: {model}: kernel code is preempted only at explicit points"),
    )
    .detail(format!(
        "A real-time thread woken while the kernel runs a long system call or driver \
         path on its CPU waits until that path reaches a preemption point: milliseconds \
         in the worst case. {how_fixed}"
    ))
}

fn preempt_model(ctx: &Ctx) -> Finding {
    let model = ctx.env.preempt_model.as_str();
    let mut evidence = ctx.env.preempt_sources.clone();
    if let Some(v) = &ctx.env.kernel_version {
        evidence.push(format!("uname -v = {v}"));
    }
    if let Some(p) = &ctx.env.sched_preempt {
        evidence.push(format!("/sys/kernel/debug/sched/preempt = {p}"));
    }
    let id = "preempt-model";
    let finding = match model {
        // rtlab-core read a dynamic kernel's boot default from its build
        // configuration: said as the boot default, as below.
        _ if ctx.env.preempt_boot_default().is_some() => dynamic_unknown(ctx, &mut evidence),
        "rt" => Finding::new(
            id,
            Area::Kernel,
            Severity::Ok,
            "preemption model: rt (PREEMPT_RT)",
        ),
        "full" | "dynamic-full" | "lazy" | "dynamic-lazy" => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            format!("preemption model: {model} (fully preemptible, not PREEMPT_RT)"),
        )
        .detail(
            "A woken real-time thread preempts kernel code almost anywhere. PREEMPT_RT \
             also runs interrupt handlers and softirqs as threads and turns spinlocks into \
             sleeping locks, which removes the remaining long non-preemptible sections. \
             Paper 000 found that tuning a stock kernel (promotion to SCHED_FIFO) gives most \
             of the gain; the RT kernel gives the rest.",
        )
        .fix(format!("for the last step, {RT_KERNEL_PACKAGES}")),
        "dynamic-voluntary" | "dynamic-none" => explicit_points(
            id,
            model,
            "This kernel is PREEMPT_DYNAMIC, so full preemption is a boot parameter away.",
        )
        .fix(
            "add preempt=full to the kernel command line (GRUB_CMDLINE_LINUX in \
             /etc/default/grub, then update-grub or grub2-mkconfig -o /boot/grub2/grub.cfg); \
             at runtime: echo full > /sys/kernel/debug/sched/preempt",
        ),
        "voluntary" | "none" => explicit_points(
            id,
            model,
            "The model is fixed at build time on this kernel.",
        )
        .fix(format!(
            "{RT_KERNEL_PACKAGES}; or a kernel built with CONFIG_PREEMPT=y or PREEMPT_DYNAMIC"
        )),
        "dynamic-unknown" => dynamic_unknown(ctx, &mut evidence),
        _ => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            format!(
                "preemption model: unknown (uname -v: {})",
                version_or_unknown(ctx)
            ),
        )
        .detail(
            "Neither /sys/kernel/realtime, /sys/kernel/debug/sched/preempt nor the version \
             string told the model; a plain \"SMP\" kernel is none or voluntary.",
        )
        .fix("check the kernel config: grep PREEMPT /boot/config-$(uname -r)"),
    };
    finding.evidence(evidence)
}

/// A PREEMPT_DYNAMIC kernel whose live model is unreadable: the boot
/// default from the kernel config is the best remaining evidence.
fn dynamic_unknown(ctx: &Ctx, evidence: &mut Vec<String>) -> Finding {
    let id = "preempt-model";
    let how_to_read =
        "mount -t debugfs none /sys/kernel/debug && cat /sys/kernel/debug/sched/preempt";
    // Found by rtlab-core (/boot/config-RELEASE or /proc/config.gz; its
    // line is in the evidence already), else looked up here.
    let found = ctx
        .env
        .preempt_boot_default()
        .map(|(path, model)| (path.to_string(), model));
    let default = found.or_else(|| {
        ctx.kernel_config().and_then(|(path, text)| {
            let model = [
                ("CONFIG_PREEMPT_NONE=y", "none"),
                ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
                ("CONFIG_PREEMPT=y", "full"),
                ("CONFIG_PREEMPT_LAZY=y", "lazy"),
            ]
            .into_iter()
            .find(|(line, _)| text.lines().any(|l| l.trim() == *line))?;
            evidence.push(format!("{path}: {}", model.0));
            Some((path, model.1))
        })
    });
    match default {
        Some((path, model @ ("none" | "voluntary"))) => Finding::new(
            id,
            Area::Kernel,
            Severity::Warning,
            format!(
                "preemption model: dynamic, boot default {model} ({path}); no preempt= on the command line"
            ),
        )
        .detail(
            "Unless changed at runtime, kernel code is preempted only at explicit points: a \
             real-time thread woken during a long system call or driver path on its CPU waits \
             for it, milliseconds in the worst case. The live model is readable only through \
             debugfs.",
        )
        .fix(format!(
            "add preempt=full to the kernel command line (GRUB_CMDLINE_LINUX in \
             /etc/default/grub, then update-grub or grub2-mkconfig -o /boot/grub2/grub.cfg); \
             to see the live model: {how_to_read}"
        )),
        Some((path, model)) => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            format!("preemption model: dynamic, boot default {model} ({path}), not PREEMPT_RT"),
        )
        .fix(format!("to see the live model: {how_to_read}; for the last step, {RT_KERNEL_PACKAGES}")),
        None => Finding::new(
            id,
            Area::Kernel,
            Severity::Info,
            "preemption model: unknown (PREEMPT_DYNAMIC kernel, current model not readable)",
        )
        .detail(
            "The live model is in /sys/kernel/debug/sched/preempt, which needs debugfs \
             mounted and root; the command line has no preempt= and there is no kernel config \
             in /boot. Without preempt= the kernel runs the model chosen at build time \
             (voluntary on many distribution kernels).",
        )
        .fix(format!("{how_to_read}; to be sure, boot with preempt=full")),
    }
}
fn version_or_unknown(ctx: &Ctx) -> String {
    ctx.env
        .kernel_version
        .clone()
        .unwrap_or_else(|| "unknown".into())
}
fn clocksource(ctx: &Ctx) -> Finding {
    let id = "clocksource";
    let available = ctx.env.available_clocksources.join(" ");
    let evidence = [
        ctx.root
            .evidence("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        ctx.root
            .evidence("/sys/devices/system/clocksource/clocksource0/available_clocksource"),
    ];
    let Some(current) = ctx.env.clocksource.as_deref() else {
        return Finding::new(
            id,
            Area::Platform,
            Severity::Info,
            "clocksource: unknown (current_clocksource not readable)",
        )
        .evidence(evidence);
    };
    let tsc_available = ctx.env.available_clocksources.iter().any(|c| c == "tsc");
    let finding = match current {
        "hpet" | "acpi_pm" | "pit" | "jiffies" => {
            let fix = if tsc_available {
                "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource; \
                 at boot: clocksource=tsc (and tsc=reliable if the kernel marked it unstable)"
            } else {
                "none here: tsc is not offered (unstable or absent); check dmesg for \
                 'clocksource' and the BIOS/hypervisor TSC settings"
            };
            Finding::new(
                id,
                Area::Platform,
                Severity::Warning,
                format!("clocksource: {current} (available: {available})"),
            )
            .detail(format!(
                "Every clock_gettime() reads {current} through a slow I/O access (around a \
                 microsecond, not tens of nanoseconds) in the kernel instead of the vDSO, and \
                 timestamps and deadlines get coarser and costlier."
            ))
            .fix(fix)
        }
        "kvm-clock" | "xen" | "hyperv_clocksource_tsc_page" => Finding::new(
            id,
            Area::Platform,
            Severity::Info,
            format!("clocksource: {current}, paravirtual (available: {available})"),
        )
        .detail(
            "Readable from the vDSO and fine in a VM; tsc is slightly cheaper when the host \
             offers a stable invariant TSC.",
        )
        .fix(if tsc_available {
            "optional: echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
        } else {
            "none needed"
        }),
        _ => Finding::new(
            id,
            Area::Platform,
            Severity::Ok,
            format!("clocksource: {current}"),
        ),
    };
    finding.evidence(evidence)
}
fn virtualization(ctx: &Ctx) -> Finding {
    let id = "virtualization";
    let evidence = ctx.env.virtualization_evidence.clone();
    let shown = if evidence.is_empty() {
        String::new()
    } else {
        format!(" ({})", evidence.join("; "))
    };
    match ctx.env.virtualization.as_deref() {
        Some("none") => Finding::new(id, Area::Platform, Severity::Ok, "bare metal"),
        Some(container @ ("docker" | "podman")) => Finding::new(
            id,
            Area::Platform,
            Severity::Info,
            format!("container: {container}{shown}"),
        )
        .detail(
            "The kernel settings read here are the host's; limits and cgroups are the \
             container's. Real-time promotion needs CAP_SYS_NICE in the container \
             (--cap-add=SYS_NICE) and an RT-capable cpu cgroup.",
        ),
        Some(hypervisor) => Finding::new(
            id,
            Area::Platform,
            Severity::Warning,
            format!("virtual machine: {hypervisor}{shown}"),
        )
        .detail(
            "The host preempts this guest's virtual CPUs whenever it likes: timer and \
             wake-up spikes of several milliseconds that no tuning inside the guest removes. \
             Measure here to compare settings, but judge worst cases on the real hardware.",
        )
        .fix(
            "run time-critical work on bare metal, or on the host pin the vCPUs to isolated \
             host CPUs (e.g. libvirt <vcpupin>, <emulatorpin>) with an RT host kernel",
        ),
        None => Finding::new(
            id,
            Area::Platform,
            Severity::Info,
            "virtualization: unknown (no cpuinfo flags, DMI or hypervisor evidence)",
        ),
    }
    .evidence(evidence)
}
