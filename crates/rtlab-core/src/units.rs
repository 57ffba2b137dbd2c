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
    // Greek small mu (U+03BC): what many keyboards and input methods give
    // for the micro sign (U+00B5).
    ("\u{3bc}s", 1_000),
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
    if s.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| err("a unit is required"))?;
    let (number, unit) = s.split_at(split);
    // `.ms`, `.s`: a decimal point is not a number (it read as 0).
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return Err(err("it must start with a number"));
    }
    // `1.ms`: a typo more often than a way of writing 1 ms.
    if number.ends_with('.') {
        return Err(err("a decimal point must be followed by a digit"));
    }
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, scale)| *scale)
        .ok_or_else(|| err("unknown unit (ns, us or µs, ms, s, m or min, h)"))?;
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

/// A rate given on the command line or in a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rate '{input}': {reason} (examples: 4khz, 1000hz, 2.5khz)")]
pub struct RateError {
    pub input: String,
    pub reason: &'static str,
}

/// Parses a rate (`4khz`, `1000Hz`, `2.5kHz`) into the period it means, in
/// whole nanoseconds. The unit is required, as for durations; a rate whose
/// period is not a whole number of ns is refused rather than rounded.
pub fn parse_rate_period_ns(input: &str) -> Result<u64, RateError> {
    let err = |reason| RateError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = s.strip_suffix("mhz") {
        (n, 1_000_000u64)
    } else if let Some(n) = s.strip_suffix("khz") {
        (n, 1_000)
    } else if let Some(n) = s.strip_suffix("hz") {
        (n, 1)
    } else {
        return Err(err("a unit is required (hz, khz, mhz)"));
    };
    // Reuse the exact decimal reading of durations: `2.5` in "ns" units
    // gives 2 ns and 500 ps would be refused, so scale to milli-units first.
    let milli_hz = parse_duration_ns(&format!("{}ms", number.trim()))
        .map_err(|_| err("it must be a positive number with at most 6 decimals"))?
        .checked_mul(scale)
        .ok_or_else(|| err("too large"))?;
    // milli_hz = rate in Hz × 1e6 (the "ms" scale), so period = 1e15 / milli_hz.
    if milli_hz == 0 {
        return Err(err("it must be above 0"));
    }
    const NS_PER_S_TIMES_1E6: u64 = 1_000_000_000 * 1_000_000;
    if !NS_PER_S_TIMES_1E6.is_multiple_of(milli_hz) {
        return Err(err(
            "its period is not a whole number of nanoseconds; give --interval instead",
        ));
    }
    Ok(NS_PER_S_TIMES_1E6 / milli_hz)
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

/// A duration written exactly, in the largest unit it reaches, with as
/// many decimals as it needs (`10ms`, `2.5ms`, `1.000001ms`, `250ns`):
/// what rtlab writes into files it reads back, where [`human_duration`]'s
/// rounding would change the value ([`parse_duration_ns`] gives `ns` back).
pub fn exact_duration(ns: u64) -> String {
    const SCALES: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    let Some((scale, unit)) = SCALES.into_iter().find(|(scale, _)| ns >= *scale) else {
        return format!("{ns}ns");
    };
    let (whole, fraction) = (ns / scale, ns % scale);
    if fraction == 0 {
        return format!("{whole}{unit}");
    }
    // scale + fraction is 1 followed by the fraction's digits, zeros
    // before it included ("1007" for 7 µs of a ms).
    let digits = (scale + fraction).to_string();
    format!("{whole}.{}{unit}", digits[1..].trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_durations_read_back_to_the_same_ns() {
        for (ns, text) in [
            (0, "0ns"),
            (250, "250ns"),
            (300_000, "300us"),
            (1_500_000, "1.5ms"),
            (1_000_001, "1.000001ms"),
            (10_000_000_000, "10s"),
            (1_000_000_007, "1.000000007s"),
        ] {
            assert_eq!(exact_duration(ns), text);
            assert_eq!(parse_duration_ns(text), Ok(ns), "{text}");
        }
    }

    #[test]
    fn rates_become_exact_periods() {
        assert_eq!(parse_rate_period_ns("4khz"), Ok(250_000));
        assert_eq!(parse_rate_period_ns("4kHz"), Ok(250_000));
        assert_eq!(parse_rate_period_ns("1000Hz"), Ok(1_000_000));
        assert_eq!(parse_rate_period_ns("2.5khz"), Ok(400_000));
        assert_eq!(parse_rate_period_ns("1MHz"), Ok(1_000));
        assert_eq!(parse_rate_period_ns("1hz"), Ok(1_000_000_000));
        for bad in ["4000", "0hz", "khz", "3hz", "-1hz", "1.2.3khz", "fast"] {
            assert!(parse_rate_period_ns(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("200us"), Ok(200_000));
        assert_eq!(parse_duration_ns("200µs"), Ok(200_000));
        assert_eq!(parse_duration_ns("200\u{3bc}s"), Ok(200_000));
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
            ".ms",
            ".s",
            "ms",
            "1.s",
            "1.ms",
            "99999999999999999999s",
            "5124096h",
        ] {
            let err = parse_duration_ns(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("'{bad}'")), "{err}");
        }
    }

    #[test]
    fn negative_and_number_less_durations_say_why() {
        let reason = |s| parse_duration_ns(s).unwrap_err().reason;
        assert_eq!(reason("-1s"), "negative durations are not allowed");
        assert_eq!(reason(" -0.5ms"), "negative durations are not allowed");
        assert_eq!(reason(".ms"), "it must start with a number");
        assert_eq!(reason(".s"), "it must start with a number");
        assert_eq!(reason("1.s"), "a decimal point must be followed by a digit");
        assert_eq!(reason("5124096h"), "too large");
        assert_eq!(
            parse_duration_ns("5124095h"),
            Ok(5_124_095 * 3_600_000_000_000)
        );
        assert_eq!(parse_duration_ns("0.5s"), Ok(500_000_000));
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
