//! The `traffic` kind as `rtlab plan run` fires it: each event's datagram
//! (its planned size, zeros) to the flow's `dest`, no stamp, no transmit
//! timestamps (those are `rtlab traffic replay`'s, crate::traffic::replay).

use super::model::Module;
use super::socket::connected_udp;
use crate::plan::model::{Event, ModuleDecl};
use crate::traffic::format::{TrafficData, MAX_PAYLOAD};
use std::net::{SocketAddr, UdpSocket};

/// The module for a `traffic` flow under `rtlab plan run`.
pub fn plain_sender(decl: &ModuleDecl) -> Result<Box<dyn Module>, String> {
    let Some(dest) = decl.setting("dest") else {
        return Err(format!(
            "module {}: a traffic flow needs dest=ADDR:PORT for `rtlab plan run` (or replay it with `rtlab traffic replay --to ADDR:PORT`)",
            decl.name
        ));
    };
    let dest: SocketAddr = dest
        .parse()
        .map_err(|_| format!("module {}: dest={dest}: expected ADDR:PORT", decl.name))?;
    let socket = connected_udp(dest)
        .map_err(|e| format!("module {}: cannot send to {dest}: {e}", decl.name))?;
    Ok(Box::new(PlainSender {
        socket,
        // Any event's size fits: no allocation at an event.
        zeros: vec![0u8; MAX_PAYLOAD],
        fired: 0,
        failed: 0,
    }))
}

struct PlainSender {
    socket: UdpSocket,
    zeros: Vec<u8>,
    fired: u64,
    failed: u64,
}

impl Module for PlainSender {
    fn fire(&mut self, event: &Event, _now_ns: u64) {
        self.fired += 1;
        // `plan check` does not know the traffic data: a bad event fails
        // here, counted, instead of sending something else.
        let Ok(data) = TrafficData::decode(&event.data) else {
            self.failed += 1;
            return;
        };
        if self
            .socket
            .send(&self.zeros[..usize::from(data.size)])
            .is_err()
        {
            self.failed += 1;
        }
    }
    fn counts(&self) -> (u64, u64) {
        (self.fired, self.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(settings: &[(&str, &str)]) -> ModuleDecl {
        ModuleDecl {
            id: 0,
            name: "flow0".into(),
            kind: "traffic".into(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_flow_without_dest_is_refused_by_name() {
        let e = plain_sender(&decl(&[("src", "10.0.0.1:5000")]))
            .err()
            .unwrap();
        assert!(e.contains("flow0") && e.contains("dest="), "{e}");
    }

    #[test]
    fn each_event_sends_its_size_in_zeros_and_bad_data_fails() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = rx.local_addr().unwrap().to_string();
        let mut m = plain_sender(&decl(&[("dest", &dest)])).unwrap();
        for size in [0u16, 100, 1400] {
            m.fire(&TrafficData { size, digest: 9 }.event(0, 0), 0);
        }
        let mut bad = TrafficData {
            size: 10,
            digest: 0,
        }
        .event(0, 0);
        bad.data[2] = 1;
        m.fire(&bad, 0);
        let mut buf = vec![0u8; 2000];
        for size in [0usize, 100, 1400] {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(n, size);
            assert!(buf[..n].iter().all(|&b| b == 0));
        }
        assert_eq!(m.counts(), (4, 1));
    }
}
