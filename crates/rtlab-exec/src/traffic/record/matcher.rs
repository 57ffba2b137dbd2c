//! Stamps' sequence numbers → lost, duplicate and reordered datagrams, in
//! bounded memory whatever a peer sends: a sliding bitmap of
//! [`WINDOW`] sequences around the highest seen. A sequence below the
//! window cannot be told a duplicate from a late first copy: it is
//! counted as such (`outside`), and as reordered (a higher one came
//! first). Nothing is ever sized by a peer's number, and every step is
//! checked arithmetic: sequences near u64::MAX, going backwards or
//! jumping by 2^63 only move the window.

/// Sequences tracked: 2^20 (a 128 KiB bitmap), 21 s of a 50 kpps stream.
pub const WINDOW: u64 = 1 << 20;

/// What one sequence was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Its first copy (`late`: after a higher sequence).
    New {
        late: bool,
    },
    Duplicate,
    /// Below the window: too old to tell.
    Outside,
}

/// The sequences of one stream seen so far.
#[derive(Debug)]
pub struct Matcher {
    bits: Vec<u64>,
    /// The lowest sequence the window holds.
    base: u64,
    /// Lowest and highest sequences seen (None before the first).
    range: Option<(u64, u64)>,
    pub distinct: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub outside: u64,
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher {
            bits: vec![0; (WINDOW / 64) as usize],
            base: 0,
            range: None,
            distinct: 0,
            duplicates: 0,
            reordered: 0,
            outside: 0,
        }
    }
}

impl Matcher {
    pub fn see(&mut self, sequence: u64) -> Seen {
        let Some((lowest, highest)) = self.range else {
            // Room below the first for what a reordering delivers later.
            self.base = sequence.saturating_sub(WINDOW / 2);
            self.range = Some((sequence, sequence));
            self.set(sequence);
            self.distinct = 1;
            return Seen::New { late: false };
        };
        if sequence < self.base {
            self.outside += 1;
            self.reordered += 1;
            return Seen::Outside;
        }
        if sequence - self.base >= WINDOW {
            self.slide_to(sequence - (WINDOW - 1));
        }
        if self.is_set(sequence) {
            self.duplicates += 1;
            return Seen::Duplicate;
        }
        self.set(sequence);
        self.distinct += 1;
        let late = sequence < highest;
        if late {
            self.reordered += 1;
        }
        self.range = Some((lowest.min(sequence), highest.max(sequence)));
        Seen::New { late }
    }

    /// Sequences between the lowest and the highest seen that never came
    /// (those below the window counted as never come).
    pub fn lost(&self) -> u64 {
        self.range.map_or(0, |(lowest, highest)| {
            (highest - lowest)
                .saturating_add(1)
                .saturating_sub(self.distinct)
        })
    }

    /// The lowest and the highest sequence seen.
    pub fn range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// Moves the window's base up to `base`, forgetting what falls below.
    fn slide_to(&mut self, base: u64) {
        let shift = base - self.base;
        if shift >= WINDOW {
            self.bits.fill(0);
        } else {
            for sequence in self.base..base {
                self.clear(sequence);
            }
        }
        self.base = base;
    }

    fn slot(sequence: u64) -> (usize, u64) {
        let at = sequence % WINDOW;
        ((at / 64) as usize, 1 << (at % 64))
    }

    fn is_set(&self, sequence: u64) -> bool {
        let (word, bit) = Self::slot(sequence);
        self.bits[word] & bit != 0
    }

    fn set(&mut self, sequence: u64) {
        let (word, bit) = Self::slot(sequence);
        self.bits[word] |= bit;
    }

    fn clear(&mut self, sequence: u64) {
        let (word, bit) = Self::slot(sequence);
        self.bits[word] &= !bit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_a_duplicate_and_a_swap_are_counted_once_each() {
        let mut m = Matcher::default();
        // 0..10 without 3, 5 twice, 7 and 8 swapped.
        for s in [0, 1, 2, 4, 5, 5, 6, 8, 7, 9] {
            m.see(s);
        }
        assert_eq!((m.lost(), m.duplicates, m.reordered), (1, 1, 1));
        assert_eq!(m.distinct, 9);
        assert_eq!(m.range(), Some((0, 9)));
    }

    #[test]
    fn sequences_far_apart_move_the_window_and_are_told_apart() {
        let mut m = Matcher::default();
        assert_eq!(m.see(10), Seen::New { late: false });
        assert_eq!(m.see(5), Seen::New { late: true });
        assert_eq!(m.see(10 + WINDOW * 3), Seen::New { late: false });
        // Now far below the window: neither a duplicate nor new to tell.
        assert_eq!(m.see(10), Seen::Outside);
        assert_eq!(m.see(10 + WINDOW * 3), Seen::Duplicate);
        assert_eq!(m.see(10 + WINDOW * 3 - 1), Seen::New { late: true });
        assert_eq!(m.lost(), WINDOW * 3 + 5 + 1 - 4);
    }

    #[test]
    fn hostile_sequences_never_overflow_nor_grow() {
        let mut m = Matcher::default();
        for i in 0..10_000u64 {
            let s = match i % 4 {
                0 => 1 << 63,
                1 => 0,
                2 => u64::MAX,
                _ => u64::MAX - i,
            };
            m.see(s);
        }
        assert_eq!(m.bits.len(), (WINDOW / 64) as usize);
        // 0 came after 2^63: below the window, never the lowest.
        assert_eq!(m.range(), Some((1 << 63, u64::MAX)));
        assert_eq!(m.lost(), (1 << 63) - m.distinct);
        assert!(m.outside > 0 && m.duplicates > 0);
    }
}
