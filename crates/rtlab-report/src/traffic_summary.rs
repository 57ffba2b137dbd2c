//! The traffic replay's and recording's table (`rtlab show`, a run's
//! summary): packet accounting, rates and how close each error series
//! came to the plan (paper 002's "within 1 % of the gap" among them).

use crate::text::{align, us1};
use rtlab_core::result::{TrafficAccuracy, TrafficReport};
use rtlab_core::units::human_duration;
use std::fmt::Write;

/// A traffic replay's or recording's packets (their accounting, rate and
/// how close each error series came to the plan: paper 002's "within
/// 1 % of the gap" among them).
pub fn traffic_table(t: &TrafficReport) -> String {
    let plan = t
        .plan
        .as_deref()
        .map_or(String::new(), |p| format!(" of {p}"));
    let direction = if t.role == "replay" { "to" } else { "on" };
    let stream = t
        .stream
        .as_deref()
        .map_or(String::new(), |s| format!(", stream {s}"));
    let mut out = format!(
        "
traffic {}{plan} {direction} {}{stream}; times: {}
",
        t.role, t.peer, t.timestamps
    );
    let c = &t.counts;
    let _ = if t.role == "replay" {
        writeln!(
            out,
            "packets: {} planned, {} sent, {} skipped, {} failed, {} late (> {}), {} without a kernel stamp",
            c.planned,
            c.sent,
            c.skipped,
            c.failed,
            c.late,
            human_duration(c.late_after_ns),
            c.without_kernel_stamp
        )
    } else {
        writeln!(
            out,
            "packets: {} received, {} lost, {} duplicate, {} reordered, {} unstamped",
            c.received, c.lost, c.duplicates, c.reordered, c.unstamped
        )
    };
    let planned = t
        .planned_pps
        .map_or(String::new(), |p| format!(", {p:.1} planned"));
    let _ = writeln!(
        out,
        "{} B over {}: {:.1} packets/s{planned}",
        t.bytes,
        human_duration(t.span_ns),
        t.achieved_pps
    );
    if let Some(tx) = &t.txtime {
        let _ = writeln!(
            out,
            "SO_TXTIME: handed over {} early, {} dropped by the qdisc",
            human_duration(tx.delta_ns),
            tx.dropped
        );
    }
    if t.accuracy.is_empty() {
        return out;
    }
    let mut rows = vec![[
        "error",
        "samples",
        "min",
        "mean",
        "max",
        "≤1 µs",
        "≤5 µs",
        "≤1 % gap",
        "drift ns/s",
    ]
    .map(String::from)
    .to_vec()];
    for a in &t.accuracy {
        let mut row = vec![a.series.clone()];
        row.extend(traffic_accuracy_cells(a));
        rows.push(row);
    }
    out += "signed error against the plan (µs; negative: early or a gap too short):
";
    out += &align(&rows, |col, _| col == 0, true);
    out
}

/// One error series' figures after its name: samples, min, mean and max
/// (µs; `-` without samples, not zeros that read as perfect), % within
/// 1 µs, 5 µs and 1 % of the gap, the drift (ns/s).
pub fn traffic_accuracy_cells(a: &TrafficAccuracy) -> Vec<String> {
    let us = |ns: f64| {
        if a.samples == 0 {
            "-".to_string()
        } else {
            us1(ns)
        }
    };
    let pct = |p: f64| format!("{p:.2}%");
    vec![
        a.samples.to_string(),
        us(a.min_ns as f64),
        us(a.mean_ns),
        us(a.max_ns as f64),
        pct(a.within_1us_pct),
        pct(a.within_5us_pct),
        a.within_1pct_of_gap_pct.map_or("-".into(), pct),
        a.drift_ns_per_s.map_or("-".into(), |d| format!("{d:.1}")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traffic_table_accounts_for_every_packet_and_each_error_series() {
        use rtlab_core::result::TrafficCounts;
        let mut t = TrafficReport {
            role: "replay".into(),
            plan: Some("cbr.plan".into()),
            peer: "127.0.0.1:7000".into(),
            timestamps: "mixed".into(),
            txtime: None,
            counts: TrafficCounts {
                planned: 10,
                sent: 7,
                late: 2,
                late_after_ns: 5_000,
                skipped: 2,
                failed: 1,
                without_kernel_stamp: 3,
                ..TrafficCounts::default()
            },
            bytes: 700,
            span_ns: 3_000_000,
            achieved_pps: 2_000.0,
            planned_pps: Some(2_000.0),
            accuracy: vec![
                TrafficAccuracy {
                    series: "departure".into(),
                    meaning: "d".into(),
                    samples: 7,
                    min_ns: 1_200,
                    max_ns: 9_000,
                    mean_ns: 2_500.0,
                    within_1us_pct: 0.0,
                    within_5us_pct: 85.714,
                    within_1pct_of_gap_pct: None,
                    drift_ns_per_s: Some(-3.25),
                },
                TrafficAccuracy {
                    series: "gap".into(),
                    samples: 0,
                    within_1pct_of_gap_pct: Some(0.0),
                    ..TrafficAccuracy::default()
                },
            ],
            stream: Some("0badf00d".into()),
        };
        let text = traffic_table(&t);
        assert!(
            text.contains(
                "traffic replay of cbr.plan to 127.0.0.1:7000, stream 0badf00d; times: mixed"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "10 planned, 7 sent, 2 skipped, 1 failed, 2 late (> 5us), 3 without a kernel stamp"
            ),
            "{text}"
        );
        assert!(
            text.contains("700 B over 3ms: 2000.0 packets/s, 2000.0 planned"),
            "{text}"
        );
        let row = |name: &str| -> Vec<String> {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .split("  ")
                .filter(|c| !c.trim().is_empty())
                .map(|c| c.trim().to_string())
                .collect()
        };
        assert_eq!(
            row("departure"),
            [
                "departure",
                "7",
                "1.2",
                "2.5",
                "9.0",
                "0.00%",
                "85.71%",
                "-",
                "-3.2"
            ]
        );
        // No samples: no extremes to print, not zeros that read as perfect.
        assert_eq!(row("gap")[2..5], ["-", "-", "-"]);
        t.role = "record".into();
        t.counts.received = 9;
        t.counts.lost = 1;
        assert!(
            traffic_table(&t).contains("packets: 9 received, 1 lost, 0 duplicate"),
            "{text}"
        );
    }
}
