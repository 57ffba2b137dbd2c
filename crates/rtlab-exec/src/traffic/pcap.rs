//! Captures in and out: `rtlab traffic import` reads a pcap or pcapng file
//! (microsecond or nanosecond timestamps; Ethernet, Linux cooked v1 and
//! v2, raw IP; IPv4 and IPv6, VLAN tags) and turns its UDP datagrams into
//! a traffic plan, one flow per (source, destination), streamed (a capture
//! of 10 M packets is read once, in bounded memory); `rtlab traffic
//! export` writes a plan as a pcap whose packets are exactly on the plan's
//! schedule (for tcpreplay and other tools, and for the bench).
//!
//! CONTRACT (issue 20): the types and signatures are fixed; the bodies are
//! the plan-side part's.

use super::sink::{PlanSink, SinkError};
use std::net::SocketAddr;
use std::path::Path;

/// Which datagrams to keep: tcpdump's words for UDP, joined by `and`:
/// `[src|dst] port N`, `[src|dst] host ADDR`, `udp` (every term ANDed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Port { dir: Dir, port: u16 },
    Host { dir: Dir, addr: std::net::IpAddr },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Src,
    Dst,
    Either,
}

impl Filter {
    /// Parses `--filter`; the error says which word and what was expected.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let _ = text;
        todo!("plan-side part")
    }

    pub fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        let _ = (src, dst);
        todo!("plan-side part")
    }
}

/// What an import read and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportSummary {
    /// `pcap` or `pcapng`.
    pub format: String,
    /// `us` or `ns` (pcapng: of the first interface).
    pub resolution: String,
    /// Link types seen (`ethernet`, `linux-sll`, `linux-sll2`, `raw`).
    pub link_types: Vec<String>,
    pub packets: u64,
    /// UDP datagrams kept (matching the filter).
    pub kept: u64,
    /// Packets that are not UDP over IP (TCP, ARP, ...), or fragments.
    pub not_udp: u64,
    /// UDP datagrams the filter left out.
    pub filtered_out: u64,
    /// Packets cut by the capture's snap length: their size is the UDP
    /// header's length, their digest covers what was captured.
    pub truncated: u64,
    /// Packets whose timestamp is before the previous one's (kept at the
    /// previous instant: a plan never goes back).
    pub out_of_order: u64,
    pub flows: usize,
}

/// Why an import failed: the file and the byte offset (or packet number)
/// where it stopped making sense.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {message}")]
    Bad { file: String, message: String },
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// Reads `file` into `sink`: offsets from the first kept packet.
pub fn import(
    file: &Path,
    filter: &Filter,
    sink: &mut PlanSink,
    progress: impl FnMut(u64),
) -> Result<ImportSummary, ImportError> {
    let _ = (file, filter, sink, progress);
    todo!("plan-side part")
}

/// How `export` addresses its frames (Ethernet II, IPv4 or IPv6, UDP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportAddressing {
    /// Destination of every packet (`--to`), else each flow's `dest`.
    pub to: Option<SocketAddr>,
    /// Source address and port of every packet (flow i gets port + i).
    pub from: SocketAddr,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
}

/// Writes `plan` as a pcap (microsecond timestamps when every offset is a
/// whole µs, else nanosecond), one frame per event at `start + offset`,
/// each payload stamped ([`super::format::Stamp`], stream `stream`,
/// sequence = event index, planned = offset) and zero padded to its size.
pub fn export(
    plan: &Path,
    addressing: &ExportAddressing,
    stream: u32,
    output: &Path,
) -> Result<u64, ImportError> {
    let _ = (plan, addressing, stream, output);
    todo!("plan-side part")
}
