//! CPU lists in the kernel's notation (`0,2-3`), as used by `--cpus`,
//! `/sys/devices/system/cpu/online` and `isolcpus=`.

use std::fmt;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list '{input}': {reason} (examples: all, 0, 0,2-3)")]
pub struct CpuListError {
    pub input: String,
    pub reason: String,
}

/// An ordered set of CPU numbers without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(Vec<usize>);

/// More CPUs than any machine rtlab will meet; guards against `0-4000000000`.
const MAX_CPU: usize = 8191;

impl CpuSet {
    /// Parses `0,2-3` (no `all`: see [`CpuSelection`]).
    pub fn parse(input: &str) -> Result<CpuSet, CpuListError> {
        let err = |reason: String| CpuListError {
            input: input.to_string(),
            reason,
        };
        // One flag per possible CPU, not a list extended by each range:
        // `0-8191,` repeated would otherwise grow without bound.
        let mut present = vec![false; MAX_CPU + 1];
        for part in input.trim().split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(err("empty element".into()));
            }
            let number = |s: &str| -> Result<usize, CpuListError> {
                let n: usize = s
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("'{s}' is not a CPU number")))?;
                if n > MAX_CPU {
                    return Err(err(format!("CPU {n} is beyond {MAX_CPU}")));
                }
                Ok(n)
            };
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (number(lo)?, number(hi)?);
                    if lo > hi {
                        return Err(err(format!("range {lo}-{hi} runs backwards")));
                    }
                    present[lo..=hi].fill(true);
                }
                None => present[number(part)?] = true,
            }
        }
        let cpus = (0..=MAX_CPU).filter(|&cpu| present[cpu]).collect();
        Ok(CpuSet(cpus))
    }

    /// The set of the given CPU numbers (any order, duplicates dropped).
    pub fn from_cpus(mut cpus: Vec<usize>) -> CpuSet {
        cpus.sort_unstable();
        cpus.dedup();
        CpuSet(cpus)
    }

    /// The CPUs the kernel lists in a sysfs file such as
    /// `/sys/devices/system/cpu/online`; an empty file is an empty set.
    pub fn from_sysfs(path: &Path) -> std::io::Result<CpuSet> {
        let text = std::fs::read_to_string(path)?;
        if text.trim().is_empty() {
            return Ok(CpuSet::default());
        }
        CpuSet::parse(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
    }

    /// Online CPUs of this machine; falls back to 0..available_parallelism.
    pub fn online() -> CpuSet {
        CpuSet::from_sysfs(Path::new("/sys/devices/system/cpu/online"))
            .ok()
            .filter(|set| !set.is_empty())
            .unwrap_or_else(|| {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                CpuSet((0..n).collect())
            })
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// A hexadecimal CPU mask as /proc/irq/default_smp_affinity shows it
    /// (`3`, `ff,ffffffff`; the rightmost digit holds CPUs 0-3).
    pub fn from_hex_mask(mask: &str) -> Option<CpuSet> {
        let digits: String = mask.trim().chars().filter(|c| *c != ',').collect();
        if digits.is_empty() {
            return None;
        }
        let mut cpus = Vec::new();
        for (nibble, c) in digits.chars().rev().enumerate() {
            let value = c.to_digit(16)?;
            for bit in 0..4 {
                if value & (1 << bit) != 0 {
                    cpus.push(nibble * 4 + bit);
                }
            }
        }
        Some(CpuSet::from_cpus(cpus))
    }

    /// The hexadecimal mask of the set, in the kernel's format (groups of
    /// 32 bits separated by commas), as such files accept it.
    pub fn to_hex_mask(&self) -> String {
        let highest = self.iter().max().unwrap_or(0);
        let mut words = vec![0u32; highest / 32 + 1];
        for cpu in self.iter() {
            words[cpu / 32] |= 1 << (cpu % 32);
        }
        let mut out = format!("{:x}", words[words.len() - 1]);
        for word in words.iter().rev().skip(1) {
            out.push_str(&format!(",{word:08x}"));
        }
        out
    }
}

impl fmt::Display for CpuSet {
    /// Compact kernel notation: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

/// `--cpus`: `all` (every online CPU) or an explicit list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSelection {
    All,
    List(CpuSet),
}

impl CpuSelection {
    pub fn parse(input: &str) -> Result<CpuSelection, CpuListError> {
        if input.trim() == "all" {
            Ok(CpuSelection::All)
        } else {
            CpuSet::parse(input).map(CpuSelection::List)
        }
    }

    /// The CPUs to use, checked against the online ones: a CPU that is not
    /// online is an error naming it, never silently dropped.
    pub fn resolve(&self, online: &CpuSet) -> Result<CpuSet, CpuListError> {
        match self {
            CpuSelection::All => Ok(online.clone()),
            CpuSelection::List(set) => {
                let offline: Vec<String> = set
                    .iter()
                    .filter(|c| !online.contains(*c))
                    .map(|c| c.to_string())
                    .collect();
                if offline.is_empty() {
                    Ok(set.clone())
                } else {
                    Err(CpuListError {
                        input: set.to_string(),
                        reason: format!("CPU {} not online (online: {online})", offline.join(",")),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        let set = CpuSet::parse("3,0-1, 1").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(set.to_string(), "0-1,3");
    }

    #[test]
    fn rejects_bad_lists_naming_them() {
        for bad in ["", "a", "1,", "3-1", "0-99999", "1-", "-1"] {
            let err = CpuSet::parse(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("'{bad}'")), "{err}");
        }
    }

    #[test]
    fn offline_cpus_are_an_error() {
        let online = CpuSet::parse("0-1").unwrap();
        let sel = CpuSelection::parse("1,5").unwrap();
        let err = sel.resolve(&online).unwrap_err();
        assert!(err.to_string().contains("CPU 5 not online"), "{err}");
        assert_eq!(
            CpuSelection::parse("all").unwrap().resolve(&online),
            Ok(online)
        );
    }

    #[test]
    fn this_machine_has_an_online_cpu() {
        assert!(!CpuSet::online().is_empty());
    }
}
