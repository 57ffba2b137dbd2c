//! A traffic plan as a pcap: one Ethernet II / IPv4 or IPv6 / UDP frame
//! per event, timestamped exactly at its offset from the epoch (so the
//! file is the same whenever it is written), checksums right (tcpreplay
//! and the kernel drop frames whose checksums are wrong), each payload
//! stamped and zero padded to the event's size. The pcap header and
//! records are a few lines, written here; etherparse builds the frames.

use super::super::format::{Stamp, TrafficData};
use super::super::sink::SinkError;
use super::import::ImportError;
use crate::plan::LoadedPlan;
use etherparse::PacketBuilder;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

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

const PCAP_MICROS: u32 = 0xa1b2_c3d4;
const PCAP_NANOS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
/// The snap length written: any Ethernet frame of a 64 KiB datagram.
const SNAP_LEN: u32 = 65_535 + 14 + 40 + 8;

/// Writes `plan` as a pcap (microsecond timestamps when every offset is a
/// whole µs, else nanosecond), one frame per event at `start + offset`,
/// each payload stamped ([`super::super::format::Stamp`], stream `stream`,
/// sequence = event index, planned = offset) and zero padded to its size.
pub fn export(
    plan: &Path,
    addressing: &ExportAddressing,
    stream: u32,
    output: &Path,
) -> Result<u64, ImportError> {
    let name = plan.display().to_string();
    let bad = |message: String| ImportError::Bad {
        file: name.clone(),
        message,
    };
    let loaded = crate::plan::load(plan).map_err(|e| {
        // A plan's errors start with its name already.
        let text = e.to_string();
        bad(text
            .strip_prefix(&format!("{name}: "))
            .unwrap_or(&text)
            .to_string())
    })?;
    let flows = flow_addresses(&loaded, addressing).map_err(&bad)?;
    let events = loaded.events.as_ref();
    let count = events.len();
    for index in 0..count {
        let event = events.event(index);
        TrafficData::decode(&event.data).map_err(|e| bad(format!("event {index}: {e}")))?;
        if usize::from(event.module) >= flows.len() {
            return Err(bad(format!(
                "event {index}: module {} is not declared",
                event.module
            )));
        }
        if event.offset_ns / 1_000_000_000 > u64::from(u32::MAX) {
            return Err(bad(format!(
                "event {index}: offset {} ns is past what a pcap's 32-bit seconds hold",
                event.offset_ns
            )));
        }
    }
    let micros = (0..count).all(|i| events.event(i).offset_ns.is_multiple_of(1000));
    let mut frame = Vec::with_capacity(usize::from(u16::MAX) + 128);
    let mut payload = Vec::with_capacity(usize::from(u16::MAX));
    rtlab_core::fsutil::write_atomic(output, |out| {
        let mut out = io::BufWriter::with_capacity(1 << 20, out);
        write_header(&mut out, micros)?;
        for index in 0..count {
            let event = events.event(index);
            let data = TrafficData::decode(&event.data).expect("checked above");
            let (src, dst) = flows[usize::from(event.module)];
            payload.clear();
            payload.resize(usize::from(data.size), 0);
            let stamp = Stamp {
                stream,
                sequence: index,
                planned_ns: event.offset_ns,
            };
            stamp.write(&mut payload);
            frame.clear();
            build_frame(addressing, src, dst, &payload, &mut frame)?;
            write_record(&mut out, event.offset_ns, micros, &frame)?;
        }
        out.flush()
    })
    .map_err(|source| {
        ImportError::Sink(SinkError::Write {
            path: output.to_path_buf(),
            source,
        })
    })?;
    Ok(count)
}

/// Each flow's (source, destination): `--to` or the flow's `dest=`, and
/// `--from` with the port moved up by the flow's index.
fn flow_addresses(
    plan: &LoadedPlan,
    addressing: &ExportAddressing,
) -> Result<Vec<(SocketAddr, SocketAddr)>, String> {
    let mut flows = Vec::with_capacity(plan.header.modules.len());
    for (index, module) in plan.header.modules.iter().enumerate() {
        let dest = match addressing.to {
            Some(to) => to,
            None => {
                let text = module.setting("dest").ok_or_else(|| {
                    format!("flow {} has no dest=: give --to ADDR:PORT", module.name)
                })?;
                text.parse()
                    .map_err(|_| format!("flow {}: dest={text} is not an ADDR:PORT", module.name))?
            }
        };
        let port = u16::try_from(usize::from(addressing.from.port()) + index).map_err(|_| {
            format!(
                "--from port {} + {} flows runs past port 65535",
                addressing.from.port(),
                plan.header.modules.len()
            )
        })?;
        let src = SocketAddr::new(addressing.from.ip(), port);
        if src.is_ipv4() != dest.is_ipv4() {
            return Err(format!(
                "flow {}: --from {} and the destination {dest} are not of one IP version",
                module.name, addressing.from
            ));
        }
        flows.push((src, dest));
    }
    Ok(flows)
}

fn build_frame(
    addressing: &ExportAddressing,
    src: SocketAddr,
    dst: SocketAddr,
    payload: &[u8],
    frame: &mut Vec<u8>,
) -> io::Result<()> {
    let link = PacketBuilder::ethernet2(addressing.src_mac, addressing.dst_mac);
    let built = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => link
            .ipv4(s.octets(), d.octets(), 64)
            .udp(src.port(), dst.port())
            .write(frame, payload),
        (IpAddr::V6(s), IpAddr::V6(d)) => link
            .ipv6(s.octets(), d.octets(), 64)
            .udp(src.port(), dst.port())
            .write(frame, payload),
        _ => unreachable!("flow_addresses checks the versions match"),
    };
    built.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

fn write_header(out: &mut impl Write, micros: bool) -> io::Result<()> {
    let magic = if micros { PCAP_MICROS } else { PCAP_NANOS };
    out.write_all(&magic.to_le_bytes())?;
    out.write_all(&2u16.to_le_bytes())?;
    out.write_all(&4u16.to_le_bytes())?;
    out.write_all(&[0; 8])?; // time zone, significant figures
    out.write_all(&SNAP_LEN.to_le_bytes())?;
    out.write_all(&LINKTYPE_ETHERNET.to_le_bytes())
}

fn write_record(
    out: &mut impl Write,
    offset_ns: u64,
    micros: bool,
    frame: &[u8],
) -> io::Result<()> {
    let seconds = u32::try_from(offset_ns / 1_000_000_000).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("offset {offset_ns} ns is past what a pcap's 32-bit seconds hold (year 2106)"),
        )
    })?;
    let fraction = offset_ns % 1_000_000_000;
    let fraction = if micros { fraction / 1000 } else { fraction } as u32;
    let len = frame.len() as u32;
    out.write_all(&seconds.to_le_bytes())?;
    out.write_all(&fraction.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(frame)
}
