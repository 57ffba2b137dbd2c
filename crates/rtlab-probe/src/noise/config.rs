//! The noise probe's settings: their defaults (shared by `rtlab measure
//! noise` and a campaign's noise probe) and the rules they keep together.

use crate::settings::{check_priority, check_span, refuse_deadline};
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;

/// Default threshold: a gap above 1 µs is noise (`--threshold`).
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;
/// Default duty cycle: 900 ms of every second (`--runtime`, `--period`).
pub const DEFAULT_RUNTIME_NS: u64 = 900_000_000;
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000_000;
/// Default attribution window (`--window`).
pub const DEFAULT_WINDOW_NS: u64 = 10_000_000;

/// Shortest attribution window, ns (100 µs). The counters are read between
/// two windows, about 50 µs for `/proc/interrupts` on a small VM, and that
/// time is not measured: shorter windows would lose about as much time as
/// they measure (and need a ring of closing records per window).
pub const MIN_WINDOW_NS: u64 = 100_000;

/// Everything the noise probe needs; serialized into the result as the
/// run's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct NoiseConfig {
    pub cpus: Vec<usize>,
    /// A gap between two clock reads above this is a noise event.
    pub threshold_ns: u64,
    /// Duty cycle: measure for `runtime_ns` of every `period_ns`.
    pub runtime_ns: u64,
    pub period_ns: u64,
    /// Attribution window: counters are read at each window's edges.
    pub window_ns: u64,
    /// Whole run, ns.
    pub duration_ns: u64,
    /// The spinners' scheduling.
    pub sched: SchedParams,
    /// Run the kernel's osnoise tracer beside rtlab where it exists.
    pub osnoise: bool,
}

impl NoiseConfig {
    /// rtlab's own measurement. Where the osnoise tracer runs, it runs for
    /// as long again afterwards.
    pub fn planned_ns(&self) -> u64 {
        self.duration_ns
    }

    /// Spinning time the duty cycle plans over the whole run, per CPU.
    pub(crate) fn planned_runtime_ns(&self) -> u64 {
        let period = self.period_ns.max(1);
        let full = self.duration_ns / period;
        let last = (self.duration_ns % period).min(self.runtime_ns);
        full * self.runtime_ns + last
    }

    /// Checks the settings together (each alone is checked where it is
    /// read); the error names the setting by its campaign key.
    pub fn validate(&self) -> Result<(), FieldError> {
        let fail = |field, message: String| Err(FieldError::new(field, message));
        if self.cpus.is_empty() {
            return fail("cpus", "no CPU to measure on".into());
        }
        let mut cpus = self.cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() != self.cpus.len() {
            return fail("cpus", format!("a CPU is listed twice in {:?}", self.cpus));
        }
        for (field, ns) in [
            ("threshold", self.threshold_ns),
            ("runtime", self.runtime_ns),
            ("duration", self.duration_ns),
        ] {
            if ns == 0 {
                return fail(field, "must be above 0".into());
            }
        }
        refuse_deadline(&self.sched, "the noise probe takes fifo, rr or other")?;
        check_priority(&self.sched)?;
        if self.window_ns < MIN_WINDOW_NS {
            return fail(
                "window",
                format!(
                    "{{window}} {} is shorter than {min}: it must be at least {min}, as the counters are read between windows, which takes about 50 µs that are not measured",
                    human_duration(self.window_ns),
                    min = human_duration(MIN_WINDOW_NS)
                ),
            );
        }
        // The window and the runtime are no longer (checked below).
        check_span("period", self.period_ns)?;
        if self.runtime_ns > self.period_ns {
            return fail(
                "runtime",
                format!(
                    "{{runtime}} {} is longer than the {{period}} {}",
                    human_duration(self.runtime_ns),
                    human_duration(self.period_ns)
                ),
            );
        }
        if self.window_ns > self.runtime_ns {
            return fail(
                "window",
                format!(
                    "{{window}} {} is longer than the {{runtime}} {}",
                    human_duration(self.window_ns),
                    human_duration(self.runtime_ns)
                ),
            );
        }
        if self.threshold_ns >= self.window_ns {
            return fail(
                "threshold",
                format!(
                    "{{threshold}} {} must be shorter than the {{window}} {}",
                    human_duration(self.threshold_ns),
                    human_duration(self.window_ns)
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::sched_of;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;

    fn config() -> NoiseConfig {
        NoiseConfig {
            cpus: vec![0],
            threshold_ns: DEFAULT_THRESHOLD_NS,
            runtime_ns: DEFAULT_RUNTIME_NS,
            period_ns: DEFAULT_PERIOD_NS,
            window_ns: DEFAULT_WINDOW_NS,
            duration_ns: 10_000_000_000,
            sched: sched_of(Policy::Fifo, None),
            osnoise: true,
        }
    }

    fn refused(config: NoiseConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn cpus_are_listed_once() {
        let twice = NoiseConfig {
            cpus: vec![0, 0],
            ..config()
        };
        assert_eq!(refused(twice).0, "cpus");
    }

    #[test]
    fn deadline_and_a_priority_without_fifo_are_refused() {
        let idle = NoiseConfig {
            sched: sched_of(Policy::Idle, None),
            ..config()
        };
        assert_eq!(idle.validate(), Ok(()));
        let deadline = NoiseConfig {
            sched: sched_of(Policy::Deadline, None),
            ..config()
        };
        assert_eq!(refused(deadline).0, "policy");
        let other = NoiseConfig {
            sched: sched_of(Policy::Other, Some(5)),
            ..config()
        };
        assert_eq!(refused(other).0, "priority");
    }

    #[test]
    fn the_window_is_at_least_the_minimum() {
        let min = NoiseConfig {
            window_ns: MIN_WINDOW_NS,
            ..config()
        };
        assert_eq!(min.validate(), Ok(()));
        let (field, text) = refused(NoiseConfig {
            window_ns: 50_000,
            ..config()
        });
        assert_eq!(field, "window");
        assert!(
            text.starts_with("--window 50us is shorter than 100us"),
            "{text}"
        );
    }

    #[test]
    fn the_runtime_fits_the_period() {
        let whole = NoiseConfig {
            runtime_ns: DEFAULT_PERIOD_NS,
            ..config()
        };
        assert_eq!(whole.validate(), Ok(()));
        let (field, text) = refused(NoiseConfig {
            runtime_ns: 2_000_000_000,
            ..config()
        });
        assert_eq!(field, "runtime");
        assert_eq!(text, "--runtime 2s is longer than the --period 1s");
    }

    #[test]
    fn the_window_fits_the_runtime() {
        let whole = NoiseConfig {
            window_ns: DEFAULT_RUNTIME_NS,
            ..config()
        };
        assert_eq!(whole.validate(), Ok(()));
        let (field, text) = refused(NoiseConfig {
            window_ns: 950_000_000,
            ..config()
        });
        assert_eq!(field, "window");
        assert_eq!(text, "--window 950ms is longer than the --runtime 900ms");
    }

    #[test]
    fn the_threshold_is_shorter_than_the_window() {
        let (field, text) = refused(NoiseConfig {
            threshold_ns: DEFAULT_WINDOW_NS,
            ..config()
        });
        assert_eq!(field, "threshold");
        assert_eq!(
            text,
            "--threshold 10ms must be shorter than the --window 10ms"
        );
    }
}
