//! The wire formats the net probe and server speak.
//!
//! `exchange` is rtlab's own (docs/net-protocol.md): a message is K
//! request/acknowledge steps, each datagram (or TCP frame) starting with a
//! 32-byte big-endian header:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `RTLX` |
//! | 4 | 1 | version, 1 |
//! | 5 | 1 | kind: 1 request, 2 acknowledge |
//! | 6 | 1 | step, 0-based |
//! | 7 | 1 | steps K, 1-32 |
//! | 8 | 8 | message id |
//! | 16 | 8 | the client's send time, ns (opaque to the server) |
//! | 24 | 4 | length of the whole datagram or frame, bytes |
//! | 28 | 1 | flags: bit 0, a 16-byte HMAC-SHA256 tag ends the datagram |
//! | 29 | 3 | zero |
//!
//! `echo` returns every byte as received (RFC 862); rtlab's client sends
//! exchange requests and reads them back. `sockperf` is sockperf's 14-byte
//! header (sequence u64, flags u16, length u32, network order), so that
//! sockperf's client and server interwork with rtlab's.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

pub const MAGIC: [u8; 4] = *b"RTLX";
pub const VERSION: u8 = 1;
pub const EXCHANGE_HEADER: usize = 32;
pub const SOCKPERF_HEADER: usize = 14;
/// Most steps a message may have.
pub const MAX_STEPS: u32 = 32;
/// The largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;

const FLAG_TAGGED: u8 = 1;
const SOCKPERF_CLIENT: u16 = 1;
const SOCKPERF_PONG_REQUEST: u16 = 2;

/// Which wire format a server answers and a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Exchange,
    Echo,
    Sockperf,
}

impl Mode {
    /// Smallest request of this mode, bytes.
    pub fn min_size(self, tagged: bool) -> usize {
        match self {
            Mode::Exchange | Mode::Echo => EXCHANGE_HEADER + if tagged { TAG_LEN } else { 0 },
            Mode::Sockperf => SOCKPERF_HEADER,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Mode::Exchange => "exchange",
            Mode::Echo => "echo",
            Mode::Sockperf => "sockperf",
        })
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "exchange" => Ok(Mode::Exchange),
            "echo" => Ok(Mode::Echo),
            "sockperf" => Ok(Mode::Sockperf),
            _ => Err(format!(
                "unknown mode '{s}' (expected exchange, echo or sockperf)"
            )),
        }
    }
}

/// UDP datagrams or a TCP stream of frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        })
    }
}

/// Why a datagram or frame is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Not the mode's header (magic, version, kind, step, reserved bits).
    Malformed,
    /// Shorter than its header announces.
    Truncated,
    /// Larger than the receiver accepts.
    Oversized,
    /// Tag missing or wrong.
    BadAuth,
}

/// Length of an HMAC tag on the wire: SHA-256 truncated to 128 bits.
pub const TAG_LEN: usize = 16;

/// The kind of an exchange datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request = 1,
    Ack = 2,
}

/// An exchange header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub kind: Kind,
    pub step: u8,
    pub steps: u8,
    pub id: u64,
    pub sent_ns: u64,
    /// Length of the whole datagram or frame.
    pub len: u32,
    pub tagged: bool,
}

impl Exchange {
    /// Writes the header into the first 32 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4] = VERSION;
        buf[5] = self.kind as u8;
        buf[6] = self.step;
        buf[7] = self.steps;
        buf[8..16].copy_from_slice(&self.id.to_be_bytes());
        buf[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        buf[24..28].copy_from_slice(&self.len.to_be_bytes());
        buf[28] = if self.tagged { FLAG_TAGGED } else { 0 };
        buf[29..32].fill(0);
    }

    /// Reads and checks the header of a whole datagram or frame.
    pub fn read(buf: &[u8]) -> Result<Exchange, Reject> {
        if buf.len() < EXCHANGE_HEADER {
            return Err(if buf.len() >= 4 && buf[0..4] == MAGIC {
                Reject::Truncated
            } else {
                Reject::Malformed
            });
        }
        if buf[0..4] != MAGIC || buf[4] != VERSION || buf[29..32] != [0, 0, 0] {
            return Err(Reject::Malformed);
        }
        let kind = match buf[5] {
            1 => Kind::Request,
            2 => Kind::Ack,
            _ => return Err(Reject::Malformed),
        };
        let (step, steps) = (buf[6], buf[7]);
        if steps == 0
            || u32::from(steps) > MAX_STEPS
            || step >= steps
            || buf[28] & !FLAG_TAGGED != 0
        {
            return Err(Reject::Malformed);
        }
        let len = u32::from_be_bytes(buf[24..28].try_into().expect("4 bytes"));
        let tagged = buf[28] & FLAG_TAGGED != 0;
        let min = EXCHANGE_HEADER + if tagged { TAG_LEN } else { 0 };
        if (len as usize) < min {
            return Err(Reject::Malformed);
        }
        if buf.len() < len as usize {
            return Err(Reject::Truncated);
        }
        if buf.len() > len as usize {
            return Err(Reject::Malformed);
        }
        Ok(Exchange {
            kind,
            step,
            steps,
            id: u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes")),
            sent_ns: u64::from_be_bytes(buf[16..24].try_into().expect("8 bytes")),
            len,
            tagged,
        })
    }

    /// Rewrites the kind of a datagram in place (a request into its
    /// acknowledge), leaving every other byte as it was.
    pub fn set_kind(buf: &mut [u8], kind: Kind) {
        buf[5] = kind as u8;
    }
}

/// A sockperf header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockperf {
    pub sequence: u64,
    pub flags: u16,
    pub len: u32,
}

impl Sockperf {
    /// A client's ping that asks for a pong.
    pub fn ping(sequence: u64, len: u32) -> Sockperf {
        Sockperf {
            sequence,
            flags: SOCKPERF_CLIENT | SOCKPERF_PONG_REQUEST,
            len,
        }
    }

    pub fn write(&self, buf: &mut [u8]) {
        buf[0..8].copy_from_slice(&self.sequence.to_be_bytes());
        buf[8..10].copy_from_slice(&self.flags.to_be_bytes());
        buf[10..14].copy_from_slice(&self.len.to_be_bytes());
    }

    pub fn read(buf: &[u8]) -> Result<Sockperf, Reject> {
        if buf.len() < SOCKPERF_HEADER {
            return Err(Reject::Malformed);
        }
        let header = Sockperf {
            sequence: u64::from_be_bytes(buf[0..8].try_into().expect("8 bytes")),
            flags: u16::from_be_bytes(buf[8..10].try_into().expect("2 bytes")),
            len: u32::from_be_bytes(buf[10..14].try_into().expect("4 bytes")),
        };
        // sockperf uses the three low flag bits (client, pong request, warm-up).
        if header.flags & !0x7 != 0 || (header.len as usize) < SOCKPERF_HEADER {
            return Err(Reject::Malformed);
        }
        if buf.len() < header.len as usize {
            return Err(Reject::Truncated);
        }
        if buf.len() > header.len as usize {
            return Err(Reject::Malformed);
        }
        Ok(header)
    }

    pub fn from_client(&self) -> bool {
        self.flags & SOCKPERF_CLIENT != 0
    }

    pub fn wants_pong(&self) -> bool {
        self.flags & SOCKPERF_PONG_REQUEST != 0
    }

    /// Turns a client's ping into the server's pong in place: the client
    /// bit cleared, every other byte kept (what sockperf's server does).
    pub fn make_pong(buf: &mut [u8]) {
        let flags = u16::from_be_bytes([buf[8], buf[9]]) & !SOCKPERF_CLIENT;
        buf[8..10].copy_from_slice(&flags.to_be_bytes());
    }
}

/// Length of the frame at the start of a TCP stream buffer, once enough of
/// its header is there: None until then.
pub fn frame_len(mode: Mode, buf: &[u8]) -> Option<Result<usize, Reject>> {
    match mode {
        Mode::Exchange | Mode::Echo => {
            if buf.len() < EXCHANGE_HEADER {
                return (buf.len() >= 4 && buf[0..4] != MAGIC).then_some(Err(Reject::Malformed));
            }
            if buf[0..4] != MAGIC {
                return Some(Err(Reject::Malformed));
            }
            let len = u32::from_be_bytes(buf[24..28].try_into().expect("4 bytes")) as usize;
            Some(if len < EXCHANGE_HEADER {
                Err(Reject::Malformed)
            } else {
                Ok(len)
            })
        }
        Mode::Sockperf => {
            if buf.len() < SOCKPERF_HEADER {
                return None;
            }
            let len = u32::from_be_bytes(buf[10..14].try_into().expect("4 bytes")) as usize;
            Some(if len < SOCKPERF_HEADER {
                Err(Reject::Malformed)
            } else {
                Ok(len)
            })
        }
    }
}

/// The sockperf sequence number that carries an exchange's message id and
/// step, so that K steps per message work against sockperf's server too.
pub fn sockperf_sequence(id: u64, step: u8) -> u64 {
    (id << 8) | u64::from(step)
}

pub fn split_sockperf_sequence(sequence: u64) -> (u64, u8) {
    (sequence >> 8, (sequence & 0xff) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(len: u32) -> Vec<u8> {
        let mut buf = vec![0xa5; len as usize];
        Exchange {
            kind: Kind::Request,
            step: 2,
            steps: 4,
            id: 77,
            sent_ns: 123_456,
            len,
            tagged: false,
        }
        .write(&mut buf);
        buf
    }

    #[test]
    fn an_exchange_header_round_trips() {
        let buf = request(64);
        let header = Exchange::read(&buf).unwrap();
        assert_eq!(
            (header.kind, header.step, header.steps),
            (Kind::Request, 2, 4)
        );
        assert_eq!((header.id, header.sent_ns, header.len), (77, 123_456, 64));
        assert!(!header.tagged);
    }

    #[test]
    fn every_prefix_of_an_exchange_is_refused_never_a_panic() {
        let buf = request(64);
        for cut in 0..buf.len() {
            let got = Exchange::read(&buf[..cut]);
            let expected = if cut >= 4 {
                Reject::Truncated
            } else {
                Reject::Malformed
            };
            assert_eq!(got, Err(expected), "prefix of {cut} bytes");
        }
    }

    #[test]
    fn bad_exchange_headers_are_malformed() {
        let good = request(64);
        let mut cases: Vec<(usize, u8)> = vec![
            (0, b'X'),
            (4, 2),
            (5, 3),
            (6, 4),
            (7, 0),
            (7, 33),
            (28, 2),
            (30, 1),
        ];
        cases.push((27, 16)); // length below the header
        for (offset, value) in cases {
            let mut buf = good.clone();
            buf[offset] = value;
            assert_eq!(
                Exchange::read(&buf),
                Err(Reject::Malformed),
                "byte {offset} = {value}"
            );
        }
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(Exchange::read(&longer), Err(Reject::Malformed));
    }

    #[test]
    fn a_sockperf_ping_becomes_its_pong() {
        let mut buf = vec![7u8; 64];
        Sockperf::ping(sockperf_sequence(5, 3), 64).write(&mut buf);
        let ping = Sockperf::read(&buf).unwrap();
        assert!(ping.from_client() && ping.wants_pong());
        Sockperf::make_pong(&mut buf);
        let pong = Sockperf::read(&buf).unwrap();
        assert!(!pong.from_client() && pong.wants_pong());
        assert_eq!(split_sockperf_sequence(pong.sequence), (5, 3));
        // The bytes sockperf 3.7 put on the wire for its first ping of 64 bytes.
        let wire = [0, 0, 0, 0, 0, 0, 0, 1, 0, 3, 0, 0, 0, 0x40];
        let mut seen = wire.to_vec();
        seen.resize(64, 0);
        let header = Sockperf::read(&seen).unwrap();
        assert_eq!((header.sequence, header.flags, header.len), (1, 3, 64));
    }

    #[test]
    fn frames_are_found_in_a_stream() {
        let buf = request(40);
        assert_eq!(frame_len(Mode::Exchange, &buf[..10]), None);
        assert_eq!(frame_len(Mode::Exchange, &buf), Some(Ok(40)));
        assert_eq!(
            frame_len(Mode::Exchange, b"GET / HTTP/1.1"),
            Some(Err(Reject::Malformed))
        );
        let mut ping = vec![0u8; 20];
        Sockperf::ping(1, 20).write(&mut ping);
        assert_eq!(frame_len(Mode::Sockperf, &ping), Some(Ok(20)));
        assert_eq!(frame_len(Mode::Sockperf, &ping[..13]), None);
    }
}
