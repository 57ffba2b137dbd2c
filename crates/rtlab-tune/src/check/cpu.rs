//! Per-CPU settings: frequency governor, idle states, and the isolation of
//! CPUs from the kernel's housekeeping (isolcpus, nohz_full, rcu_nocbs).

use std::collections::BTreeMap;

use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::{read_trimmed, Environment};

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};
use super::util::{isolcpus_list, kernel_param};

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    vec![governor(ctx), idle_states(ctx), isolation(ctx)]
}

/// CPUs grouped by a per-CPU value: `cpu0-1: powersave`.
fn grouped(values: &BTreeMap<usize, String>) -> Vec<(String, CpuSet)> {
    let mut by_value: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (cpu, value) in values {
        by_value.entry(value).or_default().push(*cpu);
    }
    by_value
        .into_iter()
        .map(|(v, cpus)| (v.to_string(), CpuSet::from_cpus(cpus)))
        .collect()
}

fn cpu_number(name: &str) -> Option<usize> {
    name.strip_prefix("cpu")?.parse().ok()
}

fn governor(ctx: &Ctx) -> Finding {
    let id = "cpu-governor";
    let per_cpu: BTreeMap<usize, String> = ctx
        .env
        .governors
        .iter()
        .filter_map(|(name, gov)| Some((cpu_number(name)?, gov.clone())))
        .collect();
    if per_cpu.is_empty() {
        return Finding::new(
            id,
            Area::Cpu,
            Severity::Info,
            "CPU frequency governor: none (no cpufreq driver)",
        )
        .detail(
            "The frequency is not controlled by this kernel: a VM (the host decides), or \
             firmware-managed or fixed-frequency CPUs. Check the BIOS power profile on bare \
             metal.",
        )
        .evidence(["/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor: missing"]);
    }
    let groups = grouped(&per_cpu);
    let shown: Vec<String> = groups
        .iter()
        .map(|(gov, cpus)| format!("cpu{cpus}: {gov}"))
        .collect();
    let evidence: Vec<String> = groups
        .iter()
        .map(|(gov, cpus)| format!("cpu{cpus}/cpufreq/scaling_governor = {gov}"))
        .collect();
    let slow: Vec<&(String, CpuSet)> = groups.iter().filter(|(g, _)| g != "performance").collect();
    if slow.is_empty() {
        return Finding::new(
            id,
            Area::Cpu,
            Severity::Ok,
            format!("CPU frequency governor: {}", shown.join(", ")),
        )
        .evidence(evidence);
    }
    Finding::new(
        id,
        Area::Cpu,
        Severity::Warning,
        format!("CPU frequency governor: {}", shown.join(", ")),
    )
    .detail(
        "A governor other than performance lowers the clock when the CPU looks idle, and a \
         real-time thread that sleeps between activations makes it look idle: each wake-up \
         then runs slower, and frequency changes themselves stall the CPU.",
    )
    .fix(
        "cpupower frequency-set -g performance, or: for g in \
         /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance > $g; done \
         (persist with tuned's latency-performance profile or a systemd unit)",
    )
    .evidence(evidence)
}

/// An idle state of one CPU.
struct IdleState {
    cpu: usize,
    name: String,
    /// Exit latency in microseconds.
    latency_us: u64,
    disabled: bool,
}

/// Exit latency from which a state counts as deep (the value given to
/// `cpupower idle-set -D`, which disables states at or above it).
const DEEP_US: u64 = 10;
/// Exit latency from which enabled deep states are a warning, not a note.
const WARN_US: u64 = 50;

fn read_idle_states(ctx: &Ctx) -> Vec<IdleState> {
    let mut states = Vec::new();
    for (name, cpu_dir) in ctx.root.entries("/sys/devices/system/cpu") {
        let Some(cpu) = cpu_number(&name) else {
            continue;
        };
        let Ok(dir) = std::fs::read_dir(cpu_dir.join("cpuidle")) else {
            continue;
        };
        let mut dirs: Vec<_> = dir
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("state"))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            let Some(latency_us) = read_trimmed(&dir.join("latency")).and_then(|v| v.parse().ok())
            else {
                continue;
            };
            states.push(IdleState {
                cpu,
                name: read_trimmed(&dir.join("name")).unwrap_or_else(|| "?".into()),
                latency_us,
                disabled: read_trimmed(&dir.join("disable")).as_deref() == Some("1"),
            });
        }
    }
    states
}

fn idle_states(ctx: &Ctx) -> Finding {
    let id = "cpu-idle";
    let driver = ctx.env.cpuidle_driver.as_deref().unwrap_or("none");
    let governor = ctx.env.cpuidle_governor.as_deref().unwrap_or("none");
    let states = read_idle_states(ctx);
    let evidence = vec![
        ctx.root
            .evidence("/sys/devices/system/cpu/cpuidle/current_driver"),
        format!(
            "/sys/devices/system/cpu/cpu*/cpuidle/state*: {} states read",
            states.len()
        ),
    ];
    if states.is_empty() {
        return Finding::new(
            id,
            Area::Cpu,
            Severity::Info,
            format!("CPU idle states: none exposed (cpuidle driver {driver})"),
        )
        .detail(
            "Without a cpuidle driver the kernel idles with the architecture default (HLT \
             or WFI); deeper states may still be entered by firmware.",
        )
        .evidence(evidence);
    }

    // One line per distinct (name, latency), with the CPUs where it is
    // enabled: machines usually have the same states on every CPU.
    let mut by_state: BTreeMap<(u64, String), (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for s in &states {
        let entry = by_state.entry((s.latency_us, s.name.clone())).or_default();
        if s.disabled {
            entry.1.push(s.cpu);
        } else {
            entry.0.push(s.cpu);
        }
    }
    let describe = |(latency, name): &(u64, String), (on, off): &(Vec<usize>, Vec<usize>)| {
        let mut text = format!("{name} {latency} us");
        if on.is_empty() {
            text.push_str(" (disabled)");
        } else if !off.is_empty() {
            text.push_str(&format!(
                " (enabled on cpu{})",
                CpuSet::from_cpus(on.clone())
            ));
        }
        text
    };
    let all: Vec<String> = by_state.iter().map(|(k, v)| describe(k, v)).collect();
    let deep: Vec<String> = by_state
        .iter()
        .filter(|((latency, _), (on, _))| *latency >= DEEP_US && !on.is_empty())
        .map(|(k, v)| describe(k, v))
        .collect();
    let worst = states
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| s.latency_us)
        .max()
        .unwrap_or(0);
    let header = format!("driver {driver}, governor {governor}");
    if deep.is_empty() {
        return Finding::new(
            id,
            Area::Cpu,
            Severity::Ok,
            format!(
                "CPU idle states: only shallow ones enabled, {} ({header})",
                all.join(", ")
            ),
        )
        .evidence(evidence);
    }
    let severity = if worst >= WARN_US {
        Severity::Warning
    } else {
        Severity::Info
    };
    Finding::new(
        id,
        Area::Cpu,
        severity,
        format!(
            "CPU idle states: deep states enabled, exit latency up to {worst} us: {} ({header})",
            deep.join(", ")
        ),
    )
    .detail(format!(
        "An idle CPU in a deep state needs its exit latency before a woken thread runs; \
         the idle governor picks states by prediction, not by the deadline of a real-time \
         thread. All states: {}. rtlab holds /dev/cpu_dma_latency at 0 during its own runs; \
         an application must do the same (open it, write 0, keep it open) or the states \
         must be disabled.",
        all.join(", ")
    ))
    .fix(format!(
        "cpupower idle-set -D {DEEP_US} (disables states with exit latency >= {DEEP_US} us); \
         at boot: intel_idle.max_cstate=0 processor.max_cstate=1 (x86); or tuned's \
         latency-performance profile"
    ))
    .evidence(evidence)
}

/// What the kernel command line and sysfs say about CPU isolation.
pub(super) struct Isolation {
    isolcpus: Option<String>,
    nohz_full: Option<String>,
    rcu_nocbs: Option<String>,
    /// /sys/devices/system/cpu/isolated, else the isolcpus= list.
    isolated: CpuSet,
    /// /sys/devices/system/cpu/nohz_full, else the nohz_full= list.
    tickless: CpuSet,
}

impl Isolation {
    pub(super) fn read(env: &Environment) -> Isolation {
        let cmdline = env.cmdline.as_deref().unwrap_or("");
        let isolcpus = kernel_param(cmdline, "isolcpus").map(str::to_string);
        let nohz_full = kernel_param(cmdline, "nohz_full").map(str::to_string);
        let rcu_nocbs = kernel_param(cmdline, "rcu_nocbs").map(str::to_string);
        let isolated = env
            .isolated_cpus
            .as_deref()
            .and_then(|s| CpuSet::parse(s).ok())
            .or_else(|| isolcpus.as_deref().and_then(isolcpus_list))
            .unwrap_or_default();
        let tickless = env
            .nohz_full
            .as_deref()
            .and_then(|s| CpuSet::parse(s).ok())
            .or_else(|| nohz_full.as_deref().and_then(|s| CpuSet::parse(s).ok()))
            .unwrap_or_default();
        Isolation {
            isolcpus,
            nohz_full,
            rcu_nocbs,
            isolated,
            tickless,
        }
    }

    /// The CPUs meant to be kept free of housekeeping: isolated or tickless.
    pub(super) fn quiet_cpus(&self) -> CpuSet {
        CpuSet::from_cpus(self.isolated.iter().chain(self.tickless.iter()).collect())
    }
}

fn isolation(ctx: &Ctx) -> Finding {
    let id = "cpu-isolation";
    let iso = Isolation::read(&ctx.env);
    let cpus = ctx.online.len();
    let shown = |name: &str, v: &Option<String>| match v {
        Some(v) if v.is_empty() => Some(name.to_string()),
        Some(v) => Some(format!("{name}={v}")),
        None => None,
    };
    let params: Vec<String> = [
        shown("isolcpus", &iso.isolcpus),
        shown("nohz_full", &iso.nohz_full),
        shown("rcu_nocbs", &iso.rcu_nocbs),
    ]
    .into_iter()
    .flatten()
    .collect();
    let evidence = vec![
        format!(
            "/proc/cmdline: {}",
            if params.is_empty() {
                "no isolcpus/nohz_full/rcu_nocbs".to_string()
            } else {
                params.join(" ")
            }
        ),
        ctx.root.evidence("/sys/devices/system/cpu/isolated"),
        ctx.root.evidence("/sys/devices/system/cpu/nohz_full"),
    ];
    if ctx.env.cmdline.is_none() {
        return Finding::new(
            id,
            Area::Isolation,
            Severity::Info,
            "CPU isolation: unknown (/proc/cmdline not readable)",
        )
        .evidence(evidence);
    }
    if cpus == 1 {
        return Finding::new(
            id,
            Area::Isolation,
            Severity::Info,
            "CPU isolation: not possible on 1 CPU",
        )
        .evidence(evidence);
    }
    let suggestion = suggested_isolation(&ctx.online);
    let two_cpus = if cpus == 2 {
        " With 2 CPUs this is a trade-off: everything else (services, interrupts, kernel \
         threads) then shares the one remaining CPU, so it only pays when the real-time \
         work fits on one CPU."
    } else {
        ""
    };
    if params.is_empty() {
        return Finding::new(
            id,
            Area::Isolation,
            Severity::Info,
            format!("CPU isolation: none ({cpus} CPUs; no isolcpus, nohz_full or rcu_nocbs on the kernel command line)"),
        )
        .detail(format!(
            "Real-time threads share every CPU with the scheduler tick, RCU callbacks, \
             kernel workers and other processes. Isolating CPUs for them removes most of \
             that noise.{two_cpus}"
        ))
        .fix(format!("boot with {suggestion}, then pin the real-time threads there"))
        .evidence(evidence);
    }
    let missing: Vec<&str> = [
        ("isolcpus", &iso.isolcpus),
        ("nohz_full", &iso.nohz_full),
        ("rcu_nocbs", &iso.rcu_nocbs),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_none())
    .map(|(n, _)| n)
    .collect();
    let sets = format!(
        "isolated {}, nohz_full {}",
        or_none(&iso.isolated),
        or_none(&iso.tickless)
    );
    if missing.is_empty() {
        return Finding::new(
            id,
            Area::Isolation,
            Severity::Ok,
            format!("CPU isolation: {} ({sets})", params.join(" ")),
        )
        .evidence(evidence);
    }
    Finding::new(
        id,
        Area::Isolation,
        Severity::Info,
        format!(
            "CPU isolation: {} without {} ({sets})",
            params.join(" "),
            missing.join(" or ")
        ),
    )
    .detail(format!(
        "isolcpus keeps other tasks off the CPUs; nohz_full stops the scheduler tick while \
         one task runs there; rcu_nocbs moves RCU callbacks to housekeeping CPUs. Each \
         removes a different source of interruptions.{two_cpus}"
    ))
    .fix(format!("complete the set, e.g. {suggestion}"))
    .evidence(evidence)
}

fn or_none(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".into()
    } else {
        set.to_string()
    }
}

/// A boot-parameter set that isolates the upper half of the CPUs (at least
/// one, never CPU 0, which keeps housekeeping duties on most systems).
fn suggested_isolation(online: &CpuSet) -> String {
    let cpus: Vec<usize> = online.iter().collect();
    if cpus.len() < 2 {
        return String::new();
    }
    let split = cpus.len() / 2;
    let isolated = CpuSet::from_cpus(cpus[split.max(1)..].to_vec());
    let housekeeping = CpuSet::from_cpus(cpus[..split.max(1)].to_vec());
    format!(
        "isolcpus=domain,managed_irq,{isolated} nohz_full={isolated} rcu_nocbs={isolated} \
         irqaffinity={housekeeping}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestion_isolates_upper_half() {
        let set = |s: &str| CpuSet::parse(s).unwrap();
        assert_eq!(
            suggested_isolation(&set("0-1")),
            "isolcpus=domain,managed_irq,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"
        );
        assert_eq!(
            suggested_isolation(&set("0-7")),
            "isolcpus=domain,managed_irq,4-7 nohz_full=4-7 rcu_nocbs=4-7 irqaffinity=0-3"
        );
        assert_eq!(suggested_isolation(&set("0")), "");
    }

    #[test]
    fn grouping_by_value() {
        let mut values = BTreeMap::new();
        values.insert(0, "powersave".to_string());
        values.insert(1, "powersave".to_string());
        values.insert(2, "performance".to_string());
        let groups = grouped(&values);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0, "performance");
        assert_eq!(groups[1].1.to_string(), "0-1");
    }
}
