//! CPU and memory facts: /proc/cpuinfo, the cpufreq governors,
//! /proc/meminfo.

use std::collections::BTreeMap;
use std::fs;

use super::sysfs::{read_trimmed, Sys};

const CPU_DIR: &str = "/sys/devices/system/cpu";

#[derive(Debug, Default, PartialEq)]
pub(super) struct CpuInfo {
    pub(super) model: Option<String>,
    pub(super) count: Option<u32>,
    /// `None` when cpuinfo has no "flags" line at all (e.g. arm), so the
    /// absence of the flag proves nothing.
    pub(super) hypervisor_flag: Option<bool>,
}

pub(super) fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model_name = None;
    let mut arm_processor = None;
    let mut hardware = None;
    let mut cpu_part = None;
    let mut count = 0u32;
    let mut hypervisor_flag = None;

    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let first = |slot: &mut Option<String>| {
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value.to_string());
            }
        };
        match key.trim() {
            "processor" => count += 1,
            "model name" => first(&mut model_name),
            // 32-bit arm puts its model here, capitalised.
            "Processor" => first(&mut arm_processor),
            "Hardware" => first(&mut hardware),
            "CPU part" => first(&mut cpu_part),
            "flags" if hypervisor_flag.is_none() => {
                hypervisor_flag = Some(value.split_whitespace().any(|f| f == "hypervisor"));
            }
            _ => {}
        }
    }

    CpuInfo {
        model: model_name.or(arm_processor).or(hardware).or(cpu_part),
        count: (count > 0).then_some(count),
        hypervisor_flag,
    }
}

/// A "Key:   123 kB" value from /proc/meminfo.
pub(super) fn meminfo_kb(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let (k, rest) = line.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

pub(super) fn read_governors(sys: &Sys) -> BTreeMap<String, String> {
    let mut governors = BTreeMap::new();
    let Ok(entries) = fs::read_dir(sys.path(CPU_DIR)) else {
        return governors;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only cpuN directories; cpufreq, cpuidle etc. live alongside them.
        let is_cpu = name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        if let Some(gov) = read_trimmed(&entry.path().join("cpufreq/scaling_governor")) {
            governors.insert(name, gov);
        }
    }
    governors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_arm_and_bare_metal() {
        let arm = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd\n\
                   CPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n\
                   processor\t: 1\nCPU part\t: 0xd08\n\nHardware\t: BCM2835\n";
        let info = parse_cpuinfo(arm);
        assert_eq!(info.model.as_deref(), Some("BCM2835"));
        assert_eq!(info.count, Some(2));
        assert_eq!(info.hypervisor_flag, None);

        let info = parse_cpuinfo("processor\t: 0\nCPU part\t: 0xd0c\n");
        assert_eq!(info.model.as_deref(), Some("0xd0c"));

        let metal = "processor\t: 0\nmodel name\t: AMD Ryzen\nflags\t: fpu vme hypervisorx\n";
        assert_eq!(parse_cpuinfo(metal).hypervisor_flag, Some(false));
        assert_eq!(parse_cpuinfo("").count, None);
    }
}
