//! What a worker process tells the run, over its stdout pipe: fixed-size
//! binary records ([`RECORD_BYTES`]), buffered in the worker by an
//! [`Outbox`] (preallocated, written in batches off the activation
//! instant) and read back by an [`Inbox`].
//!
//! Why batches: a write() per activation is a system call right after the
//! work, and a full pipe would block the task. The outbox writes only when
//! the next activation is at least [`FLUSH_MARGIN_NS`] away, at most every
//! [`FLUSH_EVERY_NS`] (or when it is half full), never blocks (the pipe is
//! non-blocking: what does not fit stays for the next batch), and counts
//! the samples it had no room for.

use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::{Policy, SchedParams};
use std::io;
use std::os::fd::RawFd;

/// Bytes of one record on the pipe.
pub const RECORD_BYTES: usize = 40;
/// Bytes the outbox holds: 1638 records, 16 s of one task every 10 ms.
pub const OUTBOX_BYTES: usize = 64 * 1024;
/// How often a worker hands its samples over (the run's live figures are
/// this late at most).
pub const FLUSH_EVERY_NS: u64 = 100_000_000;
/// A batch is written only when the next activation is at least this far.
pub const FLUSH_MARGIN_NS: u64 = 200_000;

const TAG_READY: u32 = 1;
const TAG_SETTINGS: u32 = 2;
const TAG_SAMPLE: u32 = 3;
const TAG_END: u32 = 4;

/// One activation as the worker measured it (times in ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskSample {
    /// The activation instant (CLOCK_MONOTONIC).
    pub activation_ns: u64,
    /// Start of the work minus the activation instant.
    pub lateness_ns: u64,
    /// Activations that passed without their own start before this one.
    pub missed: u64,
    /// End of the work minus the activation instant.
    pub response_ns: u64,
    /// The response was later than the next activation (deadline = period).
    pub deadline_miss: bool,
}

/// A process's scheduling as it measures: fifo, as it set it itself;
/// executive, as the executive set it at attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessSettings {
    pub tid: i32,
    /// The one CPU it may run on; None when it may run on several.
    pub cpu: Option<u32>,
    /// The kernel's policy number (SCHED_FIFO = 1).
    pub policy: u32,
    pub priority: u32,
    pub timer_slack_ns: u64,
}

impl ProcessSettings {
    /// As a series records its thread, `requested` being what was asked.
    pub fn thread_settings(&self, requested: SchedParams) -> ThreadSettings {
        ThreadSettings {
            tid: self.tid,
            pinned_cpu: self.cpu.map(|c| c as usize),
            requested,
            actual: Policy::from_kernel(self.policy).map(|policy| SchedParams {
                policy,
                priority: self.priority,
                deadline: None,
            }),
            timer_slack_ns: Some(self.timer_slack_ns),
        }
    }
}

/// One record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// Set up, waiting for the common start on stdin.
    Ready,
    /// The process's scheduling as it measures.
    Settings(ProcessSettings),
    Sample(TaskSample),
    /// The last record: activations accounted for (started or missed), and
    /// samples the outbox had no room for.
    End {
        accounted: u64,
        dropped: u64,
    },
}

impl Record {
    /// The record as it crosses the pipe: tag, a 32-bit field, four u64
    /// (little-endian).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let (tag, small, words) = match *self {
            Record::Ready => (TAG_READY, 0, [0; 4]),
            Record::Settings(s) => (
                TAG_SETTINGS,
                s.policy,
                [
                    u64::from(s.tid as u32),
                    s.cpu.map_or(u64::MAX, u64::from),
                    u64::from(s.priority),
                    s.timer_slack_ns,
                ],
            ),
            Record::Sample(s) => (
                TAG_SAMPLE,
                u32::from(s.deadline_miss),
                [s.activation_ns, s.lateness_ns, s.missed, s.response_ns],
            ),
            Record::End { accounted, dropped } => (TAG_END, 0, [accounted, dropped, 0, 0]),
        };
        let mut bytes = [0u8; RECORD_BYTES];
        bytes[0..4].copy_from_slice(&tag.to_le_bytes());
        bytes[4..8].copy_from_slice(&small.to_le_bytes());
        for (i, word) in words.iter().enumerate() {
            bytes[8 + 8 * i..16 + 8 * i].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    /// The record of `bytes`; None for a tag this run does not know.
    pub fn decode(bytes: &[u8; RECORD_BYTES]) -> Option<Record> {
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let word = |i: usize| {
            u64::from_le_bytes(bytes[8 + 8 * i..16 + 8 * i].try_into().expect("8 bytes"))
        };
        Some(match u32_at(0) {
            TAG_READY => Record::Ready,
            TAG_SETTINGS => Record::Settings(ProcessSettings {
                tid: word(0) as u32 as i32,
                cpu: u32::try_from(word(1)).ok(),
                policy: u32_at(4),
                priority: word(2) as u32,
                timer_slack_ns: word(3),
            }),
            TAG_SAMPLE => Record::Sample(TaskSample {
                activation_ns: word(0),
                lateness_ns: word(1),
                missed: word(2),
                response_ns: word(3),
                deadline_miss: u32_at(4) != 0,
            }),
            TAG_END => Record::End {
                accounted: word(0),
                dropped: word(1),
            },
            _ => return None,
        })
    }
}

/// The worker's side: records buffered in a preallocated array and
/// written to `fd` (non-blocking) in batches. Hot path: [`Outbox::push`]
/// and [`Outbox::flush_if_due`] never allocate.
pub struct Outbox {
    fd: RawFd,
    buffer: Box<[u8]>,
    /// Bytes `start..end` of the buffer are still to be written.
    start: usize,
    end: usize,
    /// Samples that found the buffer full.
    dropped: u64,
    last_flush_ns: u64,
    /// The reader is gone (EPIPE): the run has ended without us.
    broken: bool,
}

impl Outbox {
    /// An outbox writing to `fd` (which the caller made non-blocking), its
    /// buffer allocated and touched now, before measuring.
    pub fn new(fd: RawFd) -> Outbox {
        let mut buffer = vec![0u8; OUTBOX_BYTES].into_boxed_slice();
        for page in buffer.chunks_mut(4096) {
            page[0] = 1;
        }
        Outbox {
            fd,
            buffer,
            start: 0,
            end: 0,
            dropped: 0,
            last_flush_ns: 0,
            broken: false,
        }
    }

    /// Buffers a record; a sample that finds no room is counted as dropped.
    #[inline]
    pub fn push(&mut self, record: &Record) {
        if self.end + RECORD_BYTES > self.buffer.len() && self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end + RECORD_BYTES > self.buffer.len() {
            self.dropped += 1;
            return;
        }
        self.buffer[self.end..self.end + RECORD_BYTES].copy_from_slice(&record.encode());
        self.end += RECORD_BYTES;
    }

    /// Samples dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The reader is gone: nobody will read what the worker measures.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Writes a batch if one is due (see the module's doc) and the next
    /// activation, `next_ns`, is far enough from `now_ns`.
    #[inline]
    pub fn flush_if_due(&mut self, now_ns: u64, next_ns: u64) {
        let pending = self.end - self.start;
        if pending == 0 || next_ns.saturating_sub(now_ns) < FLUSH_MARGIN_NS {
            return;
        }
        let half_full = self.end > self.buffer.len() / 2;
        if half_full || now_ns.saturating_sub(self.last_flush_ns) >= FLUSH_EVERY_NS {
            self.last_flush_ns = now_ns;
            self.write_once();
        }
    }

    /// One non-blocking write() of what is pending; what does not fit in
    /// the pipe stays for the next one.
    fn write_once(&mut self) -> bool {
        let pending = &self.buffer[self.start..self.end];
        // SAFETY: the pointer and length are those of a live slice.
        let n = unsafe { libc::write(self.fd, pending.as_ptr().cast(), pending.len()) };
        if n > 0 {
            self.start += n as usize;
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            }
            return true;
        }
        let errno = io::Error::last_os_error().raw_os_error();
        if errno == Some(libc::EPIPE) {
            self.broken = true;
        }
        false
    }

    /// Off the hot path: writes everything pending, then the end record,
    /// waiting for the pipe as long as it takes (the run reads it to its
    /// end, or is gone: then EPIPE ends the wait).
    pub fn finish(mut self, accounted: u64) -> io::Result<()> {
        self.write_all()?;
        let dropped = self.dropped;
        self.push(&Record::End { accounted, dropped });
        self.write_all()
    }

    /// Off the hot path: writes everything pending now, waiting for room
    /// in the pipe (the ready record, before the start).
    pub fn flush_now(&mut self) {
        let _ = self.write_all();
        self.last_flush_ns = rtlab_core::clock::now_ns();
    }

    /// Off the hot path, for a worker that failed: writes what it measured,
    /// without the end record (the run sees it end without one).
    pub fn finish_without_end(mut self) -> io::Result<()> {
        self.write_all()
    }

    /// Writes everything pending, waiting for room in the pipe.
    fn write_all(&mut self) -> io::Result<()> {
        while self.end > self.start {
            if self.write_once() {
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => wait_writable(self.fd),
                _ => return Err(e),
            }
        }
        Ok(())
    }
}

/// Waits (at most 100 ms) until `fd` can be written.
fn wait_writable(fd: RawFd) {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut poll, 1, 100) };
}

/// The run's side: bytes as they come off one worker's pipe, cut into
/// records.
#[derive(Default)]
pub struct Inbox {
    partial: Vec<u8>,
}

impl Inbox {
    /// Feeds `bytes`; calls `each` with every complete record (None: a
    /// record this run does not understand).
    pub fn feed(&mut self, bytes: &[u8], mut each: impl FnMut(Option<Record>)) {
        self.partial.extend_from_slice(bytes);
        let whole = self.partial.len() / RECORD_BYTES * RECORD_BYTES;
        for chunk in self.partial[..whole].chunks_exact(RECORD_BYTES) {
            each(Record::decode(chunk.try_into().expect("a whole record")));
        }
        self.partial.drain(..whole);
    }

    /// Bytes of an incomplete record left over.
    pub fn leftover(&self) -> usize {
        self.partial.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    fn every_kind() -> Vec<Record> {
        vec![
            Record::Ready,
            Record::Settings(ProcessSettings {
                tid: 4242,
                cpu: Some(1),
                policy: 1,
                priority: 80,
                timer_slack_ns: 1,
            }),
            Record::Settings(ProcessSettings {
                tid: -1,
                cpu: None,
                policy: 0,
                priority: 0,
                timer_slack_ns: 50_000,
            }),
            Record::Sample(TaskSample {
                activation_ns: u64::MAX - 1,
                lateness_ns: 1234,
                missed: 3,
                response_ns: 101_234,
                deadline_miss: true,
            }),
            Record::End {
                accounted: 500,
                dropped: 2,
            },
        ]
    }

    #[test]
    fn every_record_goes_through_the_pipe_format_unchanged() {
        for record in every_kind() {
            assert_eq!(Record::decode(&record.encode()), Some(record), "{record:?}");
        }
        let mut unknown = Record::Ready.encode();
        unknown[0] = 99;
        assert_eq!(Record::decode(&unknown), None);
    }

    #[test]
    fn the_inbox_cuts_records_wherever_the_reads_end() {
        let bytes: Vec<u8> = every_kind().iter().flat_map(|r| r.encode()).collect();
        let mut inbox = Inbox::default();
        let mut got = Vec::new();
        // Reads of 7 bytes: every record arrives in pieces.
        for piece in bytes.chunks(7) {
            inbox.feed(piece, |r| got.push(r.unwrap()));
        }
        assert_eq!(got, every_kind());
        assert_eq!(inbox.leftover(), 0);
    }

    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid out-array of two.
        assert_eq!(
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) },
            0
        );
        use std::os::fd::FromRawFd;
        // SAFETY: both fds were just opened and are owned here only.
        unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        }
    }

    fn sample(k: u64) -> Record {
        Record::Sample(TaskSample {
            activation_ns: k,
            ..TaskSample::default()
        })
    }

    #[test]
    fn the_outbox_writes_only_when_due_and_far_from_the_next_activation() {
        let (mut reader, writer) = pipe();
        let mut outbox = Outbox::new(writer.as_raw_fd());
        outbox.push(&sample(1));
        let now = FLUSH_EVERY_NS;
        // The next activation is too close: nothing is written.
        outbox.flush_if_due(now, now + FLUSH_MARGIN_NS - 1);
        let mut buf = [0u8; 4096];
        assert!(reader.read(&mut buf).is_err(), "nothing to read yet");
        outbox.flush_if_due(now, now + FLUSH_MARGIN_NS);
        assert_eq!(reader.read(&mut buf).unwrap(), RECORD_BYTES);
        // Written just now: the next one waits for FLUSH_EVERY_NS.
        outbox.push(&sample(2));
        outbox.flush_if_due(now + 1, u64::MAX);
        assert!(reader.read(&mut buf).is_err());
        outbox.flush_if_due(now + FLUSH_EVERY_NS, u64::MAX);
        assert_eq!(reader.read(&mut buf).unwrap(), RECORD_BYTES);
    }

    #[test]
    fn a_full_outbox_counts_its_drops_and_the_end_says_how_many() {
        let (mut reader, writer) = pipe();
        let mut outbox = Outbox::new(writer.as_raw_fd());
        let room = OUTBOX_BYTES / RECORD_BYTES;
        for k in 0..room as u64 + 5 {
            outbox.push(&sample(k));
        }
        assert_eq!(outbox.dropped(), 5);
        // The end waits for the reader to take the samples.
        let drain = std::thread::spawn(move || {
            let mut inbox = Inbox::default();
            let mut records = Vec::new();
            let mut buf = vec![0u8; 65536];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => inbox.feed(&buf[..n], |r| records.push(r.unwrap())),
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
            records
        });
        outbox.finish(room as u64).unwrap();
        drop(writer);
        let records = drain.join().unwrap();
        assert_eq!(records.len(), room + 1);
        assert_eq!(records[0], sample(0));
        assert_eq!(
            records[room],
            Record::End {
                accounted: room as u64,
                dropped: 5
            }
        );
    }
}
