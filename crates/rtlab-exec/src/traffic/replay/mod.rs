//! `rtlab traffic replay`: every packet of a traffic plan sent at its
//! planned instant by the dispatcher (absolute schedule: never relative to
//! the previous packet, so nothing drifts), its actual departure taken
//! from the kernel's software transmit timestamp (SO_TIMESTAMPING, the
//! error queue drained off the hot path) where the kernel gives one, else
//! the user-space send time.
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the replay part's.

use crate::dispatch::{Guard, Inject, Repeat};
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_probe::{Probe, ProbeRun, Start};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where departure times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxStamps {
    /// The kernel's software transmit timestamps where it gives them, the
    /// user-space send time for each packet it does not.
    Kernel,
    /// The clock read just before each send.
    User,
}

/// SO_TXTIME with the ETF qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxTime {
    Off,
    /// Hand each packet to the kernel this far ahead of its instant,
    /// chosen from the measured wake-up latency.
    Auto,
    Delta(u64),
}

/// Everything a replay needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayConfig {
    pub plan: PathBuf,
    /// Every flow goes here; None: each flow's `dest`.
    pub to: Option<SocketAddr>,
    /// 2.0 plays the plan twice as fast (offsets divided by it).
    pub speed: f64,
    pub repeat: Repeat,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
    pub guard: Guard,
    /// A packet reached later than this is not sent (counted skipped).
    pub skip_after_ns: u64,
    /// A packet that left later than this after its instant counts late.
    pub late_after_ns: u64,
    /// Put the stamp (format::Stamp) at the start of each datagram of at
    /// least 24 bytes.
    pub stamp: bool,
    /// The stamp's stream id (random per replay, chosen by the caller).
    pub stream: u32,
    pub timestamps: TxStamps,
    pub txtime: TxTime,
    /// Testing: a stall of known size the departure errors must show.
    pub inject: Option<Inject>,
}

/// The fastest `--speed` and the slowest.
pub const MAX_SPEED: f64 = 1000.0;
pub const MIN_SPEED: f64 = 0.001;

impl ReplayConfig {
    /// Checks the settings (the plan is checked when loaded); errors name
    /// `rtlab traffic replay`'s flag without dashes.
    pub fn validate(&self) -> Result<(), FieldError> {
        todo!("replay part")
    }
}

impl Probe for ReplayConfig {
    fn kind(&self) -> &'static str {
        "traffic-replay"
    }
    fn planned_ns(&self) -> u64 {
        todo!("replay part")
    }
    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let _ = with;
        todo!("replay part")
    }
}
