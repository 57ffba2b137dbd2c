//! Bad input found after argument parsing: reported like clap's own
//! usage errors, with exit code 2.

use std::fmt;

#[derive(Debug)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// `bail!` for bad input.
macro_rules! bad_input {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::input::InputError(format!($($arg)*))))
    };
}
pub(crate) use bad_input;

/// `--hist-max` (of `measure timer` and `export`) as the histfile's number
/// of 1 µs bins: a whole number of µs, at most
/// [`rtlab_report::export::HISTFILE_MAX_RANGE_US`]. A rule of cyclictest's
/// layout, not of the probe's.
pub fn hist_max_us(ns: u64) -> anyhow::Result<u64> {
    use rtlab_core::units::human_duration;
    if !ns.is_multiple_of(1000) {
        bad_input!(
            "--hist-max {}: the histfile has 1 µs bins, give a whole number of µs",
            human_duration(ns)
        );
    }
    if ns / 1000 > rtlab_report::export::HISTFILE_MAX_RANGE_US {
        bad_input!(
            "--hist-max {}: at most 10s of 1 µs bins",
            human_duration(ns)
        );
    }
    Ok(ns / 1000)
}

/// clap value parser for durations (`10s`, `200us`, `1.5ms`).
pub fn duration(s: &str) -> Result<u64, String> {
    rtlab_core::units::parse_duration_ns(s).map_err(|e| e.to_string())
}

/// clap value parser for a non-zero duration.
pub fn positive_duration(s: &str) -> Result<u64, String> {
    match duration(s)? {
        0 => Err(format!("'{s}' must be longer than 0")),
        ns => Ok(ns),
    }
}

/// clap value parser for a rate (`4khz`): the period it means, ns.
pub fn rate_period(s: &str) -> Result<u64, String> {
    rtlab_core::units::parse_rate_period_ns(s).map_err(|e| e.to_string())
}

/// Events per second (`traffic gen --rate`, `plan gen --rate`): `2000`,
/// `2k`, `1.5M`, `2000/s`, `5/ms`, `3/us`, `2khz`.
pub fn per_second(text: &str) -> Result<f64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower.strip_suffix("pps").unwrap_or(&lower);
    let (number, per_s) = if let Some((n, unit)) = lower.split_once('/') {
        let per_s = match unit {
            "s" => 1.0,
            "ms" => 1e3,
            "us" => 1e6,
            _ => return Err(format!("unknown unit '/{unit}' (expected /s, /ms or /us)")),
        };
        (n, per_s)
    } else if let Some(n) = lower
        .strip_suffix("mhz")
        .or_else(|| lower.strip_suffix('m'))
    {
        (n, 1e6)
    } else if let Some(n) = lower
        .strip_suffix("khz")
        .or_else(|| lower.strip_suffix('k'))
    {
        (n, 1e3)
    } else {
        (lower.strip_suffix("hz").unwrap_or(lower), 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(n * per_s),
        _ => Err("expected packets per second: 2000, 2k, 1.5M, 2000/s or 5/ms".into()),
    }
}

/// clap value parser for `--cpus`.
pub fn cpus(s: &str) -> Result<rtlab_core::cpuset::CpuSelection, String> {
    rtlab_core::cpuset::CpuSelection::parse(s).map_err(|e| e.to_string())
}

/// clap value parser for a probability strictly between 0 and 1.
pub fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!("'{s}' must be a number between 0 and 1, e.g. 0.95")),
    }
}

/// clap value parser for a name or label that may end up stored and shown
/// in tables (`--load`, `--title`, a load given to `rtlab load`): at most
/// [`rtlab_core::text::MAX_LABEL_CHARS`] characters. The error names the
/// flag and the length, not the value, which may be thousands of
/// characters long.
#[derive(Clone, Copy)]
pub struct Label;

impl clap::builder::TypedValueParser for Label {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)?;
        let field = match arg {
            Some(arg) => match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => format!("<{}>", arg.get_id().as_str().to_uppercase()),
            },
            None => "the value".to_string(),
        };
        match rtlab_core::text::check_label(&field, &text) {
            Ok(()) => Ok(text),
            Err(e) => Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{e}\n"),
            )
            .with_cmd(cmd)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{hist_max_us, per_second, InputError};

    #[test]
    fn events_per_second_read_with_or_without_a_unit() {
        assert_eq!(per_second("2000"), Ok(2000.0));
        assert_eq!(per_second("2k"), Ok(2000.0));
        assert_eq!(per_second("1.5M"), Ok(1_500_000.0));
        assert_eq!(per_second("2000/s"), Ok(2000.0));
        assert_eq!(per_second("5/ms"), Ok(5000.0));
        assert_eq!(per_second("2khz"), Ok(2000.0));
        assert!(per_second("0").is_err());
        assert!(per_second("5/h").unwrap_err().contains("/h"));
    }

    /// `measure timer --hist-max` and `export --hist-max` hold one rule,
    /// with one message each way it is broken.
    #[test]
    fn hist_max_is_whole_microseconds_up_to_10s() {
        assert_eq!(hist_max_us(1_000_000).unwrap(), 1000);
        assert_eq!(hist_max_us(10_000_000_000).unwrap(), 10_000_000);
        let refused = |ns| {
            let e = hist_max_us(ns).unwrap_err();
            assert!(e.downcast_ref::<InputError>().is_some(), "{e}");
            e.to_string()
        };
        assert_eq!(
            refused(1_500),
            "--hist-max 1.5us: the histfile has 1 µs bins, give a whole number of µs"
        );
        assert_eq!(
            refused(10_000_001_000),
            "--hist-max 10s: at most 10s of 1 µs bins"
        );
    }
}
