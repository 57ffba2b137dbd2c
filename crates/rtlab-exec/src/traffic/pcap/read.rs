//! The capture reader: pcap (microsecond and nanosecond magics, either
//! byte order) and pcapng (sections of either byte order, interfaces with
//! their own link types, `if_tsresol` and `if_tsoffset`), one packet at a
//! time from any `Read`.
//!
//! Written here rather than taken from a crate: an import must say where a
//! bad file stops making sense (packet number and byte offset), refuse
//! absurd lengths without allocating them, and turn every resolution
//! (10^-k and 2^-k s) into exact integer nanoseconds; the format is small.
//! A record's bytes are read as they arrive (`Read::take`), so a length
//! field that lies costs what the file holds, not what it claims.

use crate::traffic::sink::read_full;
use std::io::{self, Read};

/// Blocks and records longer than this are refused unread.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;
/// Interfaces a pcapng section may declare: each costs memory while the
/// section lasts, and a file of nothing but 20-byte interface blocks
/// grew it past the file's own size.
pub const MAX_INTERFACES: usize = 1 << 16;

const PCAP_MICROS: u32 = 0xa1b2_c3d4;
const PCAP_NANOS: u32 = 0xa1b2_3c4d;
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const PCAPNG_BYTE_ORDER: u32 = 0x1a2b_3c4d;
const IDB: u32 = 1;
const OBSOLETE_PACKET: u32 = 2;
const SIMPLE_PACKET: u32 = 3;
const ENHANCED_PACKET: u32 = 6;
const OPT_TSRESOL: u16 = 9;
const OPT_TSOFFSET: u16 = 14;

/// A packet as captured.
#[derive(Debug)]
pub struct Packet<'a> {
    /// 1-based, over the whole file.
    pub number: u64,
    /// Nanoseconds since the epoch (pcapng's `if_tsoffset` applied; may be
    /// negative for a capture that says so).
    pub time_ns: i128,
    /// The interface's link type (LINKTYPE_*).
    pub link_type: u32,
    /// The bytes captured.
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub original_len: u32,
}

/// Timestamp units: 10^-k or 2^-k seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Decimal(u32),
    Binary(u32),
}

impl Resolution {
    /// `us`, `ns`, or what else it is (`10^-3 s`, `2^-20 s`).
    pub fn name(self) -> String {
        match self {
            Resolution::Decimal(6) => "us".into(),
            Resolution::Decimal(9) => "ns".into(),
            Resolution::Decimal(k) => format!("10^-{k} s"),
            Resolution::Binary(k) => format!("2^-{k} s"),
        }
    }

    /// `ticks` of this unit in ns, rounded to the nearest (exact for 10^-k,
    /// k ≤ 9).
    fn to_ns(self, ticks: u64) -> i128 {
        let scaled = u128::from(ticks) * 1_000_000_000;
        let ns = match self {
            Resolution::Decimal(k) if k <= 9 => scaled / 10u128.pow(k),
            Resolution::Decimal(k) => {
                let unit = 10u128.pow(k);
                (scaled + unit / 2) / unit
            }
            Resolution::Binary(0) => scaled,
            Resolution::Binary(k) => (scaled + (1u128 << (k - 1))) >> k,
        };
        ns as i128
    }
}

/// Which of the two formats, and its state.
enum Format {
    Pcap {
        swapped: bool,
        resolution: Resolution,
        link_type: u32,
    },
    Pcapng {
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: u32,
    resolution: Resolution,
    offset_s: i64,
}

/// Reads one capture, packet by packet.
pub struct CaptureReader<R> {
    input: R,
    format: Format,
    /// Bytes consumed so far.
    position: u64,
    packets: u64,
    record: Vec<u8>,
}

impl<R: Read> CaptureReader<R> {
    /// Reads the file header (pcap) or the first section header (pcapng).
    pub fn open(mut input: R) -> Result<CaptureReader<R>, String> {
        let mut first = [0u8; 4];
        let got = read_full(&mut input, &mut first).map_err(|e| format!("cannot read: {e}"))?;
        let magic_le = u32::from_le_bytes(first);
        let magic_be = u32::from_be_bytes(first);
        let mut reader = CaptureReader {
            input,
            format: Format::Pcapng {
                big_endian: false,
                interfaces: Vec::new(),
            },
            position: got as u64,
            packets: 0,
            record: Vec::new(),
        };
        if got == 4 && magic_le == PCAPNG_SHB {
            reader.section_header()?;
        } else if got == 4
            && [PCAP_MICROS, PCAP_NANOS]
                .iter()
                .any(|m| *m == magic_le || *m == magic_be)
        {
            reader.pcap_header(magic_le, magic_be)?;
        } else {
            let bytes: Vec<String> = first[..got].iter().map(|b| format!("{b:02x}")).collect();
            return Err(format!(
                "not a pcap or pcapng capture (first bytes {})",
                if got == 0 {
                    "none: the file is empty".into()
                } else {
                    bytes.join(" ")
                }
            ));
        }
        Ok(reader)
    }

    /// `pcap` or `pcapng`.
    pub fn format_name(&self) -> &'static str {
        match self.format {
            Format::Pcap { .. } => "pcap",
            Format::Pcapng { .. } => "pcapng",
        }
    }

    /// The timestamp resolution of the file (pcap) or of its first
    /// interface (pcapng; `us` when none is declared yet).
    pub fn resolution(&self) -> Resolution {
        match &self.format {
            Format::Pcap { resolution, .. } => *resolution,
            Format::Pcapng { interfaces, .. } => interfaces
                .first()
                .map_or(Resolution::Decimal(6), |i| i.resolution),
        }
    }

    /// Bytes read so far.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The next packet, `None` at the end of the file.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, String> {
        match self.format {
            Format::Pcap { .. } => self.next_pcap(),
            Format::Pcapng { .. } => self.next_pcapng(),
        }
    }

    fn pcap_header(&mut self, magic_le: u32, magic_be: u32) -> Result<(), String> {
        let mut rest = [0u8; 20];
        self.read_exact_at(&mut rest, || {
            "the file ends inside the pcap file header (24 bytes)".into()
        })?;
        let swapped = magic_le != PCAP_MICROS && magic_le != PCAP_NANOS;
        let magic = if swapped { magic_be } else { magic_le };
        let u32_at = |at: usize| {
            let b = [rest[at], rest[at + 1], rest[at + 2], rest[at + 3]];
            if swapped {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let snap_len = u32_at(12);
        if u64::from(snap_len) > MAX_RECORD_BYTES {
            return Err(format!(
                "byte 16: snap length {snap_len} bytes, past the {MAX_RECORD_BYTES} a capture may have"
            ));
        }
        // The upper bits of the link type field say whether frames carry an
        // FCS: not a different link.
        self.format = Format::Pcap {
            swapped,
            resolution: Resolution::Decimal(if magic == PCAP_NANOS { 9 } else { 6 }),
            link_type: u32_at(16) & 0x0fff_ffff,
        };
        Ok(())
    }

    fn next_pcap(&mut self) -> Result<Option<Packet<'_>>, String> {
        let Format::Pcap {
            swapped,
            resolution,
            link_type,
        } = self.format
        else {
            unreachable!("next_pcap on a pcapng");
        };
        let start = self.position;
        let number = self.packets + 1;
        let mut head = [0u8; 16];
        let got = read_full(&mut self.input, &mut head).map_err(|e| self.io_error(e))?;
        self.position += got as u64;
        if got == 0 {
            return Ok(None);
        }
        let cut = || {
            format!(
                "packet {number} at byte {start}: the file ends inside the packet record \
                 (a capture cut short?)"
            )
        };
        if got < head.len() {
            return Err(cut());
        }
        let u32_at = |at: usize| {
            let b = [head[at], head[at + 1], head[at + 2], head[at + 3]];
            if swapped {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (seconds, fraction, captured, original) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
        if u64::from(captured) > MAX_RECORD_BYTES {
            return Err(format!(
                "packet {number} at byte {start}: a record of {captured} bytes, past the \
                 {MAX_RECORD_BYTES} a capture may have (not a capture, or a damaged one)"
            ));
        }
        self.read_record(u64::from(captured), cut)?;
        self.packets = number;
        let time_ns = i128::from(seconds) * 1_000_000_000 + resolution.to_ns(u64::from(fraction));
        Ok(Some(Packet {
            number,
            time_ns,
            link_type,
            data: &self.record,
            original_len: original,
        }))
    }

    /// The rest of the section header block whose type opened the file.
    fn section_header(&mut self) -> Result<(), String> {
        let mut length = [0u8; 4];
        let start = self.position - 4;
        self.read_exact_at(&mut length, || {
            format!("byte {start}: the file ends inside a section header block")
        })?;
        self.section(length)
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, String> {
        loop {
            let start = self.position;
            let mut head = [0u8; 8];
            let got = read_full(&mut self.input, &mut head).map_err(|e| self.io_error(e))?;
            self.position += got as u64;
            if got == 0 {
                return Ok(None);
            }
            let after = self.packets;
            if got < head.len() {
                return Err(format!(
                    "block at byte {start} (after packet {after}): the file ends inside the \
                     block header (a capture cut short?)"
                ));
            }
            let Format::Pcapng { big_endian, .. } = self.format else {
                unreachable!("next_pcapng on a pcap");
            };
            let kind = u32_of([head[0], head[1], head[2], head[3]], big_endian);
            if kind == PCAPNG_SHB {
                self.section([head[4], head[5], head[6], head[7]])?;
                continue;
            }
            let total = u32_of([head[4], head[5], head[6], head[7]], big_endian);
            let body_len = block_body_len(total, start, 12)?;
            let keep = matches!(
                kind,
                IDB | ENHANCED_PACKET | OBSOLETE_PACKET | SIMPLE_PACKET
            );
            self.block_body((start, body_len, total), big_endian, keep)?;
            if !keep {
                continue;
            }
            if kind == IDB {
                let interface = parse_interface(&self.record, big_endian)
                    .map_err(|e| format!("interface block at byte {start}: {e}"))?;
                if let Format::Pcapng { interfaces, .. } = &mut self.format {
                    if interfaces.len() >= MAX_INTERFACES {
                        return Err(format!(
                            "interface block at byte {start}: more than {MAX_INTERFACES} \
                             interfaces in one section (not a capture, or a damaged one)"
                        ));
                    }
                    interfaces.push(interface);
                }
                continue;
            }
            let number = self.packets + 1;
            let (interface, time_ns, data, original_len) = self
                .pcapng_packet(kind, big_endian)
                .map_err(|e| format!("packet {number} at byte {start}: {e}"))?;
            self.packets = number;
            return Ok(Some(Packet {
                number,
                time_ns,
                link_type: interface.link_type,
                data: &self.record[data],
                original_len,
            }));
        }
    }

    /// A packet block's interface, time, data range and length on the wire.
    fn pcapng_packet(
        &self,
        kind: u32,
        big_endian: bool,
    ) -> Result<(Interface, i128, std::ops::Range<usize>, u32), String> {
        let body = &self.record;
        let u32_at = |at: usize| -> Result<u32, String> {
            body.get(at..at + 4)
                .map(|b| u32_of([b[0], b[1], b[2], b[3]], big_endian))
                .ok_or_else(|| {
                    format!(
                        "the block is too short for its fields ({} bytes)",
                        body.len()
                    )
                })
        };
        if kind == SIMPLE_PACKET {
            return Err(
                "a simple packet block has no timestamp; save the capture with \
                        enhanced packet blocks (editcap -F pcapng)"
                    .into(),
            );
        }
        let fields = 4;
        let first_field = u32_at(0)?;
        let interface_id = if kind == ENHANCED_PACKET {
            first_field
        } else {
            // Obsolete packet block: a 16-bit interface id, then a drop count.
            let b = [body[0], body[1]];
            u32::from(if big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            })
        };
        let (high, low) = (u32_at(fields)?, u32_at(fields + 4)?);
        let captured = u32_at(fields + 8)?;
        let original = u32_at(fields + 12)?;
        let data_start = fields + 16;
        let data_end = data_start as u64 + u64::from(captured);
        if data_end > body.len() as u64 {
            return Err(format!(
                "captured length {captured} runs past the block's end ({} bytes of data)",
                body.len() - data_start.min(body.len())
            ));
        }
        let Format::Pcapng { interfaces, .. } = &self.format else {
            unreachable!("pcapng_packet on a pcap");
        };
        let interface = *interfaces.get(interface_id as usize).ok_or_else(|| {
            format!(
                "interface {interface_id}, but the section declares {}",
                interfaces.len()
            )
        })?;
        let ticks = (u64::from(high) << 32) | u64::from(low);
        let time_ns =
            interface.resolution.to_ns(ticks) + i128::from(interface.offset_s) * 1_000_000_000;
        Ok((interface, time_ns, data_start..data_end as usize, original))
    }

    /// A section header whose type and length field (`length`, in a byte
    /// order its magic, read now, tells) were just read: the byte order
    /// and the interfaces start afresh.
    fn section(&mut self, length: [u8; 4]) -> Result<(), String> {
        let start = self.position - 8;
        let mut magic = [0u8; 4];
        self.read_exact_at(&mut magic, || {
            format!("byte {start}: the file ends inside a section header block")
        })?;
        let big_endian = match u32::from_le_bytes(magic) {
            PCAPNG_BYTE_ORDER => false,
            m if m.swap_bytes() == PCAPNG_BYTE_ORDER => true,
            m => {
                return Err(format!(
                    "byte {}: section header with byte-order magic {m:08x}, not 1a2b3c4d",
                    start + 8
                ))
            }
        };
        let total = u32_of(length, big_endian);
        self.format = Format::Pcapng {
            big_endian,
            interfaces: Vec::new(),
        };
        // The body after the byte-order magic: versions, section length, options.
        let body_len = block_body_len(total, start, 16)?;
        self.block_body((start, body_len - 4, total), big_endian, true)
    }

    /// Reads a block's `len` body bytes into `record` (skips them unless
    /// `keep`: statistics, name resolution, custom blocks), then its
    /// trailing length.
    fn block_body(
        &mut self,
        (start, len, total): (u64, u64, u32),
        big_endian: bool,
        keep: bool,
    ) -> Result<(), String> {
        let cut = cut_block(start, self.packets);
        if keep {
            self.read_record(len, cut)?;
        } else {
            let skipped = io::copy(&mut (&mut self.input).take(len), &mut io::sink())
                .map_err(|e| format!("cannot read: {e}"))?;
            self.position += skipped;
            if skipped < len {
                return Err(cut());
            }
        }
        self.trailer(start, total, big_endian, cut)
    }

    /// The block's trailing copy of its length, which must match.
    fn trailer(
        &mut self,
        start: u64,
        total: u32,
        big_endian: bool,
        cut: impl Fn() -> String,
    ) -> Result<(), String> {
        let mut tail = [0u8; 4];
        self.read_exact_at(&mut tail, cut)?;
        let trailing = u32_of(tail, big_endian);
        if trailing != total {
            return Err(format!(
                "block at byte {start}: its length is {total} at the start and {trailing} at \
                 the end (a damaged capture)"
            ));
        }
        Ok(())
    }

    /// Reads exactly `len` bytes into `record`, as they arrive.
    fn read_record(&mut self, len: u64, cut: impl Fn() -> String) -> Result<(), String> {
        self.record.clear();
        let got = (&mut self.input)
            .take(len)
            .read_to_end(&mut self.record)
            .map_err(|e| format!("cannot read: {e}"))?;
        self.position += got as u64;
        if (got as u64) < len {
            return Err(cut());
        }
        Ok(())
    }

    fn read_exact_at(&mut self, buf: &mut [u8], cut: impl Fn() -> String) -> Result<(), String> {
        let got = read_full(&mut self.input, buf).map_err(|e| format!("cannot read: {e}"))?;
        self.position += got as u64;
        if got < buf.len() {
            return Err(cut());
        }
        Ok(())
    }

    fn io_error(&self, e: io::Error) -> String {
        format!("byte {}: cannot read: {e}", self.position)
    }
}

/// The error of a block the file ends inside.
fn cut_block(start: u64, after: u64) -> impl Fn() -> String + Copy {
    move || {
        format!(
            "block at byte {start} (after packet {after}): the file ends inside the block \
             (a capture cut short?)"
        )
    }
}

fn u32_of(b: [u8; 4], big_endian: bool) -> u32 {
    if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

/// The body length of a block whose total length field says `total`
/// (`fixed` bytes of type, lengths and required fields around it).
fn block_body_len(total: u32, start: u64, fixed: u32) -> Result<u64, String> {
    if u64::from(total) > MAX_RECORD_BYTES {
        return Err(format!(
            "block at byte {start}: {total} bytes long, past the {MAX_RECORD_BYTES} a capture \
             may have (not a capture, or a damaged one)"
        ));
    }
    if total < fixed || !total.is_multiple_of(4) {
        return Err(format!(
            "block at byte {start}: a length of {total} bytes (at least {fixed}, a multiple of 4)"
        ));
    }
    Ok(u64::from(total) - 12)
}

/// An interface description block's body: link type and the options that
/// say how its timestamps read.
fn parse_interface(body: &[u8], big_endian: bool) -> Result<Interface, String> {
    if body.len() < 8 {
        return Err(format!("{} bytes, too short for its fields", body.len()));
    }
    let u16_at = |at: usize| {
        let b = [body[at], body[at + 1]];
        if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let mut interface = Interface {
        link_type: u32::from(u16_at(0)),
        resolution: Resolution::Decimal(6),
        offset_s: 0,
    };
    let mut at = 8;
    while at + 4 <= body.len() {
        let (code, len) = (u16_at(at), usize::from(u16_at(at + 2)));
        let value = body
            .get(at + 4..at + 4 + len)
            .ok_or_else(|| format!("option {code} of {len} bytes runs past the block"))?;
        match code {
            0 => break,
            OPT_TSRESOL if len == 1 => {
                let v = value[0];
                interface.resolution = if v & 0x80 == 0 {
                    if v > 30 {
                        return Err(format!("if_tsresol 10^-{v} s: at most 10^-30"));
                    }
                    Resolution::Decimal(u32::from(v))
                } else {
                    let k = v & 0x7f;
                    if k > 64 {
                        return Err(format!("if_tsresol 2^-{k} s: at most 2^-64"));
                    }
                    Resolution::Binary(u32::from(k))
                };
            }
            OPT_TSOFFSET if len == 8 => {
                let b: [u8; 8] = value.try_into().expect("8 bytes");
                interface.offset_s = if big_endian {
                    i64::from_be_bytes(b)
                } else {
                    i64::from_le_bytes(b)
                };
            }
            _ => {}
        }
        at += 4 + len.div_ceil(4) * 4;
    }
    Ok(interface)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_are_exact_nanoseconds() {
        assert_eq!(Resolution::Decimal(6).to_ns(1), 1_000);
        assert_eq!(Resolution::Decimal(9).to_ns(123), 123);
        assert_eq!(Resolution::Decimal(0).to_ns(2), 2_000_000_000);
        assert_eq!(Resolution::Decimal(12).to_ns(1_500), 2);
        assert_eq!(Resolution::Binary(1).to_ns(1), 500_000_000);
        assert_eq!(Resolution::Binary(30).to_ns(1 << 30), 1_000_000_000);
        assert_eq!(Resolution::Binary(64).to_ns(u64::MAX), 1_000_000_000);
        assert_eq!(Resolution::Decimal(30).to_ns(u64::MAX), 0);
    }

    #[test]
    fn garbage_and_empty_files_are_named_by_their_first_bytes() {
        let e = CaptureReader::open(&[0x12u8, 0x34, 0x56, 0x78, 9][..])
            .err()
            .unwrap();
        assert_eq!(e, "not a pcap or pcapng capture (first bytes 12 34 56 78)");
        let e = CaptureReader::open(&[][..]).err().unwrap();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn a_section_of_endless_interfaces_is_refused() {
        let mut file = Vec::new();
        let block = |file: &mut Vec<u8>, kind: u32, body: &[u8]| {
            let total = (12 + body.len()) as u32;
            file.extend_from_slice(&kind.to_le_bytes());
            file.extend_from_slice(&total.to_le_bytes());
            file.extend_from_slice(body);
            file.extend_from_slice(&total.to_le_bytes());
        };
        let mut shb = PCAPNG_BYTE_ORDER.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        block(&mut file, PCAPNG_SHB, &shb);
        for _ in 0..=MAX_INTERFACES {
            block(&mut file, IDB, &[1, 0, 0, 0, 0, 0, 4, 0]);
        }
        let mut r = CaptureReader::open(&file[..]).unwrap();
        let e = r.next_packet().err().unwrap();
        assert!(
            e.contains(&format!("more than {MAX_INTERFACES} interfaces")),
            "{e}"
        );
    }

    #[test]
    fn absurd_lengths_are_refused_unread() {
        let mut file = Vec::new();
        file.extend_from_slice(&PCAP_MICROS.to_le_bytes());
        file.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        file.extend_from_slice(&65_535u32.to_le_bytes());
        file.extend_from_slice(&1u32.to_le_bytes());
        file.extend_from_slice(&[0; 8]);
        file.extend_from_slice(&u32::MAX.to_le_bytes());
        file.extend_from_slice(&60u32.to_le_bytes());
        let mut r = CaptureReader::open(&file[..]).unwrap();
        let e = r.next_packet().err().unwrap();
        assert!(
            e.starts_with("packet 1 at byte 24: a record of 4294967295 bytes"),
            "{e}"
        );
    }
}
