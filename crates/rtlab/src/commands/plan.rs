//! `rtlab plan compile|check|show|gen`: plan files (docs/plan.md,
//! docs/plan-format.md). `rtlab plan run` (the dispatcher) lives elsewhere.

use crate::cli::{CompileArgs, GenArgs, GenPattern, PlanCheckArgs, PlanShowArgs};
use crate::input::{bad_input, InputError};
use crate::progress::bar_style;
use indicatif::{ProgressBar, ProgressDrawTarget};
use rtlab_core::units::human_duration;
use rtlab_exec::plan::check::{check_lines, stats, Report, Severity, MAX_OFFSET_NS};
use rtlab_exec::plan::gen::{DataGen, GenSpec, Length, Pattern};
use rtlab_exec::plan::text::{format_offset, write_event, write_header};
use rtlab_exec::plan::{
    load, write_binary_iter, Event, LoadedPlan, ModuleDecl, PlanError, PlanHeader, DATA_BYTES,
};
use serde_json::json;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// Plans at least this large get a progress bar (on a terminal).
const PROGRESS_FROM: u64 = 1_000_000;

fn plan_err(e: PlanError) -> anyhow::Error {
    anyhow::Error::new(InputError(e.to_string()))
}

fn open(path: &Path) -> anyhow::Result<LoadedPlan> {
    load(path).map_err(plan_err)
}

pub(crate) fn progress(total: u64, quiet: bool, what: &str) -> Option<ProgressBar> {
    if quiet || total < PROGRESS_FROM || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
    bar.set_style(bar_style());
    bar.set_message(what.to_string());
    Some(bar)
}

/// Writes `count` events from `events` to `output` (via a temporary file
/// renamed at the end, never through a planted symlink: see
/// [`rtlab_core::fsutil`]), binary or text.
fn write_plan(
    output: &Path,
    header: &PlanHeader,
    count: u64,
    events: impl Iterator<Item = rtlab_exec::plan::Event>,
    text: bool,
    quiet: bool,
) -> anyhow::Result<u64> {
    let bar = progress(count, quiet, &format!("writing {}", output.display()));
    // The body runs once the file is created: an error before it is bad
    // input (exit 2), named as given; a write failing later (a full disk)
    // is a failure (exit 1).
    let mut created = false;
    let result = rtlab_core::fsutil::write_atomic(output, |file| {
        created = true;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        if text {
            let mut line = String::new();
            write_header(header, &mut line);
            out.write_all(line.as_bytes())?;
            for (i, event) in events.enumerate() {
                line.clear();
                write_event(header, &event, &mut line);
                out.write_all(line.as_bytes())?;
                if i % 65_536 == 0 {
                    if let Some(bar) = &bar {
                        bar.set_position(i as u64);
                    }
                }
            }
        } else {
            write_binary_iter(header, count, events, &mut out, |n| {
                if let Some(bar) = &bar {
                    bar.set_position(n);
                }
            })?;
        }
        out.flush()
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match result {
        Err(e) if !created => {
            bad_input!("-o {}: cannot create: {e}", output.display())
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot write {}", output.display())))
        }
        Ok(()) => {}
    }
    Ok(std::fs::metadata(output)?.len())
}

fn finding_line(file: &Path, f: &rtlab_exec::plan::Finding) -> String {
    let place = match (f.line, f.index) {
        (Some(line), _) => format!("{}:{line}", file.display()),
        (None, Some(index)) => format!("{} event {index}", file.display()),
        (None, None) => file.display().to_string(),
    };
    let severity = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!("{place}: {severity}: {}", f.message)
}

fn print_report(file: &Path, report: &Report) {
    for f in &report.findings {
        eprintln!("{}", finding_line(file, f));
    }
    for (code, more) in report.not_shown() {
        eprintln!("{}: ... and {more} more '{code}' findings", file.display());
    }
}

fn check_plan(plan: &LoadedPlan) -> Report {
    check_lines(&plan.header, plan.events.as_ref(), plan.lines.as_deref())
}

pub fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let plan = open(&args.input)?;
    let report = check_plan(&plan);
    print_report(&args.input, &report);
    if !report.is_clean() {
        bad_input!(
            "{}: {} check error(s); not compiled (see `rtlab plan check`)",
            args.input.display(),
            report.errors
        );
    }
    let events = plan.events.as_ref();
    let n = events.len();
    let bytes = write_plan(
        &args.output,
        &plan.header,
        n,
        (0..n).map(|i| events.event(i)),
        args.text,
        args.quiet,
    )?;
    let form = if args.text { "text" } else { "binary" };
    if args.json {
        let doc = json!({
            "schema": "rtlab.plan.compile/1",
            "input": args.input,
            "output": args.output,
            "form": form,
            "modules": plan.header.modules.len(),
            "events": n,
            "bytes": bytes,
            "warnings": report.warnings,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{}: {n} events, {} modules, {bytes} bytes ({form})",
            args.output.display(),
            plan.header.modules.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn check(args: PlanCheckArgs) -> anyhow::Result<ExitCode> {
    let plan = open(&args.file)?;
    let report = check_plan(&plan);
    if args.json {
        let not_shown: serde_json::Map<String, serde_json::Value> = report
            .not_shown()
            .into_iter()
            .map(|(code, n)| (code.to_string(), json!(n)))
            .collect();
        let doc = json!({
            "schema": "rtlab.plan.check/1",
            "file": args.file,
            "events": plan.events.len(),
            "modules": plan.header.modules.len(),
            "errors": report.errors,
            "warnings": report.warnings,
            "counts": report.counts,
            "findings": report.findings,
            "not_shown": not_shown,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for f in &report.findings {
            println!("{}", finding_line(&args.file, f));
        }
        for (code, more) in report.not_shown() {
            println!(
                "{}: ... and {more} more '{code}' findings",
                args.file.display()
            );
        }
        println!(
            "{}: {} events, {} error(s), {} warning(s)",
            args.file.display(),
            plan.events.len(),
            report.errors,
            report.warnings
        );
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn data_text(data: &[u8; DATA_BYTES]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `plan show` adds after a traffic event's hex data:
/// `  size=1400 digest=89ab...` (`digest=-`: none recorded), or what is
/// wrong with it; nothing for another module's event.
fn traffic_note(header: &PlanHeader, event: &Event) -> String {
    use rtlab_exec::traffic::format::{TrafficData, KIND};
    let traffic = header
        .modules
        .get(usize::from(event.module))
        .is_some_and(|m| m.kind == KIND);
    if !traffic {
        return String::new();
    }
    match TrafficData::decode(&event.data) {
        Ok(TrafficData { size, digest: 0 }) => format!("  size={size} digest=-"),
        Ok(TrafficData { size, digest }) => format!("  size={size} digest={digest:016x}"),
        Err(e) => format!("  ({e})"),
    }
}

pub fn show(args: PlanShowArgs) -> anyhow::Result<ExitCode> {
    let plan = open(&args.file)?;
    let events = plan.events.as_ref();
    let s = stats(events);
    let shown = args.events.min(events.len());
    let module_name = |id: u16| {
        plan.header
            .modules
            .get(id as usize)
            .map_or_else(|| format!("@{id}"), |m| m.name.clone())
    };
    if args.json {
        let modules: Vec<_> = plan
            .header
            .modules
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "name": m.name,
                    "kind": m.kind,
                    "settings": m.settings.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                    "events": s.per_module.get(&m.id).copied().unwrap_or(0),
                })
            })
            .collect();
        let listed: Vec<_> = (0..shown)
            .map(|i| {
                let e = events.event(i);
                json!({
                    "index": i,
                    "line": plan.lines.as_ref().and_then(|l| l.get(i as usize)),
                    "offset_ns": e.offset_ns,
                    "module": e.module,
                    "module_name": module_name(e.module),
                    "flags": e.flags,
                    "data_hex": data_text(&e.data),
                })
            })
            .collect();
        let doc = json!({
            "schema": "rtlab.plan.show/1",
            "file": args.file,
            "form": if plan.binary { "binary" } else { "text" },
            "repeat_ns": plan.header.repeat_ns,
            "modules": modules,
            "events": s.events,
            "first_ns": s.first_ns,
            "last_ns": s.last_ns,
            "span_ns": s.span_ns,
            "min_spacing_ns": s.min_spacing_ns,
            "mean_spacing_ns": s.mean_spacing_ns,
            "first_events": listed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} ({} plan)",
        args.file.display(),
        if plan.binary { "binary" } else { "text" }
    )?;
    match plan.header.repeat_ns {
        Some(r) => writeln!(out, "repeat     every {}", format_offset(r))?,
        None => writeln!(out, "repeat     no (runs once)")?,
    }
    writeln!(out, "modules    {}", plan.header.modules.len())?;
    for m in &plan.header.modules {
        let settings: Vec<String> = m.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(
            out,
            "  {:>5}  {:<16} {:<8} {:>10} events  {}",
            m.id,
            m.name,
            m.kind,
            s.per_module.get(&m.id).copied().unwrap_or(0),
            settings.join(" ")
        )?;
    }
    writeln!(out, "events     {}", s.events)?;
    if let (Some(first), Some(last)) = (s.first_ns, s.last_ns) {
        writeln!(
            out,
            "span       {} (first at {}, last at {})",
            human_duration(s.span_ns),
            format_offset(first),
            format_offset(last)
        )?;
    }
    if let (Some(min), Some(mean)) = (s.min_spacing_ns, s.mean_spacing_ns) {
        writeln!(
            out,
            "spacing    min {}, mean {}",
            human_duration(min),
            human_duration(mean.round() as u64)
        )?;
    }
    if shown > 0 {
        writeln!(out, "first {shown} events:")?;
        writeln!(
            out,
            "  {:>10}  {:>14}  {:<16} {:>6}  data",
            "index", "offset", "module", "flags"
        )?;
        for i in 0..shown {
            let e = events.event(i);
            writeln!(
                out,
                "  {i:>10}  {:>14}  {:<16} {:>6}  {}{}",
                format_offset(e.offset_ns),
                module_name(e.module),
                e.flags,
                data_text(&e.data),
                traffic_note(&plan.header, &e)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `NAME:KIND[:key=value,...]`.
fn module_arg(text: &str) -> anyhow::Result<ModuleDecl> {
    let mut parts = text.splitn(3, ':');
    let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
        bad_input!("--module {text}: expected NAME:KIND[:key=value,...], e.g. tick:mark");
    };
    let mut settings = Vec::new();
    if let Some(rest) = parts.next() {
        for pair in rest.split(',').filter(|p| !p.is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                bad_input!("--module {text}: setting '{pair}' is not key=value");
            };
            settings.push((k.to_string(), v.to_string()));
        }
    }
    let decl = ModuleDecl {
        id: 0,
        name: name.to_string(),
        kind: kind.to_string(),
        settings,
    };
    if let Err(e) = rtlab_exec::plan::binary::check_header(&PlanHeader {
        modules: vec![decl.clone()],
        repeat_ns: None,
    }) {
        bad_input!("--module {text}: {e}");
    }
    if let Err(e) = rtlab_exec::module::validate(&decl) {
        bad_input!("--module {text}: {e}");
    }
    Ok(decl)
}

/// `1000/s`, `5/ms`, `2.5khz` (read as `crate::input::per_second`): the
/// mean gap in ns.
fn rate_arg(text: &str) -> anyhow::Result<f64> {
    match crate::input::per_second(text) {
        Ok(per_second) => Ok(1e9 / per_second),
        Err(e) => bad_input!("--rate {text}: {e}"),
    }
}

fn data_arg(text: &str) -> anyhow::Result<DataGen> {
    if text == "seq" {
        return Ok(DataGen::Sequence);
    }
    match rtlab_exec::plan::text::data_arg(text) {
        Ok(data) => Ok(DataGen::Fixed(data)),
        Err(e) => bad_input!("--data {text}: {e}"),
    }
}

pub fn gen(args: GenArgs) -> anyhow::Result<ExitCode> {
    let module = module_arg(&args.module)?;
    let length = match (args.count, args.duration) {
        (Some(n), None) => Length::Count(n),
        (None, Some(d)) => Length::Duration(d),
        _ => bad_input!("give --count N or --duration D (how many events to generate)"),
    };
    let pattern = match args.pattern {
        GenPattern::Periodic | GenPattern::Jittered => {
            let Some(period_ns) = args.period else {
                bad_input!("--period is required, e.g. --period 1ms");
            };
            if args.rate.is_some() {
                bad_input!("--rate is for poisson; periodic plans take --period");
            }
            if matches!(args.pattern, GenPattern::Periodic) {
                if args.jitter.is_some() {
                    bad_input!("--jitter is for jittered plans (rtlab plan gen jittered ...)");
                }
                Pattern::Periodic { period_ns }
            } else {
                let Some(jitter_ns) = args.jitter else {
                    bad_input!("jittered needs --jitter, e.g. --jitter 50us");
                };
                Pattern::Jittered {
                    period_ns,
                    jitter_ns,
                }
            }
        }
        GenPattern::Poisson => {
            if args.jitter.is_some() {
                bad_input!("--jitter is for jittered plans");
            }
            let mean_gap_ns = match (&args.rate, args.period) {
                (Some(rate), None) => rate_arg(rate)?,
                (None, Some(period)) => period as f64,
                _ => bad_input!(
                    "poisson needs --rate (e.g. 1000/s) or --period (the mean gap), not both"
                ),
            };
            Pattern::Poisson { mean_gap_ns }
        }
    };
    let data = match &args.data {
        Some(d) => data_arg(d)?,
        None => DataGen::Fixed([0; DATA_BYTES]),
    };
    let spec = GenSpec {
        pattern,
        length,
        module: 0,
        start_ns: args.start,
        seed: args.seed,
        data,
    };
    if let Err(e) = spec.validate() {
        bad_input!("{e}");
    }
    let header = PlanHeader {
        modules: vec![module],
        repeat_ns: args.repeat,
    };
    // The same limit `plan check` applies: a plan gen writes must check.
    if let Some(repeat) = args.repeat.filter(|&r| r > MAX_OFFSET_NS) {
        bad_input!(
            "--repeat {}: beyond 2^62 ns (146 years), the longest a plan may repeat",
            format_offset(repeat)
        );
    }
    let count = spec.count();
    // The last offset, for the repeat check: one more pass for jittered
    // and poisson plans is cheap (no events are kept).
    if let Some(repeat) = args.repeat {
        let last = match spec.pattern {
            Pattern::Periodic { period_ns } if count > 0 => {
                Some(spec.start_ns + (count - 1) * period_ns)
            }
            _ => spec.events().last().map(|e| e.offset_ns),
        };
        if let Some(last) = last.filter(|&l| repeat <= l) {
            bad_input!(
                "--repeat {} is not longer than the last offset {}",
                format_offset(repeat),
                format_offset(last)
            );
        }
    }
    let bytes = write_plan(
        &args.output,
        &header,
        count,
        spec.events(),
        args.text,
        args.quiet,
    )?;
    let form = if args.text { "text" } else { "binary" };
    if args.json {
        let doc = json!({
            "schema": "rtlab.plan.gen/1",
            "output": args.output,
            "form": form,
            "events": count,
            "bytes": bytes,
            "seed": args.seed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{}: {count} events, {bytes} bytes ({form})",
            args.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
