//! `rtlab plan run`'s settings: how often the plan runs, how early the
//! dispatcher wakes, when an event is too late, the test hook; the limits
//! and their check.

pub use crate::guard::Guard;
use crate::guard::Learning;
use crate::plan::LoadedPlan;
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use rtlab_probe::settings::check_priority;
use serde::Serialize;
use std::path::PathBuf;

/// How often the plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Repeat {
    Times(u64),
    Forever,
}

/// A test hook: spin this long before firing every `every`-th event; the
/// stall must show in the dispatch-error series at exactly those events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Inject {
    pub delay_ns: u64,
    pub every: u64,
}

/// Everything the dispatcher needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct DispatchConfig {
    pub plan: PathBuf,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
    pub repeat: Repeat,
    /// `--guard`: learned online (auto: crate::guard, from a warm-up of
    /// this machine's wake-up latency) or fixed.
    pub guard: Guard,
    /// `--spin-budget`: the most a learned guard may spin, % of the time
    /// between two events.
    pub spin_budget_percent: u32,
    /// An event reached later than this is skipped and counted missed.
    pub skip_after_ns: u64,
    pub inject: Option<Inject>,
}

/// Longest fixed guard: the dispatcher spins for the guard at every event.
pub const MAX_GUARD_NS: u64 = 1_000_000_000;
/// Longest `skip_after`: an hour late is never worth firing.
pub const MAX_SKIP_AFTER_NS: u64 = 3_600_000_000_000;

impl DispatchConfig {
    /// Checks the settings (the plan's file is checked when it is loaded);
    /// the error names the setting as `rtlab plan run`'s flag without its
    /// dashes (`guard`, `skip_after`).
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Guard::Fixed(ns) = self.guard {
            if ns > MAX_GUARD_NS {
                return Err(FieldError::new(
                    "guard",
                    format!(
                        "{{guard}} {}: at most {} (the dispatcher spins for the guard at every event)",
                        human_duration(ns),
                        human_duration(MAX_GUARD_NS)
                    ),
                ));
            }
        }
        self.learning().validate()?;
        if self.skip_after_ns > MAX_SKIP_AFTER_NS {
            return Err(FieldError::new("skip_after", "at most 1h"));
        }
        if self.repeat == Repeat::Times(0) {
            return Err(FieldError::new("repeat", "must be at least 1"));
        }
        if self.inject.is_some_and(|inject| inject.every == 0) {
            return Err(FieldError::new("inject_every", "must be at least 1"));
        }
        // The stall is a spin at real-time priority, deaf to a stop: an
        // hour of it held a CPU through SIGINT and SIGTERM.
        if self
            .inject
            .is_some_and(|inject| inject.delay_ns > MAX_GUARD_NS)
        {
            return Err(FieldError::new(
                "inject_delay",
                format!(
                    "at most {} (the dispatcher spins through it, deaf to a stop)",
                    human_duration(MAX_GUARD_NS)
                ),
            ));
        }
        check_priority(&self.sched)
    }

    /// What the dispatcher learns: its guard when auto (it releases no
    /// task: no release margin).
    pub fn learning(&self) -> Learning {
        Learning {
            guard: self.guard == Guard::Auto,
            release_early: false,
            spin_budget_percent: self.spin_budget_percent,
        }
    }

    /// One repetition's length: the plan's repeat period, or back to back
    /// (the last offset plus one ns).
    pub(super) fn period_of(plan: &LoadedPlan) -> u64 {
        let last = if plan.events.is_empty() {
            0
        } else {
            plan.events.event(plan.events.len() - 1).offset_ns
        };
        plan.header
            .repeat_ns
            .unwrap_or(last.saturating_add(1))
            .max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::DEFAULT_SPIN_BUDGET_PERCENT;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;

    fn config() -> DispatchConfig {
        DispatchConfig {
            plan: PathBuf::from("ticks.plan"),
            cpu: None,
            sched: SchedParams {
                policy: Policy::Fifo,
                priority: rtlab_probe::DEFAULT_PRIORITY,
                deadline: None,
            },
            repeat: Repeat::Times(1),
            guard: Guard::Auto,
            spin_budget_percent: DEFAULT_SPIN_BUDGET_PERCENT,
            skip_after_ns: 1_000_000,
            inject: None,
        }
    }

    fn refused(config: DispatchConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn a_fixed_guard_is_at_most_1s() {
        let max = DispatchConfig {
            guard: Guard::Fixed(MAX_GUARD_NS),
            ..config()
        };
        assert_eq!(max.validate(), Ok(()));
        let (field, text) = refused(DispatchConfig {
            guard: Guard::Fixed(2 * MAX_GUARD_NS),
            ..config()
        });
        assert_eq!(field, "guard");
        assert!(text.starts_with("--guard 2s: at most 1s"), "{text}");
    }

    #[test]
    fn skip_after_is_at_most_an_hour() {
        let max = DispatchConfig {
            skip_after_ns: MAX_SKIP_AFTER_NS,
            ..config()
        };
        assert_eq!(max.validate(), Ok(()));
        let (field, text) = refused(DispatchConfig {
            skip_after_ns: MAX_SKIP_AFTER_NS + 1,
            ..config()
        });
        assert_eq!(field, "skip_after");
        assert_eq!(text, "--skip-after: at most 1h");
    }

    #[test]
    fn repeats_injections_and_priority_are_checked() {
        assert_eq!(
            refused(DispatchConfig {
                repeat: Repeat::Times(0),
                ..config()
            })
            .0,
            "repeat"
        );
        let inject = |every| DispatchConfig {
            inject: Some(Inject {
                delay_ns: 1_000,
                every,
            }),
            ..config()
        };
        assert_eq!(inject(1).validate(), Ok(()));
        assert_eq!(refused(inject(0)).0, "inject_every");
        let stall = |delay_ns| DispatchConfig {
            inject: Some(Inject { delay_ns, every: 1 }),
            ..config()
        };
        assert_eq!(stall(MAX_GUARD_NS).validate(), Ok(()));
        assert_eq!(refused(stall(3_600_000_000_000)).0, "inject_delay");
        let mut zero = config();
        zero.sched.priority = 0;
        assert_eq!(refused(zero).0, "priority");
        let (field, text) = refused(DispatchConfig {
            spin_budget_percent: 0,
            ..config()
        });
        assert_eq!(field, "spin_budget");
        assert!(text.starts_with("--spin-budget 0%"), "{text}");
    }
}
