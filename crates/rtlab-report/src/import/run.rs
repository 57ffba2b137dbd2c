//! The parts of an imported run every importer fills the same way.

use super::format::Format;
use rtlab_core::env::Environment;
use rtlab_core::result::{
    Effective, RunResult, RunStatus, Series, SeriesStats, ThreadSettings, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use std::time::SystemTime;

/// The parts of a RunResult every importer fills the same way.
pub(crate) fn imported_run(
    format: Format,
    origin: &str,
    started_at: String,
    environment: Environment,
    series: Vec<Series>,
    warnings: Vec<String>,
) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.to_string(),
        id: RunResult::new_id(),
        probe: "cyclictest".to_string(),
        status: RunStatus::Complete,
        // The schema wants an end for a run that is not running; the
        // importers set the real one where the file has it.
        ended_at: Some(started_at.clone()),
        started_at,
        elapsed_ns: 0,
        command: Vec::new(),
        config: serde_json::json!({
            "imported_from": origin,
            "format": format.name(),
            "resolution_ns": 1000,
        }),
        effective: Effective::default(),
        environment,
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings,
    }
}

/// A series for one cyclictest thread.
pub(crate) fn thread_series(
    name: String,
    cpu: Option<usize>,
    interval_ns: u64,
    requested: SchedParams,
    stats: SeriesStats,
) -> Series {
    Series {
        name,
        metric: "wakeup_latency".to_string(),
        cpu,
        interval_ns,
        thread: ThreadSettings {
            tid: 0,
            pinned_cpu: cpu,
            requested,
            actual: None,
            timer_slack_ns: None,
        },
        stats,
    }
}

/// The scheduling of a thread nobody recorded.
pub(crate) fn unknown_sched() -> SchedParams {
    SchedParams {
        policy: Policy::Other,
        priority: 0,
        deadline: None,
    }
}

/// An RFC 3339 UTC timestamp with µs, as rtlab writes them; `None` for a
/// time RFC 3339 cannot write (before 1970 or after 9999: humantime
/// panics on those, and a file's date is input).
pub(crate) fn rfc3339(t: SystemTime) -> Option<String> {
    // 10000-01-01T00:00:00Z.
    const YEAR_10000: u64 = 253_402_300_800;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    (secs < YEAR_10000).then(|| humantime::format_rfc3339_micros(t).to_string())
}

/// The time of the import, in RFC 3339 (the clock is past 1970 and before
/// 9999 on any machine rtlab runs on; the epoch if not).
pub(crate) fn now_rfc3339() -> String {
    rfc3339(SystemTime::now()).unwrap_or_else(|| "1970-01-01T00:00:00.000000Z".to_string())
}

/// An environment that says nothing but when it was "captured" (the
/// schema wants a timestamp) and who wrote it.
pub(crate) fn unknown_environment(captured_at: &str) -> Environment {
    Environment {
        rtlab_version: rtlab_core::VERSION.to_string(),
        captured_at: seconds_precision(captured_at),
        ..Environment::default()
    }
}

/// `2026-11-21T20:02:16.000000Z` → `2026-11-21T20:02:16Z`.
pub(crate) fn seconds_precision(ts: &str) -> String {
    match (ts.find('.'), ts.ends_with('Z')) {
        (Some(dot), true) => format!("{}Z", &ts[..dot]),
        _ => ts.to_string(),
    }
}
