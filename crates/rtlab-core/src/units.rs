//! Durations as people type them (`10s`, `200us`, `1.5ms`) and as rtlab
//! prints them (microseconds with ns precision, unit always shown).

use std::fmt;

/// A duration given on the command line or in a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration '{input}': {reason} (examples: 1ms, 200us, 10s, 5m, 1.5ms, 250000ns, 2d12h)"
)]
pub struct DurationError {
    pub input: String,
    pub reason: &'static str,
}

const NS_PER_S: u64 = 1_000_000_000;
const S_PER_DAY: u64 = 86_400;

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    // Greek small mu (U+03BC): what many keyboards and input methods give
    // for the micro sign (U+00B5).
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", NS_PER_S),
    ("m", 60 * NS_PER_S),
    ("min", 60 * NS_PER_S),
    ("h", 3_600 * NS_PER_S),
    // cyclictest's -D takes `d` too: week-long soak tests are written in days.
    ("d", S_PER_DAY * NS_PER_S),
];

/// Parses `10s`, `200us`, `1.5ms`, `5m`, `1d` into nanoseconds, and sums of
/// them from the largest unit down (`2d12h`, `1h30m`, `1m30.5s`). A bare
/// number is refused: a unit is always required, because `-i 1000` meaning
/// µs in cyclictest and ms elsewhere is exactly the ambiguity users trip
/// over. The one duration parser: every flag, campaign key and file field
/// that takes a duration comes here.
pub fn parse_duration_ns(input: &str) -> Result<u64, DurationError> {
    let err = |reason| DurationError {
        input: input.to_string(),
        reason,
    };
    let mut rest = input.trim();
    if rest.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    if rest.is_empty() {
        return Err(err("it must start with a number"));
    }
    let mut total: u64 = 0;
    let mut last_scale = u64::MAX;
    while !rest.is_empty() {
        let (ns, scale, after) = parse_part(rest).map_err(err)?;
        // `30m1h`, `1s1s`: a typo more often than a sum meant.
        if scale >= last_scale {
            return Err(err(
                "each part needs a smaller unit than the one before (e.g. 2d12h, 1h30m)",
            ));
        }
        last_scale = scale;
        total = total.checked_add(ns).ok_or_else(|| err(TOO_LARGE))?;
        rest = after.trim_start();
    }
    Ok(total)
}

/// Why a duration beyond a u64 of nanoseconds is refused.
const TOO_LARGE: &str =
    "too large: at most 213503d23h34m33.709551615s fit in 64 bits of nanoseconds";

/// One `<number><unit>` at the start of `text`: its ns, its unit's scale
/// and what follows it.
fn parse_part(text: &str) -> Result<(u64, u64, &str), &'static str> {
    let unit_at = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or("a unit is required")?;
    let (number, after) = text.split_at(unit_at);
    // `.ms`, `.s`: a decimal point is not a number (it read as 0).
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return Err("it must start with a number");
    }
    // `1.ms`: a typo more often than a way of writing 1 ms.
    if number.ends_with('.') {
        return Err("a decimal point must be followed by a digit");
    }
    let unit_len = after
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(after.len());
    let (unit, after) = after.split_at(unit_len);
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, scale)| *scale)
        .ok_or("unknown unit (ns, us or µs, ms, s, m or min, h, d)")?;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') {
        return Err("more than one decimal point");
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| TOO_LARGE)?
    };
    let mut ns = whole.checked_mul(scale).ok_or(TOO_LARGE)?;
    // Decimal fraction in integer arithmetic, so "1.000001ms" is exact.
    let mut unit_fraction = scale;
    for digit in frac.bytes() {
        unit_fraction /= 10;
        if unit_fraction == 0 && digit != b'0' {
            return Err("finer than 1 ns");
        }
        ns = ns
            .checked_add(u64::from(digit - b'0') * unit_fraction)
            .ok_or(TOO_LARGE)?;
    }
    Ok((ns, scale, after))
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
    // A plain decimal number: `1h2khz` must not read as a sum of durations.
    if !number
        .trim()
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.')
    {
        return Err(err("it must be a positive number with at most 6 decimals"));
    }
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
/// a human: `1ms`, `250us`, `1.5s`, `10s`; from an hour on, days, hours,
/// minutes and whole seconds (`1h30m`, `2d12h`, `1d5s`), which
/// [`parse_duration_ns`] reads back.
pub fn human_duration(ns: u64) -> String {
    if ns >= 3_600 * NS_PER_S {
        return days_hours_minutes(ns);
    }
    let (scale, unit) = match ns {
        n if n >= NS_PER_S => (NS_PER_S, "s"),
        n if n >= 1_000_000 => (1_000_000, "ms"),
        n if n >= 1_000 => (1_000, "us"),
        _ => return format!("{ns}ns"),
    };
    let value = ns as f64 / scale as f64;
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// `ns` as its non-zero days, hours, minutes and seconds, the fraction of
/// a second dropped (under 0.03 % of the hour this is used from).
fn days_hours_minutes(ns: u64) -> String {
    use std::fmt::Write;
    let mut seconds = ns / NS_PER_S;
    let mut text = String::new();
    for (size, unit) in [(S_PER_DAY, "d"), (3_600, "h"), (60, "m"), (1, "s")] {
        let count = seconds / size;
        seconds %= size;
        if count > 0 {
            let _ = write!(text, "{count}{unit}");
        }
    }
    text
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
        for bad in [
            "4000", "0hz", "khz", "3hz", "-1hz", "1.2.3khz", "fast", "1h2khz", "1s5hz",
        ] {
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
        assert_eq!(reason("5124096h"), TOO_LARGE);
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

    #[test]
    fn days_are_read_alone_and_in_sums() {
        const DAY_NS: u64 = 86_400 * NS_PER_S;
        assert_eq!(parse_duration_ns("1d"), Ok(DAY_NS));
        assert_eq!(parse_duration_ns("1d"), parse_duration_ns("86400s"));
        assert_eq!(parse_duration_ns("2d12h"), Ok(2 * DAY_NS + DAY_NS / 2));
        assert_eq!(parse_duration_ns("0.5d"), Ok(DAY_NS / 2));
        assert_eq!(parse_duration_ns("1h30m"), Ok(5_400 * NS_PER_S));
        assert_eq!(parse_duration_ns("1m30.5s"), Ok(90_500_000_000));
        assert_eq!(parse_duration_ns("1d 2h"), Ok(DAY_NS + 7_200 * NS_PER_S));
        assert_eq!(parse_duration_ns("1s500ms"), Ok(1_500_000_000));
        // The most a u64 of ns holds, written out, and one ns more.
        assert_eq!(
            parse_duration_ns("213503d23h34m33.709551615s"),
            Ok(u64::MAX)
        );
        let reason = |s| parse_duration_ns(s).unwrap_err().reason;
        assert_eq!(reason("213503d23h34m33.709551616s"), TOO_LARGE);
        assert_eq!(reason("213504d"), TOO_LARGE);
        assert_eq!(reason("99999999999d"), TOO_LARGE);
        assert!(TOO_LARGE.contains("213503d"), "the limit is said");
    }

    #[test]
    fn sums_go_from_the_largest_unit_down_and_each_part_has_a_unit() {
        let reason = |s| parse_duration_ns(s).unwrap_err().reason;
        let order = "each part needs a smaller unit than the one before (e.g. 2d12h, 1h30m)";
        assert_eq!(reason("30m1h"), order);
        assert_eq!(reason("1s1s"), order);
        assert_eq!(reason("1m1min"), order);
        assert_eq!(reason("1h30"), "a unit is required");
        assert_eq!(reason("1d.h"), "it must start with a number");
        assert_eq!(
            reason("2d12x"),
            "unknown unit (ns, us or µs, ms, s, m or min, h, d)"
        );
        assert!(parse_duration_ns("-1d").is_err());
    }

    #[test]
    fn long_durations_print_in_days_hours_minutes_and_read_back() {
        const DAY_NS: u64 = 86_400 * NS_PER_S;
        assert_eq!(human_duration(DAY_NS), "1d");
        assert_eq!(human_duration(2 * DAY_NS + DAY_NS / 2), "2d12h");
        assert_eq!(human_duration(5_400 * NS_PER_S), "1h30m");
        assert_eq!(human_duration(3_600 * NS_PER_S), "1h");
        assert_eq!(human_duration(DAY_NS + 5 * NS_PER_S + 999), "1d5s");
        assert_eq!(human_duration(59 * 60 * NS_PER_S), "3540s");
        assert_eq!(human_duration(u64::MAX), "213503d23h34m33s");
        for ns in [3_600 * NS_PER_S, DAY_NS, 7 * DAY_NS + 1, u64::MAX / 3] {
            let back = parse_duration_ns(&human_duration(ns)).unwrap();
            assert!(ns - back < NS_PER_S, "{ns} printed {}", human_duration(ns));
        }
    }
}
