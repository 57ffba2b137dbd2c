//! A process's statistics as they accumulate: counts and two HDR
//! histograms (lateness, response) allocated once, at attach, so that
//! recording an activation never allocates (it runs between two
//! activations, on the release path of a real-time thread).

use crate::api::Stats;
use hdrhistogram::Histogram;

/// Largest time a histogram tells apart (10 s); longer ones count as it.
pub const MAX_TRACKED_NS: u64 = 10_000_000_000;

/// Counts and histograms of one attachment.
pub struct Accumulator {
    lateness: Histogram<u32>,
    response: Histogram<u32>,
    activations: u64,
    deadline_misses: u64,
    budget_overruns: u64,
    deadline_ns: u64,
    budget_ns: Option<u64>,
}

/// What one activation adds (see [`Accumulator::record`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub deadline_miss: bool,
    pub budget_overrun: bool,
}

impl Accumulator {
    /// Allocates both histograms, fixed in size from then on.
    pub fn new(deadline_ns: u64, budget_ns: Option<u64>) -> Accumulator {
        let histogram = || {
            Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3)
                .expect("1 ns to 10 s at 3 digits is a valid HDR setting")
        };
        Accumulator {
            lateness: histogram(),
            response: histogram(),
            activations: 0,
            deadline_misses: 0,
            budget_overruns: 0,
            deadline_ns,
            budget_ns,
        }
    }

    /// Records one activation (instants in ns): lateness = start −
    /// activation, response = end − activation, work = end − start.
    /// Allocation-free.
    #[inline]
    pub fn record(&mut self, activation_ns: u64, start_ns: u64, end_ns: u64) -> Verdict {
        let lateness = start_ns.saturating_sub(activation_ns);
        let response = end_ns.saturating_sub(activation_ns);
        let work = end_ns.saturating_sub(start_ns);
        self.activations += 1;
        // A histogram of fixed bounds refuses nothing once clamped.
        let _ = self.lateness.record(lateness.clamp(1, MAX_TRACKED_NS));
        let _ = self.response.record(response.clamp(1, MAX_TRACKED_NS));
        let verdict = Verdict {
            deadline_miss: response > self.deadline_ns,
            budget_overrun: self.budget_ns.is_some_and(|budget| work > budget),
        };
        self.deadline_misses += u64::from(verdict.deadline_miss);
        self.budget_overruns += u64::from(verdict.budget_overrun);
        verdict
    }

    /// The statistics so far, with the executive's count of missed
    /// activations.
    pub fn stats(&self, missed_activations: u64) -> Stats {
        let at = |h: &Histogram<u32>, q: f64| {
            if h.is_empty() {
                0
            } else {
                h.highest_equivalent(h.value_at_quantile(q)).min(h.max())
            }
        };
        Stats {
            activations: self.activations,
            missed_activations,
            deadline_misses: self.deadline_misses,
            budget_overruns: self.budget_overruns,
            lateness_p50_ns: at(&self.lateness, 0.50),
            lateness_p99_ns: at(&self.lateness, 0.99),
            lateness_p999_ns: at(&self.lateness, 0.999),
            lateness_max_ns: if self.lateness.is_empty() {
                0
            } else {
                self.lateness.max()
            },
            response_p50_ns: at(&self.response, 0.50),
            response_p99_ns: at(&self.response, 0.99),
            response_p999_ns: at(&self.response, 0.999),
            response_max_ns: if self.response.is_empty() {
                0
            } else {
                self.response.max()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_misses_and_overruns() {
        let mut acc = Accumulator::new(1_000, Some(300));
        assert_eq!(
            acc.record(10_000, 10_100, 10_300),
            Verdict {
                deadline_miss: false,
                budget_overrun: false
            }
        );
        assert_eq!(
            acc.record(20_000, 20_500, 21_500),
            Verdict {
                deadline_miss: true,
                budget_overrun: true
            }
        );
        let stats = acc.stats(4);
        assert_eq!(
            (
                stats.activations,
                stats.missed_activations,
                stats.deadline_misses,
                stats.budget_overruns
            ),
            (2, 4, 1, 1)
        );
        assert_eq!(stats.lateness_max_ns, 500);
        assert!(stats.lateness_p50_ns >= 100 && stats.lateness_p50_ns <= 500);
        assert_eq!(stats.response_max_ns, 1_500);
    }

    #[test]
    fn no_activation_is_all_zero_and_absurd_values_are_clamped() {
        let mut acc = Accumulator::new(1_000, None);
        assert_eq!(acc.stats(0), Stats::default());
        acc.record(5, 1, u64::MAX);
        let stats = acc.stats(0);
        assert_eq!(stats.activations, 1);
        assert!(stats.response_max_ns >= MAX_TRACKED_NS);
        assert_eq!(stats.budget_overruns, 0);
    }
}
