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

use super::{Event, DATA_BYTES};

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
    /// the period, offsets past 2^64 ns, ...).
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
        if let (
            Pattern::Periodic { period_ns } | Pattern::Jittered { period_ns, .. },
            Length::Count(n),
        ) = (&self.pattern, self.length)
        {
            let last = n
                .saturating_sub(1)
                .checked_mul(*period_ns)
                .and_then(|x| x.checked_add(self.start_ns))
                .and_then(|x| x.checked_add(*period_ns));
            if last.is_none() {
                return Err("the last offset would exceed 2^64 ns".into());
            }
        }
        if let Length::Duration(d) = self.length {
            if self.start_ns.checked_add(d).is_none() {
                return Err("start + duration exceeds 2^64 ns".into());
            }
            if d == 0 {
                return Err("the duration must be longer than 0".into());
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
            Length::Count(_) => u64::MAX,
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
                if self.poisson_at >= u64::MAX as f64 {
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
