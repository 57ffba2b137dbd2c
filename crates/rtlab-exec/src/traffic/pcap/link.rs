//! A captured frame's UDP datagram, whatever the link layer: Ethernet II
//! (VLAN tags), Linux cooked v1 and v2, raw IPv4/IPv6, BSD loopback.
//! etherparse slices the IP and VLAN layers; the two cooked headers and
//! the UDP header (whose length field, not the capture, gives the size)
//! are read here.

use super::super::format::MAX_PAYLOAD;
use etherparse::{
    ip_number, EtherType, Ipv6ExtensionSlice, LaxIpPayloadSlice, LaxNetSlice, LaxSlicedPacket,
};
use std::net::{IpAddr, SocketAddr};

pub const ETHERNET: u32 = 1;
pub const NULL: u32 = 0;
pub const RAW: u32 = 101;
pub const IPV4: u32 = 228;
pub const IPV6: u32 = 229;
pub const LINUX_SLL: u32 = 113;
pub const LINUX_SLL2: u32 = 276;

/// A link type's name in summaries, or None for one an import cannot read.
pub fn name(link_type: u32) -> Option<&'static str> {
    Some(match link_type {
        ETHERNET => "ethernet",
        NULL => "null",
        RAW | IPV4 | IPV6 => "raw",
        LINUX_SLL => "linux-sll",
        LINUX_SLL2 => "linux-sll2",
        _ => return None,
    })
}

/// A UDP datagram found in a frame.
#[derive(Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The payload's size by the UDP header, at most [`MAX_PAYLOAD`].
    pub size: u16,
    /// The payload bytes captured (fewer than `size` when cut short).
    pub captured: &'a [u8],
}

impl Datagram<'_> {
    /// The capture holds less than the datagram.
    pub fn truncated(&self) -> bool {
        self.captured.len() < usize::from(self.size)
    }
}

/// The UDP datagram in `frame`, None when it holds none (another
/// protocol, a fragment after the first, a malformed header). The link
/// type must be one [`name`] knows.
pub fn datagram(link_type: u32, frame: &[u8]) -> Option<Datagram<'_>> {
    let sliced = match link_type {
        ETHERNET => LaxSlicedPacket::from_ethernet(frame).ok()?,
        RAW | IPV4 | IPV6 => LaxSlicedPacket::from_ip(frame).ok()?,
        NULL => {
            // The address family, in the capturing host's byte order.
            let family = frame.get(..4)?;
            let family = u32::from_le_bytes(family.try_into().ok()?)
                .min(u32::from_be_bytes(family.try_into().ok()?));
            match family {
                2 | 24 | 28 | 30 => LaxSlicedPacket::from_ip(frame.get(4..)?).ok()?,
                _ => return None,
            }
        }
        // Linux cooked v1: the protocol is at bytes 14-15 of 16.
        LINUX_SLL => cooked(frame, 14, 16)?,
        // Linux cooked v2: the protocol is at bytes 0-1 of 20.
        LINUX_SLL2 => cooked(frame, 0, 20)?,
        _ => return None,
    };
    let (src_ip, dst_ip, payload) = match sliced.net? {
        LaxNetSlice::Ipv4(ip) => {
            let header = ip.header();
            if header.fragments_offset().value() != 0 {
                return None;
            }
            let payload = ip.payload().clone();
            (
                IpAddr::V4(header.source_addr()),
                IpAddr::V4(header.destination_addr()),
                payload,
            )
        }
        LaxNetSlice::Ipv6(ip) => {
            let later_fragment = ip.extensions().clone().into_iter().any(|ext| {
                matches!(ext, Ipv6ExtensionSlice::Fragment(f) if f.fragment_offset().value() != 0)
            });
            if later_fragment {
                return None;
            }
            let header = ip.header();
            let payload = ip.payload().clone();
            (
                IpAddr::V6(header.source_addr()),
                IpAddr::V6(header.destination_addr()),
                payload,
            )
        }
        LaxNetSlice::Arp(_) => return None,
    };
    udp(src_ip, dst_ip, &payload)
}

/// Slices a Linux cooked frame: the EtherType at `protocol_at`, the
/// network layer after `header_len` bytes.
fn cooked(frame: &[u8], protocol_at: usize, header_len: usize) -> Option<LaxSlicedPacket<'_>> {
    let protocol = frame.get(protocol_at..protocol_at + 2)?;
    let ether_type = EtherType(u16::from_be_bytes([protocol[0], protocol[1]]));
    Some(LaxSlicedPacket::from_ether_type(
        ether_type,
        frame.get(header_len..)?,
    ))
}

/// The UDP header and payload of an IP payload.
fn udp<'a>(src: IpAddr, dst: IpAddr, ip: &LaxIpPayloadSlice<'a>) -> Option<Datagram<'a>> {
    if ip.ip_number != ip_number::UDP {
        return None;
    }
    let bytes = ip.payload;
    let header = bytes.get(..8)?;
    let port = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let length = usize::from(port(4));
    // A length below the header's own (0 is an IPv6 jumbogram) is no datagram.
    if length < 8 {
        return None;
    }
    let size = (length - 8).min(MAX_PAYLOAD);
    let captured = &bytes[8..bytes.len().min(8 + size)];
    Some(Datagram {
        src: SocketAddr::new(src, port(0)),
        dst: SocketAddr::new(dst, port(2)),
        size: size as u16,
        captured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let builder = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(5000, 7000);
        let mut out = Vec::new();
        builder.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn vlan_tagged_udp_is_found_and_cut_frames_keep_their_size() {
        let f = frame(&[1, 2, 3, 4, 5]);
        let d = datagram(ETHERNET, &f).unwrap();
        assert_eq!(d.src, "10.0.0.1:5000".parse().unwrap());
        assert_eq!(d.dst, "10.0.0.2:7000".parse().unwrap());
        assert_eq!((d.size, d.captured), (5, &[1u8, 2, 3, 4, 5][..]));
        assert!(!d.truncated());
        let cut = datagram(ETHERNET, &f[..f.len() - 2]).unwrap();
        assert_eq!((cut.size, cut.captured.len()), (5, 3));
        assert!(cut.truncated());
        // Ethernet padding after a short datagram is not payload.
        let mut padded = frame(&[9]);
        padded.extend_from_slice(&[0; 20]);
        assert_eq!(datagram(ETHERNET, &padded).unwrap().captured, &[9]);
    }

    #[test]
    fn cooked_headers_lead_to_the_same_datagram() {
        let f = frame(&[7; 30]);
        // The IP packet after Ethernet (14) and one VLAN tag (4).
        let ip = &f[18..];
        let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
        sll.extend_from_slice(ip);
        let mut sll2 = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0,
        ];
        sll2.extend_from_slice(ip);
        let want = datagram(RAW, ip).unwrap();
        assert_eq!(datagram(LINUX_SLL, &sll).unwrap(), want);
        assert_eq!(datagram(LINUX_SLL2, &sll2).unwrap(), want);
        assert_eq!(want.size, 30);
        assert_eq!(datagram(LINUX_SLL2, &sll2[..10]), None);
        assert_eq!(datagram(999, &sll2), None);
    }
}
