//! What crosses the ring from a spinner to the recorder: fixed-size
//! records, nothing variable-sized. A window is the run of `Event`
//! records pushed while it was measured, then `Counts` records (its
//! counter deltas, four to a record), then the `Window` record that closes
//! it. Room for the closing records is always kept, so a full ring drops
//! events (counted) but never splits or merges windows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counter deltas per `Counts` record.
pub const COUNTS_PER_RECORD: usize = 4;

/// The state of a window's counters, as bit flags.
pub mod flags {
    /// `/proc/interrupts` had other lines or CPU columns at the window's
    /// end than at its start (an irq was added or removed, a CPU went on-
    /// or offline): its deltas were not sent.
    pub const IRQS_CHANGED: u8 = 1;
    /// The same for `/proc/softirqs`.
    pub const SOFTIRQS_CHANGED: u8 = 2;
    /// `/proc/interrupts` could not be read at one of the window's edges,
    /// or a count of the CPU was missing from the read.
    pub const IRQS_UNREADABLE: u8 = 4;
    /// The same for `/proc/softirqs`.
    pub const SOFTIRQS_UNREADABLE: u8 = 8;
    /// getrusage failed: the window's preemptions are unknown.
    pub const RUSAGE_UNREADABLE: u8 = 16;
}

/// One record of the ring (32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// A gap above the threshold, not yet attributed.
    Event { start_ns: u64, duration_ns: u64 },
    /// Up to four (source index, delta) pairs of the window being closed.
    Counts {
        len: u8,
        sources: [u16; COUNTS_PER_RECORD],
        counts: [u32; COUNTS_PER_RECORD],
    },
    /// Closes a window: its first clock read (ns since the run's start),
    /// the time spun (first to last clock read) and its [`flags`].
    Window {
        start_ns: u64,
        measured_ns: u64,
        flags: u8,
    },
}

impl Default for Record {
    fn default() -> Self {
        Record::Event {
            start_ns: 0,
            duration_ns: 0,
        }
    }
}

/// Events per second a ring absorbs for two seconds without a drain: one
/// every 20 µs, far more than a noisy machine shows at a 1 µs threshold.
pub const HEAVY_EVENTS_PER_SECOND: u64 = 50_000;

/// Records needed to close one window with `sources` sources.
pub fn closing_records(sources: usize) -> usize {
    sources.div_ceil(COUNTS_PER_RECORD) + 1
}

/// Largest ring of one CPU, bytes: it is prefaulted and locked, once per
/// measured CPU.
pub const MAX_RING_BYTES: usize = 16 << 20;

/// Ring capacity for two seconds of heavy noise plus every window's
/// closing records over those two seconds (as if every source rose in
/// every window), at most [`MAX_RING_BYTES`] and at least room for a few
/// windows' closing records. A recorder held up longer than the ring
/// lasts costs events, counted as dropped, never a window.
pub fn ring_capacity(window_ns: u64, sources: usize) -> usize {
    let windows = (2_000_000_000 / window_ns.max(1)).max(1) as usize;
    let events = 2 * HEAVY_EVENTS_PER_SECOND as usize;
    let closing = closing_records(sources);
    let max_records = MAX_RING_BYTES / std::mem::size_of::<Record>();
    (events + windows * closing)
        .min(max_records)
        .max(4 * closing)
}

/// A ring whose memory has been written once (so no page fault waits in
/// the first pushes of a measuring loop when memory is not locked).
pub fn prefaulted_ring(capacity: usize) -> (rtrb::Producer<Record>, rtrb::Consumer<Record>) {
    let (mut producer, mut consumer) = rtrb::RingBuffer::new(capacity);
    while producer.push(Record::default()).is_ok() {}
    while consumer.pop().is_ok() {}
    (producer, consumer)
}

/// The spinner's end of the ring.
pub struct EventSink {
    producer: rtrb::Producer<Record>,
    /// Slots kept free for the records closing the current window.
    reserve: usize,
    dropped: Arc<AtomicU64>,
}

impl EventSink {
    /// `sources`: the number of sources a window may report deltas for.
    pub fn new(producer: rtrb::Producer<Record>, sources: usize, dropped: Arc<AtomicU64>) -> Self {
        EventSink {
            producer,
            reserve: closing_records(sources),
            dropped,
        }
    }

    /// Hands one event over; drops it (counted) when only the room kept
    /// for closing the window is left. No allocation, lock or syscall.
    #[inline]
    pub fn event(&mut self, start_ns: u64, duration_ns: u64) {
        if self.producer.slots() > self.reserve {
            let _ = self.producer.push(Record::Event {
                start_ns,
                duration_ns,
            });
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Closes the window: its nonzero deltas, then the `Window` record.
    /// `deltas` yields (source index, delta); at most as many as the
    /// sources given to [`EventSink::new`]. No allocation.
    pub fn close_window(
        &mut self,
        deltas: impl Iterator<Item = (u16, u64)>,
        start_ns: u64,
        measured_ns: u64,
        flags: u8,
    ) {
        let mut sources = [0u16; COUNTS_PER_RECORD];
        let mut counts = [0u32; COUNTS_PER_RECORD];
        let mut len = 0;
        for (source, delta) in deltas.filter(|&(_, d)| d > 0) {
            sources[len] = source;
            counts[len] = delta.min(u64::from(u32::MAX)) as u32;
            len += 1;
            if len == COUNTS_PER_RECORD {
                self.push_closing(Record::Counts {
                    len: len as u8,
                    sources,
                    counts,
                });
                len = 0;
            }
        }
        if len > 0 {
            self.push_closing(Record::Counts {
                len: len as u8,
                sources,
                counts,
            });
        }
        self.push_closing(Record::Window {
            start_ns,
            measured_ns,
            flags,
        });
    }

    fn push_closing(&mut self, record: Record) {
        // The reserve guarantees room; a failure would mean more deltas
        // than sources, which the caller never sends.
        if self.producer.push(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}
