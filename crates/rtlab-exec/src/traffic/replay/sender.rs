//! The module that sends one flow's packets at the dispatcher's instants:
//! a connected UDP socket and a buffer of the flow's largest datagram,
//! both made before the first packet; the stamp written in place; a
//! non-blocking send (a full buffer is a failed packet, never a wait);
//! each sent packet's record pushed into a ring for the collector.

use super::flows::Flow;
use super::{txstamps, txtime};
use crate::module::{connected_udp, Module, Slot};
use crate::plan::model::Event;
use crate::traffic::format::{Stamp, STAMP_BYTES};
use rtlab_core::clock;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One sent packet, as the collector gets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Departure {
    /// The flow's index in the plan.
    pub flow: u32,
    /// The flow socket's count of packets sent before this one (the
    /// kernel's OPT_ID count, which its transmit stamp carries).
    pub counter: u32,
    /// The packet's index over all repetitions (the stamp's sequence).
    pub sequence: u64,
    /// The run's start and the planned instant after it, ns.
    pub start_ns: u64,
    pub planned_ns: u64,
    /// The clock read just before the send (CLOCK_MONOTONIC).
    pub user_ns: u64,
}

/// The sender's counts, shared by every flow of a replay.
#[derive(Debug, Default)]
pub struct SendCounts {
    pub sent: AtomicU64,
    pub failed: AtomicU64,
    pub bytes: AtomicU64,
    /// Sent packets whose record found the collector's ring full.
    pub unrecorded: AtomicU64,
}

/// The send buffer each flow socket asks for.
const SEND_BUFFER_BYTES: usize = 4 << 20;

/// A flow's socket, connected to its destination (non-blocking, its send
/// buffer enlarged, transmit stamps asked for when `kernel_stamps`).
pub fn connect(
    flow: &Flow,
    kernel_stamps: bool,
    txtime_clock: Option<libc::clockid_t>,
) -> Result<UdpSocket, String> {
    let socket = connected_udp(flow.dest)
        .map_err(|e| format!("flow {}: cannot send to {}: {e}", flow.name, flow.dest))?;
    // Best effort: the default buffer still works at modest rates.
    let _ = txstamps::set_send_buffer(socket.as_raw_fd(), SEND_BUFFER_BYTES);
    if kernel_stamps {
        txstamps::enable(socket.as_raw_fd()).map_err(|e| {
            format!(
                "flow {}: SO_TIMESTAMPING: {e} (--timestamps user does without)",
                flow.name
            )
        })?;
    }
    if let Some(clock) = txtime_clock {
        txtime::enable(socket.as_raw_fd(), clock)
            .map_err(|e| format!("flow {}: SO_TXTIME: {e}", flow.name))?;
    }
    Ok(socket)
}

/// Sends one flow's packets.
pub struct FlowSender {
    flow: u32,
    socket: Arc<UdpSocket>,
    /// The flow's largest datagram: the stamp, then zeros.
    datagram: Vec<u8>,
    /// The stream id of the stamps; None: `--no-stamp`.
    stream: Option<u32>,
    /// SO_TXTIME: what to add to a CLOCK_MONOTONIC instant to have it on
    /// the qdisc's clock; None: plain sends.
    txtime_ahead_ns: Option<i64>,
    counter: u32,
    ring: rtrb::Producer<Departure>,
    counts: Arc<SendCounts>,
    fired: u64,
    failed: u64,
}

impl FlowSender {
    pub fn new(
        flow: u32,
        largest: usize,
        socket: Arc<UdpSocket>,
        stream: Option<u32>,
        txtime_ahead_ns: Option<i64>,
        ring: rtrb::Producer<Departure>,
        counts: Arc<SendCounts>,
    ) -> FlowSender {
        FlowSender {
            flow,
            socket,
            datagram: vec![0u8; largest],
            stream,
            txtime_ahead_ns,
            counter: 0,
            ring,
            counts,
            fired: 0,
            failed: 0,
        }
    }
}

impl Module for FlowSender {
    fn fire(&mut self, event: &Event, now_ns: u64) {
        // Only the dispatcher fires this, through fire_at.
        self.fire_at(event, Slot::default(), now_ns);
    }

    /// Hot path: the stamp in place, one send, one ring push.
    fn fire_at(&mut self, event: &Event, slot: Slot, _now_ns: u64) {
        self.fired += 1;
        // Checked when the plan was read (flows::flows_of): at most the
        // buffer's size, which is the flow's largest.
        let size = usize::from(u16::from_le_bytes([event.data[0], event.data[1]]));
        let payload = &mut self.datagram[..size];
        match self.stream {
            Some(stream) if size >= STAMP_BYTES => {
                Stamp {
                    stream,
                    sequence: slot.index,
                    planned_ns: slot.planned_ns,
                }
                .write(payload);
            }
            // A datagram too short for the stamp is zeros only (not the
            // head of the last packet's stamp).
            Some(_) => payload.fill(0),
            None => {}
        }
        let user_ns = clock::now_ns();
        let sent = match self.txtime_ahead_ns {
            None => self.socket.send(payload),
            Some(ahead) => {
                // The planned instant itself: the qdisc holds the packet
                // until then.
                let planned = (slot.start_ns + slot.planned_ns).saturating_add_signed(ahead);
                txtime::send_at(self.socket.as_raw_fd(), payload, planned)
            }
        };
        if sent.is_err() {
            self.failed += 1;
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let departure = Departure {
            flow: self.flow,
            counter: self.counter,
            sequence: slot.index,
            start_ns: slot.start_ns,
            planned_ns: slot.planned_ns,
            user_ns,
        };
        self.counter = self.counter.wrapping_add(1);
        self.counts.sent.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes.fetch_add(size as u64, Ordering::Relaxed);
        if self.ring.push(departure).is_err() {
            self.counts.unrecorded.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn counts(&self) -> (u64, u64) {
        (self.fired, self.failed)
    }
}
