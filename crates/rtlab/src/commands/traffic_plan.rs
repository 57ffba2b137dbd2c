//! `rtlab traffic import|gen|export`: traffic plans from captures and
//! patterns, and plans as captures (docs/traffic-plans.md).

use super::plan::progress;
use crate::cli::{TrafficExportArgs, TrafficGenArgs, TrafficImportArgs, TrafficPattern};
use crate::input::{bad_input, InputError};
use crate::terminal::out;
use rtlab_core::units::parse_duration_ns;
use rtlab_exec::traffic::gen::{Length, Pattern, Sizes, TrafficGen};
use rtlab_exec::traffic::pcap::{self, ExportAddressing, Filter, ImportError};
use rtlab_exec::traffic::sink::{PlanSink, SinkError, SinkSummary};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// A sink's failure: the output could not be created or written (exit 1),
/// or the packets do not fit a plan (bad input, exit 2).
fn sink_err(e: SinkError) -> anyhow::Error {
    match e {
        // The message names the cause already: not a chain that repeats it.
        SinkError::Create { .. } | SinkError::Write { .. } => anyhow::anyhow!("{e}"),
        other => anyhow::Error::new(InputError(other.to_string())),
    }
}

fn import_err(e: ImportError) -> anyhow::Error {
    match e {
        ImportError::Bad { .. } => anyhow::Error::new(InputError(e.to_string())),
        ImportError::Sink(s) => sink_err(s),
    }
}

/// Writes the plan a sink holds, with a bar for long ones.
fn finish(sink: PlanSink, output: &Path, quiet: bool) -> anyhow::Result<SinkSummary> {
    let bar = progress(sink.len(), quiet, &format!("writing {}", output.display()));
    let summary = sink
        .finish(|done| {
            if let Some(bar) = &bar {
                bar.set_position(done);
            }
        })
        .map_err(sink_err)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(summary)
}

/// `→ cap.plan (240 KB, 1.999 s, 4.99 kpps)`.
fn written(output: &Path, s: &SinkSummary) -> String {
    let rate = if s.last_offset_ns > 0 {
        format!(
            ", {}",
            human_rate(s.events.saturating_sub(1) as f64 * 1e9 / s.last_offset_ns as f64)
        )
    } else {
        String::new()
    };
    format!(
        "→ {} ({}, {:.3} s{rate})",
        output.display(),
        human_bytes(s.file_bytes),
        s.last_offset_ns as f64 / 1e9
    )
}

fn flows(n: usize) -> String {
    if n == 1 {
        "1 flow".into()
    } else {
        format!("{n} flows")
    }
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 10 << 20 => format!("{} MB", b >> 20),
        b if b >= 10 << 10 => format!("{} KB", b >> 10),
        b => format!("{b} B"),
    }
}

fn human_rate(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{:.3} Mpps", pps / 1e6)
    } else if pps >= 1e3 {
        format!("{:.3} kpps", pps / 1e3)
    } else {
        format!("{pps:.3} pps")
    }
}

fn sink_json(s: &SinkSummary) -> serde_json::Value {
    json!({
        "events": s.events,
        "flows": s.flows,
        "file_bytes": s.file_bytes,
        "last_offset_ns": s.last_offset_ns,
        "payload_bytes": s.payload_bytes,
    })
}

pub fn import(args: TrafficImportArgs) -> anyhow::Result<ExitCode> {
    let filter = match &args.filter {
        Some(text) => match Filter::parse(text) {
            Ok(f) => f,
            Err(e) => bad_input!("--filter: {e}"),
        },
        None => Filter::default(),
    };
    let file_bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    let mut sink = PlanSink::create(&args.output).map_err(sink_err)?;
    let bar = progress(
        file_bytes,
        args.quiet,
        &format!("reading {}", args.file.display()),
    );
    let summary = pcap::import(&args.file, &filter, &mut sink, |read| {
        if let Some(bar) = &bar {
            bar.set_position(read);
        }
    })
    .map_err(import_err)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let plan = finish(sink, &args.output, args.quiet)?;
    if args.json {
        let doc = json!({
            "schema": "rtlab.traffic-import/1",
            "file": args.file,
            "output": args.output,
            "read": summary,
            "written": sink_json(&plan),
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let mut dropped = Vec::new();
        for (n, what) in [
            (summary.not_udp, "not UDP"),
            (summary.filtered_out, "filtered out"),
            (
                summary.truncated,
                "cut by the snap length (sizes from their UDP headers)",
            ),
            (
                summary.out_of_order,
                "out of order (kept at the previous instant)",
            ),
        ] {
            if n > 0 {
                dropped.push(format!(", {n} {what}"));
            }
        }
        out!(
            "{}: {} packets, {} UDP datagrams kept in {}{} {}",
            args.file.display(),
            summary.packets,
            summary.kept,
            flows(summary.flows),
            dropped.concat(),
            written(&args.output, &plan)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn duration_flag(flag: &str, text: &Option<String>) -> anyhow::Result<Option<u64>> {
    match text {
        None => Ok(None),
        Some(t) => match parse_duration_ns(t) {
            Ok(ns) => Ok(Some(ns)),
            Err(e) => bad_input!("--{flag}: {e}"),
        },
    }
}

fn size_flag(text: &str) -> anyhow::Result<Sizes> {
    let number = |t: &str| -> anyhow::Result<u16> {
        match t.trim().parse::<u16>() {
            Ok(n) => Ok(n),
            Err(_) => bad_input!(
                "--size {text}: expected bytes (0-65507) or MIN-MAX, e.g. --size 64 or --size 64-1400"
            ),
        }
    };
    Ok(match text.split_once('-') {
        Some((min, max)) => Sizes::Uniform {
            min: number(min)?,
            max: number(max)?,
        },
        None => Sizes::Fixed(number(text)?),
    })
}

/// The pattern the flags describe; flags of another pattern are refused.
fn pattern_of(args: &TrafficGenArgs) -> anyhow::Result<Pattern> {
    let rate = match &args.rate {
        Some(text) => match crate::input::per_second(text) {
            Ok(r) => Some(r),
            Err(e) => bad_input!("--rate {text}: {e}"),
        },
        None => None,
    };
    let (gap, every) = (
        duration_flag("gap", &args.gap)?,
        duration_flag("every", &args.every)?,
    );
    let (on, off) = (
        duration_flag("on", &args.on)?,
        duration_flag("off", &args.off)?,
    );
    let is_bursts = args.pattern == TrafficPattern::Bursts;
    let is_on_off = args.pattern == TrafficPattern::OnOff;
    for (given, flag, belongs) in [
        (rate.is_some(), "--rate", !is_bursts),
        (args.burst.is_some(), "--burst", is_bursts),
        (gap.is_some(), "--gap", is_bursts),
        (every.is_some(), "--every", is_bursts),
        (on.is_some(), "--on", is_on_off),
        (off.is_some(), "--off", is_on_off),
        (args.exponential, "--exponential", is_on_off),
    ] {
        if given && !belongs {
            bad_input!(
                "{flag} is not a setting of the {} pattern",
                pattern_name(args.pattern)
            );
        }
    }
    let need_rate = || match rate {
        Some(r) => Ok(r),
        None => Err(anyhow::Error::new(InputError(format!(
            "{} needs --rate, e.g. --rate 2k",
            pattern_name(args.pattern)
        )))),
    };
    Ok(match args.pattern {
        TrafficPattern::Constant => Pattern::Constant {
            rate_pps: need_rate()?,
        },
        TrafficPattern::Poisson => Pattern::Poisson {
            rate_pps: need_rate()?,
        },
        TrafficPattern::Bursts => match (args.burst, gap, every) {
            (Some(burst), gap, Some(every_ns)) => Pattern::Bursts {
                burst,
                gap_ns: gap.unwrap_or(0),
                every_ns,
            },
            _ => bad_input!("bursts needs --burst N and --every DURATION (and --gap DURATION)"),
        },
        TrafficPattern::OnOff => match (on, off) {
            (Some(on_ns), Some(off_ns)) => Pattern::OnOff {
                rate_pps: need_rate()?,
                on_ns,
                off_ns,
                exponential: args.exponential,
            },
            _ => bad_input!("on-off needs --rate, --on DURATION and --off DURATION"),
        },
    })
}

fn pattern_name(p: TrafficPattern) -> &'static str {
    match p {
        TrafficPattern::Constant => "constant",
        TrafficPattern::Poisson => "poisson",
        TrafficPattern::Bursts => "bursts",
        TrafficPattern::OnOff => "on-off",
    }
}

pub fn gen(args: TrafficGenArgs) -> anyhow::Result<ExitCode> {
    let pattern = pattern_of(&args)?;
    let length = match (args.count, duration_flag("duration", &args.duration)?) {
        (Some(n), None) => Length::Count(n),
        (None, Some(ns)) => Length::Duration(ns),
        _ => bad_input!("give --count N or --duration D (how many packets to generate)"),
    };
    let dest = match &args.dest {
        Some(text) => match text.parse() {
            Ok(a) => Some(a),
            Err(_) => bad_input!("--dest {text}: expected ADDR:PORT, e.g. 127.0.0.1:7000"),
        },
        None => None,
    };
    let spec = TrafficGen {
        pattern,
        sizes: size_flag(&args.size)?,
        length,
        flows: args.flows,
        dest,
        seed: args.seed,
    };
    if let Err(e) = spec.validate() {
        bad_input!("{}", e.render(|field| format!("--{field}")));
    }
    let mut sink = PlanSink::create(&args.output).map_err(sink_err)?;
    let expected = match length {
        Length::Count(n) => n,
        Length::Duration(_) => 0,
    };
    let bar = progress(
        expected,
        args.quiet,
        &format!("generating {}", args.output.display()),
    );
    spec.write(&mut sink, |done| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    })
    .map_err(sink_err)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if sink.is_empty() {
        bad_input!("--duration: no packet falls within it");
    }
    let plan = finish(sink, &args.output, args.quiet)?;
    if args.json {
        let doc = json!({
            "schema": "rtlab.traffic-gen/1",
            "output": args.output,
            "pattern": pattern_name(args.pattern),
            "seed": args.seed,
            "written": sink_json(&plan),
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        out!(
            "{} packets in {} {}",
            plan.events,
            flows(plan.flows),
            written(&args.output, &plan)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn mac_flag(flag: &str, text: &str) -> anyhow::Result<[u8; 6]> {
    let parts: Vec<&str> = text.split([':', '-']).collect();
    let mut mac = [0u8; 6];
    if parts.len() == 6 {
        for (byte, part) in mac.iter_mut().zip(&parts) {
            match u8::from_str_radix(part, 16) {
                Ok(b) if part.len() <= 2 => *byte = b,
                _ => bad_input!("--{flag} {text}: expected six hex bytes, e.g. 02:00:00:00:00:01"),
            }
        }
        return Ok(mac);
    }
    bad_input!("--{flag} {text}: expected six hex bytes, e.g. 02:00:00:00:00:01")
}

fn address_flag(flag: &str, text: &str) -> anyhow::Result<std::net::SocketAddr> {
    match text.parse() {
        Ok(a) => Ok(a),
        Err(_) => bad_input!("--{flag} {text}: expected ADDR:PORT, e.g. 10.0.0.2:7000"),
    }
}

/// `--stream`: hex (`0x...`) or decimal; random when not given.
fn stream_flag(text: &Option<String>) -> anyhow::Result<u32> {
    let Some(text) = text else {
        let mut bytes = [0u8; 4];
        // SAFETY: getrandom writes at most `bytes.len()` bytes into it.
        let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
        if got != bytes.len() as isize {
            anyhow::bail!("getrandom: {}", std::io::Error::last_os_error());
        }
        return Ok(u32::from_le_bytes(bytes));
    };
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    match parsed {
        Ok(s) => Ok(s),
        Err(_) => bad_input!("--stream {text}: expected a 32-bit number, decimal or 0x hex"),
    }
}

pub fn export(args: TrafficExportArgs) -> anyhow::Result<ExitCode> {
    let addressing = ExportAddressing {
        to: match &args.to {
            Some(t) => Some(address_flag("to", t)?),
            None => None,
        },
        from: address_flag("from", &args.from)?,
        src_mac: mac_flag("src-mac", &args.src_mac)?,
        dst_mac: mac_flag("dst-mac", &args.dst_mac)?,
    };
    let stream = stream_flag(&args.stream)?;
    let frames = pcap::export(&args.plan, &addressing, stream, &args.output).map_err(import_err)?;
    let bytes = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    if args.json {
        let doc = json!({
            "schema": "rtlab.traffic-export/1",
            "plan": args.plan,
            "output": args.output,
            "frames": frames,
            "bytes": bytes,
            "stream": stream,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        out!(
            "{}: {frames} frames, stream {stream:#010x} → {} ({})",
            args.plan.display(),
            args.output.display(),
            human_bytes(bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}
