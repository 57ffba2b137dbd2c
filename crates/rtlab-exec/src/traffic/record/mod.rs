//! `rtlab traffic record`: every datagram received on a UDP socket with
//! the kernel's receive timestamp (SO_TIMESTAMPNS), written as a traffic
//! plan (one flow per source) and measured: inter-arrival gaps and, when
//! the datagrams carry a replay's stamps, each arrival against its
//! planned instant (so the receiver's error is told apart from the
//! sender's, which the replay reports).
//!
//! - [`config`]: the settings and their checks;
//! - `socket`: the bound UDP socket, its options and batched receive
//!   (recvmmsg) with each datagram's kernel stamp;
//! - `receive`: the measuring thread's loop (hot path);
//! - `matcher`: stamps' sequences → lost, duplicate and reordered, in
//!   bounded memory whatever a peer sends;
//! - `accuracy`: one error series' summary (within 1/5 µs, drift);
//! - `against`: the plan that was sent, planned instants by sequence;
//! - `tally`: off the hot path, arrivals → the plan written, the samples
//!   and the report;
//! - `run`: the probe (threads, recorder, outcome).

mod accuracy;
mod against;
pub mod config;
mod matcher;
mod receive;
mod run;
mod socket;
mod tally;

pub use against::Against;
pub use config::RecordConfig;
pub use run::RecordRun;
