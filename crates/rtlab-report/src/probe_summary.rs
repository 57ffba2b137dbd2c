//! Tables that only some probes have: the switch probe's paper-001 layout
//! (interrupt latency and context switch per mechanism, max and avg ± σ)
//! the noise probe's sources (paper 002's Table 4.3, per CPU), the net
//! probe's message accounting and (crate::traffic_summary) the traffic
//! replay's and recording's packets.

use crate::text::{align, us1};
use crate::traffic_summary::traffic_table;
use rtlab_core::result::{NetReport, NoiseReport, RunResult, Series};
// The "within x µs" figures are statistics; re-exported because the
// tables here are where callers meet them.
use rtlab_core::units::{human_duration, Micros};
pub use rtlab_stats::quantile::{within_percentages, WITHIN_US};
use std::fmt::Write;

/// The tables of `result`'s probe beyond the summary table; empty for a
/// probe that has none.
pub fn probe_tables(result: &RunResult) -> String {
    let mut out = String::new();
    if result.series.iter().any(|s| s.metric == "switch_latency") {
        out += &switch_table(&result.series);
    }
    if let Some(noise) = &result.noise {
        out += &noise_tables(noise);
    }
    if let Some(net) = &result.net {
        out += &net_summary(net);
    }
    if let Some(traffic) = &result.traffic {
        out += &traffic_table(traffic);
    }
    if result
        .series
        .iter()
        .any(|s| s.metric == "activation_lateness")
    {
        out += &periodic_table(result);
    }
    out
}

/// What happened to every message (and the server's counters when rtlab
/// ran the server): the counts a latency table cannot show.
pub fn net_summary(net: &NetReport) -> String {
    let m = &net.messages;
    let mut out = format!(
        "\n{} {} to {}: {} round trip{} of {} B per message, every {}, timeout {}\n",
        net.mode,
        net.transport,
        net.target,
        net.round_trips,
        if net.round_trips == 1 { "" } else { "s" },
        net.payload_bytes,
        human_duration(net.interval_ns),
        human_duration(net.timeout_ns),
    );
    let lost_percent = if m.sent == 0 {
        0.0
    } else {
        100.0 * m.lost as f64 / m.sent as f64
    };
    let _ = writeln!(
        out,
        "messages: {} planned, {} sent, {} completed, {} lost ({lost_percent:.2} %), {} unsent",
        m.planned, m.sent, m.completed, m.lost, m.unsent
    );
    let _ = writeln!(
        out,
        "replies: {} late, {} duplicate, {} reordered, {} bad; {} send errors",
        m.late_replies, m.duplicate_replies, m.reordered_replies, m.bad_replies, m.send_errors
    );
    if let Some(c) = &net.server {
        if let Some(thread) = &net.server_thread {
            let sched = thread
                .actual
                .map_or_else(|| "unknown".to_string(), |p| p.to_string());
            let cpu = thread
                .pinned_cpu
                .map_or_else(String::new, |c| format!(" on CPU {c}"));
            let _ = writeln!(out, "rtlab's server ran at {sched}{cpu}");
        }
        let _ = writeln!(
            out,
            "server: received {}, replied {}; dropped {} malformed, {} truncated, {} oversized, {} bad auth, {} rate limited",
            c.received, c.replied, c.malformed, c.truncated, c.oversized, c.bad_auth, c.rate_limited
        );
    }
    if !net.timeline_complete {
        let _ = writeln!(
            out,
            "the stored timeline holds the first {} messages; --samples keeps them all",
            net.timeline.len()
        );
    }
    out
}

/// `max` of a series, or `-` without samples (0.0 would read as perfect).
fn max_of(series: &Series) -> String {
    match series.stats.samples {
        0 => "-".into(),
        _ => us1(series.stats.max_ns as f64),
    }
}

fn avg_sigma(series: &Series) -> String {
    if series.stats.samples == 0 {
        return "-".into();
    }
    format!(
        "{} ± {}",
        us1(series.stats.mean_ns),
        us1(series.stats.stdev_ns)
    )
}

/// Paper 001's Table 1: per mechanism, interrupt latency and context
/// switch, each max and avg ± σ in µs; with the events and what was missed.
pub fn switch_table(series: &[Series]) -> String {
    let mut rows = vec![vec![
        "mechanism".to_string(),
        "events".to_string(),
        "interrupt max".to_string(),
        "interrupt avg ± σ".to_string(),
        "switch max".to_string(),
        "switch avg ± σ".to_string(),
        "missed".to_string(),
    ]];
    for switch in series.iter().filter(|s| s.metric == "switch_latency") {
        let mechanism = switch.name.strip_suffix(".switch").unwrap_or(&switch.name);
        let interrupt = series.iter().find(|s| {
            s.metric == "interrupt_latency" && s.name == format!("{mechanism}.interrupt")
        });
        let events = interrupt.map_or(0, |i| i.stats.samples + i.stats.missed);
        let (irq_max, irq_avg, irq_missed) = match interrupt {
            Some(i) => (max_of(i), avg_sigma(i), i.stats.missed),
            None => ("-".into(), "-".into(), 0),
        };
        let missed = if irq_missed == switch.stats.missed {
            irq_missed.to_string()
        } else {
            format!("{irq_missed} / {}", switch.stats.missed)
        };
        rows.push(vec![
            mechanism.to_string(),
            events.to_string(),
            irq_max,
            irq_avg,
            max_of(switch),
            avg_sigma(switch),
            missed,
        ]);
    }
    let mut out = String::from("\ninterrupt latency and switch to the released task (µs):\n");
    out += &align(&rows, |col, _| col == 0, true);
    out +=
        "missed: deadlines the timer thread missed, then (when different) events the task missed\n";
    out
}

/// Per CPU: the noise share and one row per source, the largest first.
pub fn noise_tables(noise: &NoiseReport) -> String {
    let mut out = String::new();
    for cpu in &noise.cpus {
        let _ = writeln!(
            out,
            "\ncpu{}: noise {:.4} % of {} measured ({} in {} events), max single {} µs",
            cpu.cpu,
            cpu.noise_percent,
            human_duration(cpu.measured_ns),
            human_duration(cpu.noise_ns),
            cpu.events,
            Micros(cpu.max_single_ns),
        );
        let mut rows = vec![[
            "source", "events", "min", "mean", "max", "total", "share", "counted",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()];
        for source in &cpu.sources {
            let share = if cpu.noise_ns > 0 {
                format!(
                    "{:.1} %",
                    100.0 * source.total_ns as f64 / cpu.noise_ns as f64
                )
            } else {
                "-".into()
            };
            let (min, mean, max) = match source.events {
                0 => ("-".into(), "-".into(), "-".into()),
                _ => (
                    Micros(source.min_ns).to_string(),
                    Micros(source.mean_ns.round() as u64).to_string(),
                    Micros(source.max_ns).to_string(),
                ),
            };
            rows.push(vec![
                source.source.clone(),
                source.events.to_string(),
                min,
                mean,
                max,
                Micros(source.total_ns).to_string(),
                share,
                source.counted.to_string(),
            ]);
        }
        out += &align(&rows, |col, _| col == 0, true);
        if let Some(os) = &cpu.osnoise {
            let _ = writeln!(
                out,
                "kernel osnoise: noise {} µs of {} µs ({:.4} % available), max single {} µs; hw {} nmi {} irq {} softirq {} thread {}",
                os.noise_us,
                os.runtime_us,
                os.cpu_available_percent,
                os.max_single_noise_us,
                os.hw,
                os.nmi,
                os.irq,
                os.softirq,
                os.thread
            );
        }
    }
    if noise.cpus.iter().any(|c| !c.sources.is_empty()) {
        out += "times in µs; counted: how often the source's counter rose while measuring, with or without a gap above the threshold\n";
    }
    if let Some(note) = &noise.osnoise_note {
        let _ = writeln!(out, "kernel osnoise tracer: {note}");
    }
    out
}

/// A percentage as the paper prints it.
fn percent(value: f64) -> String {
    format!("{value:.2}%")
}

/// Paper 002's layout: one row per label (task count, or mode), the % of
/// activations within 10, 50, 100, 500 and 1000 µs of the expected time;
/// `-` for a row without a result.
pub fn within_table(first_header: &str, rows: &[(String, Option<[f64; 5]>)]) -> String {
    let mut table = vec![std::iter::once(first_header.to_string())
        .chain(WITHIN_US.iter().map(|us| format!("{us} µs")))
        .collect::<Vec<_>>()];
    for (label, within) in rows {
        let mut row = vec![label.clone()];
        match within {
            Some(values) => row.extend(values.iter().map(|v| percent(*v))),
            None => row.extend(WITHIN_US.iter().map(|_| "-".to_string())),
        }
        table.push(row);
    }
    align(&table, |col, _| col == 0, true)
}

/// The activations a periodic run's config plans, every task together:
/// each task's own with a task set (`task_set.activations`), else
/// `activations` per task × `tasks`. None when the config does not say.
pub fn planned_activations(config: &serde_json::Value) -> Option<u64> {
    if let Some(per_task) = config["task_set"]["activations"].as_array() {
        return per_task
            .iter()
            .try_fold(0u64, |sum, n| Some(sum.saturating_add(n.as_u64()?)));
    }
    let per_task = config["activations"].as_u64()?;
    let tasks = config["tasks"].as_u64()?;
    Some(per_task.saturating_mul(tasks))
}

/// A periodic run (rtlab's executive or the SCHED_FIFO baseline): the
/// activation accounting and paper 002's % within row.
pub fn periodic_table(result: &RunResult) -> String {
    let config = &result.config;
    let lateness: Vec<&Series> = result
        .series
        .iter()
        .filter(|s| s.metric == "activation_lateness")
        .collect();
    let response: Vec<&Series> = result
        .series
        .iter()
        .filter(|s| s.metric == "response_time")
        .collect();
    let mode = config["mode"].as_str().unwrap_or("?");
    let mut out = if config["task_set"].is_object() {
        format!(
            "\nperiodic ({mode}): {} tasks of the task set {}\n",
            lateness.len(),
            config["task_set"]["set"]["source"]
                .as_str()
                .unwrap_or("(no file)"),
        )
    } else {
        format!(
            "\nperiodic ({mode}): {} tasks every {}, work {}{}\n",
            lateness.len(),
            human_duration(config["period_ns"].as_u64().unwrap_or(0)),
            human_duration(config["work_ns"].as_u64().unwrap_or(0)),
            config["cpu"]
                .as_u64()
                .map_or_else(String::new, |c| format!(", on CPU {c}")),
        )
    };
    let samples: u64 = lateness.iter().map(|s| s.stats.samples).sum();
    let missed: u64 = lateness.iter().map(|s| s.stats.missed).sum();
    let misses: u64 = response.iter().map(|s| s.stats.missed).sum();
    let max_late = lateness.iter().map(|s| s.stats.max_ns).max().unwrap_or(0);
    let max_response = response.iter().map(|s| s.stats.max_ns).max().unwrap_or(0);
    // The plan is the config's: a stopped run shows what it never
    // reached, not a plan shrunk to what was done.
    let planned = planned_activations(config).unwrap_or(samples + missed);
    let not_reached = planned.saturating_sub(samples + missed);
    let _ = writeln!(
        out,
        "activations: {planned} planned, {samples} started, {missed} missed{}; {misses} deadline misses; max lateness {} µs, max response {} µs",
        if not_reached > 0 {
            format!(", {not_reached} not reached (stopped early)")
        } else {
            String::new()
        },
        Micros(max_late),
        Micros(max_response),
    );
    out += "% of activations started within x µs of their instant:\n";
    let label = config["mode"].as_str().unwrap_or("periodic").to_string();
    out += &within_table("mode", &[(label, within_percentages(&result.series))]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_of_a_task_set_is_each_task_s_own() {
        let set = serde_json::json!({
            "tasks": 2, "activations": 1000,
            "task_set": {"activations": [1000, 250]},
        });
        assert_eq!(planned_activations(&set), Some(1250));
        let equal = serde_json::json!({"tasks": 3, "activations": 200});
        assert_eq!(planned_activations(&equal), Some(600));
        assert_eq!(planned_activations(&serde_json::json!({})), None);
    }
    use rtlab_core::result::{NoiseCpu, NoiseSource, SeriesStats, ThreadSettings};
    use rtlab_core::sched::{Policy, SchedParams};

    fn series(name: &str, metric: &str, samples: u64, missed: u64, mean: f64, max: u64) -> Series {
        let sched = SchedParams {
            policy: Policy::Fifo,
            priority: 90,
            deadline: None,
        };
        Series {
            name: name.into(),
            metric: metric.into(),
            cpu: Some(1),
            interval_ns: 250_000,
            thread: ThreadSettings {
                tid: 1,
                pinned_cpu: Some(1),
                requested: sched,
                actual: Some(sched),
                timer_slack_ns: Some(1),
            },
            stats: SeriesStats {
                samples,
                missed,
                mean_ns: mean,
                stdev_ns: if samples > 0 { 500.0 } else { 0.0 },
                max_ns: max,
                ..SeriesStats::default()
            },
        }
    }

    #[test]
    fn switch_table_has_paper_001_layout_and_no_fake_zeros() {
        let table = switch_table(&[
            series(
                "futex.interrupt",
                "interrupt_latency",
                998,
                2,
                14_560.0,
                1_012_165,
            ),
            series("futex.switch", "switch_latency", 998, 2, 3_600.0, 14_500),
            series(
                "mq.interrupt",
                "interrupt_latency",
                1000,
                0,
                14_000.0,
                40_000,
            ),
            series("mq.switch", "switch_latency", 0, 1000, 0.0, 0),
        ]);
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(
            rows[4].split_whitespace().collect::<Vec<_>>(),
            ["futex", "1000", "1012.2", "14.6", "±", "0.5", "14.5", "3.6", "±", "0.5", "2"]
        );
        // A mechanism whose task never ran shows dashes, not 0.0 ± 0.0.
        assert_eq!(
            rows[5].split_whitespace().collect::<Vec<_>>(),
            ["mq", "1000", "40.0", "14.0", "±", "0.5", "-", "-", "0", "/", "1000"]
        );
    }

    #[test]
    fn noise_table_lists_sources_with_share_and_counted() {
        let report = NoiseReport {
            threshold_ns: 1_000,
            window_ns: 10_000_000,
            runtime_ns: 900_000_000,
            period_ns: 1_000_000_000,
            cpus: vec![NoiseCpu {
                cpu: 1,
                series: "cpu1".into(),
                measured_ns: 900_000_000,
                noise_ns: 40_000,
                noise_percent: 0.00444,
                max_single_ns: 30_000,
                events: 3,
                windows: 90,
                sources: vec![
                    NoiseSource {
                        source: "irq:LOC".into(),
                        events: 2,
                        total_ns: 30_000,
                        min_ns: 10_000,
                        mean_ns: 15_000.0,
                        max_ns: 20_000,
                        counted: 90,
                    },
                    NoiseSource {
                        source: "irq:CAL".into(),
                        counted: 4,
                        ..NoiseSource::default()
                    },
                ],
                osnoise: None,
            }],
            osnoise_note: Some("tracefs is not mounted".into()),
        };
        let text = noise_tables(&report);
        assert!(
            text.contains(
                "cpu1: noise 0.0044 % of 900ms measured (40us in 3 events), max single 30.000 µs"
            ),
            "{text}"
        );
        let loc: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("irq:LOC"))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(
            loc,
            ["irq:LOC", "2", "10.000", "15.000", "20.000", "30.000", "75.0", "%", "90"]
        );
        let cal: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("irq:CAL"))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(
            cal,
            ["irq:CAL", "0", "-", "-", "-", "0.000", "0.0", "%", "4"]
        );
        assert!(text.contains("kernel osnoise tracer: tracefs is not mounted"));
    }

    #[test]
    fn the_net_summary_accounts_for_every_message() {
        use rtlab_core::result::{NetMessageCounts, NetServerCounters, TimelineRow};
        let net = NetReport {
            target: "10.77.0.2:7700".into(),
            transport: "udp".into(),
            mode: "exchange".into(),
            round_trips: 4,
            payload_bytes: 64,
            interval_ns: 30_000_000,
            timeout_ns: 100_000_000,
            messages: NetMessageCounts {
                planned: 10,
                sent: 8,
                completed: 6,
                lost: 2,
                unsent: 2,
                late_replies: 1,
                ..NetMessageCounts::default()
            },
            server: Some(NetServerCounters {
                received: 30,
                replied: 24,
                malformed: 3,
                oversized: 1,
                ..NetServerCounters::default()
            }),
            timeline: vec![TimelineRow(0, 0, 1, Some(5))],
            timeline_complete: false,
            server_thread: None,
        };
        let text = net_summary(&net);
        assert!(
            text.contains(
                "exchange udp to 10.77.0.2:7700: 4 round trips of 64 B per message, every 30ms"
            ),
            "{text}"
        );
        assert!(
            text.contains("10 planned, 8 sent, 6 completed, 2 lost (25.00 %), 2 unsent"),
            "{text}"
        );
        assert!(text.contains("replies: 1 late, 0 duplicate"), "{text}");
        assert!(
            text.contains("dropped 3 malformed, 0 truncated, 1 oversized"),
            "{text}"
        );
        assert!(text.contains("first 1 messages"), "{text}");
    }

    #[test]
    fn the_periodic_table_plans_from_the_config_not_from_what_was_done() {
        let mut run = crate::import::run::imported_run(
            crate::import::Format::CyclictestHistfile,
            "x",
            "2026-11-21T19:30:12.000000Z".into(),
            crate::import::run::unknown_environment("2026-11-21T19:30:12.000000Z"),
            Vec::new(),
            Vec::new(),
        );
        run.probe = "periodic".into();
        // 2 tasks × 1000 activations planned; stopped after 300 + 1 missed.
        run.config = serde_json::json!({
            "mode": "executive",
            "tasks": 2,
            "activations": 1000,
            "period_ns": 10_000_000,
            "work_ns": 100_000,
            "cpu": 1,
        });
        run.series = vec![
            series(
                "task0.lateness",
                "activation_lateness",
                150,
                1,
                2_000.0,
                9_000,
            ),
            series(
                "task0.response",
                "response_time",
                150,
                0,
                102_000.0,
                109_000,
            ),
            series(
                "task1.lateness",
                "activation_lateness",
                150,
                0,
                2_000.0,
                8_000,
            ),
            series(
                "task1.response",
                "response_time",
                150,
                0,
                102_000.0,
                108_000,
            ),
        ];
        let text = periodic_table(&run);
        assert!(
            text.contains(
                "activations: 2000 planned, 300 started, 1 missed, 1699 not reached (stopped early); 0 deadline misses"
            ),
            "{text}"
        );
        // A complete run says nothing of what was not reached.
        run.config["activations"] = serde_json::json!(151);
        run.series[2].stats.missed = 1;
        let text = periodic_table(&run);
        assert!(
            text.contains("activations: 302 planned, 300 started, 2 missed; 0 deadline"),
            "{text}"
        );
    }
}
