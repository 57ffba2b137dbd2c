//! The numbers a run takes from the environment: `RTLAB_FUZZ_SEED`,
//! `RTLAB_FUZZ_ITERS`, `RTLAB_FUZZ_HANG_SECS`.

/// The number in `name` (decimal or `0x` hex); None when not set, a
/// panic naming the variable when it is no number.
pub(super) fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text}: expected a whole number")))
}
