//! The noise probe's settings: their defaults (shared by `rtlab measure
//! noise` and a campaign's noise probe) and the rules they keep together.

use crate::settings::{check_priority, refuse_deadline};
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
                    "{{window}} {} is shorter than {}: the counters are read between windows, which takes about 50 µs that are not measured",
                    human_duration(self.window_ns),
                    human_duration(MIN_WINDOW_NS)
                ),
            );
        }
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
