//! The traffic event's data and the replay's stamp.
//!
//! A traffic plan's modules are of kind `traffic`, one per flow (settings
//! `dest=ADDR:PORT`, where it is sent unless `replay --to` says otherwise,
//! and `src=ADDR:PORT`, where a recorded or imported flow came from). Each
//! event is one datagram; its 12 data bytes are:
//!
//! | bytes | field |
//! |---|---|
//! | 0-1 | UDP payload size, u16 little-endian, 0-65507 |
//! | 2-3 | reserved, 0 |
//! | 4-11 | FNV-1a 64 digest of the recorded payload, u64 little-endian; 0 = none |
//!
//! ARTS "only records and reproduces the load, and not the data content"
//! (paper 002, §1); the digest says whether two captures carried the same
//! bytes without keeping them. A replay sends the planned size: the stamp
//! below, then zeros.
//!
//! The stamp (24 bytes, at the start of every datagram of at least 24
//! bytes unless the replay is told `--no-stamp`):
//!
//! | bytes | field |
//! |---|---|
//! | 0-3 | magic `RTS1` |
//! | 4-7 | stream id, u32 little-endian (random per replay) |
//! | 8-15 | sequence, u64 little-endian: the packet's index in the replay, over all repetitions |
//! | 16-23 | planned instant, u64 little-endian ns from the replay's start (after `--speed`) |

use crate::plan::model::{Event, DATA_BYTES};

/// The module kind of a flow.
pub const KIND: &str = "traffic";
/// The largest UDP payload over IPv4.
pub const MAX_PAYLOAD: usize = 65_507;
/// Bytes of the replay's stamp.
pub const STAMP_BYTES: usize = 24;
/// The stamp's first four bytes (and its version).
pub const STAMP_MAGIC: [u8; 4] = *b"RTS1";

/// What one traffic event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrafficData {
    /// UDP payload bytes, at most [`MAX_PAYLOAD`].
    pub size: u16,
    /// FNV-1a 64 of the recorded payload; 0 when none was recorded.
    pub digest: u64,
}

impl TrafficData {
    pub fn encode(&self) -> [u8; DATA_BYTES] {
        let mut data = [0u8; DATA_BYTES];
        data[0..2].copy_from_slice(&self.size.to_le_bytes());
        data[4..12].copy_from_slice(&self.digest.to_le_bytes());
        data
    }

    /// The data of a traffic event; an error names what is wrong (a size
    /// past [`MAX_PAYLOAD`], reserved bytes not zero).
    pub fn decode(data: &[u8; DATA_BYTES]) -> Result<TrafficData, String> {
        let size = u16::from_le_bytes([data[0], data[1]]);
        if usize::from(size) > MAX_PAYLOAD {
            return Err(format!(
                "traffic event: size {size} bytes, at most {MAX_PAYLOAD}"
            ));
        }
        if data[2] != 0 || data[3] != 0 {
            return Err("traffic event: reserved bytes 2-3 are not zero".into());
        }
        let mut digest = [0u8; 8];
        digest.copy_from_slice(&data[4..12]);
        Ok(TrafficData {
            size,
            digest: u64::from_le_bytes(digest),
        })
    }

    /// The event sending this datagram `offset_ns` into the plan on flow `module`.
    pub fn event(&self, offset_ns: u64, module: u16) -> Event {
        Event {
            offset_ns,
            module,
            flags: 0,
            data: self.encode(),
        }
    }
}

/// The stamp at the start of a replayed datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub stream: u32,
    pub sequence: u64,
    /// ns from the replay's start.
    pub planned_ns: u64,
}

impl Stamp {
    /// Writes the stamp into `payload`'s first [`STAMP_BYTES`]; false
    /// (nothing written) when the payload is shorter.
    pub fn write(&self, payload: &mut [u8]) -> bool {
        let Some(head) = payload.get_mut(..STAMP_BYTES) else {
            return false;
        };
        head[0..4].copy_from_slice(&STAMP_MAGIC);
        head[4..8].copy_from_slice(&self.stream.to_le_bytes());
        head[8..16].copy_from_slice(&self.sequence.to_le_bytes());
        head[16..24].copy_from_slice(&self.planned_ns.to_le_bytes());
        true
    }

    /// The stamp of a received datagram, if it starts with one.
    pub fn read(payload: &[u8]) -> Option<Stamp> {
        let head = payload.get(..STAMP_BYTES)?;
        if head[0..4] != STAMP_MAGIC {
            return None;
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[at..at + 8]);
            u64::from_le_bytes(b)
        };
        Some(Stamp {
            stream: u32::from_le_bytes([head[4], head[5], head[6], head[7]]),
            sequence: u64_at(8),
            planned_ns: u64_at(16),
        })
    }
}

/// FNV-1a, 64 bits: a payload's digest (not a security hash: it tells
/// captures apart, it does not authenticate them). Never 0, which means
/// "no digest".
pub fn digest(payload: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in payload {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_round_trips_and_bad_data_is_named() {
        let d = TrafficData {
            size: 1400,
            digest: 0x0123_4567_89ab_cdef,
        };
        assert_eq!(TrafficData::decode(&d.encode()), Ok(d));
        let mut big = d.encode();
        big[0..2].copy_from_slice(&65_535u16.to_le_bytes());
        assert!(TrafficData::decode(&big).unwrap_err().contains("65535"));
        let mut reserved = d.encode();
        reserved[3] = 1;
        assert!(TrafficData::decode(&reserved)
            .unwrap_err()
            .contains("reserved"));
    }

    #[test]
    fn stamps_round_trip_and_short_or_foreign_payloads_have_none() {
        let s = Stamp {
            stream: 7,
            sequence: 1 << 40,
            planned_ns: 123_456_789,
        };
        let mut payload = [0u8; 64];
        assert!(s.write(&mut payload));
        assert_eq!(Stamp::read(&payload), Some(s));
        assert_eq!(Stamp::read(&payload[..23]), None);
        assert!(!s.write(&mut [0u8; 23]));
        payload[0] = b'X';
        assert_eq!(Stamp::read(&payload), None);
    }

    #[test]
    fn the_digest_is_fnv1a_and_never_zero() {
        // The FNV-1a 64 test vector for "a".
        assert_eq!(digest(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(digest(b""), 0);
    }
}
