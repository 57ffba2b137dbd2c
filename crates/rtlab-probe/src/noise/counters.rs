//! `/proc/interrupts` and `/proc/softirqs`: their layout is learned once
//! at set-up (which may allocate); every later read is a `pread` into a
//! buffer allocated up front and parsed in place for one CPU's column into
//! a preallocated array, with no allocation at all, so a measuring thread
//! can do it between two windows.
//!
//! Both files have a header line of `CPU<N>` columns (online CPUs only)
//! and one line per counter: `KEY: count count ... [description]`. The key
//! is what precedes the first `:` (`24`, `LOC`, `TIMER`); the rest of the
//! line may contain more colons (`ACPI:Ged`). Lines with fewer counts than
//! there are columns (`ERR:`, `MIS:` on x86) are machine-wide totals, not
//! per-CPU counts, and never yield a value.
//!
//! A CPU going on- or offline adds or removes a column, so a CPU's column
//! is looked up in every read's header, and the header's columns are part
//! of a read's signature: a window across such a change is not compared,
//! and a count missing from its column is never taken for 0.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub const INTERRUPTS: &str = "/proc/interrupts";
pub const SOFTIRQS: &str = "/proc/softirqs";

/// Which file a layout describes; decides how its lines are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// `/proc/interrupts`: `irq:LOC`, `irq:24 ACPI:Ged`.
    Irq,
    /// `/proc/softirqs`: `softirq:TIMER`.
    Softirq,
}

/// One counter line, as learned at set-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterLine {
    /// What precedes the first `:`, trimmed: `24`, `LOC`, `TIMER`.
    pub key: String,
    /// The source's name in reports: `irq:LOC`, `irq:24 ACPI:Ged`
    /// (numbered irqs carry the device names at the end of their line),
    /// `softirq:TIMER`.
    pub name: String,
    /// False for machine-wide totals (`ERR`, `MIS`): no per-CPU value.
    pub per_cpu: bool,
}

/// The lines of one counter file, in file order.
#[derive(Debug, Clone)]
pub struct CounterLayout {
    pub kind: CounterKind,
    pub lines: Vec<CounterLine>,
    /// Number of `CPU<N>` columns of the header.
    pub columns: usize,
    /// Hash of the header's columns and the key sequence; see
    /// [`CounterLayout::parse`].
    pub signature: u64,
}

/// What one in-place parse found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOutcome {
    /// Hash of the header's columns and the key sequence of this text:
    /// two reads with the same signature have the same CPU columns and the
    /// same lines in the same order.
    pub signature: u64,
    /// Lines whose key was not learned at set-up (an irq added since).
    pub unknown_lines: u32,
    /// Per-CPU lines without a count in the column (a truncated line, a
    /// column that is gone): their values are unknown, not 0, so the read
    /// must not be used for deltas.
    pub missing_values: u32,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |p| p + 1);
    &bytes[start..end.max(start)]
}

/// Splits a line into its key and what follows the key's colon; None for a
/// line without a colon (the header, blank lines).
fn split_key(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let key = trim(&line[..colon]);
    (!key.is_empty()).then_some((key, &line[colon + 1..]))
}

/// Whitespace-separated tokens, without allocation.
fn tokens(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
}

fn parse_u64(token: &[u8]) -> Option<u64> {
    if token.is_empty() || token.len() > 20 {
        return None;
    }
    let mut value: u64 = 0;
    for &b in token {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(value)
}

/// The leading run of numeric tokens of a line's rest, and where the text
/// after them starts.
fn count_numbers(rest: &[u8]) -> (usize, usize) {
    let mut count = 0;
    let mut i = 0;
    loop {
        while i < rest.len() && rest[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < rest.len() && !rest[i].is_ascii_whitespace() {
            i += 1;
        }
        if start == i || parse_u64(&rest[start..i]).is_none() {
            return (count, start);
        }
        count += 1;
    }
}

/// The `column`-th count of a line's rest (after the key's colon).
fn nth_number(rest: &[u8], column: usize) -> Option<u64> {
    tokens(rest).nth(column).and_then(parse_u64)
}

/// Index of `CPU<cpu>` among the header's columns.
pub fn column_of(header: &[u8], cpu: usize) -> Option<usize> {
    tokens(header).position(|t| {
        t.strip_prefix(b"CPU")
            .and_then(parse_u64)
            .is_some_and(|n| n == cpu as u64)
    })
}

/// The first line of a counter file.
pub fn header(text: &[u8]) -> &[u8] {
    text.split(|&b| b == b'\n').next().unwrap_or(&[])
}

/// Starts a signature with the header's column names (not its padding).
fn header_signature(header: &[u8]) -> u64 {
    let hash = tokens(header).fold(FNV_OFFSET, |hash, t| fnv(fnv(hash, t), b" "));
    fnv(hash, b"\n")
}

/// Whether a segment of an interrupts line's tail is the hwirq/trigger
/// field (`5-edge`, `27 Level`, `Edge`) rather than a device name.
fn looks_like_trigger(segment: &str) -> bool {
    let first = segment.split_whitespace().next().unwrap_or("");
    let starts_with_digit = first.starts_with(|c: char| c.is_ascii_digit());
    let lowered = segment.to_ascii_lowercase();
    let trigger_word = ["edge", "level", "fasteoi", "simple", "percpu"]
        .iter()
        .any(|w| lowered.ends_with(w));
    (starts_with_digit && (first.contains('-') || trigger_word))
        || (trigger_word && !segment.contains(' '))
}

/// The device names at the end of a numbered irq's line: the last field
/// of the tail when the tail is split on runs of two or more spaces (the
/// kernel pads its chip, hwirq and trigger fields; action names are joined
/// by `, ` and may contain single spaces).
fn device_of(tail: &str) -> Option<String> {
    let segments: Vec<&str> = tail
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    match segments.as_slice() {
        [_, .., last] if !looks_like_trigger(last) => Some((*last).to_string()),
        _ => None,
    }
}

impl CounterLayout {
    /// Learns the lines of a counter file's text (may allocate: set-up only).
    pub fn learn(text: &str, kind: CounterKind) -> Result<CounterLayout, String> {
        let mut lines_iter = text.lines();
        let head = lines_iter.next().unwrap_or("");
        let columns = tokens(head.as_bytes())
            .filter(|t| t.starts_with(b"CPU"))
            .count();
        if columns == 0 {
            return Err(format!("no CPU<N> columns in the header line {head:?}"));
        }
        let mut lines = Vec::new();
        let mut signature = header_signature(head.as_bytes());
        for line in lines_iter {
            let Some((key, rest)) = split_key(line.as_bytes()) else {
                continue;
            };
            signature = fnv(fnv(signature, key), b"\n");
            let key = String::from_utf8_lossy(key).into_owned();
            let (numbers, tail_at) = count_numbers(rest);
            let tail = String::from_utf8_lossy(&rest[tail_at..]);
            let name = match kind {
                CounterKind::Softirq => format!("softirq:{key}"),
                CounterKind::Irq if key.bytes().all(|b| b.is_ascii_digit()) => {
                    match device_of(&tail) {
                        Some(device) => format!("irq:{key} {device}"),
                        None => format!("irq:{key}"),
                    }
                }
                CounterKind::Irq => format!("irq:{key}"),
            };
            lines.push(CounterLine {
                key,
                name,
                per_cpu: numbers >= columns,
            });
        }
        if lines.is_empty() {
            return Err("no counter lines".into());
        }
        Ok(CounterLayout {
            kind,
            lines,
            columns,
            signature,
        })
    }

    /// Parses `text` in place: `values[i]` gets line i's count in
    /// `column`, matched by key (the line at the same position is tried
    /// first, then every learned line), so a line added or removed since
    /// set-up shifts nothing. Learned lines absent from `text` are set to
    /// 0; lines not learned are counted in `unknown_lines`; per-CPU lines
    /// without a count in `column` are set to 0 and counted in
    /// `missing_values`. No allocation.
    pub fn parse(&self, text: &[u8], column: usize, values: &mut [u64]) -> ParseOutcome {
        let mut signature = header_signature(header(text));
        let mut unknown_lines = 0;
        let mut missing_values = 0;
        values.iter_mut().for_each(|v| *v = 0);
        let mut position = 0;
        for line in text.split(|&b| b == b'\n').skip(1) {
            let Some((key, rest)) = split_key(line) else {
                continue;
            };
            signature = fnv(fnv(signature, key), b"\n");
            let index = match self.lines.get(position) {
                Some(learned) if learned.key.as_bytes() == key => Some(position),
                _ => self.lines.iter().position(|l| l.key.as_bytes() == key),
            };
            let Some(index) = index else {
                // Not learned: the next line is still expected where it was.
                unknown_lines += 1;
                continue;
            };
            position = index + 1;
            if self.lines[index].per_cpu {
                match (values.get_mut(index), nth_number(rest, column)) {
                    (Some(slot), Some(value)) => *slot = value,
                    (Some(_), None) => missing_values += 1,
                    (None, _) => {}
                }
            }
        }
        ParseOutcome {
            signature,
            unknown_lines,
            missing_values,
        }
    }
}

/// Why a counter file could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// The file no longer fits the buffer sized at set-up.
    TooLarge,
}

/// A counter file opened once, read with `pread` into a buffer allocated
/// at set-up.
pub struct CounterFile {
    file: File,
    buf: Vec<u8>,
}

impl CounterFile {
    /// Opens `path` with a buffer of `capacity` bytes.
    pub fn open(path: &Path, capacity: usize) -> io::Result<CounterFile> {
        Ok(CounterFile {
            file: File::open(path)?,
            buf: vec![0; capacity],
        })
    }

    /// A buffer with room for the file to grow well beyond `current_len`.
    pub fn capacity_for(current_len: usize) -> usize {
        current_len * 4 + 64 * 1024
    }

    /// Reads the whole file from offset 0. No allocation: `pread` until
    /// end of file (a seq_file hands out about a page per call).
    pub fn read(&mut self) -> Result<&[u8], ReadError> {
        let mut len = 0;
        loop {
            if len == self.buf.len() {
                return Err(ReadError::TooLarge);
            }
            match self.file.read_at(&mut self.buf[len..], len as u64) {
                Ok(0) => return Ok(&self.buf[..len]),
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
    }
}

/// One counter file as one CPU reads it: the open file, its learned
/// layout and the CPU whose column is read.
pub struct CpuCounterFile {
    file: CounterFile,
    layout: std::sync::Arc<CounterLayout>,
    cpu: usize,
}

/// The result of one read of a [`CpuCounterFile`] into a value array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Read and parsed; usable for deltas only when
    /// `missing_values == 0`.
    Read(ParseOutcome),
    /// The CPU has no column in this read's header (it is offline).
    NoColumn,
    /// The file could not be read.
    Failed,
}

impl Reading {
    /// The read's signature when every value was read, else None.
    pub fn complete_signature(self) -> Option<u64> {
        match self {
            Reading::Read(outcome) if outcome.missing_values == 0 => Some(outcome.signature),
            _ => None,
        }
    }
}

impl CpuCounterFile {
    pub fn new(
        file: CounterFile,
        layout: std::sync::Arc<CounterLayout>,
        cpu: usize,
    ) -> CpuCounterFile {
        CpuCounterFile { file, layout, cpu }
    }

    pub fn lines(&self) -> usize {
        self.layout.lines.len()
    }

    /// Reads and parses into `values` (one slot per learned line), from
    /// the CPU's column as this read's header places it. No allocation.
    pub fn read_into(&mut self, values: &mut [u64]) -> Reading {
        match self.file.read() {
            Ok(text) => match column_of(header(text), self.cpu) {
                Some(column) => Reading::Read(self.layout.parse(text, column, values)),
                None => {
                    values.iter_mut().for_each(|v| *v = 0);
                    Reading::NoColumn
                }
            },
            Err(_) => Reading::Failed,
        }
    }
}

/// How far a 32-bit kernel counter (`%10u` of an `unsigned int`) rose
/// between two reads, across a wrap.
#[inline]
pub fn counter_delta(before: u64, after: u64) -> u64 {
    after.wrapping_sub(before) & 0xFFFF_FFFF
}
