//! Traffic patterns generated into plans, streamed (a pattern of 10 M
//! packets is never held in memory), seeded and so reproducible.
//!
//! Every instant is computed from the start, never from the previous
//! packet, so a long plan has no cumulative rounding drift: packet i of a
//! constant rate is at round(i × 1e9 / rate) exactly (integer arithmetic
//! on the rate in µpps), the Poisson clock sums its gaps in f64 and rounds
//! each instant once.
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the plan-side part's.

use super::format::{TrafficData, MAX_PAYLOAD};
use super::sink::{FlowKey, PlanSink, SinkError};
use crate::plan::check::MAX_OFFSET_NS;
use crate::plan::gen::SplitMix64;
use rtlab_core::units::human_duration;

/// When packets leave.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Exactly `rate` packets per second, evenly spaced (gap = 1 s / rate,
    /// kept exact over the whole plan: packet i at round(i × 1e9 / rate)).
    Constant { rate_pps: f64 },
    /// Exponential gaps of mean 1 s / rate.
    Poisson { rate_pps: f64 },
    /// `burst` packets `gap_ns` apart, a burst every `every_ns`.
    Bursts {
        burst: u64,
        gap_ns: u64,
        every_ns: u64,
    },
    /// At `rate` (constant) during on-periods, silent during off-periods;
    /// fixed lengths, or exponential of those means when `exponential`.
    OnOff {
        rate_pps: f64,
        on_ns: u64,
        off_ns: u64,
        exponential: bool,
    },
}

/// Datagram sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizes {
    Fixed(u16),
    /// Uniform in [min, max].
    Uniform {
        min: u16,
        max: u16,
    },
}

/// How long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Count(u64),
    /// Packets whose offset is below this.
    Duration(u64),
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficGen {
    pub pattern: Pattern,
    pub sizes: Sizes,
    pub length: Length,
    /// Flows the packets are spread over round-robin (each its own module,
    /// `dest` as given, so a replay without `--to` knows where to send).
    pub flows: u16,
    pub dest: Option<std::net::SocketAddr>,
    pub seed: u64,
}

/// A setting of [`TrafficGen`] that cannot be generated: the field (the
/// flag without dashes: `rate`, `size`, `count`, ...) and why.
pub type GenError = rtlab_core::settings::FieldError;

/// The highest rate generated: 10 Mpps (a gap of 100 ns).
pub const MAX_RATE_PPS: f64 = 10_000_000.0;
/// Rates are exact to this fraction of a packet per second.
const RATE_SCALE: f64 = 1e6;
/// Packets between two calls of the progress callback.
const PROGRESS_EVERY: u64 = 1 << 16;

impl TrafficGen {
    /// Refuses what cannot be generated: rates ≤ 0 or above 10 Mpps, sizes
    /// past 65507 or min > max, zero flows or counts, a burst longer than
    /// its period, offsets past the plan format's limit.
    pub fn validate(&self) -> Result<(), GenError> {
        match self.pattern {
            Pattern::Constant { rate_pps } | Pattern::Poisson { rate_pps } => {
                validate_rate(rate_pps)?
            }
            Pattern::Bursts {
                burst,
                gap_ns,
                every_ns,
            } => {
                if burst == 0 {
                    return Err(GenError::new("burst", "must be at least 1 packet"));
                }
                if every_ns == 0 {
                    return Err(GenError::new("every", "must be longer than 0"));
                }
                if burst > 1 && gap_ns == 0 {
                    return Err(GenError::new("gap", "must be longer than 0"));
                }
                let span = u128::from(burst - 1) * u128::from(gap_ns);
                if span >= u128::from(every_ns) {
                    return Err(GenError::new(
                        "every",
                        format!(
                            "{} is not longer than a burst ({burst} packets {} apart last {}): \
                             bursts would overlap",
                            human_duration(every_ns),
                            human_duration(gap_ns),
                            human_duration(span as u64)
                        ),
                    ));
                }
            }
            Pattern::OnOff {
                rate_pps,
                on_ns,
                off_ns,
                ..
            } => {
                validate_rate(rate_pps)?;
                if on_ns == 0 {
                    return Err(GenError::new("on", "must be longer than 0"));
                }
                if off_ns > MAX_OFFSET_NS || on_ns > MAX_OFFSET_NS {
                    return Err(GenError::new("off", "past the plan format's 2^62 ns"));
                }
            }
        }
        match self.sizes {
            Sizes::Fixed(size) if usize::from(size) > MAX_PAYLOAD => {
                return Err(GenError::new(
                    "size",
                    format!("{size} bytes: a UDP payload is at most {MAX_PAYLOAD}"),
                ))
            }
            Sizes::Uniform { min, max } if min > max => {
                return Err(GenError::new(
                    "size",
                    format!("{min}-{max}: the minimum is above the maximum"),
                ))
            }
            Sizes::Uniform { max, .. } if usize::from(max) > MAX_PAYLOAD => {
                return Err(GenError::new(
                    "size",
                    format!("{max} bytes: a UDP payload is at most {MAX_PAYLOAD}"),
                ))
            }
            _ => {}
        }
        if self.flows == 0 {
            return Err(GenError::new("flows", "must be at least 1"));
        }
        if usize::from(self.flows) > crate::plan::model::MAX_MODULES {
            return Err(GenError::new(
                "flows",
                format!(
                    "{}: a plan has at most {} modules",
                    self.flows,
                    crate::plan::model::MAX_MODULES
                ),
            ));
        }
        match self.length {
            Length::Count(0) => Err(GenError::new("count", "must be at least 1")),
            Length::Duration(0) => Err(GenError::new("duration", "must be longer than 0")),
            Length::Duration(ns) if ns > MAX_OFFSET_NS => Err(GenError::new(
                "duration",
                "past the plan format's 2^62 ns (146 years)",
            )),
            Length::Count(n) => match self.expected_end_ns(n) {
                Some(end) if end <= MAX_OFFSET_NS as f64 / 2.0 => Ok(()),
                _ => Err(GenError::new(
                    "count",
                    format!("{n} packets reach past the plan format's 2^62 ns (146 years)"),
                )),
            },
            Length::Duration(_) => Ok(()),
        }
    }

    /// About when packet `n` is due (the mean, for random patterns).
    fn expected_end_ns(&self, n: u64) -> Option<f64> {
        let n = n as f64;
        Some(match self.pattern {
            Pattern::Constant { rate_pps } | Pattern::Poisson { rate_pps } => n * 1e9 / rate_pps,
            Pattern::Bursts {
                burst, every_ns, ..
            } => (n / burst as f64).ceil() * every_ns as f64,
            Pattern::OnOff {
                rate_pps,
                on_ns,
                off_ns,
                ..
            } => {
                let per_on = (on_ns as f64 * rate_pps / 1e9).max(1.0);
                (n / per_on).ceil() * (on_ns + off_ns) as f64
            }
        })
    }

    /// Streams the packets into `sink`; the number written.
    pub fn write(
        &self,
        sink: &mut PlanSink,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, super::sink::SinkError> {
        let key = FlowKey {
            src: None,
            dest: self.dest,
        };
        let first = sink.len();
        let mut modules = Vec::with_capacity(usize::from(self.flows));
        for _ in 0..self.flows {
            modules.push(sink.declare(key)?);
        }
        let mut sizes = SplitMix64::new(self.seed ^ 0x5_12e5);
        let mut written = 0u64;
        for offset_ns in self.instants() {
            let offset_ns = offset_ns?;
            if let Length::Duration(limit) = self.length {
                if offset_ns >= limit {
                    break;
                }
            }
            let size = match self.sizes {
                Sizes::Fixed(size) => size,
                Sizes::Uniform { min, max } => min + sizes.below_or_eq(u64::from(max - min)) as u16,
            };
            let module = modules[(written % u64::from(self.flows)) as usize];
            sink.push(offset_ns, module, TrafficData { size, digest: 0 })?;
            written += 1;
            if written.is_multiple_of(PROGRESS_EVERY) {
                progress(written);
            }
            if self.length == Length::Count(written) {
                break;
            }
        }
        progress(written);
        debug_assert_eq!(sink.len() - first, written);
        Ok(written)
    }

    /// The pattern's instants, endless (the caller stops them).
    pub fn instants(&self) -> Instants {
        let mut rng = SplitMix64::new(self.seed);
        let state = match self.pattern {
            Pattern::Constant { rate_pps } => State::Constant {
                rate: Rate::new(rate_pps),
                index: 0,
            },
            Pattern::Poisson { rate_pps } => State::Poisson {
                mean_gap_ns: 1e9 / rate_pps,
                clock_ns: 0.0,
                first: true,
            },
            Pattern::Bursts {
                burst,
                gap_ns,
                every_ns,
            } => State::Bursts {
                burst,
                gap_ns,
                every_ns,
                index: 0,
            },
            Pattern::OnOff {
                rate_pps,
                on_ns,
                off_ns,
                exponential,
            } => {
                let on_len = period_length(on_ns, exponential, &mut rng);
                State::OnOff {
                    rate: Rate::new(rate_pps),
                    on_ns,
                    off_ns,
                    exponential,
                    start_ns: 0,
                    on_len,
                    index: 0,
                }
            }
        };
        Instants { state, rng }
    }
}

fn validate_rate(rate_pps: f64) -> Result<(), GenError> {
    if !(rate_pps.is_finite() && rate_pps > 0.0) {
        return Err(GenError::new("rate", "must be above 0 packets per second"));
    }
    if rate_pps > MAX_RATE_PPS {
        return Err(GenError::new(
            "rate",
            format!("{rate_pps} pps: at most 10 Mpps (a packet every 100 ns)"),
        ));
    }
    if (rate_pps * RATE_SCALE).round() < 1.0 {
        return Err(GenError::new(
            "rate",
            "below 0.000001 packets per second (one every 11.6 days)",
        ));
    }
    Ok(())
}

/// A rate as a whole number of µpps: instants in exact integer arithmetic.
#[derive(Debug, Clone, Copy)]
struct Rate {
    micro_pps: u128,
}

impl Rate {
    fn new(rate_pps: f64) -> Rate {
        Rate {
            micro_pps: ((rate_pps * RATE_SCALE).round() as u128).max(1),
        }
    }

    /// round(i × 1e9 / rate) ns, or None past u64.
    fn instant(&self, i: u64) -> Option<u64> {
        let numerator = u128::from(i) * 1_000_000_000 * RATE_SCALE as u128;
        u64::try_from((numerator + self.micro_pps / 2) / self.micro_pps).ok()
    }
}

/// An on- or off-period's length: fixed, or exponential of that mean.
fn period_length(mean_ns: u64, exponential: bool, rng: &mut SplitMix64) -> u64 {
    if exponential {
        (-rng.next_unit().ln() * mean_ns as f64).round() as u64
    } else {
        mean_ns
    }
}

enum State {
    Constant {
        rate: Rate,
        index: u64,
    },
    Poisson {
        mean_gap_ns: f64,
        clock_ns: f64,
        first: bool,
    },
    Bursts {
        burst: u64,
        gap_ns: u64,
        every_ns: u64,
        index: u64,
    },
    OnOff {
        rate: Rate,
        on_ns: u64,
        off_ns: u64,
        exponential: bool,
        /// Where the current on-period starts.
        start_ns: u64,
        on_len: u64,
        /// Packet index within the current on-period.
        index: u64,
    },
}

/// A pattern's offsets in ns, non-decreasing; an offset past the plan
/// format's limit is an error ([`SinkError::TooLate`]).
pub struct Instants {
    state: State,
    rng: SplitMix64,
}

impl Iterator for Instants {
    type Item = Result<u64, SinkError>;

    fn next(&mut self) -> Option<Self::Item> {
        let instant = match &mut self.state {
            State::Constant { rate, index } => {
                let at = rate.instant(*index);
                *index += 1;
                at
            }
            State::Poisson {
                mean_gap_ns,
                clock_ns,
                first,
            } => {
                // The first packet at 0: a plan starts with its first packet.
                if !std::mem::take(first) {
                    *clock_ns += -self.rng.next_unit().ln() * *mean_gap_ns;
                }
                Some(clock_ns.round() as u64)
            }
            State::Bursts {
                burst,
                gap_ns,
                every_ns,
                index,
            } => {
                let (n, k) = (*index / *burst, *index % *burst);
                *index += 1;
                n.checked_mul(*every_ns)
                    .and_then(|start| start.checked_add(k * *gap_ns))
            }
            State::OnOff {
                rate,
                on_ns,
                off_ns,
                exponential,
                start_ns,
                on_len,
                index,
            } => loop {
                let Some(within) = rate.instant(*index) else {
                    break None;
                };
                // The first packet of a period always leaves (an exponential
                // period may be shorter than one gap).
                if *index == 0 || within < *on_len {
                    *index += 1;
                    break start_ns.checked_add(within);
                }
                let off = period_length(*off_ns, *exponential, &mut self.rng);
                *start_ns = match start_ns
                    .checked_add(*on_len)
                    .and_then(|s| s.checked_add(off))
                {
                    Some(s) => s,
                    None => break None,
                };
                *on_len = period_length(*on_ns, *exponential, &mut self.rng);
                *index = 0;
            },
        };
        Some(match instant {
            Some(ns) if ns <= MAX_OFFSET_NS => Ok(ns),
            Some(ns) => Err(SinkError::TooLate(ns)),
            None => Err(SinkError::TooLate(u64::MAX)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(pattern: Pattern, length: Length) -> TrafficGen {
        TrafficGen {
            pattern,
            sizes: Sizes::Fixed(64),
            length,
            flows: 1,
            dest: None,
            seed: 7,
        }
    }

    #[test]
    fn constant_rates_have_no_cumulative_drift() {
        let g = gen(Pattern::Constant { rate_pps: 3.0 }, Length::Count(1));
        let mut it = g.instants();
        assert_eq!(it.next().unwrap().unwrap(), 0);
        assert_eq!(it.next().unwrap().unwrap(), 333_333_333);
        assert_eq!(it.next().unwrap().unwrap(), 666_666_667);
        let rate = Rate::new(3.0);
        // Packet 10 000 000 at 10^7 / 3 s, to the ns (f64 accumulation of
        // 333 333 333.3 ns gaps would be off by ~3 ms by then).
        assert_eq!(rate.instant(10_000_000), Some(3_333_333_333_333_333));
        assert_eq!(
            Rate::new(2000.0).instant(10_000_000),
            Some(5_000_000_000_000)
        );
        assert_eq!(Rate::new(1.5e6).instant(3), Some(2_000));
    }

    #[test]
    fn bursts_and_fixed_on_off_are_where_they_should_be() {
        let b = gen(
            Pattern::Bursts {
                burst: 3,
                gap_ns: 10,
                every_ns: 1000,
            },
            Length::Count(6),
        );
        let got: Vec<u64> = b.instants().take(6).map(Result::unwrap).collect();
        assert_eq!(got, vec![0, 10, 20, 1000, 1010, 1020]);
        let o = gen(
            Pattern::OnOff {
                rate_pps: 1e6,
                on_ns: 2_500,
                off_ns: 10_000,
                exponential: false,
            },
            Length::Count(6),
        );
        let got: Vec<u64> = o.instants().take(6).map(Result::unwrap).collect();
        assert_eq!(got, vec![0, 1000, 2000, 12_500, 13_500, 14_500]);
    }

    #[test]
    fn poisson_gaps_have_the_mean_asked_for() {
        let g = gen(Pattern::Poisson { rate_pps: 10_000.0 }, Length::Count(1));
        let last = g.instants().nth(100_000).unwrap().unwrap();
        let mean = last as f64 / 100_000.0;
        assert!((mean - 100_000.0).abs() < 2_000.0, "mean gap {mean} ns");
        let again = g.instants().nth(100_000).unwrap().unwrap();
        assert_eq!(last, again, "the same seed, the same instants");
    }

    #[test]
    fn validation_names_the_flag() {
        let bad = |g: TrafficGen| g.validate().unwrap_err().field;
        let ok = gen(Pattern::Constant { rate_pps: 1000.0 }, Length::Count(10));
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(
            bad(gen(Pattern::Poisson { rate_pps: 0.0 }, Length::Count(1))),
            "rate"
        );
        assert_eq!(
            bad(gen(Pattern::Constant { rate_pps: 2e7 }, Length::Count(1))),
            "rate"
        );
        assert_eq!(
            bad(TrafficGen {
                sizes: Sizes::Uniform { min: 10, max: 5 },
                ..ok.clone()
            }),
            "size"
        );
        assert_eq!(
            bad(TrafficGen {
                sizes: Sizes::Fixed(65_508),
                ..ok.clone()
            }),
            "size"
        );
        assert_eq!(
            bad(TrafficGen {
                flows: 0,
                ..ok.clone()
            }),
            "flows"
        );
        assert_eq!(
            bad(TrafficGen {
                length: Length::Count(0),
                ..ok.clone()
            }),
            "count"
        );
        assert_eq!(
            bad(gen(
                Pattern::Bursts {
                    burst: 10,
                    gap_ns: 100,
                    every_ns: 900
                },
                Length::Count(1)
            )),
            "every"
        );
        assert_eq!(
            bad(gen(
                Pattern::Constant { rate_pps: 1e-3 },
                Length::Count(u64::MAX)
            )),
            "count"
        );
    }
}
