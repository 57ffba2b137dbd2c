//! The CPUs of a focus: checking what was asked against the online CPUs,
//! and the rest left to everything else.

use rtlab_core::cpuset::CpuSet;

use crate::model::FocusError;

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
}
