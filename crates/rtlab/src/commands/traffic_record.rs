//! `rtlab traffic record`: datagrams received with kernel timestamps,
//! written as a traffic plan and measured (inter-arrival gaps; arrivals
//! against the plan a replay's stamps name).

use super::measure::{measure, Measured};
use crate::cli::TrafficRecordArgs;
use crate::input::{bad_input, InputError};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::TrafficReport;
use rtlab_core::settings::flag;
use rtlab_exec::traffic::record::{Against, RecordConfig};
use rtlab_exec::traffic::sink::PlanSink;
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;

/// Checks every flag before anything runs: the address can be bound now,
/// the plan's directory can be written, the plan sent can be read.
fn config_from(args: &TrafficRecordArgs) -> anyhow::Result<RecordConfig> {
    let listen: SocketAddr = match args.listen.parse() {
        Ok(addr) => addr,
        Err(e) => bad_input!(
            "--listen {}: expected ADDR:PORT, e.g. 127.0.0.1:7000 or [::1]:7000 ({e})",
            args.listen
        ),
    };
    let online = CpuSet::online();
    if let Some(cpu) = args.cpu.filter(|&cpu| !online.contains(cpu)) {
        bad_input!("--cpu {cpu}: not an online CPU (online: {online})");
    }
    let mut config = RecordConfig {
        output: args.output.clone(),
        duration_ns: args.duration,
        count: args.count,
        idle_ns: args.idle,
        against: args.against.clone(),
        cpu: args.cpu,
        ..RecordConfig::new(listen)
    };
    config.sched.priority = args.priority;
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    // A port in use, an address not of this host, a port below 1024 for a
    // user without the right: said now, by the flag (the probe binds again
    // at its start; this socket is closed before).
    if let Err(e) = UdpSocket::bind(listen) {
        bad_input!("--listen {listen}: cannot bind: {e}");
    }
    if let Some(output) = &args.output {
        // The spill is unnamed: nothing is left behind by this check.
        if let Err(e) = PlanSink::create(output) {
            bad_input!("--output {e}");
        }
    }
    if let Some(against) = &args.against {
        if let Err(e) = Against::load(against) {
            bad_input!("--against {e}");
        }
    }
    Ok(config)
}

pub fn run(args: TrafficRecordArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    let measured = measure(Box::new(config), &args.run, &[])?;
    let summary = summary(&measured, &args);
    let mut human = measured.outputs.human();
    let code = measured.report(args.run.quiet)?;
    if let (Some(line), false) = (summary, args.run.quiet) {
        writeln!(human, "{line}")?;
    }
    Ok(code)
}

/// The one line a person reads first (printed last, under the tables).
fn summary(measured: &Measured, args: &TrafficRecordArgs) -> Option<String> {
    let report = measured.result.traffic.as_ref()?;
    // The plan's modules are the flows (unknown without -o).
    let flows = args
        .output
        .as_ref()
        .and_then(|path| rtlab_exec::plan::load(path).ok())
        .map(|plan| plan.header.modules.len());
    Some(summary_line(report, flows))
}

fn summary_line(report: &TrafficReport, flows: Option<usize>) -> String {
    let c = &report.counts;
    let plural = |n: u64, one: &str| {
        if n == 1 {
            one.to_string()
        } else {
            format!("{one}s")
        }
    };
    let mut line = format!("received {} {}", c.received, plural(c.received, "datagram"));
    if let Some(flows) = flows {
        line += &format!(" from {flows} {}", plural(flows as u64, "flow"));
    }
    line += &format!(
        " in {:.3} s ({:.2} kpps)",
        report.span_ns as f64 / 1e9,
        report.achieved_pps / 1e3
    );
    match &report.stream {
        Some(stream) => {
            line += &format!(
                "; stamped (stream {stream}): {} lost, {} duplicated, {} reordered, {} unstamped",
                c.lost, c.duplicates, c.reordered, c.unstamped
            );
            if let Some(arrival) = report.accuracy.iter().find(|a| a.series == "arrival") {
                line += &format!("; arrival within 5 µs: {:.2} %", arrival.within_5us_pct);
            }
        }
        None => line += "; no datagram carried rtlab's stamp",
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::result::{TrafficAccuracy, TrafficCounts};

    #[test]
    fn the_summary_line_says_counts_rate_and_accuracy() {
        let report = TrafficReport {
            counts: TrafficCounts {
                received: 2000,
                lost: 1,
                ..TrafficCounts::default()
            },
            span_ns: 1_000_000_000,
            achieved_pps: 2000.0,
            stream: Some("0000002a".into()),
            accuracy: vec![TrafficAccuracy {
                series: "arrival".into(),
                within_5us_pct: 99.95,
                ..TrafficAccuracy::default()
            }],
            ..TrafficReport::default()
        };
        assert_eq!(
            summary_line(&report, Some(1)),
            "received 2000 datagrams from 1 flow in 1.000 s (2.00 kpps); stamped (stream 0000002a): 1 lost, 0 duplicated, 0 reordered, 0 unstamped; arrival within 5 µs: 99.95 %"
        );
        let bare = TrafficReport::default();
        assert_eq!(
            summary_line(&bare, None),
            "received 0 datagrams in 0.000 s (0.00 kpps); no datagram carried rtlab's stamp"
        );
    }
}
