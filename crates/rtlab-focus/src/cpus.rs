//! The CPUs of a focus: checking what was asked against the online CPUs,
//! the rest left to everything else, and the kernel's two notations of a
//! CPU set (lists `0-3,6` and hex masks `0000004f` or `00000000,0000004f`).

use rtlab_core::cpuset::CpuSet;

use crate::api::FocusError;

/// The CPUs left to everything else once `cpus` are focused; an
/// `Invalid` error naming the CPUs when the request cannot be honoured.
pub(crate) fn rest_of(cpus: &CpuSet, online: &CpuSet) -> Result<CpuSet, FocusError> {
    if cpus.is_empty() {
        return Err(FocusError::Invalid(
            "no CPU to focus: give a CPU list such as 1 or 2-3".into(),
        ));
    }
    let offline: Vec<usize> = cpus.iter().filter(|&c| !online.contains(c)).collect();
    if !offline.is_empty() {
        return Err(FocusError::Invalid(format!(
            "CPU {} is not online (online: {online})",
            CpuSet::from_cpus(offline)
        )));
    }
    let rest = minus(online, cpus);
    if rest.is_empty() {
        return Err(FocusError::Invalid(format!(
            "CPUs {cpus} are all the online CPUs: at least one must stay for everything else (online: {online})"
        )));
    }
    Ok(rest)
}

/// The CPUs of `a` not in `b`.
pub(crate) fn minus(a: &CpuSet, b: &CpuSet) -> CpuSet {
    CpuSet::from_cpus(a.iter().filter(|&c| !b.contains(c)).collect())
}

pub(crate) fn intersects(a: &CpuSet, b: &CpuSet) -> bool {
    a.iter().any(|c| b.contains(c))
}

/// Parses a hex mask as /proc/irq/default_smp_affinity writes it.
pub(crate) fn parse_mask(text: &str) -> Option<CpuSet> {
    let digits: String = text.trim().chars().filter(|&c| c != ',').collect();
    if digits.is_empty() {
        return None;
    }
    let mut cpus = Vec::new();
    for (position, c) in digits.chars().rev().enumerate() {
        let nibble = c.to_digit(16)?;
        for bit in 0..4 {
            if nibble & (1 << bit) != 0 {
                cpus.push(position * 4 + bit);
            }
        }
    }
    Some(CpuSet::from_cpus(cpus))
}

/// Writes `cpus` as a hex mask in the layout of `like` (the value read
/// from the same file: comma-separated 32-bit groups or one number).
pub(crate) fn format_mask(cpus: &CpuSet, like: &str) -> String {
    let like = like.trim();
    let top = cpus.iter().last().unwrap_or(0);
    let mut nibbles = vec![0u32; top / 4 + 1];
    for cpu in cpus.iter() {
        nibbles[cpu / 4] |= 1 << (cpu % 4);
    }
    let groups = like.split(',').count();
    let width = if groups > 1 { groups * 8 } else { like.len() };
    nibbles.resize(nibbles.len().max(width), 0);
    let hex: Vec<char> = nibbles
        .iter()
        .rev()
        .map(|&n| char::from_digit(n, 16).unwrap_or('0'))
        .collect();
    if groups > 1 {
        hex.chunks(8)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join(",")
    } else {
        hex.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    #[test]
    fn the_rest_and_the_refusals() {
        let online = set("0-3");
        assert_eq!(rest_of(&set("1"), &online).unwrap(), set("0,2-3"));
        let err = rest_of(&set("7"), &online).unwrap_err().to_string();
        assert!(err.contains("CPU 7 is not online (online: 0-3)"), "{err}");
        let err = rest_of(&set("0-3"), &online).unwrap_err().to_string();
        assert!(err.contains("at least one must stay"), "{err}");
        assert!(matches!(
            rest_of(&CpuSet::default(), &online),
            Err(FocusError::Invalid(_))
        ));
    }

    #[test]
    fn masks_round_trip_in_the_kernels_layout() {
        assert_eq!(parse_mask("3\n").unwrap(), set("0-1"));
        assert_eq!(parse_mask("00000000,00000105").unwrap(), set("0,2,8"));
        assert_eq!(parse_mask("zz"), None);
        assert_eq!(format_mask(&set("0"), "3"), "1");
        assert_eq!(format_mask(&set("0,5"), "ff"), "21");
        assert_eq!(
            format_mask(&set("0,2,8"), "00000000,00000fff"),
            "00000000,00000105"
        );
        assert_eq!(
            format_mask(&set("33"), "00000000,00000000"),
            "00000002,00000000"
        );
    }
}
