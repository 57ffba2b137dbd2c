//! The audit's result: the host it looked at and its findings, serialized
//! with their summary. Its terminal rendering is in `render.rs`.

use serde::{Deserialize, Serialize};

use super::finding::{Finding, Severity};

/// The version of the JSON document [`Report`] serializes to.
pub const SCHEMA: &str = "rtlab.tune-check/1";

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
