//! `kind = "periodic"`: periodic tasks released by rtlab's executive or by
//! their own SCHED_FIFO sleeps (`rtlab exec periodic`). Its settings, its
//! keys and their reader, and its probe for one run.

use super::cpus::cpu_or;
use super::kind::{KindDef, KindSettings, OneRun};
use crate::error::CampaignError;
use crate::parse::probe::{at_setting, cpu_number, STAND_IN_NS, STAND_IN_SCHED};
use crate::parse::reader::{Reader, Section};
use rtlab_core::sched::Policy;
use rtlab_core::units::human_duration;
use rtlab_exec::guard::{Guard, DEFAULT_SPIN_BUDGET_PERCENT};
pub use rtlab_exec::periodic::Mode as PeriodicMode;
use rtlab_exec::periodic::PeriodicConfig;
use rtlab_exec::taskset::TaskSet;
use rtlab_probe::Probe;
use serde::Serialize;
use std::path::Path;

pub(crate) const KIND: KindDef = KindDef {
    name: "periodic",
    keys: &[
        "tasks",
        "period",
        "work",
        "mode",
        "cpu",
        "taskset",
        "guard",
        "spin_budget",
    ],
    read: |r, s| Ok(Box::new(read(r, s)?)),
};

/// The periodic probe's own settings (as `rtlab exec periodic`): the
/// configuration's priority is the tasks'; the executive runs 10 above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeriodicSettings {
    pub tasks: usize,
    pub period_ns: u64,
    pub work_ns: u64,
    pub mode: PeriodicMode,
    /// The CPU of every task (and the executive); None: the last online CPU.
    pub cpu: Option<usize>,
    /// A task set (`taskset = "FILE"`, relative to the campaign file) run
    /// instead of `tasks` equal tasks (docs/taskset.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taskset: Option<TaskSet>,
    /// The executive's guard (`guard = "auto"` or a duration): learned
    /// online, or fixed; `release_early` follows (learned, or its default).
    #[serde(skip_serializing_if = "is_auto")]
    pub guard: Guard,
    /// `spin_budget = 25`: the most a learned guard may spin, % of the
    /// time between two activations.
    #[serde(skip_serializing_if = "is_default_budget")]
    pub spin_budget_percent: u32,
}

/// The default guard, left out of a campaign's JSON (as before it had one).
fn is_auto(guard: &Guard) -> bool {
    *guard == Guard::Auto
}

fn is_default_budget(percent: &u32) -> bool {
    *percent == DEFAULT_SPIN_BUDGET_PERCENT
}

impl Default for PeriodicSettings {
    /// Paper 002's Table 4.1: 10 ms periods, a little work.
    fn default() -> PeriodicSettings {
        PeriodicSettings {
            tasks: 1,
            period_ns: rtlab_exec::periodic::DEFAULT_PERIOD_NS,
            work_ns: rtlab_exec::periodic::DEFAULT_WORK_NS,
            mode: PeriodicMode::Executive,
            cpu: None,
            taskset: None,
            guard: Guard::Auto,
            spin_budget_percent: DEFAULT_SPIN_BUDGET_PERCENT,
        }
    }
}

impl PeriodicSettings {
    /// The executive's config for `duration_ns` with the tasks at the
    /// configuration's `priority` (1-98) and the executive 10 above (at
    /// most 99), on the last online CPU unless `cpu` is given (not checked
    /// here: see [`KindSettings::probe`] and [`PeriodicConfig::validate`]).
    ///
    /// With a task set, the tasks keep their own priorities and the
    /// executive runs 10 above the highest (at most 99).
    pub fn config(&self, duration_ns: u64, priority: u32) -> PeriodicConfig {
        let mut config = match &self.taskset {
            Some(set) => PeriodicConfig::from_task_set(set.clone(), duration_ns),
            None => {
                let mut config =
                    PeriodicConfig::new(self.tasks, self.period_ns, self.work_ns, duration_ns);
                config.task_priority = priority.clamp(1, 98);
                config
            }
        };
        config.mode = self.mode;
        config.set_margins(self.guard, Guard::Auto, self.spin_budget_percent);
        if let Some(cpu) = self.cpu {
            config.cpu = cpu;
        }
        config.executive_priority = (config.task_priority + 10).min(99);
        config
    }
}

fn read(r: &Reader, s: &Section) -> Result<PeriodicSettings, CampaignError> {
    let mut p = PeriodicSettings::default();
    if let Some(v) = s.get("tasks") {
        let field = s.field("tasks");
        let n = r.integer(v, &field)?;
        p.tasks = usize::try_from(n).map_err(|_| {
            r.error(
                v.span(),
                &field,
                format!(
                    "{n} tasks is out of range 1-{}",
                    rtlab_exec::periodic::MAX_TASKS
                ),
            )
        })?;
    }
    if let Some(v) = s.get("period") {
        p.period_ns = r.positive_duration(v, &s.field("period"))?;
    }
    if let Some(v) = s.get("work") {
        p.work_ns = r.positive_duration(v, &s.field("work"))?;
    }
    if let Some(v) = s.get("mode") {
        let (text, span) = r.string(v, &s.field("mode"))?;
        p.mode = match text.as_str() {
            "executive" => PeriodicMode::Executive,
            "fifo" => PeriodicMode::Fifo,
            _ => {
                return Err(r.error(
                    span,
                    &s.field("mode"),
                    format!("unknown mode `{text}` (expected executive or fifo)"),
                ))
            }
        };
    }
    p.cpu = cpu_number(r, s, "cpu")?;
    if let Some(v) = s.get("guard") {
        let (text, span) = r.string(v, &s.field("guard"))?;
        p.guard = text
            .parse()
            .map_err(|e: String| r.error(span, &s.field("guard"), e))?;
    }
    if let Some(v) = s.get("spin_budget") {
        let field = s.field("spin_budget");
        let n = r.integer(v, &field)?;
        // Out of u32 is out of 1-100: the config's check says so.
        p.spin_budget_percent = u32::try_from(n).unwrap_or(0);
    }
    p.taskset = taskset(r, s)?;
    p.config(STAND_IN_NS, STAND_IN_SCHED.priority)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(p)
}

/// `taskset = "FILE"`: the set read and checked, relative to the
/// campaign file; not beside the keys of equal tasks.
fn taskset(r: &Reader, s: &Section) -> Result<Option<TaskSet>, CampaignError> {
    let Some(v) = s.get("taskset") else {
        return Ok(None);
    };
    let field = s.field("taskset");
    let (file, span) = r.string(v, &field)?;
    if let Some(key) = ["tasks", "period", "work"]
        .into_iter()
        .find(|k| s.get(k).is_some())
    {
        return Err(r.error(
            span,
            &field,
            format!("a task set gives each task its own timing: not with `{key}`"),
        ));
    }
    let campaign_dir = Path::new(r.origin).parent().unwrap_or(Path::new(""));
    let set = TaskSet::load(&campaign_dir.join(&file))
        .map_err(|e| r.error(span, &field, e.to_string()))?;
    Ok(Some(set))
}

impl KindSettings for PeriodicSettings {
    fn interval_ns(&self) -> Option<u64> {
        match &self.taskset {
            Some(set) => set.tasks.iter().map(|t| t.period_ns).min(),
            None => Some(self.period_ns),
        }
    }

    fn describe(&self) -> String {
        if let Some(set) = &self.taskset {
            let file = set
                .source
                .as_ref()
                .map_or_else(String::new, |p| format!(" {}", p.display()));
            return format!(
                "task set{file}: {} tasks, {} (tasks without a cpu on {})",
                set.tasks.len(),
                self.mode,
                cpu_or(self.cpu, "the last CPU"),
            );
        }
        format!(
            "{} task{} every {}, {} work, {} on {}",
            self.tasks,
            if self.tasks == 1 { "" } else { "s" },
            human_duration(self.period_ns),
            human_duration(self.work_ns),
            self.mode,
            cpu_or(self.cpu, "the last CPU"),
        )
    }

    /// The configuration promotes the tasks; the executive runs above them.
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String> {
        let OneRun { sched, online, .. } = *run;
        if sched.policy != Policy::Fifo {
            return Err(format!(
                "policy {}: periodic tasks run SCHED_FIFO (use policy fifo; the mode key picks executive or fifo release)",
                sched.policy
            ));
        }
        if let Some(cpu) = self.cpu {
            if !online.contains(cpu) {
                return Err(format!("cpu: CPU {cpu} is not online (online: {online})"));
            }
        }
        let config = self.config(run.duration_ns, sched.priority);
        config.validate().map_err(|e| e.to_string())?;
        Ok(Box::new(config))
    }

    fn fifo_only(&self) -> bool {
        true
    }
}
