//! `--filter`: tcpdump's words for UDP datagrams, joined by `and`.

use std::net::SocketAddr;

/// Which datagrams to keep: tcpdump's words for UDP, joined by `and`:
/// `[src|dst] port N`, `[src|dst] host ADDR`, `udp` (every term ANDed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Port { dir: Dir, port: u16 },
    Host { dir: Dir, addr: std::net::IpAddr },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Src,
    Dst,
    Either,
}

const EXPECTED: &str = "`udp`, `[src|dst] port N` or `[src|dst] host ADDR`";

impl Filter {
    /// Parses `--filter`; the error says which word and what was expected.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut terms = Vec::new();
        let mut at = 0;
        let word = |at: usize| words.get(at).copied();
        let place = |at: usize| format!("word {} ", at + 1);
        loop {
            let Some(first) = word(at) else {
                return Err(if words.is_empty() {
                    format!("an empty filter: expected {EXPECTED}")
                } else {
                    format!(
                        "{}: the filter ends after `and`: expected {EXPECTED}",
                        place(at)
                    )
                });
            };
            let (dir, key_at) = match first {
                "src" => (Dir::Src, at + 1),
                "dst" => (Dir::Dst, at + 1),
                _ => (Dir::Either, at),
            };
            match (dir, word(key_at)) {
                (Dir::Either, Some("udp")) => at = key_at + 1,
                (_, Some("port")) => {
                    let value = word(key_at + 1).ok_or_else(|| {
                        format!("{}`port`: expected a port number after it", place(key_at))
                    })?;
                    let port = value.parse::<u16>().map_err(|_| {
                        format!(
                            "{}`{value}`: expected a port number, 0-65535",
                            place(key_at + 1)
                        )
                    })?;
                    terms.push(Term::Port { dir, port });
                    at = key_at + 2;
                }
                (_, Some("host")) => {
                    let value = word(key_at + 1).ok_or_else(|| {
                        format!("{}`host`: expected an address after it", place(key_at))
                    })?;
                    let addr = value.parse().map_err(|_| {
                        format!(
                            "{}`{value}`: expected an IPv4 or IPv6 address (names are not looked up)",
                            place(key_at + 1)
                        )
                    })?;
                    terms.push(Term::Host { dir, addr });
                    at = key_at + 2;
                }
                (_, Some(other)) => {
                    let expected = if dir == Dir::Either {
                        EXPECTED
                    } else {
                        "`port N` or `host ADDR`"
                    };
                    return Err(format!("{}`{other}`: expected {expected}", place(key_at)));
                }
                (_, None) => {
                    return Err(format!(
                        "{}`{first}`: expected `port N` or `host ADDR` after it",
                        place(at)
                    ))
                }
            }
            match word(at) {
                None => return Ok(Filter { terms }),
                Some("and" | "&&") => at += 1,
                Some(other) => {
                    return Err(format!(
                        "{}`{other}`: expected `and` (terms are joined by `and` only)",
                        place(at)
                    ))
                }
            }
        }
    }

    pub fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        self.terms.iter().all(|term| match *term {
            Term::Port { dir, port } => either(dir, src, dst, |a| a.port() == port),
            Term::Host { dir, addr } => either(dir, src, dst, |a| a.ip() == addr),
        })
    }
}

/// Whether `test` holds for the end(s) `dir` names.
fn either(dir: Dir, src: SocketAddr, dst: SocketAddr, test: impl Fn(SocketAddr) -> bool) -> bool {
    match dir {
        Dir::Src => test(src),
        Dir::Dst => test(dst),
        Dir::Either => test(src) || test(dst),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_and_match() {
        let f = Filter::parse("udp and dst port 7000 and src host 10.0.0.1").unwrap();
        assert_eq!(f.terms.len(), 2);
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(f.matches(a("10.0.0.1:5000"), a("10.0.0.2:7000")));
        assert!(!f.matches(a("10.0.0.3:5000"), a("10.0.0.2:7000")));
        assert!(!f.matches(a("10.0.0.1:7000"), a("10.0.0.2:5000")));
        let v6 = Filter::parse("host ::1 && port 53").unwrap();
        assert!(v6.matches(a("[::1]:53"), a("[::2]:9")));
        assert!(Filter::parse("udp")
            .unwrap()
            .matches(a("1.1.1.1:1"), a("2.2.2.2:2")));
    }

    #[test]
    fn errors_name_the_word_and_what_was_expected() {
        let e = |t: &str| Filter::parse(t).unwrap_err();
        assert_eq!(e("port x"), "word 2 `x`: expected a port number, 0-65535");
        assert!(
            e("tcp").starts_with("word 1 `tcp`: expected `udp`"),
            "{}",
            e("tcp")
        );
        assert!(e("udp or port 1").starts_with("word 2 `or`: expected `and`"));
        assert!(e("host example.com").contains("names are not looked up"));
        assert!(e("udp and").contains("ends after `and`"));
        assert!(e("src").contains("after it"));
        assert!(e("src udp").starts_with("word 2 `udp`: expected `port N` or `host ADDR`"));
        assert!(e("").contains("empty"));
    }
}
