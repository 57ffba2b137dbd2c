//! Memory settings that stall real-time threads on page faults:
//! transparent hugepages and swap.

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    vec![thp(ctx), thp_defrag(ctx), swap(ctx)]
}

const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const THP_DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";

fn thp(ctx: &Ctx) -> Finding {
    let id = "thp";
    let evidence = [ctx.root.evidence(THP_ENABLED)];
    match ctx.env.thp_enabled.as_deref() {
        Some("always") => Finding::new(
            id,
            Area::Memory,
            Severity::Warning,
            "transparent hugepages: always",
        )
        .detail(
            "Every large anonymous mapping gets huge pages: a page fault may have to find \
             or compact 2 MiB of contiguous memory, and khugepaged rewrites mappings (and \
             takes the process's mmap lock) in the background, both stalls in the middle \
             of a real-time thread's work.",
        )
        .fix(format!(
            "echo madvise > {THP_ENABLED} (at boot: transparent_hugepage=madvise)"
        )),
        Some(v) => Finding::new(
            id,
            Area::Memory,
            Severity::Ok,
            format!("transparent hugepages: {v}"),
        ),
        None => Finding::new(
            id,
            Area::Memory,
            Severity::Info,
            "transparent hugepages: unknown (not built in or not readable)",
        ),
    }
    .evidence(evidence)
}

fn thp_defrag(ctx: &Ctx) -> Finding {
    let id = "thp-defrag";
    let evidence = [ctx.root.evidence(THP_DEFRAG)];
    match ctx.env.thp_defrag.as_deref() {
        Some("always") => Finding::new(
            id,
            Area::Memory,
            Severity::Warning,
            "transparent hugepage defrag: always",
        )
        .detail(
            "A page fault that wants a huge page compacts memory synchronously (direct \
             compaction) until it gets one: milliseconds inside the faulting thread.",
        )
        .fix(format!(
            "echo madvise > {THP_DEFRAG} (or defer: compaction by kcompactd in the background)"
        )),
        Some(v) => Finding::new(
            id,
            Area::Memory,
            Severity::Ok,
            format!("transparent hugepage defrag: {v}"),
        ),
        None => Finding::new(
            id,
            Area::Memory,
            Severity::Info,
            "transparent hugepage defrag: unknown (not built in or not readable)",
        ),
    }
    .evidence(evidence)
}

fn swap(ctx: &Ctx) -> Finding {
    let id = "swap";
    let swappiness = ctx.root.read("/proc/sys/vm/swappiness");
    let evidence = [
        format!(
            "/proc/meminfo SwapTotal = {}",
            ctx.env
                .swap_total_kb
                .map_or("missing".to_string(), |kb| format!("{kb} kB"))
        ),
        format!(
            "/proc/swaps: {}",
            ctx.env
                .swap_devices
                .map_or("missing".to_string(), |n| format!("{n} active"))
        ),
        ctx.root.evidence("/proc/sys/vm/swappiness"),
    ];
    let swappiness_note = swappiness
        .as_deref()
        .map(|v| format!(", vm.swappiness = {v}"))
        .unwrap_or_default();
    let devices = ctx.env.swap_devices;
    let total = ctx.env.swap_total_kb;
    if devices.is_none() && total.is_none() {
        return Finding::new(
            id,
            Area::Memory,
            Severity::Info,
            "swap: unknown (/proc/swaps and /proc/meminfo not readable)",
        )
        .evidence(evidence);
    }
    let active = devices.unwrap_or(0) > 0 || total.unwrap_or(0) > 0;
    if !active {
        return Finding::new(
            id,
            Area::Memory,
            Severity::Ok,
            format!("swap: none{swappiness_note}"),
        )
        .evidence(evidence);
    }
    Finding::new(
        id,
        Area::Memory,
        Severity::Warning,
        format!(
            "swap: active, {} MiB on {} device(s){swappiness_note}",
            total.unwrap_or(0) / 1024,
            devices.map_or("?".to_string(), |n| n.to_string())
        ),
    )
    .detail(
        "Memory of a real-time process that is not locked can be swapped out; touching it \
         again is a major page fault that waits for the swap device (milliseconds on disk, \
         tens of microseconds even on zram).",
    )
    .fix(
        "make the application lock its memory (mlockall(MCL_CURRENT | MCL_FUTURE), needs \
         LimitMEMLOCK=infinity), or turn swap off: swapoff -a and remove it from /etc/fstab",
    )
    .evidence(evidence)
}
