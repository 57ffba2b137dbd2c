//! Durations as people type them (`10s`, `200us`, `1.5ms`) and as rtlab
//! prints them (microseconds with ns precision, unit always shown).

use std::fmt;

/// A duration given on the command line or in a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration '{input}': {reason} (examples: 1ms, 200us, 10s, 5m, 1.5ms, 250000ns)")]
pub struct DurationError {
    pub input: String,
    pub reason: &'static str,
}

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses `10s`, `200us`, `1.5ms`, `5m` into nanoseconds. A bare number is
/// refused: a unit is always required, because `-i 1000` meaning µs in
/// cyclictest and ms elsewhere is exactly the ambiguity users trip over.
pub fn parse_duration_ns(input: &str) -> Result<u64, DurationError> {
    let err = |reason| DurationError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| err("a unit is required"))?;
    let (number, unit) = s.split_at(split);
    if number.is_empty() {
        return Err(err("it must start with a number"));
    }
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, scale)| *scale)
        .ok_or_else(|| err("unknown unit (ns, us, ms, s, m, h)"))?;
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if frac.contains('.') {
        return Err(err("more than one decimal point"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| err("number too large"))?
    };
    let mut ns = whole.checked_mul(scale).ok_or_else(|| err("too large"))?;
    // Decimal fraction in integer arithmetic, so "1.000001ms" is exact.
    let mut unit_fraction = scale;
    for digit in frac.bytes() {
        unit_fraction /= 10;
        if unit_fraction == 0 && digit != b'0' {
            return Err(err("finer than 1 ns"));
        }
        ns = ns
            .checked_add(u64::from(digit - b'0') * unit_fraction)
            .ok_or_else(|| err("too large"))?;
    }
    Ok(ns)
}

/// Nanoseconds shown as microseconds with all three decimals, e.g. `12.345`.
pub struct Micros(pub u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{}.{:03}", self.0 / 1000, self.0 % 1000);
        f.pad(&text)
    }
}

/// A duration in the largest unit that keeps it short and exact enough for
/// a human: `1ms`, `250us`, `1.5s`, `10s`.
pub fn human_duration(ns: u64) -> String {
    let (scale, unit) = match ns {
        n if n >= 1_000_000_000 => (1_000_000_000, "s"),
        n if n >= 1_000_000 => (1_000_000, "ms"),
        n if n >= 1_000 => (1_000, "us"),
        _ => return format!("{ns}ns"),
    };
    let value = ns as f64 / scale as f64;
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("200us"), Ok(200_000));
        assert_eq!(parse_duration_ns("200µs"), Ok(200_000));
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("10s"), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("5m"), Ok(300_000_000_000));
        assert_eq!(parse_duration_ns("2h"), Ok(7_200_000_000_000));
    }

    #[test]
    fn parses_decimals_exactly() {
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("1.000001ms"), Ok(1_000_001));
        assert_eq!(parse_duration_ns(".5s"), Ok(500_000_000));
        assert!(parse_duration_ns("1.0001us").is_err());
    }

    #[test]
    fn rejects_bad_input_naming_it() {
        for bad in [
            "",
            "10",
            "ms",
            "1.2.3ms",
            "10 parsecs",
            "-1ms",
            "99999999999999999999s",
        ] {
            let err = parse_duration_ns(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("'{bad}'")), "{err}");
        }
    }

    #[test]
    fn formats_micros_with_ns_precision() {
        assert_eq!(Micros(12_345).to_string(), "12.345");
        assert_eq!(Micros(7).to_string(), "0.007");
        assert_eq!(format!("{:>8}", Micros(1_000)), "   1.000");
    }

    #[test]
    fn human_durations_are_short() {
        assert_eq!(human_duration(1_000_000), "1ms");
        assert_eq!(human_duration(1_500_000_000), "1.5s");
        assert_eq!(human_duration(250_000), "250us");
        assert_eq!(human_duration(42), "42ns");
    }
}
