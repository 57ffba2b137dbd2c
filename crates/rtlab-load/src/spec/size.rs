//! Sizes (`256M`, `1.5G`) and exact durations as a spec writes them.

const SIZE_UNITS: [(&str, u64); 5] = [
    ("T", 1 << 40),
    ("G", 1 << 30),
    ("M", 1 << 20),
    ("K", 1 << 10),
    ("", 1),
];

/// Parses `4096`, `64K`, `256M`, `1G`, `1.5G`, `256MiB`, `4096B` (binary
/// units, as `stress --vm-bytes`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let text = s.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let unit_upper = unit.to_ascii_uppercase();
    let unit_key = unit_upper
        .strip_suffix("IB")
        .or_else(|| unit_upper.strip_suffix('B'))
        .unwrap_or(&unit_upper);
    let scale = SIZE_UNITS
        .iter()
        .find(|(u, _)| *u == unit_key)
        .map(|(_, s)| *s)
        .ok_or_else(|| format!("'{s}': unknown unit '{unit}' (K, M, G, T)"))?;
    if number.is_empty() {
        return Err(format!("'{s}' must start with a number"));
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') {
        return Err(format!("'{s}': more than one decimal point"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| format!("'{s}' is too large"))?
    };
    let mut bytes = (whole as u128) * scale as u128;
    let mut denominator: u128 = 1;
    let mut numerator: u128 = 0;
    for d in frac.bytes() {
        denominator *= 10;
        numerator = numerator * 10 + u128::from(d - b'0');
        if denominator > 1_000_000_000_000 {
            return Err(format!("'{s}': too many decimals"));
        }
    }
    if numerator != 0 {
        let scaled = numerator * scale as u128;
        if !scaled.is_multiple_of(denominator) {
            return Err(format!("'{s}' is not a whole number of bytes"));
        }
        bytes += scaled / denominator;
    }
    u64::try_from(bytes).map_err(|_| format!("'{s}' is too large"))
}

/// The largest binary unit that keeps the size exact: `256M`, `1000K`, `4097`.
pub fn format_size(bytes: u64) -> String {
    for (unit, scale) in SIZE_UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) && !unit.is_empty() {
            return format!("{}{unit}", bytes / scale);
        }
    }
    bytes.to_string()
}

/// Bytes for people: `256 MiB`, `1.5 GiB`, `512 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            let text = format!("{:.2}", bytes as f64 / scale as f64);
            let text = text.trim_end_matches('0').trim_end_matches('.');
            return format!("{text} {unit}");
        }
    }
    format!("{bytes} B")
}

/// A duration in the largest unit that keeps it exact: `100us`, `1500us`, `2s`.
pub(super) fn format_duration_exact(ns: u64) -> String {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= scale && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("512B"), Ok(512));
        assert!(parse_size("1.3").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("10 parsecs").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(256 << 20), "256M");
        assert_eq!(format_size(1_024_000), "1000K");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(0), "0");
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 B");
    }
}
