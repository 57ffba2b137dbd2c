//! How values are stored in columns: statuses by name, integers saturated
//! into signed 64 bits (SQLite's INTEGER, PostgreSQL's BIGINT).

use rtlab_core::result::RunStatus;

/// The statuses a run can have, as stored (the `RunStatus` serde strings).
pub const STATUSES: [&str; 5] = ["running", "complete", "partial", "break", "failed"];

/// The stored string of a status: its serde name.
pub fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Break => "break",
        RunStatus::Failed => "failed",
    }
}

/// A u64 as an SQLite integer. Columns saturate at i64::MAX (292 years in
/// ns); the run's JSON keeps the exact value.
pub(crate) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// An SQLite integer read back as a u64 (a negative one, not ours, as 0).
pub(crate) fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_are_the_serde_names() {
        for status in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Partial,
            RunStatus::Break,
            RunStatus::Failed,
        ] {
            let serde = serde_json::to_value(status).unwrap();
            assert_eq!(serde.as_str(), Some(status_name(status)));
            assert!(STATUSES.contains(&status_name(status)));
        }
    }

    #[test]
    fn int_saturates() {
        assert_eq!(int(u64::MAX), i64::MAX);
        assert_eq!(int(5), 5);
        assert_eq!(uint(-1), 0);
    }
}
