//! Small parsers and formatters the checks share: kernel command-line
//! parameters, CPU masks, compact number ranges.

use rtlab_core::cpuset::CpuSet;

/// The kernel's own arguments: everything before `--` (the rest is init's).
pub fn kernel_args(cmdline: &str) -> impl Iterator<Item = &str> {
    cmdline.split_whitespace().take_while(|a| *a != "--")
}

/// The value of kernel parameter `key` as the kernel sees it (the last
/// occurrence wins). `Some("")` when present without `=value`.
pub fn kernel_param<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    kernel_args(cmdline)
        .filter_map(|arg| match arg.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if arg == key => Some(""),
            _ => None,
        })
        .last()
}

/// The CPU list at the end of an `isolcpus=` value, after its optional
/// flags: `domain,managed_irq,2-3` gives `2-3`.
pub fn isolcpus_list(value: &str) -> Option<CpuSet> {
    let cpus: Vec<&str> = value
        .split(',')
        .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    if cpus.is_empty() {
        return None;
    }
    CpuSet::parse(&cpus.join(",")).ok()
}

/// Numbers in the kernel's compact list notation: `24-26,30`.
pub fn ranges<I: IntoIterator<Item = u64>>(numbers: I) -> String {
    let mut sorted: Vec<u64> = numbers.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        let end = sorted[i];
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// A hexadecimal CPU mask as /proc/irq/default_smp_affinity shows it.
pub fn parse_hex_mask(mask: &str) -> Option<CpuSet> {
    CpuSet::from_hex_mask(mask)
}

/// The hexadecimal mask for a CPU set, in the kernel's format.
pub fn hex_mask(cpus: &CpuSet) -> String {
    cpus.to_hex_mask()
}

/// The CPUs two sets share.
pub fn intersection(a: &CpuSet, b: &CpuSet) -> CpuSet {
    CpuSet::from_cpus(a.iter().filter(|c| b.contains(*c)).collect())
}

/// `items` joined by ", ", at most `max` of them, then "and N more".
pub fn list_some(items: &[String], max: usize) -> String {
    if items.len() <= max {
        return items.join(", ");
    }
    format!(
        "{}, and {} more",
        items[..max].join(", "),
        items.len() - max
    )
}

/// "1 thing" / "2 things".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_params() {
        let cmdline = "quiet isolcpus=1 nohz_full=1 rcu_nocbs isolcpus=domain,2-3 -- isolcpus=0";
        assert_eq!(kernel_param(cmdline, "isolcpus"), Some("domain,2-3"));
        assert_eq!(kernel_param(cmdline, "rcu_nocbs"), Some(""));
        assert_eq!(kernel_param(cmdline, "quiet"), Some(""));
        assert_eq!(kernel_param(cmdline, "irqaffinity"), None);
        assert_eq!(kernel_param("", "x"), None);
    }

    #[test]
    fn isolcpus_values() {
        let list = |v: &str| isolcpus_list(v).map(|s| s.to_string());
        assert_eq!(list("domain,managed_irq,2-3").as_deref(), Some("2-3"));
        assert_eq!(list("1,3").as_deref(), Some("1,3"));
        assert_eq!(list("nohz,domain").as_deref(), None);
        assert_eq!(list("").as_deref(), None);
    }

    #[test]
    fn number_ranges() {
        assert_eq!(ranges([26, 24, 25, 30, 31, 40]), "24-26,30-31,40");
        assert_eq!(ranges([]), "");
        assert_eq!(ranges([7, 7]), "7");
    }

    #[test]
    fn hex_masks_round_trip() {
        let set = |s: &str| CpuSet::parse(s).unwrap();
        assert_eq!(parse_hex_mask("3").unwrap(), set("0-1"));
        assert_eq!(parse_hex_mask("00000001,00000000").unwrap(), set("32"));
        assert_eq!(parse_hex_mask("f0").unwrap(), set("4-7"));
        assert_eq!(parse_hex_mask("0").unwrap(), CpuSet::default());
        assert_eq!(parse_hex_mask("xyz"), None);
        assert_eq!(parse_hex_mask(""), None);
        assert_eq!(hex_mask(&set("0")), "1");
        assert_eq!(hex_mask(&set("0-1")), "3");
        assert_eq!(hex_mask(&set("0,33")), "2,00000001");
        for s in ["0", "1-3", "0,5,31-33", "64"] {
            assert_eq!(parse_hex_mask(&hex_mask(&set(s))).unwrap(), set(s));
        }
    }

    #[test]
    fn lists() {
        let items: Vec<String> = (1..=5).map(|i| i.to_string()).collect();
        assert_eq!(list_some(&items, 5), "1, 2, 3, 4, 5");
        assert_eq!(list_some(&items, 2), "1, 2, and 3 more");
        assert_eq!(plural(1, "IRQ", "IRQs"), "1 IRQ");
        assert_eq!(plural(0, "IRQ", "IRQs"), "0 IRQs");
    }
}
