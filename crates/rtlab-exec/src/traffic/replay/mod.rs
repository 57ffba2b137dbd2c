//! `rtlab traffic replay`: every packet of a traffic plan sent at its
//! planned instant by the dispatcher (absolute schedule: never relative to
//! the previous packet, so nothing drifts), its actual departure taken
//! from the kernel's software transmit timestamp (SO_TIMESTAMPING, the
//! error queue drained off the hot path) where the kernel gives one, else
//! the user-space send time.
//!
//! - [`config`]: the settings, their check, the probe;
//! - [`flows`]: the plan read once (flows, destinations, largest datagrams);
//! - [`sender`]: the module that sends a flow's packets (the hot path);
//! - [`txstamps`]: SO_TIMESTAMPING asked for and read back;
//! - [`txtime`]: SO_TXTIME, where a qdisc honours it;
//! - [`collector`]: stamps paired with packets, the `departure` and `gap`
//!   series;
//! - [`accuracy`]: the report's online figures;
//! - [`run`]: the probe run and its traffic report.

mod accuracy;
mod collector;
mod config;
mod flows;
mod run;
mod sender;
mod txstamps;
mod txtime;

pub use accuracy::Accuracy;
pub use collector::STAMP_WAIT_NS;
pub use config::{ReplayConfig, TxStamps, TxTime, MAX_SPEED, MIN_SPEED};
pub use flows::{flows_of, Flow};
pub use run::ReplayRun;
pub use txtime::{qdisc_for, Qdisc};
