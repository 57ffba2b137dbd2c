//! The system audit behind `rtlab tune check`.
//!
//! Every check reads what the kernel exposes under a root directory (`/` on
//! a real machine, a fake tree in tests) plus the thread list and the
//! caller's resource limits, and turns it into findings: what was read, how
//! bad it is for real-time work, and the concrete command or kernel
//! parameter that fixes it. Nothing is changed on the host.
//!
//! An unreadable file never aborts the audit: the check concerned reports
//! "unknown" as an info finding, because a partial audit still tells the
//! user far more than an error.

mod cpu;
mod irq;
mod kernel;
mod limits;
mod memory;
mod rank;
mod render;
mod sched;
mod util;
mod watchdog;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::{Environment, Uname};
use serde::{Deserialize, Serialize};

use crate::task::Task;

pub use limits::Limits;

/// The version of the JSON document [`Report`] serializes to.
pub const SCHEMA: &str = "rtlab.tune-check/1";

/// How much a finding matters for real-time work. Ordered: `Ok` is the
/// least, `Critical` the worst, so `max()` over findings gives the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Checked and fine.
    Ok,
    /// Worth knowing, or could not be read; no action needed by default.
    Info,
    /// Costs latency or determinism; fix it for time-critical work.
    Warning,
    /// Can stall or hang the machine, or defeats real-time scheduling.
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;
    /// Parses `ok`, `info`, `warning` or `critical` (what `--fail-on` takes).
    fn from_str(s: &str) -> Result<Severity, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ok" => Ok(Severity::Ok),
            "info" => Ok(Severity::Info),
            "warning" | "warn" => Ok(Severity::Warning),
            "critical" | "crit" => Ok(Severity::Critical),
            _ => Err(format!(
                "unknown severity '{s}' (expected ok, info, warning or critical)"
            )),
        }
    }
}

/// What part of the system a finding is about (for grouping in JSON
/// consumers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    Kernel,
    Scheduler,
    Cpu,
    Memory,
    Interrupts,
    Isolation,
    Limits,
    Platform,
    Threads,
}

/// One result of the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. `preempt-model` (listed in docs/tune-check.md).
    pub id: String,
    pub area: Area,
    pub severity: Severity,
    /// What was found, with the values read.
    pub summary: String,
    /// Why it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A concrete command, kernel parameter or rules snippet that fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The raw inputs: `path = value`, or `path: missing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

impl Finding {
    pub fn new(id: &str, area: Area, severity: Severity, summary: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            area,
            severity,
            summary: summary.into(),
            detail: None,
            fix: None,
            evidence: Vec::new(),
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Finding {
        self.detail = Some(detail.into());
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }

    pub fn evidence<I, S>(mut self, evidence: I) -> Finding
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.evidence.extend(evidence.into_iter().map(Into::into));
        self
    }
}

/// The machine the audit looked at, for the report's header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub preempt_model: String,
    pub cpu_count: Option<u32>,
    pub virtualization: Option<String>,
}

/// Number of findings per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub ok: usize,
    pub info: usize,
    pub warning: usize,
    pub critical: usize,
}

/// The audit's result: findings in check order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub host: Host,
    pub findings: Vec<Finding>,
}

impl Report {
    /// The worst severity among the findings (`Ok` when there are none).
    pub fn worst(&self) -> Severity {
        self.findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok)
    }

    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for f in &self.findings {
            match f.severity {
                Severity::Ok => counts.ok += 1,
                Severity::Info => counts.info += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Critical => counts.critical += 1,
            }
        }
        counts
    }

    /// The finding with this id, if the audit produced one.
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// Whether `--fail-on threshold` should make the command exit 1.
    pub fn fails(&self, threshold: Severity) -> bool {
        self.worst() >= threshold
    }

    /// The terminal rendering: a header, then the findings worst first with
    /// their explanation and fix; ok findings get one line each.
    pub fn render_text(&self) -> String {
        render::text(self)
    }
}

/// Serialized with the derived summary fields (`worst`, `counts`) so JSON
/// consumers need not recompute them, and so they can never be stale.
impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            schema: &'static str,
            host: &'a Host,
            worst: Severity,
            counts: Counts,
            findings: &'a [Finding],
        }
        Json {
            schema: SCHEMA,
            host: &self.host,
            worst: self.worst(),
            counts: self.counts(),
            findings: &self.findings,
        }
        .serialize(serializer)
    }
}

/// Everything the audit looks at.
#[derive(Debug, Clone)]
pub struct AuditInput {
    /// `/` normally; tests point it at a fake tree holding `proc/...`,
    /// `sys/...`, `etc/...` and `boot/...`.
    pub root: PathBuf,
    /// uname(2), which decides the preemption model on older kernels.
    pub uname: Uname,
    /// Every thread of the machine (see [`crate::task::scan`]).
    pub tasks: Vec<Task>,
    /// The resource limits and capabilities of the calling process.
    pub limits: Limits,
}

impl AuditInput {
    /// The running machine: root `/`, the real uname, every thread, and this
    /// process's limits.
    pub fn from_system() -> io::Result<AuditInput> {
        Ok(AuditInput {
            root: PathBuf::from("/"),
            uname: Uname::current(),
            tasks: crate::task::scan()?,
            limits: Limits::current(),
        })
    }
}

/// Runs every check. Never fails and never panics on odd input: what cannot
/// be read is reported as unknown.
pub fn audit(input: &AuditInput) -> Report {
    let env = Environment::capture_from(&input.root, input.uname.clone());
    let ctx = Ctx::new(input, env);

    let mut findings = Vec::new();
    findings.extend(kernel::checks(&ctx));
    findings.extend(sched::checks(&ctx));
    findings.extend(watchdog::checks(&ctx));
    findings.extend(cpu::checks(&ctx));
    findings.extend(memory::checks(&ctx));
    findings.extend(irq::checks(&ctx));
    findings.extend(limits::checks(&ctx));
    findings.extend(rank::checks(&ctx));

    Report {
        host: Host {
            hostname: ctx.env.hostname.clone(),
            kernel_release: ctx.env.kernel_release.clone(),
            kernel_version: ctx.env.kernel_version.clone(),
            preempt_model: ctx.env.preempt_model.clone(),
            cpu_count: ctx.env.cpu_count,
            virtualization: ctx.env.virtualization.clone(),
        },
        findings,
    }
}

/// What every check gets: the input, the environment snapshot and the CPU
/// sets several checks need.
struct Ctx<'a> {
    input: &'a AuditInput,
    root: Root,
    env: Environment,
    /// Online CPUs (from sysfs, else cpuinfo's count, else empty).
    online: CpuSet,
    /// CPUs meant to be kept quiet: isolcpus plus nohz_full.
    isolated: CpuSet,
}

impl<'a> Ctx<'a> {
    fn new(input: &'a AuditInput, env: Environment) -> Ctx<'a> {
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
        let isolation = cpu::Isolation::read(&env);
        let isolated = isolation.quiet_cpus();
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
    fn housekeeping(&self) -> CpuSet {
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
    fn kernel_config(&self) -> Option<(String, String)> {
        let release = self.env.kernel_release.as_deref()?;
        let path = format!("/boot/config-{release}");
        let text = std::fs::read_to_string(self.root.path(&path)).ok()?;
        Some((path, text))
    }

    fn is_rt_kernel(&self) -> bool {
        self.env.preempt_model == "rt"
    }
}

/// Reads absolute system paths below the audit's root.
struct Root {
    base: PathBuf,
}

impl Root {
    fn new(base: &Path) -> Root {
        Root {
            base: base.to_path_buf(),
        }
    }

    fn path(&self, abs: &str) -> PathBuf {
        self.base.join(abs.trim_start_matches('/'))
    }

    /// The trimmed content, `None` when missing, unreadable or empty.
    fn read(&self, abs: &str) -> Option<String> {
        rtlab_core::env::read_trimmed(&self.path(abs))
    }

    fn read_i64(&self, abs: &str) -> Option<i64> {
        self.read(abs)?.parse().ok()
    }

    /// `path = value` or `path: missing`, for a finding's evidence.
    fn evidence(&self, abs: &str) -> String {
        match self.read(abs) {
            Some(v) => format!("{abs} = {v}"),
            None => format!("{abs}: missing"),
        }
    }

    /// The entries of a directory as (name, full path), sorted by name;
    /// empty when the directory cannot be read.
    fn entries(&self, abs: &str) -> Vec<(String, PathBuf)> {
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
