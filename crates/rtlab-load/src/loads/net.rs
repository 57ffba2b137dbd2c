//! The `net` load: a UDP flood over loopback.

use super::super::ctx::Ctx;
use super::started::Started;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub(super) fn start_net(
    ctx: &Ctx,
    started: &mut Started,
    senders: u32,
    size: usize,
) -> Result<(), String> {
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0")
        .map_err(|e| format!("net: cannot bind a UDP socket on 127.0.0.1: {e}"))?;
    receiver
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| format!("net: {e}"))?;
    let addr = receiver.local_addr().map_err(|e| format!("net: {e}"))?;
    let mut sockets = Vec::new();
    for _ in 0..senders {
        let s = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.connect(addr).map(|_| s))
            .map_err(|e| format!("net: cannot open a sender socket: {e}"))?;
        sockets.push(s);
    }
    let c = ctx.clone();
    started.spawn(ctx, "net-rx".into(), move || {
        let packets = c.counters.get("packets_received");
        let bytes = c.counters.get("bytes_received");
        let mut buffer = vec![0u8; 65_536];
        while !c.stopping() {
            match receiver.recv(&mut buffer) {
                Ok(n) => {
                    packets.fetch_add(1, Ordering::Relaxed);
                    bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(_) => continue, // timeout: look at the stop flag
            }
        }
    })?;
    for (i, socket) in sockets.into_iter().enumerate() {
        let c = ctx.clone();
        started.spawn(ctx, format!("net-tx-{i}"), move || {
            let packets = c.counters.get("packets_sent");
            let bytes = c.counters.get("bytes_sent");
            let errors = c.counters.get("send_errors");
            let payload = vec![0x5au8; size];
            while !c.stopping() {
                for _ in 0..64 {
                    match socket.send(&payload) {
                        Ok(n) => {
                            packets.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(_) => {
                            // ENOBUFS/ECONNREFUSED under flood: count, go on.
                            errors.fetch_add(1, Ordering::Relaxed);
                            std::thread::yield_now();
                        }
                    }
                }
            }
        })?;
    }
    Ok(())
}
