//! How much memory the vm load may use: what the machine (and the cgroup
//! it runs in) can hold without swapping or calling the OOM killer.

use super::spec::human_bytes;

/// The memory figures the cap is computed from, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemFigures {
    /// MemTotal, or the cgroup's limit when lower.
    pub total: u64,
    /// MemAvailable, or the cgroup's headroom when lower.
    pub available: u64,
}

/// How the vm load will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmPlan {
    pub workers: u32,
    pub bytes_per_worker: u64,
    /// Set when the request was reduced: says from what, to what and why.
    pub note: Option<String>,
}

/// The smallest allocation a vm worker is reduced to before workers are
/// dropped instead.
pub const VM_MIN_BYTES: u64 = 1 << 20;

/// Memory always left free: max(10 % of total, 512 MiB).
pub fn keep_free(total: u64) -> u64 {
    (total / 10).max(512 << 20)
}

/// Caps `workers` × `bytes` to `available` minus [`keep_free`]: first by
/// giving each worker less (down to [`VM_MIN_BYTES`], rounded down to whole
/// MiB), so the number of concurrent allocators stays as asked; then by
/// dropping workers. Err when not even one minimal worker fits.
pub fn plan_vm(workers: u32, bytes: u64, mem: MemFigures) -> Result<VmPlan, String> {
    let keep = keep_free(mem.total);
    let usable = mem.available.saturating_sub(keep);
    let asked = u128::from(workers) * u128::from(bytes);
    let why = format!(
        "{} available, {} kept free (the larger of 10 % of {} and 512 MiB)",
        human_bytes(mem.available),
        human_bytes(keep),
        human_bytes(mem.total)
    );
    if asked <= u128::from(usable) {
        return Ok(VmPlan {
            workers,
            bytes_per_worker: bytes,
            note: None,
        });
    }
    if usable < VM_MIN_BYTES {
        return Err(format!(
            "vm: not enough memory: {why}; asked {workers} × {}",
            human_bytes(bytes)
        ));
    }
    let per = usable / u64::from(workers.max(1));
    let (workers_now, per) = if per >= VM_MIN_BYTES {
        let per = if per >= 1 << 20 {
            per / (1 << 20) * (1 << 20)
        } else {
            per / 4096 * 4096
        };
        (workers, per)
    } else {
        ((usable / VM_MIN_BYTES).max(1) as u32, VM_MIN_BYTES)
    };
    let asked_text = human_bytes(u64::try_from(asked).unwrap_or(u64::MAX));
    Ok(VmPlan {
        workers: workers_now,
        bytes_per_worker: per,
        note: Some(format!(
            "vm: asked {workers} × {} = {asked_text}, capped to {workers_now} × {} = {}: {why}",
            human_bytes(bytes),
            human_bytes(per),
            human_bytes(u64::from(workers_now) * per),
        )),
    })
}

impl MemFigures {
    /// From /proc/meminfo text.
    pub fn from_meminfo(text: &str) -> Option<MemFigures> {
        let info = super::sys::parse_meminfo(text);
        let total = *info.get("MemTotal")?;
        let available = info
            .get("MemAvailable")
            .copied()
            .unwrap_or_else(|| info.get("MemFree").copied().unwrap_or(0));
        Some(MemFigures { total, available })
    }

    /// Lowers the figures to a cgroup's limit and headroom.
    pub fn within_limit(self, limit: u64, usage: u64) -> MemFigures {
        MemFigures {
            total: self.total.min(limit),
            available: self.available.min(limit.saturating_sub(usage)),
        }
    }

    /// This machine's figures, lowered to the memory limits of the
    /// cgroups this process is in (v2 `memory.max` up the tree, v1
    /// `memory.limit_in_bytes`).
    pub fn read() -> std::io::Result<MemFigures> {
        let text = std::fs::read_to_string("/proc/meminfo")?;
        let mut mem = MemFigures::from_meminfo(&text)
            .ok_or_else(|| std::io::Error::other("/proc/meminfo has no MemTotal"))?;
        for (limit, usage) in cgroup_limits() {
            mem = mem.within_limit(limit, usage);
        }
        Ok(mem)
    }
}

fn read_u64(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// (limit, usage) of every memory-limited cgroup this process is in.
fn cgroup_limits() -> Vec<(u64, u64)> {
    let mut limits = Vec::new();
    if let Some(mut dir) = super::cgroup::own_v2_dir() {
        loop {
            if let (Some(limit), Some(usage)) = (
                read_u64(&dir.join("memory.max")),
                read_u64(&dir.join("memory.current")),
            ) {
                limits.push((limit, usage));
            }
            if !dir.join("..").join("cgroup.procs").exists() || !dir.pop() {
                break;
            }
        }
    }
    // cgroup v1 memory controller.
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v1_path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    });
    if let Some(path) = v1_path {
        let mount = super::sys::mounts()
            .into_iter()
            .find(|m| m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "memory"));
        if let Some(mount) = mount {
            let dir = mount.cgroup_dir(&path);
            if let (Some(limit), Some(usage)) = (
                read_u64(&dir.join("memory.limit_in_bytes")),
                read_u64(&dir.join("memory.usage_in_bytes")),
            ) {
                // "No limit" is a page-rounded i64::MAX.
                if limit < 1 << 60 {
                    limits.push((limit, usage));
                }
            }
        }
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    #[test]
    fn fits_as_asked() {
        let mem = MemFigures {
            total: 24 * GIB,
            available: 23 * GIB,
        };
        let plan = plan_vm(2, 256 * MIB, mem).unwrap();
        assert_eq!(plan.workers, 2);
        assert_eq!(plan.bytes_per_worker, 256 * MIB);
        assert!(plan.note.is_none());
    }

    #[test]
    fn hallberg_on_a_small_machine_keeps_the_workers() {
        // stress --vm 40 --vm-bytes 256M = 10 GiB on a 4 GiB machine.
        let mem = MemFigures {
            total: 4 * GIB,
            available: 3 * GIB,
        };
        let plan = plan_vm(40, 256 * MIB, mem).unwrap();
        // 3 GiB - 512 MiB kept free = 2.5 GiB over 40 workers = 64 MiB each.
        assert_eq!(plan.workers, 40);
        assert_eq!(plan.bytes_per_worker, 64 * MIB);
        let note = plan.note.unwrap();
        assert!(note.contains("asked 40 × 256 MiB = 10 GiB"), "{note}");
        assert!(note.contains("capped to 40 × 64 MiB = 2.5 GiB"), "{note}");
        assert!(note.contains("3 GiB available"), "{note}");
        assert!(note.contains("512 MiB kept free"), "{note}");
    }

    #[test]
    fn ten_percent_is_kept_on_large_machines() {
        assert_eq!(keep_free(64 * GIB), 64 * GIB / 10);
        assert_eq!(keep_free(2 * GIB), 512 * MIB);
        let mem = MemFigures {
            total: 100 * GIB,
            available: 20 * GIB,
        };
        let plan = plan_vm(1, 50 * GIB, mem).unwrap();
        assert_eq!(plan.bytes_per_worker, 10 * GIB);
    }

    #[test]
    fn workers_are_dropped_when_each_would_get_too_little() {
        let mem = MemFigures {
            total: GIB,
            available: 512 * MIB + 10 * MIB,
        };
        let plan = plan_vm(40, 256 * MIB, mem).unwrap();
        assert_eq!(plan.workers, 10);
        assert_eq!(plan.bytes_per_worker, VM_MIN_BYTES);
    }

    #[test]
    fn no_memory_is_an_error() {
        let mem = MemFigures {
            total: GIB,
            available: 300 * MIB,
        };
        let err = plan_vm(1, 256 * MIB, mem).unwrap_err();
        assert!(err.contains("not enough memory"), "{err}");
    }

    #[test]
    fn cgroup_limits_lower_the_figures() {
        let mem = MemFigures {
            total: 24 * GIB,
            available: 20 * GIB,
        }
        .within_limit(2 * GIB, GIB);
        assert_eq!(mem.total, 2 * GIB);
        assert_eq!(mem.available, GIB);
        let meminfo = "MemTotal: 1048576 kB\nMemFree: 1000 kB\nMemAvailable: 524288 kB\n";
        assert_eq!(
            MemFigures::from_meminfo(meminfo),
            Some(MemFigures {
                total: GIB,
                available: 512 * MIB
            })
        );
    }

    #[test]
    fn this_machine_has_figures() {
        let mem = MemFigures::read().unwrap();
        assert!(mem.total > 0 && mem.available <= mem.total);
    }
}
