//! What `rtlab monitor` measures and where it serves: every setting's
//! default and its one check ([`MonitorConfig::validate`]).

use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use rtlab_probe::settings::{check_priority, sched_of};
use serde::Serialize;
use std::net::SocketAddr;

/// Where `/metrics` is served when no `--listen` is given: this machine
/// only, until the user opens it. 9477 is free in Prometheus' list of
/// exporter ports.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9477";
/// The wake-up period (`--interval`), cyclictest's `-i 1000`: the timer
/// probe's own default.
pub const DEFAULT_INTERVAL_NS: u64 = rtlab_probe::timer::DEFAULT_INTERVAL_NS;
/// Share of every second each CPU measures (`--duty`).
pub const DEFAULT_DUTY_PERCENT: f64 = 10.0;
/// The window of the window-max gauge (`--window`): OSADL's 5-minute maxima.
pub const DEFAULT_WINDOW_NS: u64 = 300 * NS_PER_SEC;
/// One burst per this period on each CPU: `--duty` is a share of it.
pub const BURST_PERIOD_NS: u64 = NS_PER_SEC;
/// The shortest window: a window must hold at least one burst of every CPU.
pub const MIN_WINDOW_NS: u64 = BURST_PERIOD_NS;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Everything the monitor needs; `--json`'s serving line shows it.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorConfig {
    pub cpus: Vec<usize>,
    pub interval_ns: u64,
    pub duty_percent: f64,
    pub window_ns: u64,
    /// SCHED_FIFO at `--priority` (default [`rtlab_probe::DEFAULT_PRIORITY`]).
    pub sched: SchedParams,
    pub listen: SocketAddr,
}

impl MonitorConfig {
    /// The defaults on `cpus`.
    pub fn new(cpus: Vec<usize>) -> MonitorConfig {
        MonitorConfig {
            cpus,
            interval_ns: DEFAULT_INTERVAL_NS,
            duty_percent: DEFAULT_DUTY_PERCENT,
            window_ns: DEFAULT_WINDOW_NS,
            sched: sched_of(Policy::Fifo, None),
            listen: DEFAULT_LISTEN.parse().expect("the default address parses"),
        }
    }

    /// The scheduling of the measuring threads at `priority` (the default
    /// one when None).
    pub fn sched_at(priority: Option<u32>) -> SchedParams {
        sched_of(Policy::Fifo, priority)
    }

    /// Checks the settings together; the error names the setting by its
    /// flag without dashes (`interval`, `duty`, `window`, `priority`).
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.cpus.is_empty() {
            return Err(FieldError::new("cpus", "no CPU to measure on"));
        }
        if !(self.duty_percent > 0.0 && self.duty_percent <= 100.0) {
            return Err(FieldError::new(
                "duty",
                format!(
                    "{{duty}} {} is out of range: a share of every second above 0 and at most 100 (%)",
                    self.duty_percent
                ),
            ));
        }
        if self.interval_ns == 0 {
            return Err(FieldError::new("interval", "must be above 0"));
        }
        if self.deadlines_per_burst() == 0 {
            return Err(FieldError::new(
                "interval",
                format!(
                    "{{interval}} {} is longer than a burst ({{duty}} {}% of every second is {}): \
shorten it or raise {{duty}}",
                    human_duration(self.interval_ns),
                    self.duty_percent,
                    human_duration(self.burst_ns())
                ),
            ));
        }
        if self.window_ns < MIN_WINDOW_NS {
            return Err(FieldError::new(
                "window",
                format!(
                    "{{window}} {} is too short: at least {} (one burst of every CPU)",
                    human_duration(self.window_ns),
                    human_duration(MIN_WINDOW_NS)
                ),
            ));
        }
        check_priority(&self.sched)
    }

    /// The length of each CPU's burst, ns: `--duty` of a second.
    pub fn burst_ns(&self) -> u64 {
        (BURST_PERIOD_NS as f64 * self.duty_percent / 100.0) as u64
    }

    /// Deadlines each CPU meets or misses per burst.
    pub fn deadlines_per_burst(&self) -> u64 {
        self.burst_ns() / self.interval_ns.max(1)
    }

    /// Where CPU number `index` (of `--cpus`, in order) starts its bursts
    /// within every second: the CPUs take turns, so that at a low duty
    /// they do not all measure (and wake) at once. On the interval's grid.
    pub fn burst_offset_ns(&self, index: usize) -> u64 {
        let n = self.cpus.len().max(1) as u64;
        let offset = BURST_PERIOD_NS / n * index as u64;
        offset - offset % self.interval_ns.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    fn refused(config: MonitorConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid_and_as_the_contract_says() {
        let config = MonitorConfig::new(vec![0, 1]);
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.listen.to_string(), "127.0.0.1:9477");
        assert_eq!(config.sched.priority, rtlab_probe::DEFAULT_PRIORITY);
        assert_eq!(config.sched.policy, Policy::Fifo);
        // 10 % of a second at 1 ms: 100 deadlines per burst.
        assert_eq!(config.deadlines_per_burst(), 100);
    }

    #[test]
    fn the_duty_is_a_share_of_a_second() {
        for bad in [0.0, -5.0, 100.5, f64::NAN] {
            let (field, text) = refused(MonitorConfig {
                duty_percent: bad,
                ..MonitorConfig::new(vec![0])
            });
            assert_eq!(field, "duty");
            assert!(text.starts_with("--duty "), "{text}");
        }
        let full = MonitorConfig {
            duty_percent: 100.0,
            ..MonitorConfig::new(vec![0])
        };
        assert_eq!(full.validate(), Ok(()));
        assert_eq!(full.deadlines_per_burst(), 1000);
    }

    #[test]
    fn the_interval_fits_a_burst() {
        let (field, text) = refused(MonitorConfig {
            interval_ns: 200_000_000,
            duty_percent: 10.0,
            ..MonitorConfig::new(vec![0])
        });
        assert_eq!(field, "interval");
        assert_eq!(
            text,
            "--interval 200ms is longer than a burst (--duty 10% of every second is 100ms): \
shorten it or raise --duty"
        );
        let (field, _) = refused(MonitorConfig {
            interval_ns: 0,
            ..MonitorConfig::new(vec![0])
        });
        assert_eq!(field, "interval");
    }

    #[test]
    fn a_window_holds_a_burst_and_a_priority_is_in_range() {
        let (field, text) = refused(MonitorConfig {
            window_ns: 500_000_000,
            ..MonitorConfig::new(vec![0])
        });
        assert_eq!(field, "window");
        assert!(text.contains("at least 1s"), "{text}");
        let (field, _) = refused(MonitorConfig {
            sched: MonitorConfig::sched_at(Some(0)),
            ..MonitorConfig::new(vec![0])
        });
        assert_eq!(field, "priority");
        assert_eq!(refused(MonitorConfig::new(vec![])).0, "cpus");
    }

    #[test]
    fn bursts_of_different_cpus_take_turns_on_the_grid() {
        let config = MonitorConfig {
            interval_ns: 3_000_000,
            ..MonitorConfig::new(vec![0, 1, 2])
        };
        let offsets: Vec<u64> = (0..3).map(|i| config.burst_offset_ns(i)).collect();
        assert_eq!(offsets, vec![0, 333_000_000, 666_000_000]);
        for offset in offsets {
            assert_eq!(offset % config.interval_ns, 0);
        }
    }
}
