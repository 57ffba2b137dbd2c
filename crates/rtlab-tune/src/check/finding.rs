//! One finding of the audit: what it is about and how much it matters.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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
