//! A capture's UDP datagrams into a plan, one pass, streamed.

use super::filter::Filter;
use super::link;
use super::read::CaptureReader;
use crate::plan::check::MAX_OFFSET_NS;
use crate::traffic::format::{digest, TrafficData};
use crate::traffic::sink::{FlowKey, PlanSink, SinkError};
use std::path::Path;

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
/// `progress` is called now and then with the bytes of the file read.
pub fn import(
    file: &Path,
    filter: &Filter,
    sink: &mut PlanSink,
    mut progress: impl FnMut(u64),
) -> Result<ImportSummary, ImportError> {
    let name = file.display().to_string();
    let bad = |message: String| ImportError::Bad {
        file: name.clone(),
        message,
    };
    let opened = std::fs::File::open(file).map_err(|e| bad(format!("cannot open: {e}")))?;
    let mut reader =
        CaptureReader::open(std::io::BufReader::with_capacity(1 << 20, opened)).map_err(&bad)?;
    let mut summary = ImportSummary {
        format: reader.format_name().into(),
        ..ImportSummary::default()
    };
    let mut first_ns: Option<i128> = None;
    let mut last_offset = 0u64;
    loop {
        if summary.packets.is_multiple_of(1 << 14) {
            progress(reader.position());
        }
        let Some(packet) = reader.next_packet().map_err(&bad)? else {
            break;
        };
        summary.packets += 1;
        let number = packet.number;
        let Some(link_name) = link::name(packet.link_type) else {
            return Err(bad(format!(
                "packet {number}: link type {} is not one an import reads (Ethernet 1, raw IP \
                 101/228/229, Linux cooked 113 and 276, BSD loopback 0)",
                packet.link_type
            )));
        };
        if !summary.link_types.iter().any(|l| l == link_name) {
            summary.link_types.push(link_name.into());
        }
        let Some(datagram) = link::datagram(packet.link_type, packet.data) else {
            summary.not_udp += 1;
            continue;
        };
        if !filter.matches(datagram.src, datagram.dst) {
            summary.filtered_out += 1;
            continue;
        }
        let first = *first_ns.get_or_insert(packet.time_ns);
        let since_first = packet.time_ns - first;
        let offset_ns = if since_first < i128::from(last_offset) {
            summary.out_of_order += 1;
            last_offset
        } else if since_first > i128::from(MAX_OFFSET_NS) {
            return Err(bad(format!(
                "packet {number}: {since_first} ns after the first kept packet, past the \
                 plan format's 2^62 ns (a damaged timestamp?)"
            )));
        } else {
            since_first as u64
        };
        summary.truncated += u64::from(datagram.truncated());
        let flow = sink
            .flow(FlowKey {
                src: Some(datagram.src),
                dest: Some(datagram.dst),
            })
            .map_err(|e| match e {
                SinkError::TooManyFlows => {
                    bad(format!("packet {number}: {e}; keep fewer with --filter"))
                }
                other => ImportError::Sink(other),
            })?;
        let data = TrafficData {
            size: datagram.size,
            digest: digest(datagram.captured),
        };
        sink.push(offset_ns, flow, data)?;
        last_offset = offset_ns;
        summary.kept += 1;
    }
    progress(reader.position());
    summary.resolution = reader.resolution().name();
    summary.flows = sink.flows();
    if summary.kept == 0 {
        return Err(bad(format!(
            "no UDP datagrams: {} packets, {} not UDP, {} filtered out",
            summary.packets, summary.not_udp, summary.filtered_out
        )));
    }
    Ok(summary)
}
