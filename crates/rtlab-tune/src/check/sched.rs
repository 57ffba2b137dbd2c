//! Real-time scheduling settings: RT throttling, RT group scheduling and
//! timer migration.

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};
use super::util::{kernel_param, list_some};

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    vec![
        rt_throttling(ctx),
        rt_group_sched(ctx),
        timer_migration(ctx),
    ]
}

fn rt_throttling(ctx: &Ctx) -> Finding {
    let id = "rt-throttling";
    let evidence = [
        ctx.root.evidence("/proc/sys/kernel/sched_rt_runtime_us"),
        ctx.root.evidence("/proc/sys/kernel/sched_rt_period_us"),
    ];
    let (Some(runtime), Some(period)) = (ctx.env.sched_rt_runtime_us, ctx.env.sched_rt_period_us)
    else {
        return Finding::new(
            id,
            Area::Scheduler,
            Severity::Info,
            "RT throttling: unknown (kernel.sched_rt_runtime_us / sched_rt_period_us not readable)",
        )
        .evidence(evidence);
    };
    let values = format!("kernel.sched_rt_runtime_us = {runtime}, sched_rt_period_us = {period}");
    if runtime < 0 || runtime >= period {
        return Finding::new(
            id,
            Area::Scheduler,
            Severity::Warning,
            format!("RT throttling disabled ({values}): nothing stops a runaway real-time thread"),
        )
        .detail(
            "Nothing stops a real-time thread that never blocks: a runaway SCHED_FIFO loop \
             owns its CPU for good, starving the kernel threads and services there, and on a \
             machine with few CPUs it hangs the system. Keep this only for dedicated \
             busy-polling CPUs with a hardware or remote watchdog. For threads rtlab \
             promotes, `rtlab tune watch --runaway-limit 2s` demotes one that runs that long \
             without sleeping (docs/tune.md), but it is no substitute for the kernel's limit.",
        )
        .fix("sysctl -w kernel.sched_rt_runtime_us=950000 (persist in /etc/sysctl.d/)")
        .evidence(evidence);
    }
    let percent = runtime as f64 * 100.0 / period.max(1) as f64;
    let reserve = 100.0 - percent;
    if percent >= 90.0 {
        Finding::new(
            id,
            Area::Scheduler,
            Severity::Info,
            format!(
                "RT throttling: real-time threads may use {percent:.0}% of each CPU ({values})"
            ),
        )
        .detail(format!(
            "{reserve:.0}% of every period is reserved for normal tasks: a SCHED_FIFO thread \
             that runs {runtime} us without blocking is stopped for the rest of the {period} us \
             period (dmesg: \"sched: RT throttling activated\"). Threads that sleep between \
             activations never meet it; a deliberate busy-poller does."
        ))
        .fix(
            "keep it; only for a CPU dedicated to a busy-polling thread: \
             sysctl -w kernel.sched_rt_runtime_us=-1",
        )
        .evidence(evidence)
    } else {
        Finding::new(
            id,
            Area::Scheduler,
            Severity::Warning,
            format!(
                "RT throttling: real-time threads limited to {percent:.0}% of each CPU ({values})"
            ),
        )
        .detail(format!(
            "Once real-time threads have run {runtime} us in a {period} us period they are \
             stopped until the period ends, however urgent their work: a latency of up to \
             {} us.",
            period - runtime
        ))
        .fix("sysctl -w kernel.sched_rt_runtime_us=950000 (the kernel default)")
        .evidence(evidence)
    }
}
const RT_RUNTIME_FILE: &str = "cpu.rt_runtime_us";
/// Bounds the cgroup walk: a container host can have thousands of groups.
const MAX_CGROUP_DIRS: usize = 500;
const MAX_CGROUP_DEPTH: usize = 4;

fn rt_group_sched(ctx: &Ctx) -> Finding {
    let id = "rt-group-sched";
    let cmdline = ctx.env.cmdline.as_deref().unwrap_or("");
    if kernel_param(cmdline, "rt_group_sched") == Some("0") {
        return Finding::new(
            id,
            Area::Scheduler,
            Severity::Ok,
            "RT group scheduling: disabled at boot (rt_group_sched=0)",
        )
        .evidence(["/proc/cmdline: rt_group_sched=0".to_string()]);
    }

    // cgroup v1 shows CONFIG_RT_GROUP_SCHED as cpu.rt_runtime_us in the cpu
    // controller's hierarchy, mounted as "cpu", "cpu,cpuacct" or similar.
    let v1_cpu_mounts: Vec<(String, std::path::PathBuf)> = ctx
        .root
        .entries("/sys/fs/cgroup")
        .into_iter()
        .filter(|(name, path)| name.split(',').any(|c| c == "cpu") && path.is_dir())
        .collect();
    if let Some((mount, path)) = v1_cpu_mounts
        .iter()
        .find(|(_, p)| p.join(RT_RUNTIME_FILE).exists())
    {
        let root_runtime = rtlab_core::env::read_trimmed(&path.join(RT_RUNTIME_FILE))
            .unwrap_or_else(|| "unreadable".into());
        let mut starved = Vec::new();
        let mut seen = 0;
        walk_zero_runtime(path, "", 0, &mut seen, &mut starved);
        let evidence = vec![format!(
            "/sys/fs/cgroup/{mount}/{RT_RUNTIME_FILE} = {root_runtime}"
        )];
        if starved.is_empty() {
            return Finding::new(
                id,
                Area::Scheduler,
                Severity::Info,
                format!(
                    "RT group scheduling is on (CONFIG_RT_GROUP_SCHED; root cpu cgroup \
                     {RT_RUNTIME_FILE} = {root_runtime}), no child group without RT time"
                ),
            )
            .detail(
                "Promotion works while tasks stay in the root cpu cgroup. A child cgroup \
                 starts with cpu.rt_runtime_us = 0, and a task in it cannot become SCHED_FIFO \
                 or SCHED_RR: sched_setscheduler fails with EPERM, even for root. Services \
                 with CPU accounting and containers land in such groups.",
            )
            .fix(rt_group_fix(mount))
            .evidence(evidence);
        }
        let names: Vec<String> = starved.iter().map(|g| format!("/{g}")).collect();
        return Finding::new(
            id,
            Area::Scheduler,
            Severity::Warning,
            format!(
                "RT group scheduling: {} cpu cgroup(s) have {RT_RUNTIME_FILE} = 0: {}",
                starved.len(),
                list_some(&names, 6)
            ),
        )
        .detail(
            "The kernel is built with CONFIG_RT_GROUP_SCHED. A task in a cgroup without RT \
             time cannot become SCHED_FIFO or SCHED_RR: sched_setscheduler fails with EPERM, \
             even for root, so services and containers in these groups cannot be promoted.",
        )
        .fix(rt_group_fix(mount))
        .evidence(evidence);
    }

    // cgroup v2 has no RT files; the kernel config is the remaining evidence.
    let config = ctx.kernel_config();
    let config_path = config
        .as_ref()
        .map_or_else(|| "/boot/config-RELEASE".to_string(), |(p, _)| p.clone());
    match config.map(|(_, text)| text) {
        Some(text) if text.lines().any(|l| l.trim() == "CONFIG_RT_GROUP_SCHED=y") => {
            Finding::new(
                id,
                Area::Scheduler,
                Severity::Info,
                format!("RT group scheduling is on (CONFIG_RT_GROUP_SCHED=y in {config_path})"),
            )
            .detail(
                "With cgroup v2 such a kernel only enables the cpu controller while every \
                 real-time task is in the root cgroup, and a task in a child cgroup with the \
                 cpu controller cannot become SCHED_FIFO or SCHED_RR (EPERM).",
            )
            .fix("boot with rt_group_sched=0 (kernel 6.16 and later), or keep real-time services out of cgroups with the cpu controller")
            .evidence([format!("{config_path}: CONFIG_RT_GROUP_SCHED=y")])
        }
        Some(_) => Finding::new(
            id,
            Area::Scheduler,
            Severity::Ok,
            format!("RT group scheduling: off (not set in {config_path})"),
        ),
        None if !v1_cpu_mounts.is_empty() => Finding::new(
            id,
            Area::Scheduler,
            Severity::Ok,
            format!(
                "RT group scheduling: off (no {RT_RUNTIME_FILE} in /sys/fs/cgroup/{})",
                v1_cpu_mounts[0].0
            ),
        ),
        None => Finding::new(
            id,
            Area::Scheduler,
            Severity::Info,
            "RT group scheduling: unknown (no cgroup v1 cpu controller and no kernel config to read)",
        )
        .evidence([format!("{config_path}: missing")]),
    }
}

fn rt_group_fix(mount: &str) -> String {
    format!(
        "give the group RT time, parents first: echo 50000 > /sys/fs/cgroup/{mount}/<group>/{RT_RUNTIME_FILE}; \
         or boot with rt_group_sched=0 (kernel 6.16 and later) or a kernel without CONFIG_RT_GROUP_SCHED"
    )
}

/// Collects child cgroups (relative paths) whose RT runtime is 0.
fn walk_zero_runtime(
    dir: &std::path::Path,
    rel: &str,
    depth: usize,
    seen: &mut usize,
    out: &mut Vec<String>,
) {
    if depth >= MAX_CGROUP_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<_> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    children.sort();
    for (name, path) in children {
        *seen += 1;
        if *seen > MAX_CGROUP_DIRS {
            return;
        }
        let child_rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if rtlab_core::env::read_trimmed(&path.join(RT_RUNTIME_FILE)).as_deref() == Some("0") {
            out.push(child_rel.clone());
        }
        walk_zero_runtime(&path, &child_rel, depth + 1, seen, out);
    }
}
fn timer_migration(ctx: &Ctx) -> Finding {
    let id = "timer-migration";
    let evidence = [ctx.root.evidence("/proc/sys/kernel/timer_migration")];
    match ctx.env.timer_migration {
        Some(0) => Finding::new(
            id,
            Area::Scheduler,
            Severity::Ok,
            "timer migration: off (kernel.timer_migration = 0)",
        ),
        Some(v) => Finding::new(
            id,
            Area::Scheduler,
            Severity::Info,
            format!("timer migration: on (kernel.timer_migration = {v})"),
        )
        .detail(
            "Timers armed on an idle CPU may expire on another CPU, which then gets timer \
             interrupts and softirq work it never asked for, including a CPU running \
             real-time threads.",
        )
        .fix("sysctl -w kernel.timer_migration=0 (persist in /etc/sysctl.d/)"),
        None => Finding::new(
            id,
            Area::Scheduler,
            Severity::Info,
            "timer migration: unknown (kernel.timer_migration not readable)",
        ),
    }
    .evidence(evidence)
}
