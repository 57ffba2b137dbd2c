//! What every check gets: the input, the environment snapshot, the CPU sets
//! several checks need, and the reader of system files below the root.

use std::path::{Path, PathBuf};

use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;

use super::input::AuditInput;

/// What every check gets: the input, the environment snapshot and the CPU
/// sets several checks need.
pub(super) struct Ctx<'a> {
    pub(super) input: &'a AuditInput,
    pub(super) root: Root,
    pub(super) env: Environment,
    /// Online CPUs (from sysfs, else cpuinfo's count, else empty).
    pub(super) online: CpuSet,
    /// CPUs meant to be kept quiet: isolcpus plus nohz_full.
    pub(super) isolated: CpuSet,
}

impl<'a> Ctx<'a> {
    /// `isolated`: the CPUs meant to be kept quiet (isolcpus plus
    /// nohz_full), which the audit reads before the context exists.
    pub(super) fn new(input: &'a AuditInput, env: Environment, isolated: CpuSet) -> Ctx<'a> {
        let root = Root::new(&input.root);
        let online = env
            .online_cpus
            .as_deref()
            .and_then(|s| CpuSet::parse(s).ok())
            .or_else(|| {
                env.cpu_count
                    .map(|n| CpuSet::from_cpus((0..n as usize).collect()))
            })
            .unwrap_or_default();
        Ctx {
            input,
            root,
            env,
            online,
            isolated,
        }
    }

    /// The online CPUs that are not isolated: where housekeeping belongs.
    /// When every CPU is isolated (a misconfiguration) the first online CPU
    /// is proposed, so fix hints never name an empty list.
    pub(super) fn housekeeping(&self) -> CpuSet {
        let rest: Vec<usize> = self
            .online
            .iter()
            .filter(|c| !self.isolated.contains(*c))
            .collect();
        if rest.is_empty() {
            return CpuSet::from_cpus(self.online.iter().take(1).collect());
        }
        CpuSet::from_cpus(rest)
    }

    /// The running kernel's build configuration, /boot/config-RELEASE, as
    /// (path, text).
    pub(super) fn kernel_config(&self) -> Option<(String, String)> {
        let release = self.env.kernel_release.as_deref()?;
        let path = format!("/boot/config-{release}");
        let text = std::fs::read_to_string(self.root.path(&path)).ok()?;
        Some((path, text))
    }

    pub(super) fn is_rt_kernel(&self) -> bool {
        self.env.preempt_model == "rt"
    }
}

/// Reads absolute system paths below the audit's root.
pub(super) struct Root {
    pub(super) base: PathBuf,
}

impl Root {
    pub(super) fn new(base: &Path) -> Root {
        Root {
            base: base.to_path_buf(),
        }
    }

    pub(super) fn path(&self, abs: &str) -> PathBuf {
        self.base.join(abs.trim_start_matches('/'))
    }

    /// The trimmed content, `None` when missing, unreadable or empty.
    pub(super) fn read(&self, abs: &str) -> Option<String> {
        rtlab_core::env::read_trimmed(&self.path(abs))
    }

    pub(super) fn read_i64(&self, abs: &str) -> Option<i64> {
        self.read(abs)?.parse().ok()
    }

    /// `path = value` or `path: missing`, for a finding's evidence.
    pub(super) fn evidence(&self, abs: &str) -> String {
        match self.read(abs) {
            Some(v) => format!("{abs} = {v}"),
            None => format!("{abs}: missing"),
        }
    }

    /// The entries of a directory as (name, full path), sorted by name;
    /// empty when the directory cannot be read.
    pub(super) fn entries(&self, abs: &str) -> Vec<(String, PathBuf)> {
        let Ok(dir) = std::fs::read_dir(self.path(abs)) else {
            return Vec::new();
        };
        let mut entries: Vec<(String, PathBuf)> = dir
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        entries.sort();
        entries
    }
}
