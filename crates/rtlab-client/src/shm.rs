//! The page a client and `rtlab exec serve` share: a sealed memfd the
//! server creates and hands over with the attach reply. Its layout is
//! `#[repr(C)]` and versioned; the server writes one cache line and the
//! client another (no false sharing on the release path), and the client
//! pushes one sample per activation into a ring the server drains.
//!
//! Trust: the client can write the whole page. The server keeps its own
//! schedule and counts in its own memory, only *publishes* them here, and
//! treats everything it reads back (the done word, the ring head, the
//! samples) as untrusted: indices are bounds-checked, lengths never
//! trusted, a lie only ever harms the liar's own statistics.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `RTLABPG1`: what a page starts with.
pub const MAGIC: u64 = u64::from_be_bytes(*b"RTLABPG1");
/// Bumped at every change of [`Page`]'s layout or meaning.
pub const LAYOUT_VERSION: u32 = 1;
/// Samples the ring holds: 2048 × 32 B = 64 KiB, ~200 ms at the shortest
/// period, while the server drains every few ms.
pub const RING_CAPACITY: usize = 2048;

/// [`ServerLine::state`]: released as planned.
pub const STATE_RUNNING: u32 = 0;
/// The executive dropped this process (hung, or never yielded).
pub const STATE_DROPPED: u32 = 1;
/// The executive is stopping (SIGINT/SIGTERM, `--duration`).
pub const STATE_STOPPED: u32 = 2;

/// The header, written once by the server before the page is handed over.
#[repr(C)]
pub struct Header {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub ring_capacity: AtomicU32,
}

/// Written by the server (the executive and the control thread) only.
#[repr(C, align(64))]
pub struct ServerLine {
    /// The futex word: the number of releases so far (bumped at each one,
    /// and to wake the client when the state changes).
    pub release_seq: AtomicU32,
    /// [`STATE_RUNNING`], [`STATE_DROPPED`] or [`STATE_STOPPED`].
    pub state: AtomicU32,
    /// The activation instant of the latest release (CLOCK_MONOTONIC, ns).
    pub activation_ns: AtomicU64,
    /// Activations not released because the client was still working.
    pub missed: AtomicU64,
    /// Samples the server has taken from the ring so far.
    pub ring_tail: AtomicU64,
}

/// Written by the client only.
#[repr(C, align(64))]
pub struct ClientLine {
    /// The release the client has finished (its `release_seq`): the client
    /// is busy while this differs from the server's count.
    pub done_seq: AtomicU32,
    /// Samples pushed into the ring so far.
    pub ring_head: AtomicU64,
    /// Samples the client could not push (ring full).
    pub dropped: AtomicU64,
}

/// One activation as the client saw it (CLOCK_MONOTONIC, ns).
#[repr(C)]
pub struct RingSample {
    pub activation_ns: AtomicU64,
    /// Where the work started (the return of `wait_next`).
    pub start_ns: AtomicU64,
    /// Where the work ended (the next `wait_next`, or `detach`).
    pub end_ns: AtomicU64,
    _reserved: AtomicU64,
}

/// A sample read back from the ring (values as the client wrote them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activation {
    pub activation_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The whole shared page.
#[repr(C)]
pub struct Page {
    pub header: Header,
    pub server: ServerLine,
    pub client: ClientLine,
    pub ring: [RingSample; RING_CAPACITY],
}

/// Bytes of the memfd: the page rounded up to whole 4 KiB pages.
pub const PAGE_BYTES: usize = std::mem::size_of::<Page>().div_ceil(4096) * 4096;

impl Page {
    /// Client: pushes one sample (never blocks; a full ring counts a drop).
    #[inline]
    pub fn push(&self, sample: Activation) {
        let head = self.client.ring_head.load(Ordering::Relaxed);
        let tail = self.server.ring_tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) >= RING_CAPACITY as u64 {
            self.client.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = &self.ring[(head % RING_CAPACITY as u64) as usize];
        slot.activation_ns
            .store(sample.activation_ns, Ordering::Relaxed);
        slot.start_ns.store(sample.start_ns, Ordering::Relaxed);
        slot.end_ns.store(sample.end_ns, Ordering::Relaxed);
        self.client
            .ring_head
            .store(head.wrapping_add(1), Ordering::Release);
    }

    /// Server: takes the samples pushed since `tail` (the server's own
    /// count, kept in its memory), at most `most` of them (the releases
    /// not accounted for yet: an honest client pushes one per release),
    /// and returns the new tail. A head the client moved backwards or
    /// ahead of its releases is not believed: only the newest `most` (at
    /// most one ring) are read, and what was skipped is lost to the
    /// client's own statistics only.
    pub fn drain(&self, tail: u64, most: u64, each: impl FnMut(Activation)) -> u64 {
        self.drain_to(tail, self.head(), most, each)
    }

    /// Server: how many samples the client has pushed so far. Read before
    /// what the samples are checked against (the executive's latest
    /// activation, the clock), then [`drain_to`](Self::drain_to) that
    /// head: every sample up to it was pushed after its activation was
    /// made and before those reads, so none is judged against values read
    /// before it existed.
    pub fn head(&self) -> u64 {
        self.client.ring_head.load(Ordering::Acquire)
    }

    /// Server: [`drain`](Self::drain) up to `head` (from [`head`](Self::head)).
    pub fn drain_to(
        &self,
        tail: u64,
        head: u64,
        most: u64,
        mut each: impl FnMut(Activation),
    ) -> u64 {
        let pending = head.wrapping_sub(tail).min(RING_CAPACITY as u64).min(most);
        let mut tail = head.wrapping_sub(pending);
        while tail != head {
            let slot = &self.ring[(tail % RING_CAPACITY as u64) as usize];
            each(Activation {
                activation_ns: slot.activation_ns.load(Ordering::Relaxed),
                start_ns: slot.start_ns.load(Ordering::Relaxed),
                end_ns: slot.end_ns.load(Ordering::Relaxed),
            });
            tail = tail.wrapping_add(1);
        }
        self.server.ring_tail.store(tail, Ordering::Release);
        tail
    }
}

/// A shared mapping of the page; unmapped when dropped.
pub struct Mapping {
    page: NonNull<Page>,
}

// SAFETY: the page holds atomics only; the mapping lives as long as the value.
unsafe impl Send for Mapping {}
// SAFETY: as above: every field is an atomic.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Server: a new sealed memfd with a fresh page in it (header written),
    /// mapped, and the fd to hand over. The seals forbid shrinking and
    /// growing it, so no client can truncate the page under the server
    /// (which would die of SIGBUS at its next access).
    pub fn create() -> io::Result<(Mapping, OwnedFd)> {
        // SAFETY: the name is a NUL-terminated literal.
        let raw = unsafe {
            libc::memfd_create(
                c"rtlab-exec-page".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(os_error("memfd_create"));
        }
        // SAFETY: raw is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain syscalls on our descriptor.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), PAGE_BYTES as libc::off_t) != 0 {
                return Err(os_error("ftruncate of the page"));
            }
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
            if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
                return Err(os_error("sealing the page"));
            }
        }
        let mapping = Mapping::map_raw(&fd)?;
        let header = &mapping.page().header;
        header
            .ring_capacity
            .store(RING_CAPACITY as u32, Ordering::Relaxed);
        header.version.store(LAYOUT_VERSION, Ordering::Relaxed);
        header.magic.store(MAGIC, Ordering::Release);
        Ok((mapping, fd))
    }

    /// Client: maps the page the server sent, after checking it cannot be
    /// shrunk, is large enough and has this layout.
    pub fn open(fd: &OwnedFd) -> io::Result<Mapping> {
        // SAFETY: plain syscalls on a descriptor we own.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(io::Error::other(
                "the executive's page is not sealed against shrinking",
            ));
        }
        // SAFETY: st is plain data filled in by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(os_error("fstat of the page"));
        }
        if (st.st_size as u64) < PAGE_BYTES as u64 {
            return Err(io::Error::other(format!(
                "the executive's page has {} bytes, expected {PAGE_BYTES}",
                st.st_size
            )));
        }
        let mapping = Mapping::map_raw(fd)?;
        let header = &mapping.page().header;
        let (magic, version) = (
            header.magic.load(Ordering::Acquire),
            header.version.load(Ordering::Relaxed),
        );
        if magic != MAGIC || version != LAYOUT_VERSION {
            return Err(io::Error::other(format!(
                "the executive's page has layout {version} (magic {magic:#x}), this library knows {LAYOUT_VERSION}"
            )));
        }
        Ok(mapping)
    }

    fn map_raw(fd: &OwnedFd) -> io::Result<Mapping> {
        // SAFETY: a new shared mapping of PAGE_BYTES of our descriptor.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error("mmap of the page"));
        }
        let page = NonNull::new(ptr.cast::<Page>()).ok_or_else(|| os_error("mmap"))?;
        Ok(Mapping { page })
    }

    pub fn page(&self) -> &Page {
        // SAFETY: mapped, page-aligned, PAGE_BYTES ≥ size_of::<Page>(), and
        // every field is an atomic valid for any bit pattern (a fresh memfd
        // is zeroed).
        unsafe { self.page.as_ref() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map_raw, unmapped once.
        unsafe { libc::munmap(self.page.as_ptr().cast(), PAGE_BYTES) };
    }
}

fn os_error(call: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{call}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_sealed_and_shared() {
        let (server, fd) = Mapping::create().unwrap();
        let client = Mapping::open(&fd).unwrap();
        // SAFETY: ftruncate on our descriptor; the seal must refuse it.
        let shrunk = unsafe { libc::ftruncate(fd.as_raw_fd(), 0) };
        assert_eq!(shrunk, -1, "a sealed page cannot be shrunk");
        client.page().server.missed.store(3, Ordering::Relaxed);
        assert_eq!(server.page().server.missed.load(Ordering::Relaxed), 3);
        assert_eq!(PAGE_BYTES % 4096, 0);
        assert!(std::mem::offset_of!(Page, client) - std::mem::offset_of!(Page, server) >= 64);
    }

    #[test]
    fn the_ring_counts_drops_and_the_server_never_reads_past_one_ring() {
        let (server, fd) = Mapping::create().unwrap();
        let client = Mapping::open(&fd).unwrap();
        for k in 0..RING_CAPACITY as u64 + 5 {
            client.page().push(Activation {
                activation_ns: k,
                start_ns: k + 1,
                end_ns: k + 2,
            });
        }
        assert_eq!(client.page().client.dropped.load(Ordering::Relaxed), 5);
        let mut seen = 0;
        let tail = server.page().drain(0, u64::MAX, |_| seen += 1);
        assert_eq!((seen, tail), (RING_CAPACITY, RING_CAPACITY as u64));
        // A hostile head far ahead: at most one ring is read.
        client
            .page()
            .client
            .ring_head
            .store(u64::MAX - 3, Ordering::Release);
        let mut seen = 0;
        server.page().drain(tail, u64::MAX, |_| seen += 1);
        assert_eq!(seen, RING_CAPACITY);
    }

    #[test]
    fn the_server_never_takes_more_samples_than_it_released() {
        let (server, fd) = Mapping::create().unwrap();
        let client = Mapping::open(&fd).unwrap();
        for k in 0..10 {
            client.page().push(Activation {
                activation_ns: k,
                ..Activation::default()
            });
        }
        // Three releases: a head 10 ahead is a lie; the newest 3 are read.
        let mut seen = Vec::new();
        let tail = server.page().drain(0, 3, |s| seen.push(s.activation_ns));
        assert_eq!((seen, tail), (vec![7, 8, 9], 10));
        let mut again = 0;
        assert_eq!(server.page().drain(tail, 5, |_| again += 1), 10);
        assert_eq!(again, 0, "nothing new pushed");
    }
}
