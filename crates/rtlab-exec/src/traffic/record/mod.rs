//! `rtlab traffic record`: every datagram received on a UDP socket with
//! the kernel's receive timestamp (SO_TIMESTAMPNS), written as a traffic
//! plan (one flow per source) and measured: inter-arrival gaps and, when
//! the datagrams carry a replay's stamps, each arrival against its
//! planned instant (so the receiver's error is told apart from the
//! sender's, which the replay reports).
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the record part's.

use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_probe::{Probe, ProbeRun, Start};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything a recording needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct RecordConfig {
    pub listen: SocketAddr,
    /// The plan written (None: only measured).
    pub output: Option<PathBuf>,
    /// Stop after this long (from the start), this many datagrams, or
    /// once nothing came for `idle_ns` after the first; else at SIGINT.
    pub duration_ns: Option<u64>,
    pub count: Option<u64>,
    pub idle_ns: Option<u64>,
    /// The plan that was sent: planned instants by stamp sequence (the
    /// stamps' own planned instants otherwise), and the count expected.
    pub against: Option<PathBuf>,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
}

impl RecordConfig {
    /// Checks the settings; errors name `rtlab traffic record`'s flag
    /// without dashes.
    pub fn validate(&self) -> Result<(), FieldError> {
        todo!("record part")
    }
}

impl Probe for RecordConfig {
    fn kind(&self) -> &'static str {
        "traffic-record"
    }
    fn planned_ns(&self) -> u64 {
        todo!("record part")
    }
    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let _ = with;
        todo!("record part")
    }
}
