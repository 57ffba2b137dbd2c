//! Captures in and out: `rtlab traffic import` reads a pcap or pcapng file
//! (microsecond or nanosecond timestamps; Ethernet, Linux cooked v1 and
//! v2, raw IP; IPv4 and IPv6, VLAN tags) and turns its UDP datagrams into
//! a traffic plan, one flow per (source, destination), streamed (a capture
//! of 10 M packets is read once, in bounded memory); `rtlab traffic
//! export` writes a plan as a pcap whose packets are exactly on the plan's
//! schedule (for tcpreplay and other tools, and for the bench).
//!
//! - [`read`]: the capture reader (pcap, pcapng), packet by packet;
//! - [`link`]: a frame's UDP datagram, whatever the link layer;
//! - [`filter`]: `--filter`'s words;
//! - [`import`]: a capture's UDP datagrams into a plan;
//! - [`export`]: a plan as a pcap.
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the plan-side part's.

mod export;
mod filter;
mod import;
pub mod link;
pub mod read;

pub use export::{export, ExportAddressing};
pub use filter::{Dir, Filter, Term};
pub use import::{import, ImportError, ImportSummary};
