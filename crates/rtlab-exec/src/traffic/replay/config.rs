//! A replay's settings (the result's `config`) and their check (the
//! probe that starts it is run.rs's).

use crate::dispatch::{DispatchConfig, Guard, Inject, Lead, Repeat, MAX_GUARD_NS};
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where departure times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxStamps {
    /// The kernel's software transmit timestamps where it gives them, the
    /// user-space send time for each packet it does not.
    Kernel,
    /// The clock read just before each send.
    User,
}

/// SO_TXTIME with the ETF qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxTime {
    Off,
    /// Hand each packet to the kernel this far ahead of its instant,
    /// chosen from the measured wake-up latency.
    Auto,
    Delta(u64),
}

/// Everything a replay needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayConfig {
    pub plan: PathBuf,
    /// Every flow goes here; None: each flow's `dest`.
    pub to: Option<SocketAddr>,
    /// 2.0 plays the plan twice as fast (offsets divided by it).
    pub speed: f64,
    pub repeat: Repeat,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
    pub guard: Guard,
    /// A packet reached later than this is not sent (counted skipped).
    pub skip_after_ns: u64,
    /// A packet that left later than this after its instant counts late.
    pub late_after_ns: u64,
    /// Put the stamp (format::Stamp) at the start of each datagram of at
    /// least 24 bytes.
    pub stamp: bool,
    /// The stamp's stream id (random per replay, chosen by the caller).
    pub stream: u32,
    pub timestamps: TxStamps,
    pub txtime: TxTime,
    /// Testing: a stall of known size the departure errors must show.
    pub inject: Option<Inject>,
}

/// The fastest `--speed` and the slowest.
pub const MAX_SPEED: f64 = 1000.0;
pub const MIN_SPEED: f64 = 0.001;

impl ReplayConfig {
    /// Checks the settings (the plan is checked when loaded); errors name
    /// `rtlab traffic replay`'s flag without dashes.
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(MIN_SPEED..=MAX_SPEED).contains(&self.speed) {
            return Err(FieldError::new(
                "speed",
                format!("{}: expected {MIN_SPEED} to {MAX_SPEED}", self.speed),
            ));
        }
        if self.late_after_ns == 0 {
            return Err(FieldError::new("late", "must be above 0"));
        }
        match self.txtime {
            TxTime::Off => {}
            // The packet leaves when the qdisc releases it: only the
            // kernel's transmit stamp sees that.
            _ if self.timestamps == TxStamps::User => {
                return Err(FieldError::new(
                    "txtime",
                    "needs --timestamps kernel (the qdisc, not the send, decides the departure)",
                ))
            }
            TxTime::Delta(ns) if ns == 0 || ns > MAX_GUARD_NS => {
                return Err(FieldError::new(
                    "txtime",
                    format!("{}: expected above 0 and at most 1s", human_duration(ns)),
                ))
            }
            TxTime::Auto | TxTime::Delta(_) => {}
        }
        // The dispatcher's own rules; its `repeat` is this command's --loop.
        self.dispatch().validate().map_err(|e| match e.field {
            "repeat" => FieldError::new("loop", e.message),
            _ => e,
        })
    }

    /// How early the dispatcher fires each packet: SO_TXTIME's delta.
    pub fn lead(&self) -> Lead {
        match self.txtime {
            TxTime::Off => Lead::Fixed(0),
            TxTime::Auto => Lead::Guard,
            TxTime::Delta(ns) => Lead::Fixed(ns),
        }
    }

    /// What the dispatcher is given (its modules and speed come apart,
    /// dispatch::Extras).
    pub fn dispatch(&self) -> DispatchConfig {
        DispatchConfig {
            plan: self.plan.clone(),
            cpu: self.cpu,
            sched: self.sched,
            repeat: self.repeat,
            guard: self.guard,
            spin_budget_percent: crate::guard::DEFAULT_SPIN_BUDGET_PERCENT,
            skip_after_ns: self.skip_after_ns,
            inject: self.inject,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;
    use rtlab_probe::Probe;

    fn config() -> ReplayConfig {
        ReplayConfig {
            plan: PathBuf::from("cbr.plan"),
            to: None,
            speed: 1.0,
            repeat: Repeat::Times(1),
            cpu: None,
            sched: SchedParams {
                policy: Policy::Fifo,
                priority: rtlab_probe::DEFAULT_PRIORITY,
                deadline: None,
            },
            guard: Guard::Auto,
            skip_after_ns: 1_000_000,
            late_after_ns: 5_000,
            stamp: true,
            stream: 1,
            timestamps: TxStamps::Kernel,
            txtime: TxTime::Off,
            inject: None,
        }
    }

    fn refused(config: ReplayConfig) -> String {
        config.validate().unwrap_err().render(flag)
    }

    #[test]
    fn the_defaults_are_valid_and_bad_settings_name_their_flag() {
        assert_eq!(config().validate(), Ok(()));
        let speed = refused(ReplayConfig {
            speed: 0.0,
            ..config()
        });
        assert!(speed.starts_with("--speed: 0"), "{speed}");
        let nan = refused(ReplayConfig {
            speed: f64::NAN,
            ..config()
        });
        assert!(nan.starts_with("--speed"), "{nan}");
        let late = refused(ReplayConfig {
            late_after_ns: 0,
            ..config()
        });
        assert_eq!(late, "--late: must be above 0");
        let repeat = refused(ReplayConfig {
            repeat: Repeat::Times(0),
            ..config()
        });
        assert_eq!(repeat, "--loop: must be at least 1");
        let guard = refused(ReplayConfig {
            guard: Guard::Fixed(2_000_000_000),
            ..config()
        });
        assert!(guard.starts_with("--guard 2s"), "{guard}");
        let txtime = refused(ReplayConfig {
            txtime: TxTime::Auto,
            timestamps: TxStamps::User,
            ..config()
        });
        assert!(
            txtime.starts_with("--txtime: needs --timestamps kernel"),
            "{txtime}"
        );
        let delta = refused(ReplayConfig {
            txtime: TxTime::Delta(2_000_000_000),
            ..config()
        });
        assert!(delta.starts_with("--txtime: 2s"), "{delta}");
        let skip = refused(ReplayConfig {
            skip_after_ns: u64::MAX,
            ..config()
        });
        assert!(skip.starts_with("--skip-after"), "{skip}");
    }

    #[test]
    fn the_planned_length_is_the_plans_at_its_speed() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("p.plan");
        std::fs::write(
            &plan,
            "rtlab-plan 1\nmodule a traffic\nrepeat 10ms\nevents\n0us a hex:6400\n5ms a hex:6400\n",
        )
        .unwrap();
        let at = |speed, repeat| {
            ReplayConfig {
                plan: plan.clone(),
                speed,
                repeat,
                ..config()
            }
            .planned_ns()
        };
        assert_eq!(at(1.0, Repeat::Times(1)), 10_000_000);
        assert_eq!(at(2.0, Repeat::Times(3)), 15_000_000);
        assert_eq!(at(1.0, Repeat::Forever), u64::MAX);
    }
}
