//! The server's per-source rate limit: a token bucket for each source,
//! exact (two sources never share a bucket, whatever their addresses), in
//! a table of fixed size allocated once, so the serving loop allocates
//! nothing and a flood of spoofed sources cannot grow the server.
//!
//! When the table is full, a new source takes the place of the source
//! seen least recently (LRU). That is fair to every source: an evicted
//! source starts again with a full bucket, so eviction can only loosen
//! its limit, never starve it; a source is evicted only after `capacity`
//! other sources were seen since its last request, and then loses nothing
//! if it was quiet for a refill time (burst / rate) since its bucket was
//! full again anyway. What an attacker with many spoofed sources gains is
//! a burst per address: per-source state cannot stop a distributed flood,
//! only keep it from taking another source's share.
//!
//! The table's index hashes with SipHash keyed at random per process
//! (`RandomState`, seeded by getrandom), so nobody can pick addresses that
//! pile onto one probe chain; each slot holds its source, so a hash
//! collision costs a probe, never a shared bucket.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// Requests per second each source may send, with a burst allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_second: u64,
    pub burst: u64,
}

impl RateLimit {
    /// The default: generous for any latency probe (sockperf's ping-pong
    /// included), a wall against a flood.
    pub const DEFAULT: RateLimit = RateLimit {
        per_second: 100_000,
        burst: 10_000,
    };
}

/// Sources the table holds at once: 64 bytes each, plus two index slots
/// of 4 (1.1 MiB in all).
pub(crate) const CAPACITY: usize = 16_384;

/// What a limit applies to: an IPv4 address, or an IPv6 /64 (the smallest
/// block a site or LAN is given: per address, one host would be 2^64
/// sources; hosts on one /64 LAN are one source). Ports do not count: a
/// host opens as many as it likes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Source(u128);

impl Source {
    pub(crate) fn of(ip: IpAddr) -> Source {
        // `::ffff:a.b.c.d` (a v4 client of a dual-stack socket) is a.b.c.d.
        match ip.to_canonical() {
            // Low 64 bits never all zero: apart from every IPv6 /64.
            IpAddr::V4(a) => Source(u128::from(u32::from(a)) | (0xffff << 32)),
            IpAddr::V6(a) => Source(u128::from(a) & !u128::from(u64::MAX)),
        }
    }
}

/// No entry (index) or no neighbour (recency list).
const NONE: u32 = u32::MAX;
const NANO: u128 = 1_000_000_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    source: Source,
    hash: u64,
    /// Tokens ×1e9, as of `last_ns`.
    tokens: u128,
    last_ns: u64,
    /// Neighbours in the recency list: seen just after and just before it.
    newer: u32,
    older: u32,
}

pub(crate) struct Limiter {
    limit: RateLimit,
    hasher: RandomState,
    /// Filled up to `capacity`, then reused in place.
    entries: Vec<Entry>,
    capacity: usize,
    /// Open addressing with linear probing: entry numbers, NONE where free.
    /// Twice the capacity or more, so chains stay short.
    index: Vec<u32>,
    mask: usize,
    /// Seen most and least recently.
    newest: u32,
    oldest: u32,
}

impl Limiter {
    pub(crate) fn new(limit: RateLimit) -> Limiter {
        Limiter::with_capacity(limit, CAPACITY)
    }

    pub(crate) fn with_capacity(limit: RateLimit, capacity: usize) -> Limiter {
        let capacity = capacity.clamp(1, NONE as usize - 1);
        let slots = (capacity * 2).next_power_of_two();
        Limiter {
            limit,
            hasher: RandomState::new(),
            entries: Vec::with_capacity(capacity),
            capacity,
            index: vec![NONE; slots],
            mask: slots - 1,
            newest: NONE,
            oldest: NONE,
        }
    }

    /// Sources held now (at most the capacity).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether `source` may have one more request at `now_ns`; takes its token.
    pub(crate) fn admit(&mut self, ip: IpAddr, now_ns: u64) -> bool {
        let source = Source::of(ip);
        let hash = self.hasher.hash_one(source);
        let entry = match self.find(source, hash) {
            Ok(at) => {
                let entry = self.index[at];
                self.unlink(entry);
                self.push_newest(entry);
                entry
            }
            Err(free) => self.insert(source, hash, free, now_ns),
        };
        let full = u128::from(self.limit.burst.max(1)) * NANO;
        let e = &mut self.entries[entry as usize];
        let elapsed = u128::from(now_ns.saturating_sub(e.last_ns));
        e.tokens = (e.tokens + elapsed * u128::from(self.limit.per_second)).min(full);
        e.last_ns = e.last_ns.max(now_ns);
        if e.tokens >= NANO {
            e.tokens -= NANO;
            true
        } else {
            false
        }
    }

    /// The index position holding `source`, or the free position where it
    /// would go.
    fn find(&self, source: Source, hash: u64) -> Result<usize, usize> {
        let mut at = hash as usize & self.mask;
        loop {
            match self.index[at] {
                NONE => return Err(at),
                e if self.entries[e as usize].source == source => return Ok(at),
                _ => at = (at + 1) & self.mask,
            }
        }
    }

    /// A new source, with a full bucket: in a new entry while there is
    /// room, else in place of the source seen least recently.
    fn insert(&mut self, source: Source, hash: u64, free: usize, now_ns: u64) -> u32 {
        let fresh = Entry {
            source,
            hash,
            tokens: u128::from(self.limit.burst.max(1)) * NANO,
            last_ns: now_ns,
            newer: NONE,
            older: NONE,
        };
        let (entry, free) = if self.entries.len() < self.capacity {
            self.entries.push(fresh);
            ((self.entries.len() - 1) as u32, free)
        } else {
            let victim = self.oldest;
            let old = self.entries[victim as usize];
            let at = self
                .find(old.source, old.hash)
                .expect("every entry is in the index");
            self.remove_at(at);
            self.unlink(victim);
            self.entries[victim as usize] = fresh;
            // Removal may have moved what followed: look again.
            let free = self
                .find(source, hash)
                .expect_err("a new source is not in the index");
            (victim, free)
        };
        self.index[free] = entry;
        self.push_newest(entry);
        entry
    }

    /// Frees an index position, moving back the entries of its chain that
    /// would no longer be found past the hole (no tombstones to pile up).
    fn remove_at(&mut self, at: usize) {
        let mut hole = at;
        let mut next = at;
        loop {
            next = (next + 1) & self.mask;
            let e = self.index[next];
            if e == NONE {
                break;
            }
            let home = self.entries[e as usize].hash as usize & self.mask;
            // Movable unless its home lies in (hole, next], cyclically.
            if next.wrapping_sub(home) & self.mask >= next.wrapping_sub(hole) & self.mask {
                self.index[hole] = e;
                hole = next;
            }
        }
        self.index[hole] = NONE;
    }

    fn unlink(&mut self, entry: u32) {
        let Entry { newer, older, .. } = self.entries[entry as usize];
        match newer {
            NONE => self.newest = older,
            n => self.entries[n as usize].older = older,
        }
        match older {
            NONE => self.oldest = newer,
            o => self.entries[o as usize].newer = newer,
        }
    }

    fn push_newest(&mut self, entry: u32) {
        let e = &mut self.entries[entry as usize];
        e.newer = NONE;
        e.older = self.newest;
        match self.newest {
            NONE => self.oldest = entry,
            n => self.entries[n as usize].newer = entry,
        }
        self.newest = entry;
    }

    /// Checks every invariant of the table (tests only).
    #[cfg(test)]
    fn check(&self) {
        let in_index = self.index.iter().filter(|&&e| e != NONE).count();
        assert_eq!(in_index, self.entries.len());
        for e in &self.entries {
            let at = self.find(e.source, e.hash).expect("found");
            assert_eq!(self.entries[self.index[at] as usize].source, e.source);
        }
        let mut seen = 0;
        let mut at = self.newest;
        let mut newer = NONE;
        while at != NONE {
            assert_eq!(self.entries[at as usize].newer, newer);
            newer = at;
            at = self.entries[at as usize].older;
            seen += 1;
        }
        assert_eq!(newer, self.oldest);
        assert_eq!(seen, self.entries.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const LIMIT: RateLimit = RateLimit {
        per_second: 1000,
        burst: 10,
    };

    fn v4(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn a_source_gets_its_burst_then_its_rate_and_no_other_source_shares_it() {
        let mut limiter = Limiter::new(LIMIT);
        let t0 = 5_000_000_000;
        let source = v4(1);
        let admitted = (0..50).filter(|_| limiter.admit(source, t0)).count();
        assert_eq!(admitted, 10, "the burst, then nothing at the same instant");
        // 1000/s: one more token per millisecond.
        assert!(limiter.admit(source, t0 + 1_000_000));
        assert!(!limiter.admit(source, t0 + 1_000_000));
        // Every other source still has its whole burst, collision or not.
        for n in 2..2000 {
            assert!(limiter.admit(v4(n), t0 + 1_000_000), "source {n}");
        }
        assert!(!limiter.admit(source, t0 + 1_000_000));
        limiter.check();
    }

    #[test]
    fn thousands_of_sources_keep_the_table_at_its_capacity() {
        let mut limiter = Limiter::with_capacity(LIMIT, 64);
        let t = 1_000_000_000;
        for n in 0..20_000 {
            limiter.admit(v4(n), t);
            assert!(limiter.len() <= 64);
        }
        assert_eq!(limiter.len(), 64);
        assert!(limiter.index.len() <= 128 && limiter.entries.capacity() == 64);
        // What docs/net-serve.md says the table of 16 384 takes.
        assert!(std::mem::size_of::<Entry>() <= 64);
        limiter.check();
    }

    #[test]
    fn a_flood_of_new_sources_neither_starves_nor_frees_the_sources_that_keep_sending() {
        // A source that sends once in fewer than `capacity` other sources
        // keeps its bucket: the flooder stays limited, the victim is answered.
        let capacity = 64;
        let mut limiter = Limiter::with_capacity(LIMIT, capacity);
        let (flooder, victim) = (v4(1_000_000), v4(2_000_000));
        let t = 1_000_000_000;
        let mut spoofed = 0;
        let mut flooder_admitted = 0;
        for round in 0..500 {
            for _ in 0..capacity / 2 {
                limiter.admit(v4(spoofed), t);
                spoofed += 1;
            }
            if limiter.admit(flooder, t) {
                flooder_admitted += 1;
            }
            if round % 10 == 0 {
                assert!(limiter.admit(victim, t), "round {round}");
            }
        }
        assert_eq!(
            flooder_admitted, 10,
            "the flooder got its burst and no more"
        );
        limiter.check();
    }

    #[test]
    fn the_index_stays_whole_through_evictions_and_returns() {
        // Sources come back after being evicted; a deterministic mix keeps
        // chains long (small table) and removals in the middle of them.
        let mut limiter = Limiter::with_capacity(LIMIT, 37);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for step in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            limiter.admit(v4((x % 100) as u32), step * 1000);
            if step % 997 == 0 {
                limiter.check();
            }
        }
        limiter.check();
    }

    /// Counts this thread's allocations (for the whole test binary: it
    /// only forwards to the system allocator).
    struct Counting;

    thread_local! {
        static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    // SAFETY: forwards every call to the system allocator unchanged.
    unsafe impl std::alloc::GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            unsafe { std::alloc::System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    #[test]
    fn admitting_allocates_nothing_and_chains_stay_short_through_churn() {
        let mut limiter = Limiter::new(LIMIT);
        let before = ALLOCATIONS.with(|n| n.get());
        // Three tables' worth of new sources (filling it, then evicting),
        // and sources coming back.
        for n in 0..3 * CAPACITY as u32 {
            limiter.admit(v4(n), u64::from(n) * 1000);
            limiter.admit(v4(n / 2), u64::from(n) * 1000);
        }
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        limiter.admit(v6, 1);
        assert_eq!(ALLOCATIONS.with(|n| n.get()), before, "admit allocated");
        // Probes to find each source (no tombstones pile up): linear
        // probing at half load averages 1.5.
        let probes: usize = limiter
            .entries
            .iter()
            .map(|e| {
                let at = limiter.find(e.source, e.hash).unwrap();
                (at.wrapping_sub(e.hash as usize) & limiter.mask) + 1
            })
            .sum();
        assert!(probes < 3 * limiter.len(), "{probes} probes");
        limiter.check();
    }

    #[test]
    fn sources_are_ipv4_addresses_and_ipv6_slash_64s() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a), Source::of(b));
        assert_ne!(Source::of(a), Source::of(c));
        let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 7).to_ipv6_mapped());
        assert_eq!(
            Source::of(mapped),
            Source::of(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)))
        );
        assert_ne!(
            Source::of(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            Source::of(IpAddr::V6(Ipv6Addr::UNSPECIFIED))
        );
        assert_ne!(
            Source::of("127.0.0.1".parse().unwrap()),
            Source::of("127.0.0.2".parse().unwrap())
        );
    }
}
