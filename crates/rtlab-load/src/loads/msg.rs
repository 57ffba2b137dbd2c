//! The `msg` load: hackbench's groups of senders and receivers over
//! Unix sockets.

use super::super::ctx::Ctx;
use super::started::Started;
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn start_msg(
    ctx: &Ctx,
    started: &mut Started,
    groups: u32,
    fds: u32,
    size: usize,
) -> Result<(), String> {
    use std::os::unix::net::UnixStream;
    let timeout = Some(Duration::from_millis(100));
    for g in 0..groups {
        let mut write_ends = Vec::new();
        for r in 0..fds {
            let (rx, tx) = UnixStream::pair().map_err(|e| format!("msg: socketpair: {e}"))?;
            rx.set_read_timeout(timeout)
                .map_err(|e| format!("msg: {e}"))?;
            tx.set_write_timeout(timeout)
                .map_err(|e| format!("msg: {e}"))?;
            write_ends.push(tx);
            let c = ctx.clone();
            started.spawn(ctx, format!("msg-rx-{g}-{r}"), move || {
                msg_receiver(&c, rx, size)
            })?;
        }
        let write_ends = Arc::new(write_ends);
        for s in 0..fds {
            let c = ctx.clone();
            let w = Arc::clone(&write_ends);
            started.spawn(ctx, format!("msg-tx-{g}-{s}"), move || {
                msg_sender(&c, &w, size)
            })?;
        }
    }
    Ok(())
}

/// hackbench's sender: one message to every receiver of the group, again
/// and again.
fn msg_sender(ctx: &Ctx, receivers: &[std::os::unix::net::UnixStream], size: usize) {
    let sent = ctx.counters.get("messages_sent");
    let message = vec![0x42u8; size];
    while !ctx.stopping() {
        for mut receiver in receivers {
            let mut off = 0;
            while off < size && !ctx.stopping() {
                match receiver.write(&message[off..]) {
                    Ok(n) => off += n,
                    Err(_) => break, // timeout (full) or closed: look at the stop flag
                }
            }
            if off == size {
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn msg_receiver(ctx: &Ctx, mut stream: std::os::unix::net::UnixStream, size: usize) {
    let received = ctx.counters.get("messages_received");
    let bytes = ctx.counters.get("bytes_received");
    let mut buffer = vec![0u8; size.max(4096)];
    let mut total = 0u64;
    while !ctx.stopping() {
        match stream.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                let before = total / size as u64;
                total += n as u64;
                bytes.fetch_add(n as u64, Ordering::Relaxed);
                received.fetch_add(total / size as u64 - before, Ordering::Relaxed);
            }
            Err(_) => continue, // timeout
        }
    }
}
