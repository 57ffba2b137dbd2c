//! Periodic releases with release jitter, as the `response-time-analysis`
//! crate's `Sporadic` arrival curve counts them (⌈(Δ + J)/T⌉ jobs in any
//! window Δ), with its steps found without a search: `Sporadic` finds
//! its first step after the jitter by trying j = 1, 2, ... until T·j > J,
//! J/T tries, which a 1 ns period under a long jitter makes endless.

use std::iter;

use response_time_analysis::arrival::ArrivalBound;
use response_time_analysis::time::Duration;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Released {
    /// At least 1.
    period: u64,
    jitter: u64,
}

impl Released {
    pub fn new(period: u64, jitter: u64) -> Released {
        Released {
            period: period.max(1),
            jitter,
        }
    }
}

impl ArrivalBound for Released {
    fn number_arrivals(&self, delta: Duration) -> usize {
        let delta = u64::from(delta);
        if delta == 0 {
            return 0;
        }
        usize::try_from(delta.saturating_add(self.jitter).div_ceil(self.period))
            .unwrap_or(usize::MAX)
    }

    /// 1, then T·j + 1 − J from the first j with T·j > J.
    fn steps_iter<'a>(&'a self) -> Box<dyn Iterator<Item = Duration> + 'a> {
        let first = self.jitter / self.period + 1;
        Box::new(iter::once(Duration::from(1)).chain((first..).map(move |j| {
            Duration::from(
                self.period
                    .saturating_mul(j)
                    .saturating_add(1)
                    .saturating_sub(self.jitter),
            )
        })))
    }

    fn clone_with_jitter(&self, added_jitter: Duration) -> Box<dyn ArrivalBound> {
        Box::new(Released::new(
            self.period,
            self.jitter.saturating_add(added_jitter.into()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use response_time_analysis::arrival::Sporadic;

    use super::*;

    #[test]
    fn counts_and_steps_as_the_crates_sporadic_curve() {
        for (period, jitter) in [(10, 0), (10, 3), (10, 10), (10, 25), (1, 0), (1, 7), (7, 6)] {
            let ours = Released::new(period, jitter);
            let theirs = Sporadic::new(Duration::from(period), Duration::from(jitter));
            for delta in 0..200 {
                let delta = Duration::from(delta);
                assert_eq!(
                    ours.number_arrivals(delta),
                    theirs.number_arrivals(delta),
                    "{period} {jitter}"
                );
            }
            let ours: Vec<Duration> = ours.steps_iter().take(20).collect();
            let theirs: Vec<Duration> = theirs.steps_iter().take(20).collect();
            assert_eq!(ours, theirs, "T = {period}, J = {jitter}");
        }
    }

    #[test]
    fn a_jitter_of_many_periods_steps_at_once() {
        let released = Released::new(1, 1 << 40);
        let steps: Vec<u64> = released.steps_iter().take(3).map(u64::from).collect();
        assert_eq!(steps, [1, 2, 3]);
    }
}
