//! The witness's settings, defaulted and validated here only.

use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;

/// How often the witness reads the counters when not told: 50 ms costs
/// about 1 % of one CPU here (bench/results/witness-cost.md) and still
/// places a spike within a window a few times its own length.
pub const DEFAULT_PERIOD_NS: u64 = 50_000_000;
/// The shortest period: below it the reads themselves (hundreds of /proc
/// files) become a load on the machine they watch.
pub const MIN_PERIOD_NS: u64 = 5_000_000;
/// The longest period: a window longer than this holds too much to name
/// one cause.
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;
/// How often the list of threads is read again (new threads, threads that
/// moved onto a measured CPU, policies changed).
pub const DEFAULT_RESCAN_NS: u64 = 1_000_000_000;
/// How soon the thread list is read again when a probe thread was
/// preempted (someone new may have taken its CPU).
pub const PREEMPTED_RESCAN_NS: u64 = 200_000_000;
/// At most this many threads besides the probe's are kept open (two
/// files each): another user's thousands of threads on a measured CPU must
/// not take rtlab's file descriptors (a soft limit of 1024 is common) nor
/// make every window read thousands of files. Real-time threads take the
/// place of others when the bound is reached: they are the ones that can
/// hold a probe off its CPU.
pub const MAX_WATCHED_THREADS: usize = 384;

/// What the engine starts a witness with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WitnessSettings {
    /// How often the counters are read, ns.
    pub period_ns: u64,
    /// How long recent windows are kept before they are dropped unless a
    /// top spike pinned them, ns: longer than the engine's look at the
    /// series' top spikes (its checkpoint), with room.
    pub keep_ns: u64,
    /// Watch only in even seconds of the run and sleep in odd ones, so one
    /// run measures with and without the witness (bench/witness-cost.sh).
    pub alternate: bool,
}

impl Default for WitnessSettings {
    fn default() -> Self {
        WitnessSettings {
            period_ns: DEFAULT_PERIOD_NS,
            keep_ns: 6_000_000_000,
            alternate: false,
        }
    }
}

impl WitnessSettings {
    /// The one judge of the settings; the field is `witness_period`.
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&self.period_ns) {
            return Err(FieldError::new(
                "witness_period",
                format!(
                    "{{witness_period}} {} is out of range: from {} to {}",
                    human_duration(self.period_ns),
                    human_duration(MIN_PERIOD_NS),
                    human_duration(MAX_PERIOD_NS)
                ),
            ));
        }
        Ok(())
    }

    /// How many windows the ring of recent ones holds.
    pub fn ring_windows(&self) -> usize {
        (self.keep_ns / self.period_ns.max(1)).clamp(4, 100_000) as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_checked() {
        assert!(WitnessSettings::default().validate().is_ok());
        for bad in [0, MIN_PERIOD_NS - 1, MAX_PERIOD_NS + 1] {
            let s = WitnessSettings {
                period_ns: bad,
                ..WitnessSettings::default()
            };
            let e = s.validate().unwrap_err();
            assert_eq!(e.field, "witness_period");
            assert!(e.message.contains("out of range"), "{}", e.message);
        }
        assert_eq!(WitnessSettings::default().ring_windows(), 121);
    }
}
