//! Plan generators: events made lazily, one at a time, so a 10 M event
//! plan streams into a file without being held in memory.
//!
//! - periodic: `start + i × period`;
//! - jittered: periodic, each event moved by a uniform offset in
//!   `[-jitter, +jitter]` (seeded). The jitter is at most half the period,
//!   so offsets never decrease; an event moved before 0 is put at 0;
//! - poisson: gaps drawn from an exponential distribution of the given
//!   mean (seeded); the first event is one gap after the start.
//!
//! Data: fixed bytes, or a 32-bit little-endian sequence number (0, 1, 2,
//! ..., wrapping) in bytes 0-3 and zeros after.

use super::check::MAX_OFFSET_NS;
use super::model::{Event, DATA_BYTES};

/// splitmix64: a small, good enough PRNG for schedules (not for secrets).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n] (n < 2^63).
    pub fn below_or_eq(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * (n as u128 + 1)) >> 64) as u64
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    Periodic { period_ns: u64 },
    Jittered { period_ns: u64, jitter_ns: u64 },
    Poisson { mean_gap_ns: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Exactly this many events.
    Count(u64),
    /// Events whose nominal offset (before jitter) is below start + this.
    Duration(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataGen {
    Fixed([u8; DATA_BYTES]),
    /// The event's sequence number, u32 little-endian, in bytes 0-3.
    Sequence,
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenSpec {
    pub pattern: Pattern,
    pub length: Length,
    pub module: u16,
    pub start_ns: u64,
    pub seed: u64,
    pub data: DataGen,
}

impl GenSpec {
    /// Refuses what cannot be generated (zero period, jitter over half
    /// the period, offsets past 2^62 ns, which `plan check` refuses, ...).
    pub fn validate(&self) -> Result<(), String> {
        match self.pattern {
            Pattern::Periodic { period_ns } | Pattern::Jittered { period_ns, .. }
                if period_ns == 0 =>
            {
                return Err("the period must be longer than 0".into())
            }
            Pattern::Jittered {
                period_ns,
                jitter_ns,
            } if jitter_ns > period_ns / 2 => {
                return Err(format!(
                    "jitter {jitter_ns} ns is more than half the period ({period_ns} ns): offsets would go backwards"
                ))
            }
            Pattern::Poisson { mean_gap_ns } if !(1.0..1e15).contains(&mean_gap_ns) => {
                return Err(format!(
                    "mean gap {mean_gap_ns} ns: expected 1 ns to 1e15 ns"
                ))
            }
            _ => {}
        }
        // Every offset must be one `plan check` accepts (at most
        // MAX_OFFSET_NS): a generated plan that the checker rejects is a
        // bad plan written, not a plan.
        let beyond = |what: &str| {
            Err(format!(
                "{what} would be beyond 2^62 ns (146 years), the largest offset a plan may hold"
            ))
        };
        if self.start_ns > MAX_OFFSET_NS {
            return beyond("the start");
        }
        let jitter_ns = match self.pattern {
            Pattern::Jittered { jitter_ns, .. } => jitter_ns,
            _ => 0,
        };
        match (&self.pattern, self.length) {
            (
                Pattern::Periodic { period_ns } | Pattern::Jittered { period_ns, .. },
                Length::Count(n),
            ) => {
                let last = n
                    .saturating_sub(1)
                    .checked_mul(*period_ns)
                    .and_then(|x| x.checked_add(self.start_ns))
                    .and_then(|x| x.checked_add(jitter_ns));
                if last.is_none_or(|last| last > MAX_OFFSET_NS) {
                    return beyond("the last offset");
                }
            }
            (_, Length::Duration(d)) => {
                if d == 0 {
                    return Err("the duration must be longer than 0".into());
                }
                // The last event's nominal offset is below start + d.
                let last = self
                    .start_ns
                    .checked_add(d - 1)
                    .and_then(|x| x.checked_add(jitter_ns));
                if last.is_none_or(|last| last > MAX_OFFSET_NS) {
                    return beyond("start + duration");
                }
            }
            // A Poisson plan of N events ends where its gaps take it: one
            // pass (nothing kept) tells whether all N fit.
            (Pattern::Poisson { .. }, Length::Count(n)) => {
                let fit = self.events().count() as u64;
                if fit < n {
                    return beyond(&format!(
                        "event {fit} of {n} (at this mean gap, only {fit} fit)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The events, lazily. Call [`GenSpec::validate`] first.
    pub fn events(&self) -> GenIter {
        GenIter {
            spec: self.clone(),
            rng: SplitMix64::new(self.seed),
            index: 0,
            poisson_at: self.start_ns as f64,
            done: false,
        }
    }

    /// How many events [`GenSpec::events`] yields (for a Poisson plan of a
    /// given duration: by running the generator once, without storing).
    pub fn count(&self) -> u64 {
        match (&self.pattern, self.length) {
            (_, Length::Count(n)) => n,
            (
                Pattern::Periodic { period_ns } | Pattern::Jittered { period_ns, .. },
                Length::Duration(d),
            ) => d.div_ceil(*period_ns),
            (Pattern::Poisson { .. }, Length::Duration(_)) => self.events().count() as u64,
        }
    }
}

/// The iterator of a [`GenSpec`].
pub struct GenIter {
    spec: GenSpec,
    rng: SplitMix64,
    index: u64,
    poisson_at: f64,
    done: bool,
}

impl Iterator for GenIter {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let i = self.index;
        let end = match self.spec.length {
            Length::Count(n) if i >= n => {
                self.done = true;
                return None;
            }
            // The end of time for a plan: no offset beyond MAX_OFFSET_NS.
            Length::Count(_) => MAX_OFFSET_NS + 1,
            Length::Duration(d) => self.spec.start_ns.saturating_add(d),
        };
        let offset_ns = match self.spec.pattern {
            Pattern::Periodic { period_ns } => {
                match i
                    .checked_mul(period_ns)
                    .and_then(|o| o.checked_add(self.spec.start_ns))
                {
                    Some(offset) => offset,
                    None => {
                        // Past the end of time: the plan ends here.
                        self.done = true;
                        return None;
                    }
                }
            }
            Pattern::Jittered {
                period_ns,
                jitter_ns,
            } => {
                let Some(nominal) = i
                    .checked_mul(period_ns)
                    .and_then(|o| o.checked_add(self.spec.start_ns))
                else {
                    self.done = true;
                    return None;
                };
                if nominal >= end {
                    self.done = true;
                    return None;
                }
                let shift = self.rng.below_or_eq(2 * jitter_ns);
                (nominal + shift).saturating_sub(jitter_ns)
            }
            Pattern::Poisson { mean_gap_ns } => {
                let gap = -self.rng.next_unit().ln() * mean_gap_ns;
                self.poisson_at += gap;
                if self.poisson_at > MAX_OFFSET_NS as f64 {
                    self.done = true;
                    return None;
                }
                self.poisson_at.round() as u64
            }
        };
        if offset_ns >= end && !matches!(self.spec.pattern, Pattern::Jittered { .. }) {
            self.done = true;
            return None;
        }
        self.index += 1;
        let data = match self.spec.data {
            DataGen::Fixed(d) => d,
            DataGen::Sequence => {
                let mut d = [0; DATA_BYTES];
                d[..4].copy_from_slice(&(i as u32).to_le_bytes());
                d
            }
        };
        Some(Event {
            offset_ns,
            module: self.spec.module,
            flags: 0,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{check, ModuleDecl, PlanHeader};

    fn spec(pattern: Pattern, length: Length, start_ns: u64) -> GenSpec {
        GenSpec {
            pattern,
            length,
            module: 0,
            start_ns,
            seed: 7,
            data: DataGen::Sequence,
        }
    }

    /// What `plan check` says of a generated plan.
    fn checked(spec: &GenSpec) -> check::Report {
        let header = PlanHeader {
            modules: vec![ModuleDecl {
                id: 0,
                name: "tick".into(),
                kind: "mark".into(),
                settings: vec![],
            }],
            repeat_ns: None,
        };
        let events: Vec<Event> = spec.events().collect();
        assert_eq!(events.len() as u64, spec.count(), "{spec:?}");
        check::check(&header, &events)
    }

    /// At the edges of MAX_OFFSET_NS, every plan `validate` lets through
    /// passes `plan check`, and one nanosecond further is refused:
    /// `plan gen --start 5124095h` wrote a plan `plan check` rejected.
    #[test]
    fn every_plan_generated_passes_check_at_the_edges() {
        let max = MAX_OFFSET_NS;
        let periodic = Pattern::Periodic { period_ns: 1_000 };
        let jittered = Pattern::Jittered {
            period_ns: 1_000,
            jitter_ns: 500,
        };
        let poisson = Pattern::Poisson { mean_gap_ns: 1e3 };
        let accepted = [
            spec(periodic.clone(), Length::Count(1), max),
            spec(periodic.clone(), Length::Count(3), max - 2_000),
            spec(periodic.clone(), Length::Duration(1), max),
            spec(periodic.clone(), Length::Duration(5_000), max - 4_999),
            spec(jittered.clone(), Length::Count(3), max - 2_500),
            spec(jittered.clone(), Length::Duration(3_000), max - 3_499),
            spec(poisson.clone(), Length::Duration(50_000), max - 49_999),
            spec(poisson.clone(), Length::Count(3), max - 1_000_000),
        ];
        for s in &accepted {
            assert_eq!(s.validate(), Ok(()), "{s:?}");
            let report = checked(s);
            assert!(report.is_clean(), "{s:?}: {report:?}");
        }
        let refused = [
            // 5124095h: below 2^64 ns, above 2^62 ns.
            spec(
                periodic.clone(),
                Length::Count(1),
                5_124_095 * 3_600_000_000_000,
            ),
            spec(periodic.clone(), Length::Count(1), max + 1),
            spec(periodic.clone(), Length::Count(3), max - 1_999),
            spec(periodic.clone(), Length::Duration(1), max + 1),
            spec(periodic, Length::Duration(5_000), max - 4_998),
            spec(jittered.clone(), Length::Count(3), max - 2_499),
            spec(jittered, Length::Duration(3_000), max - 3_498),
            spec(poisson.clone(), Length::Duration(50_000), max - 49_998),
            spec(poisson, Length::Count(1_000), max - 10_000),
        ];
        for s in &refused {
            let err = s.validate().unwrap_err();
            assert!(err.contains("beyond 2^62 ns"), "{s:?}: {err}");
        }
    }
}
