//! Interrupts: where IRQs may run compared with the isolated CPUs, and
//! irqbalance, which moves them around.

use std::collections::BTreeMap;

use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::read_trimmed;

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};
use super::util::{hex_mask, intersection, list_some, parse_hex_mask, plural, ranges};

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    let table = IrqTable::read(ctx);
    vec![irqbalance(ctx, &table), irq_affinity(ctx, &table)]
}

/// One interrupt line.
struct Irq {
    number: u64,
    /// The device name: the last column of /proc/interrupts.
    name: Option<String>,
    /// smp_affinity_list: where the IRQ may be delivered.
    allowed: Option<CpuSet>,
    /// effective_affinity_list: where it is delivered now.
    effective: Option<CpuSet>,
    /// Interrupts since boot per CPU, from /proc/interrupts.
    counts: BTreeMap<usize, u64>,
}

impl Irq {
    fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("{} {name}", self.number),
            None => self.number.to_string(),
        }
    }
}

struct IrqTable {
    irqs: Vec<Irq>,
    /// /proc/irq/default_smp_affinity: what new IRQs get.
    default_affinity: Option<CpuSet>,
    /// Whether /proc/interrupts was readable (then only IRQs with a handler
    /// are listed).
    have_interrupts: bool,
}

impl IrqTable {
    fn read(ctx: &Ctx) -> IrqTable {
        let interrupts = ctx.root.read("/proc/interrupts");
        let parsed = interrupts.as_deref().map(parse_interrupts);
        let mut by_number: BTreeMap<u64, Irq> = BTreeMap::new();
        for (name, dir) in ctx.root.entries("/proc/irq") {
            let Ok(number) = name.parse::<u64>() else {
                continue;
            };
            let list =
                |file: &str| read_trimmed(&dir.join(file)).and_then(|v| CpuSet::parse(&v).ok());
            by_number.insert(
                number,
                Irq {
                    number,
                    name: None,
                    allowed: list("smp_affinity_list"),
                    effective: list("effective_affinity_list"),
                    counts: BTreeMap::new(),
                },
            );
        }
        if let Some(rows) = parsed {
            // IRQs without a handler are absent from /proc/interrupts and
            // never fire: leave them out.
            by_number.retain(|n, _| rows.contains_key(n));
            for (number, (name, counts)) in rows {
                let irq = by_number.entry(number).or_insert_with(|| Irq {
                    number,
                    name: None,
                    allowed: None,
                    effective: None,
                    counts: BTreeMap::new(),
                });
                irq.name = name;
                irq.counts = counts;
            }
        }
        IrqTable {
            irqs: by_number.into_values().collect(),
            default_affinity: ctx
                .root
                .read("/proc/irq/default_smp_affinity")
                .and_then(|m| parse_hex_mask(&m)),
            have_interrupts: interrupts.is_some(),
        }
    }

    /// IRQs allowed on any of `cpus`.
    fn allowed_on(&self, cpus: &CpuSet) -> Vec<&Irq> {
        self.irqs
            .iter()
            .filter(|irq| {
                irq.allowed
                    .as_ref()
                    .is_some_and(|a| !intersection(a, cpus).is_empty())
            })
            .collect()
    }
}

type InterruptRow = (Option<String>, BTreeMap<usize, u64>);

/// The numbered rows of /proc/interrupts: IRQ -> (name, count per CPU).
/// The header names the CPU of each column (offline CPUs have none).
fn parse_interrupts(text: &str) -> BTreeMap<u64, InterruptRow> {
    let mut lines = text.lines();
    let columns: Vec<usize> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut rows = BTreeMap::new();
    for line in lines {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(number) = key.trim().parse::<u64>() else {
            continue; // NMI, LOC, RES...: not routable IRQs
        };
        let tokens: Vec<&str> = rest.split_whitespace().collect();
        let mut counts = BTreeMap::new();
        for (cpu, token) in columns.iter().zip(&tokens) {
            if let Ok(n) = token.parse::<u64>() {
                counts.insert(*cpu, n);
            }
        }
        let name = tokens
            .get(columns.len()..)
            .and_then(|rest| rest.last())
            .map(|s| s.to_string());
        rows.insert(number, (name, counts));
    }
    rows
}

fn irqbalance_pids(ctx: &Ctx) -> Vec<i32> {
    let mut pids: Vec<i32> = ctx
        .input
        .tasks
        .iter()
        .filter(|t| !t.kernel_thread && t.process_name == "irqbalance")
        .map(|t| t.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// IRQBALANCE_BANNED_CPULIST / IRQBALANCE_BANNED_CPUS from the packaged
/// configuration files, as "file: line".
fn irqbalance_bans(ctx: &Ctx) -> Vec<String> {
    let mut bans = Vec::new();
    for file in ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"] {
        let Ok(text) = std::fs::read_to_string(ctx.root.path(file)) else {
            continue;
        };
        for line in text.lines().map(str::trim) {
            if line.starts_with("IRQBALANCE_BANNED_CPU") {
                bans.push(format!("{file}: {line}"));
            }
        }
    }
    bans
}

fn irqbalance(ctx: &Ctx, table: &IrqTable) -> Finding {
    let id = "irqbalance";
    if ctx.input.tasks.is_empty() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Info,
            "irqbalance: unknown (no thread list)",
        );
    }
    let pids = irqbalance_pids(ctx);
    if pids.is_empty() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Ok,
            "irqbalance: not running",
        );
    }
    let pid_text = pids
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let bans = irqbalance_bans(ctx);
    let evidence: Vec<String> = std::iter::once(format!("irqbalance pid {pid_text}"))
        .chain(bans.iter().cloned())
        .collect();
    let ban_note = if bans.is_empty() {
        "no IRQBALANCE_BANNED_CPULIST configured".to_string()
    } else {
        bans.join("; ")
    };
    if ctx.isolated.is_empty() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Info,
            format!("irqbalance: running (pid {pid_text}), {ban_note}"),
        )
        .detail(
            "It rewrites IRQ affinities every 10 s by load, so interrupts can move onto the \
             CPUs where real-time threads run, and any affinity set by hand is overwritten.",
        )
        .fix(
            "to place IRQs yourself: systemctl disable --now irqbalance, then write \
             /proc/irq/N/smp_affinity_list",
        )
        .evidence(evidence);
    }
    let isolated = &ctx.isolated;
    let on_isolated = table.allowed_on(isolated);
    let fix = format!(
        "IRQBALANCE_BANNED_CPULIST={isolated} in /etc/default/irqbalance (Debian/Ubuntu) or \
         /etc/sysconfig/irqbalance (RHEL), then systemctl restart irqbalance; or \
         systemctl disable --now irqbalance"
    );
    if on_isolated.is_empty() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Info,
            format!(
                "irqbalance: running (pid {pid_text}), no IRQ allowed on isolated CPUs {isolated} now; {ban_note}"
            ),
        )
        .detail(
            "Recent irqbalance versions keep off isolcpus and nohz_full CPUs by themselves; \
             an explicit ban keeps it so after upgrades and configuration changes.",
        )
        .fix(fix)
        .evidence(evidence);
    }
    Finding::new(
        id,
        Area::Interrupts,
        Severity::Warning,
        format!(
            "irqbalance: running (pid {pid_text}) and {} allowed on isolated CPUs {isolated}; {ban_note}",
            plural(on_isolated.len(), "IRQ is", "IRQs are")
        ),
    )
    .detail(
        "irqbalance rewrites IRQ affinities every 10 s by load and can route interrupts onto \
         the isolated CPUs (see irq-affinity for the list).",
    )
    .fix(fix)
    .evidence(evidence)
}

fn irq_affinity(ctx: &Ctx, table: &IrqTable) -> Finding {
    let id = "irq-affinity";
    let default_text = table
        .default_affinity
        .as_ref()
        .map_or("unknown".to_string(), |d| d.to_string());
    let mut evidence = vec![
        ctx.root.evidence("/proc/irq/default_smp_affinity"),
        format!(
            "/proc/irq/*/smp_affinity_list: {} read{}",
            plural(table.irqs.len(), "IRQ", "IRQs"),
            if table.have_interrupts {
                " (those listed in /proc/interrupts)"
            } else {
                " (/proc/interrupts missing)"
            }
        ),
    ];
    if table.irqs.is_empty() && table.default_affinity.is_none() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Info,
            "IRQ affinity: unknown (/proc/irq not readable)",
        )
        .evidence(evidence);
    }
    let isolated = &ctx.isolated;
    if isolated.is_empty() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Info,
            format!(
                "IRQ affinity: no isolated CPUs to keep free ({}, default affinity CPUs {default_text})",
                plural(table.irqs.len(), "IRQ", "IRQs")
            ),
        )
        .detail("Every CPU takes interrupts; see cpu-isolation to set CPUs aside.")
        .evidence(evidence);
    }

    let offenders = table.allowed_on(isolated);
    let default_on_isolated = table
        .default_affinity
        .as_ref()
        .map(|d| intersection(d, isolated))
        .filter(|s| !s.is_empty());
    if offenders.is_empty() && default_on_isolated.is_none() {
        return Finding::new(
            id,
            Area::Interrupts,
            Severity::Ok,
            format!(
                "IRQ affinity: none of {} allowed on isolated CPUs {isolated} (default affinity CPUs {default_text})",
                plural(table.irqs.len(), "IRQ", "IRQs")
            ),
        )
        .evidence(evidence);
    }

    let housekeeping = ctx.housekeeping();
    let labels: Vec<String> = offenders
        .iter()
        .map(|irq| {
            let allowed = irq
                .allowed
                .as_ref()
                .map(|a| a.to_string())
                .unwrap_or_default();
            format!("{} (cpus {allowed})", irq.label())
        })
        .collect();
    evidence.extend(offenders.iter().map(|irq| {
        format!(
            "/proc/irq/{}/smp_affinity_list = {}",
            irq.number,
            irq.allowed
                .as_ref()
                .map(|a| a.to_string())
                .unwrap_or_default()
        )
    }));

    let detail = offenders_detail(
        &offenders,
        isolated,
        default_on_isolated.as_ref(),
        &default_text,
    );
    let numbers = ranges(offenders.iter().map(|irq| irq.number));
    let fix = offenders_fix(&offenders, &housekeeping, default_on_isolated.is_some());

    let summary = if offenders.is_empty() {
        format!(
            "IRQ affinity: default_smp_affinity {default_text} includes isolated CPUs {isolated}"
        )
    } else {
        format!(
            "IRQ affinity: {} allowed on isolated CPUs {isolated} (IRQ {numbers}): {}",
            plural(offenders.len(), "IRQ", "IRQs"),
            list_some(&labels, 8)
        )
    };
    Finding::new(id, Area::Interrupts, Severity::Warning, summary)
        .detail(detail)
        .fix(fix)
        .evidence(evidence)
}

/// What the IRQs allowed on isolated CPUs do there, beyond being allowed:
/// the detail of the irq-affinity finding.
fn offenders_detail(
    offenders: &[&Irq],
    isolated: &CpuSet,
    default_on_isolated: Option<&CpuSet>,
    default_text: &str,
) -> String {
    // What is actually happening, beyond what is allowed: deliveries now
    // and counts since boot on the isolated CPUs.
    let delivered: Vec<String> = offenders
        .iter()
        .filter(|irq| {
            irq.effective
                .as_ref()
                .is_some_and(|e| !intersection(e, isolated).is_empty())
        })
        .map(|irq| irq.number.to_string())
        .collect();
    let fired: Vec<String> = offenders
        .iter()
        .filter_map(|irq| {
            let n: u64 = isolated.iter().filter_map(|c| irq.counts.get(&c)).sum();
            (n > 0).then(|| format!("{} x{n}", irq.number))
        })
        .collect();
    let mut detail = String::from(
        "An interrupt on an isolated CPU preempts whatever runs there, real-time threads \
         included, for its handler (and on PREEMPT_RT wakes its irq thread there).",
    );
    if !delivered.is_empty() {
        detail.push_str(&format!(
            " Delivered to isolated CPUs now (effective affinity): IRQ {}.",
            list_some(&delivered, 12)
        ));
    }
    if !fired.is_empty() {
        detail.push_str(&format!(
            " Fired on isolated CPUs since boot (IRQ x count): {}.",
            list_some(&fired, 12)
        ));
    }
    if let Some(d) = default_on_isolated {
        detail.push_str(&format!(
            " New IRQs start on CPUs {default_text} (default_smp_affinity), isolated {d} included."
        ));
    }
    detail.push_str(
        " Managed IRQs (multi-queue NVMe, network) refuse the write with EIO; \
         isolcpus=managed_irq keeps them off isolated CPUs.",
    );
    detail
}

/// The irq-affinity finding's fix: move the IRQs (and the default affinity
/// when `default_on_isolated`) to the housekeeping CPUs.
fn offenders_fix(offenders: &[&Irq], housekeeping: &CpuSet, default_on_isolated: bool) -> String {
    let loop_list: Vec<String> = offenders.iter().map(|irq| irq.number.to_string()).collect();
    if housekeeping.is_empty() {
        // Only when neither sysfs nor cpuinfo told the online CPUs.
        "move these IRQs to the CPUs that are not isolated: \
         echo CPULIST > /proc/irq/N/smp_affinity_list"
            .to_string()
    } else {
        let mut fix = String::new();
        if !offenders.is_empty() {
            fix.push_str(&format!(
                "for irq in {}; do echo {housekeeping} > /proc/irq/$irq/smp_affinity_list; done; ",
                loop_list.join(" ")
            ));
        }
        if default_on_isolated {
            fix.push_str(&format!(
                "echo {} > /proc/irq/default_smp_affinity; ",
                hex_mask(housekeeping)
            ));
        }
        fix.push_str(&format!(
            "at boot: irqaffinity={housekeeping}; rtlab does not change IRQs itself"
        ));
        fix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupts_parse() {
        let text = "           CPU0       CPU1       \n\
                    \x20 1:          0          9   IO-APIC   1-edge      i8042\n\
                    \x2024:          5          7  PCI-MSI 49152-edge      virtio0-config\n\
                    NMI:          0          0   Non-maskable interrupts\n";
        let rows = parse_interrupts(text);
        assert_eq!(rows.len(), 2);
        let (name, counts) = &rows[&24];
        assert_eq!(name.as_deref(), Some("virtio0-config"));
        assert_eq!(counts[&1], 7);
        assert_eq!(rows[&1].0.as_deref(), Some("i8042"));
        assert!(parse_interrupts("").is_empty());
    }

    #[test]
    fn interrupts_with_offline_cpu_columns() {
        // CPU1 offline: the columns are CPU0 and CPU2.
        let text = "    CPU0  CPU2\n 30:  1  2  PCI-MSI eth0\n";
        let rows = parse_interrupts(text);
        assert_eq!(rows[&30].1[&2], 2);
        assert!(!rows[&30].1.contains_key(&1));
    }
}
