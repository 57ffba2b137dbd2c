//! The traffic runs' tables (`rtlab traffic replay|record`): each run's
//! packet accounting and, per error series, how close the packets came
//! to the plan (paper 002's "within 1 % of the gap" among the figures).

use super::model::RunView;
use super::table::Table;
use crate::traffic_summary::traffic_accuracy_cells;

/// One row per traffic run: its packets, accounted for.
pub fn traffic_counts_table(runs: &[RunView]) -> Option<Table> {
    let mut t = Table::new(
        "traffic: packets",
        &[
            "run", "role", "times", "planned", "sent", "skipped", "failed", "late", "received",
            "lost", "packets/s", "planned/s",
        ],
        3,
    )
    .with_note("late: sent past the run's --late after the planned instant; received and lost: the receiving side's.");
    for view in runs {
        let Some(r) = &view.result.traffic else {
            continue;
        };
        let c = &r.counts;
        t.rows.push(vec![
            view.label.clone(),
            r.role.clone(),
            r.timestamps.clone(),
            c.planned.to_string(),
            c.sent.to_string(),
            c.skipped.to_string(),
            c.failed.to_string(),
            c.late.to_string(),
            c.received.to_string(),
            c.lost.to_string(),
            format!("{:.1}", r.achieved_pps),
            r.planned_pps.map_or("-".into(), |p| format!("{p:.1}")),
        ]);
    }
    (!t.is_empty()).then_some(t)
}

/// Per traffic run and error series: signed extremes and mean, the shares
/// within 1 µs, 5 µs and 1 % of the planned gap, the drift.
pub fn traffic_accuracy_table(runs: &[RunView]) -> Option<Table> {
    let mut t = Table::new(
        "traffic: error against the plan (µs)",
        &[
            "run", "series", "samples", "min", "mean", "max", "≤1 µs", "≤5 µs", "≤1 % gap",
            "drift ns/s",
        ],
        2,
    )
    .with_note("signed: negative is early, or a gap shorter than planned; drift: the least-squares slope of the error over the run (a schedule computed from the previous packet drifts, an absolute one does not).");
    for view in runs {
        let Some(r) = &view.result.traffic else {
            continue;
        };
        for a in r.accuracy.iter().filter(|a| a.samples > 0) {
            let mut row = vec![view.label.clone(), a.series.clone()];
            row.extend(traffic_accuracy_cells(a));
            t.rows.push(row);
        }
    }
    (!t.is_empty()).then_some(t)
}
