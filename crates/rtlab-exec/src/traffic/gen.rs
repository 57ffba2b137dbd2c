//! Traffic patterns generated into plans, streamed (a pattern of 10 M
//! packets is never held in memory), seeded and so reproducible.
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the plan-side part's.

use super::sink::PlanSink;
use crate::plan::gen::SplitMix64;

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

impl TrafficGen {
    /// Refuses what cannot be generated: rates ≤ 0 or above 10 Mpps, sizes
    /// past 65507 or min > max, zero flows or counts, a burst longer than
    /// its period, offsets past the plan format's limit.
    pub fn validate(&self) -> Result<(), GenError> {
        todo!("plan-side part")
    }

    /// Streams the packets into `sink`; the number written.
    pub fn write(
        &self,
        sink: &mut PlanSink,
        progress: impl FnMut(u64),
    ) -> Result<u64, super::sink::SinkError> {
        let _ = (sink, progress, SplitMix64::new(self.seed));
        todo!("plan-side part")
    }
}
