//! A periodic run's settings: the modes, the defaults, the limits and
//! their check.

use crate::guard::{Guard, Learning};
use crate::taskset::model::{TaskSet, TaskSpec};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Who releases the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// rtlab's executive: sleep to the activation minus the guard, spin,
    /// wake the task early, the task spins to its instant.
    Executive,
    /// Each task sleeps to its own activations (the paper's SCHED_FIFO).
    Fifo,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Executive => "executive",
            Mode::Fifo => "fifo",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "executive" | "exec" | "kurt" => Ok(Mode::Executive),
            "fifo" => Ok(Mode::Fifo),
            other => Err(format!(
                "unknown mode '{other}': expected executive or fifo"
            )),
        }
    }
}

/// Where in the period each task's activations fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phasing {
    /// Task i at i × period / tasks (default).
    Staggered,
    /// Every task at the same instants.
    InPhase,
}

/// Default period of every task: 10 ms, as paper 002's Table 4.1
/// (`--period`, a campaign's `period`).
pub const DEFAULT_PERIOD_NS: u64 = 10_000_000;
/// Default spinning work per activation (`--work`, a campaign's `work`).
pub const DEFAULT_WORK_NS: u64 = 100_000;
/// Default SCHED_FIFO priority of the executive.
pub const EXECUTIVE_PRIORITY: u32 = rtlab_probe::DEFAULT_PRIORITY;
/// Default SCHED_FIFO priority of the tasks (both modes).
pub const TASK_PRIORITY: u32 = 80;
/// Default guard with `--guard DURATION`'s meaning, and the warm start of
/// the learned guard (`--guard auto`, the default: crate::guard) until
/// each idle length has its own wake-ups. On the 2-core
/// VMs rtlab is developed on, a plain absolute sleep wakes 20-50 µs late at
/// the median, and sleeping to 100 µs before the instant and spinning puts
/// 96-98 % of wake-ups within 10 µs (bench/plan-dispatch.sh measures both:
/// bench/results/plan-dispatch.md).
pub const GUARD_NS: u64 = 100_000;
/// Default release margin (and the warm start of the learned one): how
/// early a task is woken so that the futex wake-up path (and the executive
/// going back to sleep on the same CPU) is absorbed before its instant.
pub const RELEASE_EARLY_NS: u64 = 50_000;

/// Everything a periodic run needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct PeriodicConfig {
    pub tasks: usize,
    pub period_ns: u64,
    /// Spinning work per activation (wall clock), ns.
    pub work_ns: u64,
    /// Activations planned per task.
    pub activations: u64,
    pub mode: Mode,
    pub phasing: Phasing,
    /// The CPU of every task and of the executive (the paper's uniprocessor).
    pub cpu: usize,
    /// SCHED_FIFO priority of the executive.
    pub executive_priority: u32,
    /// SCHED_FIFO priority of the tasks.
    pub task_priority: u32,
    /// Executive: how early it wakes before an activation and spins
    /// (fixed, or the warm start of a learned guard: `learn`).
    pub guard_ns: u64,
    /// Executive: how early a task is released; it spins to its instant
    /// (fixed, or the warm start of a learned margin).
    pub release_early_ns: u64,
    /// Executive: what it learns online, within what spin budget.
    pub learn: Learning,
    /// A task set run instead of `tasks` equal tasks (`--taskset`): its
    /// tasks' own periods, offsets, work, deadlines, budgets, priorities
    /// and CPUs replace `period_ns` (then the shortest period), `work_ns`
    /// (0), `activations` (the most of a task), `phasing` and
    /// `task_priority` (the highest of the set); `cpu` is the CPU of a task
    /// that names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_set: Option<SetPlan>,
}

/// A task set planned for a run.
#[derive(Debug, Clone, Serialize)]
pub struct SetPlan {
    pub set: TaskSet,
    /// How long the run lasts.
    pub duration_ns: u64,
    /// Activations planned per task, in the order of the set: the
    /// duration / the task's period, at least 1.
    pub activations: Vec<u64>,
}

impl SetPlan {
    /// Each task with its planned activations.
    pub fn planned(&self) -> impl Iterator<Item = (&TaskSpec, u64)> {
        self.set.tasks.iter().zip(self.activations.iter().copied())
    }
}

/// Most tasks in one run.
pub const MAX_TASKS: usize = 1000;
/// Shortest period: below it the release path (futex wake, spin) is most
/// of the period, and the recorder rings would grow without bound.
pub const MIN_PERIOD_NS: u64 = 100_000;
/// Longest planned run (activations × period): 366 days. Far beyond any
/// useful measurement, and every instant of the run fits in a u64 of ns.
pub const MAX_RUN_NS: u64 = 366 * 86_400 * 1_000_000_000;

/// Margin between every thread being ready and the first activation.
pub const START_MARGIN_NS: u64 = 50_000_000;

/// The last online CPU (CPU 0 takes most of the housekeeping).
pub fn default_cpu() -> usize {
    CpuSet::online().iter().last().unwrap_or(0)
}

impl PeriodicConfig {
    /// A config with every default: executive mode, staggered, on the last
    /// online CPU, `duration_ns` of activations.
    pub fn new(tasks: usize, period_ns: u64, work_ns: u64, duration_ns: u64) -> PeriodicConfig {
        PeriodicConfig {
            tasks,
            period_ns,
            work_ns,
            activations: activations_in(duration_ns, period_ns),
            mode: Mode::Executive,
            phasing: Phasing::Staggered,
            cpu: default_cpu(),
            executive_priority: EXECUTIVE_PRIORITY,
            task_priority: TASK_PRIORITY,
            guard_ns: GUARD_NS,
            release_early_ns: RELEASE_EARLY_NS,
            learn: Learning::default(),
            task_set: None,
        }
    }

    /// The executive's margins (`--guard`, `--release-early`,
    /// `--spin-budget`): each fixed, or learned from its default as a warm
    /// start (a learned release margin starts at most at a fixed guard).
    pub fn set_margins(&mut self, guard: Guard, release_early: Guard, spin_budget_percent: u32) {
        (self.guard_ns, self.learn.guard) = match guard {
            Guard::Auto => (GUARD_NS, true),
            Guard::Fixed(ns) => (ns, false),
        };
        (self.release_early_ns, self.learn.release_early) = match release_early {
            Guard::Auto if self.learn.guard => (RELEASE_EARLY_NS, true),
            Guard::Auto => (RELEASE_EARLY_NS.min(self.guard_ns), true),
            Guard::Fixed(ns) => (ns, false),
        };
        self.learn.spin_budget_percent = spin_budget_percent;
    }

    /// A config that runs `set` for `duration_ns` (every default otherwise:
    /// executive mode, tasks without a CPU on the last online one).
    pub fn from_task_set(set: TaskSet, duration_ns: u64) -> PeriodicConfig {
        let activations: Vec<u64> = set
            .tasks
            .iter()
            .map(|t| activations_in(duration_ns, t.period_ns))
            .collect();
        let shortest = set.tasks.iter().map(|t| t.period_ns).min().unwrap_or(0);
        let mut config = PeriodicConfig::new(set.tasks.len(), shortest, 0, duration_ns);
        config.activations = activations.iter().copied().max().unwrap_or(0);
        config.task_priority = set.tasks.iter().map(|t| t.priority).max().unwrap_or(0);
        config.task_set = Some(SetPlan {
            set,
            duration_ns,
            activations,
        });
        config
    }

    /// Activation instant `k` of task `task`, ns after the run's start.
    pub fn offset_of(&self, task: usize) -> u64 {
        match self.phasing {
            // In u128: period × task may not fit in a u64; the quotient does.
            Phasing::Staggered => {
                (u128::from(self.period_ns) * task as u128 / self.tasks.max(1) as u128) as u64
            }
            Phasing::InPhase => 0,
        }
    }

    /// Planned length of the run, ns (saturating: [`Self::validate`]
    /// refuses a plan longer than [`MAX_RUN_NS`]).
    pub fn planned_ns(&self) -> u64 {
        match &self.task_set {
            Some(plan) => plan
                .planned()
                .map(|(t, n)| n.saturating_mul(t.period_ns))
                .max()
                .unwrap_or(0),
            None => self.activations.saturating_mul(self.period_ns),
        }
    }

    /// Activations planned for every task together (saturating).
    pub fn planned_activations(&self) -> u64 {
        match &self.task_set {
            Some(plan) => plan
                .activations
                .iter()
                .fold(0u64, |sum, &n| sum.saturating_add(n)),
            None => self.activations.saturating_mul(self.tasks as u64),
        }
    }

    /// Checks the settings together; the error names the setting by its
    /// campaign key (`period`, `work`, `release_early`, `spin_budget`),
    /// `priority` being the executive's (`--priority`).
    pub fn validate(&self) -> Result<(), FieldError> {
        let fail = |field, message: String| Err(FieldError::new(field, message));
        if let Some(plan) = &self.task_set {
            self.validate_set(plan)?;
        }
        if !(1..=MAX_TASKS).contains(&self.tasks) {
            return fail(
                "tasks",
                format!("{} tasks is out of range 1-{MAX_TASKS}", self.tasks),
            );
        }
        if self.period_ns < MIN_PERIOD_NS {
            return fail(
                "period",
                format!(
                    "{{period}} {}: shorter than the minimum {} (the release path would be most of the period)",
                    human_duration(self.period_ns),
                    human_duration(MIN_PERIOD_NS)
                ),
            );
        }
        if self.activations == 0 {
            return fail(
                "duration",
                "the run is shorter than one period: no activation planned".into(),
            );
        }
        match self.activations.checked_mul(self.period_ns) {
            Some(ns) if ns <= MAX_RUN_NS => {}
            _ => {
                return fail(
                    "duration",
                    format!(
                        "{} activations every {} is longer than the longest run ({} days)",
                        self.activations,
                        human_duration(self.period_ns),
                        MAX_RUN_NS / 86_400_000_000_000
                    ),
                )
            }
        }
        if self.work_ns >= self.period_ns {
            return fail(
                "work",
                format!(
                    "{{work}} {} is not shorter than the {{period}} {}",
                    human_duration(self.work_ns),
                    human_duration(self.period_ns)
                ),
            );
        }
        self.learn.validate()?;
        // A learned guard is always above the release margin.
        if self.mode == Mode::Executive
            && !self.learn.guard
            && self.release_early_ns > self.guard_ns
        {
            return fail(
                "release_early",
                format!(
                    "{{release_early}} {} is more than the {{guard}} {} (the executive cannot release a task before it is awake)",
                    human_duration(self.release_early_ns),
                    human_duration(self.guard_ns)
                ),
            );
        }
        // A learned guard is capped (2 ms): a fixed margin beside it may be
        // no larger than the largest the learner itself would choose, or
        // tasks are released before the executive is awake (or a period
        // and more early: every activation missed, the run still
        // "complete").
        if self.mode == Mode::Executive
            && self.learn.guard
            && !self.learn.release_early
            && self.release_early_ns > crate::guard::MAX_RELEASE_EARLY_NS
        {
            return fail(
                "release_early",
                format!(
                    "{{release_early}} {} is more than {} beside a learned {{guard}} (give a fixed --guard above it, or --release-early auto)",
                    human_duration(self.release_early_ns),
                    human_duration(crate::guard::MAX_RELEASE_EARLY_NS)
                ),
            );
        }
        if self.mode == Mode::Executive && self.guard_ns >= START_MARGIN_NS {
            return fail(
                "guard",
                format!("{{guard}} {} is too large", human_duration(self.guard_ns)),
            );
        }
        for (field, p) in [
            ("priority", self.executive_priority),
            ("task_priority", self.task_priority),
        ] {
            if !(1..=99).contains(&p) {
                return fail(field, format!("{{{field}}} {p} is not in 1-99"));
            }
        }
        if self.mode == Mode::Executive && self.executive_priority <= self.task_priority {
            return fail(
                "priority",
                format!(
                    "the executive's {{priority}} {} must be above the tasks' {{task_priority}} {}",
                    self.executive_priority, self.task_priority
                ),
            );
        }
        Ok(())
    }

    /// A task set's own rules ([`TaskSet::validate`]), its run's length and
    /// the executive above each of its tasks.
    fn validate_set(&self, plan: &SetPlan) -> Result<(), FieldError> {
        let set = &plan.set;
        let file = set
            .source
            .as_ref()
            .map_or_else(|| "the task set".to_string(), |p| p.display().to_string());
        if let Err(refusal) = set.validate() {
            return Err(FieldError::new(
                "taskset",
                format!("{file}: {}", refusal.describe(set)),
            ));
        }
        if plan.activations.len() != set.tasks.len() {
            return Err(FieldError::new(
                "taskset",
                format!("{file}: the activations planned are not one per task"),
            ));
        }
        if plan.duration_ns > MAX_RUN_NS {
            return Err(FieldError::new(
                "duration",
                format!(
                    "{{duration}} {} is longer than the longest run ({} days)",
                    human_duration(plan.duration_ns),
                    MAX_RUN_NS / 86_400_000_000_000
                ),
            ));
        }
        if self.mode == Mode::Executive {
            if let Some(task) = set
                .tasks
                .iter()
                .find(|t| t.priority >= self.executive_priority)
            {
                return Err(FieldError::new(
                    "priority",
                    format!(
                        "the executive's {{priority}} {} must be above the priority {} of task `{}` ({file})",
                        self.executive_priority, task.priority, task.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Activations of a task in `duration_ns` (at least 1).
pub fn activations_in(duration_ns: u64, period_ns: u64) -> u64 {
    (duration_ns / period_ns.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    fn config() -> PeriodicConfig {
        PeriodicConfig::new(10, DEFAULT_PERIOD_NS, DEFAULT_WORK_NS, 10_000_000_000)
    }

    fn refused(config: PeriodicConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn tasks_are_1_to_max() {
        let max = PeriodicConfig {
            tasks: MAX_TASKS,
            ..config()
        };
        assert_eq!(max.validate(), Ok(()));
        let (field, text) = refused(PeriodicConfig {
            tasks: 0,
            ..config()
        });
        assert_eq!(field, "tasks");
        assert_eq!(text, "--tasks: 0 tasks is out of range 1-1000");
    }

    #[test]
    fn the_period_is_at_least_the_minimum() {
        let min = PeriodicConfig::new(1, MIN_PERIOD_NS, 10_000, 1_000_000_000);
        assert_eq!(min.validate(), Ok(()));
        let (field, text) = refused(PeriodicConfig::new(1, 50_000, 10_000, 1_000_000_000));
        assert_eq!(field, "period");
        assert!(
            text.starts_with("--period 50us: shorter than the minimum 100us"),
            "{text}"
        );
    }

    #[test]
    fn the_run_is_at_most_the_longest() {
        let (field, _) = refused(PeriodicConfig {
            activations: u64::MAX / 2,
            ..config()
        });
        assert_eq!(field, "duration");
    }

    #[test]
    fn the_work_is_shorter_than_the_period() {
        let (field, text) = refused(PeriodicConfig::new(1, 1_000_000, 2_000_000, 1_000_000_000));
        assert_eq!(field, "work");
        assert_eq!(text, "--work 2ms is not shorter than the --period 1ms");
    }

    #[test]
    fn the_executive_releases_within_its_guard() {
        let fifo = PeriodicConfig {
            mode: Mode::Fifo,
            release_early_ns: 2 * GUARD_NS,
            ..config()
        };
        assert_eq!(fifo.validate(), Ok(()));
        // A learned guard stays above any release margin.
        let learned = PeriodicConfig {
            release_early_ns: 2 * GUARD_NS,
            ..config()
        };
        assert_eq!(learned.validate(), Ok(()));
        let (field, text) = refused(PeriodicConfig {
            release_early_ns: 10_000_000_000,
            learn: Learning {
                release_early: false,
                ..config().learn
            },
            ..config()
        });
        assert_eq!(field, "release_early");
        assert!(
            text.starts_with("--release-early 10s is more than 500us beside a learned --guard"),
            "{text}"
        );
        let (field, text) = refused(PeriodicConfig {
            release_early_ns: 2 * GUARD_NS,
            learn: Learning::fixed(),
            ..config()
        });
        assert_eq!(field, "release_early");
        assert!(
            text.starts_with("--release-early 200us is more than the --guard 100us"),
            "{text}"
        );
        let (field, _) = refused(PeriodicConfig {
            guard_ns: START_MARGIN_NS,
            ..config()
        });
        assert_eq!(field, "guard");
    }

    #[test]
    fn the_executive_runs_above_its_tasks() {
        let (field, _) = refused(PeriodicConfig {
            task_priority: 0,
            ..config()
        });
        assert_eq!(field, "task_priority");
        let (field, text) = refused(PeriodicConfig {
            executive_priority: 80,
            task_priority: 80,
            ..config()
        });
        assert_eq!(field, "priority");
        assert_eq!(
            text,
            "the executive's --priority 80 must be above the tasks' --task-priority 80"
        );
    }

    #[test]
    fn the_spin_budget_is_checked_by_its_name() {
        let (field, text) = refused(PeriodicConfig {
            learn: Learning {
                spin_budget_percent: 101,
                ..Learning::default()
            },
            ..config()
        });
        assert_eq!(field, "spin_budget");
        assert!(
            text.starts_with("--spin-budget 101%: expected 1-100"),
            "{text}"
        );
    }
}
