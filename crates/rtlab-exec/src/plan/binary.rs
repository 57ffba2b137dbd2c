//! The binary form of a plan (docs/plan-format.md), little-endian:
//!
//! ```text
//!  0  magic "RTLPLAN\0"          8 bytes
//!  8  version u32 = 1
//! 12  header length u32          offset of the first event, a multiple of 8
//! 16  event count u64
//! 24  repeat period u64, ns      0 = none
//! 32  module count u32
//! 36  reserved, zero             up to 64
//! 64  module table               per module: id u16, name len u8, kind len u8,
//!                                settings len u16, name, kind, settings ("k=v k=v");
//!                                zero padded to a multiple of 8
//!  H  events                     24 bytes each: offset_ns u64, module u16,
//!                                flags u16, data [u8; 12]
//! ```
//!
//! [`MappedPlan`] maps a file read-only and reads events where they lie:
//! opening a 10 M event plan reads 64 bytes and the module table.

use super::model::{
    Event, EventSource, ModuleDecl, PlanError, PlanHeader, DATA_BYTES, MAX_MODULES,
};
use super::text::valid_name;
use crate::module;
use std::io::{self, Write};
use std::path::Path;

pub const BINARY_MAGIC: &[u8; 8] = b"RTLPLAN\0";
pub const BINARY_VERSION: u32 = 1;
/// Bytes of the fixed header.
pub const FIXED_HEADER_BYTES: usize = 64;
/// Bytes of one event record.
pub const EVENT_BYTES: usize = 24;

/// Settings as the binary form stores them: `k=v k=v`.
fn settings_text(decl: &ModuleDecl) -> String {
    decl.settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a setting's value can be written in both forms.
fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#' || c == '"')
}

/// Checks that a header can be written in both forms: valid, unique names,
/// ids in order, settings without spaces, at most 65535 modules.
pub fn check_header(header: &PlanHeader) -> Result<(), String> {
    if header.modules.len() > MAX_MODULES {
        return Err(format!(
            "{} modules: at most {MAX_MODULES}",
            header.modules.len()
        ));
    }
    for (index, m) in header.modules.iter().enumerate() {
        if m.id as usize != index {
            return Err(format!(
                "module {} has id {} at table index {index}: ids must be 0, 1, 2, ... in order",
                m.name, m.id
            ));
        }
        if !valid_name(&m.name) || !valid_name(&m.kind) {
            return Err(format!(
                "module {index}: bad name '{}' or kind '{}' (1-255 letters, digits, '_', '-', '.')",
                m.name.escape_debug(),
                m.kind.escape_debug()
            ));
        }
        if header.modules[..index].iter().any(|o| o.name == m.name) {
            return Err(format!("duplicate module name '{}'", m.name));
        }
        for (k, v) in &m.settings {
            if !valid_name(k) || !valid_value(v) {
                return Err(format!(
                    "module {}: bad setting '{}={}' (no spaces, '#' or '\"')",
                    m.name,
                    k.escape_debug(),
                    v.escape_debug()
                ));
            }
        }
        if settings_text(m).len() > u16::MAX as usize {
            return Err(format!(
                "module {}: settings longer than 65535 bytes",
                m.name
            ));
        }
    }
    if header.repeat_ns == Some(0) {
        return Err("repeat period 0 (none is written as no repeat)".into());
    }
    Ok(())
}

/// The header and module table as bytes (length a multiple of 8).
pub fn encode_header(header: &PlanHeader, count: u64) -> Result<Vec<u8>, String> {
    check_header(header)?;
    let mut table = Vec::new();
    for m in &header.modules {
        let settings = settings_text(m);
        table.extend_from_slice(&m.id.to_le_bytes());
        table.push(m.name.len() as u8);
        table.push(m.kind.len() as u8);
        table.extend_from_slice(&(settings.len() as u16).to_le_bytes());
        table.extend_from_slice(m.name.as_bytes());
        table.extend_from_slice(m.kind.as_bytes());
        table.extend_from_slice(settings.as_bytes());
    }
    while table.len() % 8 != 0 {
        table.push(0);
    }
    let header_len = FIXED_HEADER_BYTES + table.len();
    let header_len =
        u32::try_from(header_len).map_err(|_| "module table larger than 4 GiB".to_string())?;
    let mut out = Vec::with_capacity(header_len as usize);
    out.extend_from_slice(BINARY_MAGIC);
    out.extend_from_slice(&BINARY_VERSION.to_le_bytes());
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&header.repeat_ns.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&(header.modules.len() as u32).to_le_bytes());
    out.resize(FIXED_HEADER_BYTES, 0);
    out.extend_from_slice(&table);
    Ok(out)
}

/// One event as its 24-byte record.
pub fn encode_event(event: &Event) -> [u8; EVENT_BYTES] {
    let mut record = [0; EVENT_BYTES];
    record[0..8].copy_from_slice(&event.offset_ns.to_le_bytes());
    record[8..10].copy_from_slice(&event.module.to_le_bytes());
    record[10..12].copy_from_slice(&event.flags.to_le_bytes());
    record[12..24].copy_from_slice(&event.data);
    record
}

/// Reads a 24-byte record (any alignment).
pub fn decode_event(record: &[u8; EVENT_BYTES]) -> Event {
    let mut offset = [0; 8];
    offset.copy_from_slice(&record[0..8]);
    let mut data = [0; DATA_BYTES];
    data.copy_from_slice(&record[12..24]);
    Event {
        offset_ns: u64::from_le_bytes(offset),
        module: u16::from_le_bytes([record[8], record[9]]),
        flags: u16::from_le_bytes([record[10], record[11]]),
        data,
    }
}

/// Writes a plan in the binary form. `out` should be buffered.
pub fn write_binary(
    header: &PlanHeader,
    events: &dyn EventSource,
    out: impl Write,
) -> io::Result<()> {
    write_binary_iter(
        header,
        events.len(),
        (0..events.len()).map(|i| events.event(i)),
        out,
        |_| {},
    )
}

/// Writes a plan whose `count` events come from an iterator, without
/// holding them: a generator streams straight into the file. `progress`
/// is called with the events written so far, every 64 Ki events. Fails
/// (InvalidInput) if the iterator yields other than `count` events.
pub fn write_binary_iter(
    header: &PlanHeader,
    count: u64,
    events: impl Iterator<Item = Event>,
    mut out: impl Write,
    mut progress: impl FnMut(u64),
) -> io::Result<()> {
    let head =
        encode_header(header, count).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    out.write_all(&head)?;
    let mut written = 0u64;
    for event in events {
        if written == count {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("more events than the {count} announced"),
            ));
        }
        out.write_all(&encode_event(&event))?;
        written += 1;
        if written.is_multiple_of(65_536) {
            progress(written);
        }
    }
    if written != count {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{written} events written, {count} announced"),
        ));
    }
    progress(written);
    out.flush()
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// What the fixed header and module table of a binary plan say.
#[derive(Debug, Clone)]
pub struct BinaryLayout {
    pub header: PlanHeader,
    pub header_len: u64,
    pub count: u64,
}

/// Decodes and validates the header of a binary plan of `file_len` bytes
/// from its first bytes `head` (at least the header length, or all of a
/// shorter file).
pub fn decode_header(head: &[u8], file_len: u64) -> Result<BinaryLayout, String> {
    if head.len() < FIXED_HEADER_BYTES || file_len < FIXED_HEADER_BYTES as u64 {
        return Err(format!(
            "truncated: {file_len} bytes, a binary plan has a {FIXED_HEADER_BYTES}-byte header"
        ));
    }
    if &head[0..8] != BINARY_MAGIC {
        return Err("not a binary plan (magic is not RTLPLAN\\0)".into());
    }
    let version = u32_at(head, 8);
    if version != BINARY_VERSION {
        return Err(format!(
            "unsupported binary plan version {version} (this rtlab reads version {BINARY_VERSION})"
        ));
    }
    let header_len = u32_at(head, 12) as u64;
    let count = u64_at(head, 16);
    let repeat = u64_at(head, 24);
    let modules = u32_at(head, 32) as usize;
    if head[36..64].iter().any(|&b| b != 0) {
        return Err("reserved header bytes 36-63 are not zero".into());
    }
    if header_len < FIXED_HEADER_BYTES as u64 || !header_len.is_multiple_of(8) {
        return Err(format!(
            "header length {header_len}: expected a multiple of 8, at least {FIXED_HEADER_BYTES}"
        ));
    }
    let expected = count
        .checked_mul(EVENT_BYTES as u64)
        .and_then(|n| n.checked_add(header_len));
    if expected != Some(file_len) {
        return Err(format!(
            "size mismatch: the header says {count} events after {header_len} header bytes ({} bytes), the file has {file_len}",
            expected.map_or("overflow".to_string(), |n| n.to_string())
        ));
    }
    if modules > MAX_MODULES {
        return Err(format!("{modules} modules: at most {MAX_MODULES}"));
    }
    if (head.len() as u64) < header_len {
        return Err("truncated module table".into());
    }
    let table = &head[FIXED_HEADER_BYTES..header_len as usize];
    let mut at = 0usize;
    let mut decls = Vec::with_capacity(modules.min(1024));
    for index in 0..modules {
        let bad = |what: &str| format!("module table entry {index}: {what}");
        if at + 6 > table.len() {
            return Err(bad("runs past the header length"));
        }
        let id = u16::from_le_bytes([table[at], table[at + 1]]);
        let name_len = table[at + 2] as usize;
        let kind_len = table[at + 3] as usize;
        let settings_len = u16::from_le_bytes([table[at + 4], table[at + 5]]) as usize;
        at += 6;
        let end = at + name_len + kind_len + settings_len;
        if end > table.len() {
            return Err(bad("runs past the header length"));
        }
        let text = |bytes: &[u8]| {
            std::str::from_utf8(bytes)
                .map(str::to_string)
                .map_err(|_| bad("not UTF-8"))
        };
        let name = text(&table[at..at + name_len])?;
        let kind = text(&table[at + name_len..at + name_len + kind_len])?;
        let settings_raw = text(&table[at + name_len + kind_len..end])?;
        at = end;
        let mut settings = Vec::new();
        for pair in settings_raw.split(' ').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(bad(&format!("setting '{pair}' is not key=value")));
            };
            settings.push((k.to_string(), v.to_string()));
        }
        if id as usize != index {
            return Err(bad(&format!("id {id}, expected {index}")));
        }
        decls.push(ModuleDecl {
            id,
            name,
            kind,
            settings,
        });
    }
    if table[at..].iter().any(|&b| b != 0) {
        return Err("module table padding is not zero".into());
    }
    let header = PlanHeader {
        modules: decls,
        repeat_ns: (repeat != 0).then_some(repeat),
    };
    check_header(&header)?;
    for decl in &header.modules {
        module::validate(decl)?;
    }
    Ok(BinaryLayout {
        header,
        header_len,
        count,
    })
}

/// A binary plan mapped read-only; events are read from the page cache
/// as they are asked for (nothing is copied at open).
pub struct MappedPlan {
    ptr: *const u8,
    len: usize,
    /// Kept open to notice the file changing size under the mapping.
    file: std::fs::File,
    header: PlanHeader,
    events_at: usize,
    count: u64,
}

// SAFETY: the mapping is read-only (PROT_READ, MAP_PRIVATE) and lives as
// long as the struct; shared reads from any thread are sound.
unsafe impl Send for MappedPlan {}
unsafe impl Sync for MappedPlan {}

impl MappedPlan {
    /// Maps and validates a binary plan.
    pub fn open(path: impl AsRef<Path>) -> Result<MappedPlan, PlanError> {
        use std::os::fd::AsRawFd;
        let path = path.as_ref();
        let name = path.display().to_string();
        let err = |m: String| PlanError::whole(&name, m);
        let file = std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| err(format!("cannot stat: {e}")))?;
        if !meta.is_file() {
            return Err(err("not a regular file".into()));
        }
        let file_len = meta.len();
        if file_len < FIXED_HEADER_BYTES as u64 {
            return Err(err(format!(
                "truncated: {file_len} bytes, a binary plan has a {FIXED_HEADER_BYTES}-byte header"
            )));
        }
        let len = usize::try_from(file_len).map_err(|_| err("too large to map".into()))?;
        // SAFETY: a fresh private mapping of an open file; the result is
        // checked before use and unmapped in Drop.
        //
        // Mapped inaccessible first, then unlocked, then made readable:
        // under mlockall(MCL_FUTURE) (every measurement runs so) a readable
        // mapping would be read in and locked whole at once, and a
        // 10-million-event plan would cost its 240 MB. This way its pages
        // come in as they are read, and `advise` locks the window ahead of
        // the dispatcher and drops what is behind it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(err(format!("mmap: {}", io::Error::last_os_error())));
        }
        // SAFETY: ptr..ptr+len is the mapping made above.
        let readable = unsafe {
            libc::munlock(ptr, len);
            libc::madvise(ptr, len, libc::MADV_SEQUENTIAL);
            libc::mprotect(ptr, len, libc::PROT_READ)
        };
        if readable != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: unmapping the mapping made above, unused.
            unsafe { libc::munmap(ptr, len) };
            return Err(err(format!("mprotect: {e}")));
        }
        let mut plan = MappedPlan {
            ptr: ptr as *const u8,
            len,
            file,
            header: PlanHeader::default(),
            events_at: 0,
            count: 0,
        };
        let header_len = u32_at(plan.bytes(), 12) as usize;
        let head = &plan.bytes()[..header_len.clamp(FIXED_HEADER_BYTES, len)];
        let layout = decode_header(head, file_len).map_err(err)?;
        plan.header = layout.header;
        plan.events_at = layout.header_len as usize;
        plan.count = layout.count;
        Ok(plan)
    }

    pub fn header(&self) -> &PlanHeader {
        &self.header
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is len bytes, readable, alive while self is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl EventSource for MappedPlan {
    fn len(&self) -> u64 {
        self.count
    }

    /// Panics if `index >= len()` (a caller's bug, as for a slice).
    fn event(&self, index: u64) -> Event {
        assert!(index < self.count, "event {index} of {}", self.count);
        let at = self.events_at + index as usize * EVENT_BYTES;
        let mut record = [0; EVENT_BYTES];
        record.copy_from_slice(&self.bytes()[at..at + EVENT_BYTES]);
        decode_event(&record)
    }

    fn intact(&self) -> bool {
        self.file
            .metadata()
            .is_ok_and(|meta| meta.len() == self.len as u64)
    }

    fn advise(&self, from: u64, to: u64) {
        let n = self.count;
        if n == 0 {
            return;
        }
        let from = from % n;
        let span = to.saturating_sub(from).min(n);
        let page = page_size();
        let byte = |event: u64| self.events_at + event as usize * EVENT_BYTES;
        // Page-aligned byte ranges of the events to keep: [from, end) and,
        // when the window wraps, [0, wrapped).
        let (end, wrapped) = if from + span > n {
            (n, from + span - n)
        } else {
            (from + span, 0)
        };
        let keep_start = byte(from) / page * page;
        let keep_end = byte(end).div_ceil(page) * page;
        let wrap_end = if wrapped > 0 {
            byte(wrapped).div_ceil(page) * page
        } else {
            0
        };
        let len = self.len.div_ceil(page) * page;
        let base = self.ptr as usize;
        let drop = |lo: usize, hi: usize| {
            if hi > lo {
                // SAFETY: [lo, hi) lies inside the mapping; unlocking and
                // dropping pages of a read-only private file mapping changes
                // no content (a dropped page is read again if touched).
                unsafe {
                    libc::munlock((base + lo) as *const libc::c_void, hi - lo);
                    libc::madvise(
                        (base + lo) as *mut libc::c_void,
                        hi - lo,
                        libc::MADV_DONTNEED,
                    );
                }
            }
        };
        let keep = |lo: usize, hi: usize| {
            if hi > lo {
                let at = (base + lo) as *mut libc::c_void;
                // SAFETY: [lo, hi) lies inside the mapping. Locking reads the
                // window in now, off the dispatcher's thread; where locking is
                // not allowed, the read-ahead hint does most of that.
                unsafe {
                    if libc::mlock(at, hi - lo) != 0 {
                        libc::madvise(at, hi - lo, libc::MADV_WILLNEED);
                    }
                }
            }
        };
        // The header pages (before the events) stay as they are.
        let events_start = self.events_at / page * page;
        drop(events_start.max(wrap_end), keep_start);
        drop(keep_end, len);
        keep(keep_start, keep_end.min(len));
        keep(events_start, wrap_end.min(len));
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(1)
}

impl Drop for MappedPlan {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in open.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}
