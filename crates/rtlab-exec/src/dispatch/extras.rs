//! What a probe built on the dispatcher adds to a plain `rtlab plan run`
//! (the traffic replay: its own modules, its own series, a speed), so
//! that it reuses the one schedule loop instead of writing a second.

use crate::module::Module;
use rtlab_probe::recorder::SeriesInput;

/// A series another thread produces into the dispatcher's recorder (the
/// replay's collector: `departure`, `gap`).
pub struct ExtraSeries {
    pub name: String,
    /// The result's `metric` of the series.
    pub metric: String,
    /// The series' sample interval, ns (after the speed).
    pub interval_ns: u64,
    pub input: SeriesInput,
}

/// A plan's modules by name, in the order of its declarations.
pub type Modules = Vec<(String, Box<dyn Module>)>;

/// Additions to a dispatch; the default adds nothing (`plan run`).
pub struct Extras {
    /// The plan's modules, one per declaration in its order, built by the
    /// caller; None: built from the declarations (module::build).
    pub modules: Option<Modules>,
    pub series: Vec<ExtraSeries>,
    /// Offsets and the repeat period are divided by this (1.0: the plan's
    /// own times, exactly).
    pub speed: f64,
    /// How long before its instant each event fires (SO_TXTIME hands a
    /// packet to the kernel ahead of its time); the modules still get the
    /// planned instant.
    pub lead: Lead,
}

/// How early events fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lead {
    Fixed(u64),
    /// The guard (auto: from this machine's measured wake-up latency).
    Guard,
}

impl Default for Extras {
    fn default() -> Extras {
        Extras {
            modules: None,
            series: Vec::new(),
            speed: 1.0,
            lead: Lead::Fixed(0),
        }
    }
}

/// The recorder's inputs, `dispatch` first, and the extra series' name,
/// metric and interval in the same order.
pub(super) fn recorder_inputs(
    dispatch: SeriesInput,
    series: Vec<ExtraSeries>,
) -> (Vec<SeriesInput>, Vec<(String, String, u64)>) {
    let mut inputs = vec![dispatch];
    let mut extra = Vec::with_capacity(series.len());
    for s in series {
        extra.push((s.name, s.metric, s.interval_ns));
        inputs.push(s.input);
    }
    (inputs, extra)
}

/// `ns` played at `speed`: exact at 1.0, else rounded down to the ns.
pub fn scaled(ns: u64, speed: f64) -> u64 {
    if speed == 1.0 {
        ns
    } else {
        (ns as f64 / speed) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_is_exact_at_one_and_divides_otherwise() {
        assert_eq!(scaled(u64::MAX - 1, 1.0), u64::MAX - 1);
        assert_eq!(scaled(1_000_000, 2.0), 500_000);
        assert_eq!(scaled(3, 0.5), 6);
    }
}
