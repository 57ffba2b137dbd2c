//! The mutations: byte-level ones that find what a parser forgot, and
//! value-level ones that reach the checks behind the syntax (a number
//! replaced by 2^64, a year by 10000, a word by a 64 Ki-char run).

use crate::rng::Rng;

/// Values at the edges of the types parsers convert into, and the dates
/// either side of the 4-digit year.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "-65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "4611686018427387904",
    "4611686018427387905",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "1e309",
    "-1e309",
    "1e-320",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "0.0000001",
    "1.5",
    ".5",
    "5.",
    "1.2.3",
    "9999",
    "10000",
    "99999",
    "253402300799",
    "253402300800",
    "-62135596800",
    "8210298412799",
];

/// Texts that break assumptions: dates past year 9999, control and
/// format characters, invalid and truncated UTF-8, quotes and escapes.
const SPECIALS: &[&[u8]] = &[
    b"9999-12-31T23:59:59Z",
    b"10000-01-01T00:00:00Z",
    b"+275760-09-13T00:00:00Z",
    b"0000-01-01T00:00:00Z",
    b"Fri, 31 Dec 9999 23:59:59 +0000",
    b"Sat, 01 Jan 10000 00:00:00 +0000",
    b"\0",
    b"\x01",
    b"\x1b[31m",
    b"\x7f",
    b"\r",
    b"\r\n",
    b"\t",
    b"\n\n",
    "\u{85}".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{feff}".as_bytes(),
    "\u{202e}".as_bytes(),
    "µ".as_bytes(),
    "\u{3bc}".as_bytes(),
    "é".as_bytes(),
    "😀".as_bytes(),
    b"\xff",
    b"\xfe\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\"",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"'",
    b"#",
    b"=",
    b",",
    b":",
    b"*",
    b"?",
    b"[",
    b"]",
    b"{",
    b"}",
    b"[[",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"\"\"",
    b"-",
    b"--",
    b"%",
    b"%n%s",
    b"../../etc/passwd",
];

/// What a long run or a deep nesting is made of.
const RUNS: &[&str] = &["a", "9", " ", "µ", "\"", ",", "\n", "x=", "0 "];
const NESTS: &[(&str, &str)] = &[
    ("[", "]"),
    ("{\"a\":", "}"),
    ("a.", "b=1"),
    ("[[", "]]"),
    ("(", ")"),
    ("\"", "\""),
];

/// Mutates inputs of one target. `dictionary` holds the target's own
/// words (keys, keywords, units), taken from its seeds.
#[derive(Debug, Clone)]
pub struct Mutator {
    pub dictionary: Vec<Vec<u8>>,
    /// Inputs are cut to this many bytes.
    pub max_len: usize,
}

impl Mutator {
    /// A mutator whose dictionary is the words of `seeds`: runs of
    /// letters, digits, `_`, `-`, `.` (at most 2048 of them).
    pub fn from_seeds(seeds: &[Vec<u8>], max_len: usize) -> Mutator {
        let mut words: Vec<Vec<u8>> = Vec::new();
        for seed in seeds {
            for word in seed.split(|b| !(b.is_ascii_alphanumeric() || b"_-.".contains(b))) {
                if !word.is_empty() && word.len() <= 40 {
                    words.push(word.to_vec());
                }
            }
        }
        words.sort();
        words.dedup();
        words.truncate(2048);
        Mutator {
            dictionary: words,
            max_len,
        }
    }

    /// One to four mutations of `input`; `others` are inputs to splice from.
    pub fn mutate(&self, rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..rng.between(1, 4) {
            self.mutate_once(rng, &mut out, others);
        }
        out.truncate(self.max_len);
        out
    }

    fn mutate_once(&self, rng: &mut Rng, out: &mut Vec<u8>, others: &[Vec<u8>]) {
        let at = rng.below(out.len() + 1);
        match rng.below(100) {
            // Bit flip.
            0..=9 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            // Byte set to anything.
            10..=15 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next_u64() as u8;
            }
            // Random bytes inserted.
            16..=21 => {
                let n = rng.between(1, 8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(at..at, bytes);
            }
            // A range deleted.
            22..=29 if !out.is_empty() => {
                let start = rng.below(out.len());
                let len = rng.between(1, (out.len() - start).min(64));
                out.drain(start..start + len);
            }
            // A range copied elsewhere.
            30..=34 if !out.is_empty() => {
                let start = rng.below(out.len());
                let len = rng.between(1, (out.len() - start).min(256));
                let chunk = out[start..start + len].to_vec();
                out.splice(at..at, chunk);
            }
            // A word of the target's own.
            35..=44 if !self.dictionary.is_empty() => {
                let word = rng.pick(&self.dictionary).clone();
                out.splice(at..at, word);
            }
            // A number replaced by an edge value (or one inserted).
            45..=57 => {
                let number = rng.pick(NUMBERS).as_bytes().to_vec();
                match digit_run(out, rng.below(out.len() + 1)) {
                    Some(range) => {
                        out.splice(range, number);
                    }
                    None => {
                        out.splice(at..at, number);
                    }
                }
            }
            // A special text.
            58..=67 => {
                let special = rng.pick(SPECIALS).to_vec();
                out.splice(at..at, special);
            }
            // Splice: this input's head, another's tail.
            68..=74 if !others.is_empty() => {
                let other = rng.pick(others);
                let from = rng.below(other.len() + 1);
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
            // A line of another input inserted at a line start.
            75..=79 if !others.is_empty() => {
                let other = rng.pick(others);
                if let Some(line) = random_line(rng, other) {
                    let at = line_start(out, at);
                    out.splice(at..at, line.iter().copied().chain([b'\n']));
                }
            }
            // A line duplicated or deleted.
            80..=85 => {
                if let Some(range) = line_range(out, at) {
                    if rng.one_in(2) {
                        out.drain(range);
                    } else {
                        let line = out[range.clone()].to_vec();
                        out.splice(range.start..range.start, line);
                    }
                }
            }
            // Cut short.
            86..=88 => out.truncate(at),
            // A run of 64 Ki and more characters (a table cell, a name, a
            // number no type holds).
            89..=92 => {
                // Half the time a piece of the input itself: `0-8191,`
                // thousands of times is what a list parser must survive.
                let own;
                let unit = if !out.is_empty() && rng.one_in(2) {
                    let start = rng.below(out.len());
                    let len = rng.between(1, (out.len() - start).min(16));
                    own = out[start..start + len].to_vec();
                    &own[..]
                } else {
                    rng.pick(RUNS).as_bytes()
                };
                let n = rng.between(65_536 / unit.len(), 70_000 / unit.len());
                let run: Vec<u8> = unit.iter().copied().cycle().take(unit.len() * n).collect();
                out.splice(at..at, run);
            }
            // Deep nesting.
            93..=95 => {
                let (open, close) = *rng.pick(NESTS);
                let depth = rng.between(100, 20_000);
                let mut nest = open.repeat(depth).into_bytes();
                if rng.one_in(2) {
                    nest.extend(close.repeat(depth).into_bytes());
                }
                out.splice(at..at, nest);
            }
            // A byte repeated a little (a doubled quote, separator, sign).
            _ if !out.is_empty() => {
                let i = rng.below(out.len());
                let b = out[i];
                out.splice(i..i, std::iter::repeat_n(b, rng.between(1, 16)));
            }
            _ => out.push(rng.next_u64() as u8),
        }
    }
}

/// The run of digits (with a sign or decimal point) around or after `at`.
fn digit_run(bytes: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    let is_num = |b: u8| b.is_ascii_digit() || b == b'.';
    let start = (at..bytes.len()).find(|&i| bytes[i].is_ascii_digit())?;
    let mut s = start;
    while s > 0 && is_num(bytes[s - 1]) {
        s -= 1;
    }
    if s > 0 && bytes[s - 1] == b'-' {
        s -= 1;
    }
    let mut e = start;
    while e < bytes.len() && is_num(bytes[e]) {
        e += 1;
    }
    Some(s..e)
}

fn line_start(bytes: &[u8], at: usize) -> usize {
    bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

/// The line containing `at`, with its newline.
fn line_range(bytes: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    if bytes.is_empty() {
        return None;
    }
    let at = at.min(bytes.len() - 1);
    let start = line_start(bytes, at);
    let end = bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| at + i + 1);
    Some(start..end)
}

fn random_line<'a>(rng: &mut Rng, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let line = *rng.pick(&lines);
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_bounded() {
        let seeds = vec![b"module tick mark\nevents\n0us tick\n".to_vec()];
        let m = Mutator::from_seeds(&seeds, 1000);
        assert!(m.dictionary.contains(&b"tick".to_vec()));
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..500 {
            let x = m.mutate(&mut a, &seeds[0], &seeds);
            assert_eq!(x, m.mutate(&mut b, &seeds[0], &seeds));
            assert!(x.len() <= 1000);
        }
    }

    #[test]
    fn numbers_are_found_whole() {
        assert_eq!(digit_run(b"x=-12.5s", 0), Some(2..7));
        assert_eq!(digit_run(b"abc", 0), None);
        assert_eq!(line_range(b"a\nbc\nd", 3), Some(2..5));
    }
}
