//! A campaign as read from its file: every default filled in, every name
//! checked. See docs/campaign.md for the file format.

use crate::error::Position;
pub use crate::probes::*;
use rtlab_core::sched::{DeadlineParams, Policy, SchedParams};
use serde::Serialize;

/// SCHED_DEADLINE runtime of a deadline configuration that gives none
/// (as `--dl-runtime`).
pub use rtlab_probe::timer::DEFAULT_DL_RUNTIME_NS;
/// Priority of a fifo or rr configuration that gives none (as `--priority`).
pub use rtlab_probe::DEFAULT_PRIORITY;

/// Everything a campaign file says, defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Campaign {
    pub name: String,
    pub description: Option<String>,
    /// Measuring time of every run.
    pub duration_ns: u64,
    /// Runs per cell of the matrix (probe × load × configuration).
    pub repeat: u32,
    /// Pause between two runs.
    pub cooldown_ns: u64,
    pub probes: Vec<ProbeSpec>,
    pub loads: Vec<LoadEntry>,
    pub configurations: Vec<Configuration>,
    pub excludes: Vec<Exclude>,
    /// Limits every run is checked against (`budget = "p99.9<100us,missed=0"`,
    /// docs/budgets.md), as written; None when the file sets none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetText>,
    /// The file path, or `preset NAME` for a built-in campaign.
    pub origin: String,
}

/// The text of a campaign's `budget` and where it is in the file. The
/// campaign reader keeps it as text: the caller parses it (rtlab-report's
/// budget module) and reports a bad clause at [`BudgetText::position_of`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct BudgetText {
    pub text: String,
    /// Where the string starts in the file: its first character inside the
    /// quotes when it is written verbatim (one line, no escapes), else its
    /// opening quote.
    #[serde(skip)]
    pub position: Position,
    #[serde(skip)]
    pub verbatim: bool,
}

impl BudgetText {
    /// The place in the file of byte `offset` of the text: exact when the
    /// string is written verbatim, the string's start otherwise.
    pub fn position_of(&self, offset: usize) -> Position {
        match self.text.get(..offset) {
            Some(before) if self.verbatim => Position {
                line: self.position.line,
                column: self.position.column + before.chars().count(),
            },
            _ => self.position,
        }
    }
}

/// One `[[load]]`: what runs beside the probe. No specs = an idle machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadEntry {
    pub name: String,
    /// Load specs as `--load` takes them, e.g. `vm:workers=40,bytes=256M`.
    pub run: Vec<String>,
}

impl LoadEntry {
    /// The specs joined with ` + `, or `-` for none.
    pub fn describe(&self) -> String {
        if self.run.is_empty() {
            "-".to_string()
        } else {
            self.run.join(" + ")
        }
    }
}

/// One `[[configuration]]`: how the probe's threads are scheduled and the
/// system tuned for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Configuration {
    pub name: String,
    pub policy: Policy,
    /// 1-99, Some exactly when the policy is fifo or rr.
    pub priority: Option<u32>,
    /// SCHED_DEADLINE runtime per period (deadline = period = the probe's
    /// interval); Some exactly when the policy is deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dl_runtime_ns: Option<u64>,
    /// Hold /dev/cpu_dma_latency at 0 during the run.
    pub dma_latency: bool,
    /// `key=value` sysctls set for the run and restored afterwards.
    pub sysctl: Vec<String>,
}

impl Configuration {
    /// A configuration with `rtlab measure timer`'s defaults: fifo 90,
    /// /dev/cpu_dma_latency held, no sysctl.
    pub fn new(name: &str, policy: Policy) -> Configuration {
        Configuration {
            name: name.to_string(),
            policy,
            priority: policy.takes_priority().then_some(DEFAULT_PRIORITY),
            dl_runtime_ns: (policy == Policy::Deadline).then_some(DEFAULT_DL_RUNTIME_NS),
            dma_latency: true,
            sysctl: Vec::new(),
        }
    }

    /// The scheduling of a probe whose period is `interval_ns` (None for a
    /// probe without one): the policy, its priority, and for deadline the
    /// runtime with deadline = period = interval.
    pub fn sched_params(&self, interval_ns: Option<u64>) -> SchedParams {
        SchedParams {
            policy: self.policy,
            priority: self.priority.unwrap_or(0),
            deadline: interval_ns.and_then(|interval| self.deadline_params(interval)),
        }
    }

    /// SCHED_DEADLINE parameters for a probe of period `interval_ns`
    /// (deadline = period = interval, as `rtlab measure timer` does); None
    /// unless the policy is deadline.
    pub fn deadline_params(&self, interval_ns: u64) -> Option<DeadlineParams> {
        self.dl_runtime_ns.map(|runtime_ns| DeadlineParams {
            runtime_ns,
            deadline_ns: interval_ns,
            period_ns: interval_ns,
        })
    }

    /// The scheduling part: `fifo 90`, `other`, `deadline runtime 100us`.
    pub fn sched_text(&self) -> String {
        match (self.priority, self.dl_runtime_ns) {
            (Some(priority), _) => format!("{} {priority}", self.policy),
            (None, Some(runtime)) => format!(
                "{} runtime {}",
                self.policy,
                rtlab_core::units::human_duration(runtime)
            ),
            (None, None) => self.policy.to_string(),
        }
    }

    /// Everything in one line: `fifo 90`, `other, no dma_latency hold,
    /// sysctl kernel.timer_migration=0`.
    pub fn describe(&self) -> String {
        let mut text = self.sched_text();
        if !self.dma_latency {
            text += ", no dma_latency hold";
        }
        for sysctl in &self.sysctl {
            text += ", sysctl ";
            text += sysctl;
        }
        text
    }
}

/// One `[[exclude]]`: a cell matching every given name is not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exclude {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<String>,
    /// Where the `[[exclude]]` is in its file (for warnings).
    #[serde(skip)]
    pub position: Option<Position>,
}

impl Exclude {
    /// Whether the cell (probe, load, configuration) is excluded.
    pub fn matches(&self, probe: &str, load: &str, configuration: &str) -> bool {
        let hit = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        (self.probe.is_some() || self.load.is_some() || self.configuration.is_some())
            && hit(&self.probe, probe)
            && hit(&self.load, load)
            && hit(&self.configuration, configuration)
    }

    /// `load = "idle", configuration = "not-promoted"`.
    pub fn describe(&self) -> String {
        [
            ("probe", &self.probe),
            ("load", &self.load),
            ("configuration", &self.configuration),
        ]
        .iter()
        .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key} = \"{v}\"")))
        .collect::<Vec<_>>()
        .join(", ")
    }
}
