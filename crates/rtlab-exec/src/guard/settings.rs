//! How an executive picks its guard and release margin: fixed, or learned
//! online within a CPU budget for spinning. The defaults, the limits and
//! their check, once for the periodic executive and the dispatcher.

use rtlab_core::settings::FieldError;
use serde::Serialize;
use std::str::FromStr;

/// How early an executive wakes before an instant (`--guard auto|DURATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// Learned online from the executive's own wake-ups (a warm start
    /// until each idle length has [`MIN_OBSERVATIONS`]).
    Auto,
    Fixed(u64),
}

impl FromStr for Guard {
    type Err = String;
    /// `auto`, or a duration (`100us`; `0` alone is a plain sleep).
    fn from_str(text: &str) -> Result<Guard, String> {
        match text {
            "auto" => Ok(Guard::Auto),
            "0" => Ok(Guard::Fixed(0)),
            text => rtlab_core::units::parse_duration_ns(text)
                .map(Guard::Fixed)
                .map_err(|e| format!("expected auto or a duration ({e})")),
        }
    }
}

/// Default CPU budget for spinning: the spin before an instant (the
/// executive's after it woke, its task's to the instant) takes at most
/// this % of the time since the previous instant of the same executive.
/// A quarter: 30 tasks 333 µs apart may still spin 83 µs each, one task
/// every 10 ms up to 2.5 ms (the guard's own ceiling, [`MAX_LEARNED_GUARD_NS`],
/// comes first).
pub const DEFAULT_SPIN_BUDGET_PERCENT: u32 = 25;
/// The lateness quantile a learned guard covers.
pub const QUANTILE: f64 = 0.995;
/// Wake-ups of one idle length before its learned guard replaces the warm
/// start (the quantile of fewer is the maximum of a handful).
pub const MIN_OBSERVATIONS: u64 = 32;
/// A learned guard is at least this (a machine that wakes on time still
/// needs the spin to reach the nanosecond) and at most this (host stalls
/// of several ms are not worth burning a CPU for at every activation).
pub const MIN_LEARNED_GUARD_NS: u64 = 20_000;
pub const MAX_LEARNED_GUARD_NS: u64 = 2_000_000;
/// A learned release margin is within these.
pub const MIN_RELEASE_EARLY_NS: u64 = 5_000;
pub const MAX_RELEASE_EARLY_NS: u64 = 500_000;
/// Added to a learned quantile, besides a quarter of it: the clock read
/// and the futex call around the instant.
pub const MARGIN_NS: u64 = 5_000;

/// What an executive learns online, and its budget for spinning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Learning {
    /// The guard is learned (else the config's fixed guard).
    pub guard: bool,
    /// The release-early margin is learned (else the config's fixed one).
    pub release_early: bool,
    /// `--spin-budget`: [`DEFAULT_SPIN_BUDGET_PERCENT`].
    pub spin_budget_percent: u32,
}

impl Default for Learning {
    /// Both learned, the default budget.
    fn default() -> Learning {
        Learning {
            guard: true,
            release_early: true,
            spin_budget_percent: DEFAULT_SPIN_BUDGET_PERCENT,
        }
    }
}

impl Learning {
    /// Nothing learned: every margin fixed.
    pub fn fixed() -> Learning {
        Learning {
            guard: false,
            release_early: false,
            ..Learning::default()
        }
    }

    /// The budget is 1-100 % (the error names `spin_budget`: the campaign
    /// key, `--spin-budget` on the command line).
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(1..=100).contains(&self.spin_budget_percent) {
            return Err(FieldError::new(
                "spin_budget",
                format!(
                    "{{spin_budget}} {}%: expected 1-100 (the % of the time between two activations the executive may spin)",
                    self.spin_budget_percent
                ),
            ));
        }
        Ok(())
    }
}

/// `--spin-budget` / `spin_budget`: `25` or `25%`, 1-100.
pub fn parse_percent(text: &str) -> Result<u32, String> {
    let digits = text.trim().trim_end_matches('%');
    let percent: u32 = digits
        .parse()
        .map_err(|_| format!("'{text}': expected a whole percentage, 1-100 (e.g. 25%)"))?;
    if !(1..=100).contains(&percent) {
        return Err(format!("'{text}': expected 1-100 %"));
    }
    Ok(percent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    #[test]
    fn guards_parse_as_auto_or_a_duration() {
        assert_eq!("auto".parse(), Ok(Guard::Auto));
        assert_eq!("0".parse(), Ok(Guard::Fixed(0)));
        assert_eq!("100us".parse(), Ok(Guard::Fixed(100_000)));
        assert!("soon"
            .parse::<Guard>()
            .unwrap_err()
            .contains("auto or a duration"));
    }

    #[test]
    fn the_budget_is_a_percentage_named_by_its_flag() {
        assert_eq!(Learning::default().validate(), Ok(()));
        let e = Learning {
            spin_budget_percent: 0,
            ..Learning::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "spin_budget");
        assert!(e
            .render(flag)
            .starts_with("--spin-budget 0%: expected 1-100"));
        assert!(e.to_string().starts_with("spin_budget 0%"));
        assert_eq!(parse_percent("25%"), Ok(25));
        assert_eq!(parse_percent("100"), Ok(100));
        assert!(parse_percent("0").is_err() && parse_percent("2.5%").is_err());
    }
}
