//! `rtlab load NAME`: one load generator (or several), alone, to sit
//! beside any other tool; and the hidden `__load-worker` that every load
//! runs in.

use crate::cli::{LoadArgs, WorkerArgs};
use crate::input::{bad_input, InputError};
use crate::outputs::{Outputs, Requested};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtlab_core::result::{timestamp_now, LoadRecord};
use rtlab_core::text::{pad, Align};
use rtlab_core::units::human_duration;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rtlab_load::{counter_text, format_list, parse_list, Launcher, LoadSpec, RunningLoads};

const DEFAULT_DURATION_NS: u64 = 30_000_000_000;
/// How often a --json file is rewritten while the loads run.
const JSON_REWRITE: Duration = Duration::from_secs(2);
/// The `--json` schema of `rtlab load`.
pub const LOAD_SCHEMA: &str = "rtlab.load/1";

/// The specs of the command line: NAME with the flags applied.
fn specs_from(args: &LoadArgs) -> anyhow::Result<Vec<LoadSpec>> {
    let mut specs = parse_list(&args.name).map_err(|e| InputError(e.to_string()))?;
    if specs.is_empty() {
        bad_input!(
            "'{}' is no load: name one of {}",
            args.name,
            rtlab_load::KNOWN_LOADS
        );
    }
    let path_text = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
    let flags: Vec<(&str, &str, Option<String>)> = vec![
        ("--workers", "workers", args.workers.map(|v| v.to_string())),
        ("--bytes", "bytes", args.bytes.clone()),
        ("--block", "block", args.block.clone()),
        ("--size", "size", args.size.clone()),
        ("--groups", "groups", args.groups.map(|v| v.to_string())),
        ("--fds", "fds", args.fds.map(|v| v.to_string())),
        ("--timers", "timers", args.timers.map(|v| v.to_string())),
        ("--interval", "interval", args.interval.clone()),
        ("--dir", "dir", path_text(&args.dir)),
        ("--root", "root", path_text(&args.root)),
        ("--no-stat", "no-stat", args.no_stat.then(String::new)),
        ("--nice", "nice", args.nice.map(|v| v.to_string())),
    ];
    for (flag, key, value) in flags {
        let Some(value) = value else { continue };
        let param = rtlab_load::LOAD_KINDS
            .iter()
            .flat_map(|k| k.params().iter().copied())
            .find(|p| p.key() == key)
            .expect("every flag is a parameter");
        let mut applied = false;
        for spec in specs.iter_mut().filter(|s| s.kind.takes(param)) {
            let before = spec.to_string();
            let value = (key != "no-stat").then_some(value.as_str());
            if let Err(e) = spec.set_param(key, value) {
                if e.0.contains("given twice") {
                    bad_input!("{flag}: '{before}' already sets {key}");
                }
                bad_input!("{flag}: {e}");
            }
            applied = true;
        }
        if !applied {
            let takers: Vec<&str> = rtlab_load::LOAD_KINDS
                .iter()
                .filter(|k| k.takes(param))
                .map(|k| k.name())
                .collect();
            bad_input!(
                "{flag} does not apply to {} (it applies to {})",
                format_list(&specs),
                takers.join(", ")
            );
        }
    }
    for spec in &specs {
        spec.validate().map_err(|e| InputError(e.to_string()))?;
    }
    Ok(specs)
}

pub fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    let specs = specs_from(&args)?;
    let planned_ns = (!args.forever).then(|| args.duration.unwrap_or(DEFAULT_DURATION_NS));
    // Checked, not emptied (the file is replaced when first written), and
    // held open until the end: a FIFO's reader sees its end only then.
    let mut outputs = Outputs::open(Requested {
        json: args.json.as_ref(),
        ..Requested::default()
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // A second signal ends rtlab at once; the workers then see their
        // parent gone and clean up themselves.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .context("installing signal handlers")?;
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }

    let launcher = Launcher::this_executable(&["__load-worker"])
        .context("finding the rtlab executable for the load workers")?;
    let started_at = timestamp_now();
    let began = Instant::now();
    let mut loads = RunningLoads::start(&specs, &launcher)?;
    let start_notes = loads.notes();
    for note in &start_notes {
        eprintln!("note: {note}");
    }
    let loading_since = Instant::now();
    let write_running = |loads: &mut RunningLoads| {
        if outputs.snapshot_target().is_some() {
            let doc = load_doc("running", &started_at, None, began, &loads.live());
            if let Err(e) = outputs.snapshot_json(&doc) {
                eprintln!("warning: {e:#}");
            }
        }
    };
    // The first --json document exists before the load is announced: a
    // reader (or a test) that sees "loading:" finds the file there.
    write_running(&mut loads);
    if !args.quiet {
        let groups: Vec<String> = loads
            .process_groups()
            .iter()
            .map(|g| g.to_string())
            .collect();
        eprintln!(
            "loading: {} (process group{} {}) {}",
            loads.specs().join(", "),
            if groups.len() == 1 { "" } else { "s" },
            groups.join(", "),
            match planned_ns {
                Some(ns) => format!("for {}; Ctrl-C stops", human_duration(ns)),
                None => "until Ctrl-C".into(),
            }
        );
    }
    let bar = progress_bar(planned_ns, args.quiet);
    let mut last_json = Instant::now();
    let mut failure = None;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let elapsed = loading_since.elapsed();
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if planned_ns.is_some_and(|ns| elapsed.as_nanos() as u64 >= ns) {
            break;
        }
        if let Err(e) = loads.check() {
            failure = Some(e);
            break;
        }
        if let Some(bar) = &bar {
            bar.set_position(elapsed.as_millis() as u64);
            bar.set_message(live_summary(&loads.live()));
        }
        if last_json.elapsed() >= JSON_REWRITE {
            write_running(&mut loads);
            last_json = Instant::now();
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let records = loads.stop();
    let elapsed_ns = began.elapsed().as_nanos() as u64;
    let status = match (&failure, interrupted) {
        (Some(_), _) => "failed",
        (None, true) => "partial",
        (None, false) => "complete",
    };
    let doc = load_doc(status, &started_at, Some(timestamp_now()), began, &records);
    outputs.write_json(&doc)?;
    outputs.measured();
    if !args.quiet {
        write!(outputs.human(), "{}", work_table(&records))?;
    }
    for record in &records {
        for note in &record.notes {
            let line = if note.starts_with(&format!("{}:", record.name)) {
                note.clone()
            } else {
                format!("{}: {note}", record.name)
            };
            if !start_notes.contains(&line) {
                eprintln!("note: {line}");
            }
        }
    }
    if let Some(e) = failure {
        eprintln!("error: {e:#}");
        return Ok(ExitCode::from(1));
    }
    if interrupted {
        eprintln!("stopped by a signal after {}", human_duration(elapsed_ns));
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--json` document: `rtlab.load/1`.
fn load_doc(
    status: &str,
    started_at: &str,
    ended_at: Option<String>,
    began: Instant,
    records: &[LoadRecord],
) -> serde_json::Value {
    serde_json::json!({
        "schema": LOAD_SCHEMA,
        "status": status,
        "started_at": started_at,
        "ended_at": ended_at,
        "elapsed_ns": began.elapsed().as_nanos() as u64,
        "loads": records,
    })
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let code = rtlab_load::worker_main(&args.spec);
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn progress_bar(planned_ns: Option<u64>, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match planned_ns {
        Some(ns) => {
            let bar = ProgressBar::new(ns / 1_000_000);
            bar.set_style(crate::progress::bar_style());
            bar
        }
        None => {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} {spinner}  {msg}")
                    .expect("static template"),
            );
            bar
        }
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    Some(bar)
}

/// The first counter of each load, for the live line.
fn live_summary(live: &[LoadRecord]) -> String {
    live.iter()
        .filter_map(|r| {
            let (name, value) = r
                .work
                .iter()
                .find(|(k, _)| !k.starts_with("cpu_") && *k != "elapsed_ms")?;
            Some(format!("{} {name} {}", r.name, counter_text(name, *value)))
        })
        .collect::<Vec<_>>()
        .join("  ")
}

/// Every load's counters with their rates; CPU time as a share of one CPU.
fn work_table(records: &[LoadRecord]) -> String {
    let mut rows = vec![[
        "load".to_string(),
        "counter".to_string(),
        "total".to_string(),
        "per second".to_string(),
    ]];
    for record in records {
        let elapsed_ms = record.work.get("elapsed_ms").copied().unwrap_or(0).max(1);
        let mut first = true;
        for (name, &value) in &record.work {
            if name == "elapsed_ms" {
                continue;
            }
            let (total, rate) = if name.ends_with("_us") {
                let share = value as f64 / (elapsed_ms as f64 * 1000.0) * 100.0;
                (
                    human_duration(value * 1000),
                    format!("{share:.0} % of a CPU"),
                )
            } else {
                let per_s = value as f64 * 1000.0 / elapsed_ms as f64;
                let rate = if name.contains("bytes") {
                    format!("{}/s", counter_text(name, per_s as u64))
                } else {
                    format!("{per_s:.1}")
                };
                (counter_text(name, value), rate)
            };
            rows.push([
                if first {
                    record.spec.clone()
                } else {
                    String::new()
                },
                name.clone(),
                total,
                rate,
            ]);
            first = false;
        }
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        // Padded by hand: `{:<width$}` panics for a width of 65,536 or more.
        let line = format!(
            "{}  {}  {}  {}",
            pad(&row[0], widths[0], Align::Left),
            pad(&row[1], widths[1], Align::Left),
            pad(&row[2], widths[2], Align::Right),
            pad(&row[3], widths[3], Align::Right),
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> LoadArgs {
        let mut argv = vec!["rtlab", "load"];
        argv.extend_from_slice(line);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Load(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn flags_apply_to_the_loads_that_take_them() {
        let specs = specs_from(&args(&["vm,io", "--workers", "3", "--bytes", "64M"])).unwrap();
        assert_eq!(
            format_list(&specs),
            "vm:workers=3,bytes=64M,io:workers=3,bytes=64M"
        );
        let specs = specs_from(&args(&["fswalk", "--no-stat", "--root", "/usr"])).unwrap();
        assert_eq!(format_list(&specs), "fswalk:root=/usr,no-stat");
        let specs = specs_from(&args(&["cpu", "--nice", "-5"])).unwrap();
        assert_eq!(specs[0].params.nice, Some(-5));
    }

    #[test]
    fn bad_flags_are_input_errors() {
        for (line, needle) in [
            (
                &["cpu", "--bytes", "1G"][..],
                "--bytes does not apply to cpu",
            ),
            (
                &["vm:workers=2", "--workers", "3"][..],
                "already sets workers",
            ),
            (&["vm", "--bytes", "lots"][..], "bytes=lots"),
            (&["idle"][..], "no load"),
            (&["cpuu"][..], "unknown load 'cpuu'"),
        ] {
            let err = specs_from(&args(line)).unwrap_err();
            assert!(err.downcast_ref::<InputError>().is_some(), "{line:?}");
            assert!(err.to_string().contains(needle), "{line:?}: {err}");
        }
    }

    #[test]
    fn table_shows_rates_and_cpu_share() {
        let record = LoadRecord {
            name: "vm".into(),
            spec: "vm:workers=1,bytes=1M".into(),
            work: [
                ("bytes_touched".to_string(), 2 << 20),
                ("allocations".to_string(), 2),
                ("cpu_user_us".to_string(), 500_000),
                ("elapsed_ms".to_string(), 1000),
            ]
            .into_iter()
            .collect(),
            notes: vec![],
        };
        let table = work_table(&[record]);
        assert!(
            table.contains("vm:workers=1,bytes=1M  allocations"),
            "{table}"
        );
        assert!(table.contains("2 MiB/s"), "{table}");
        assert!(table.contains("50 % of a CPU"), "{table}");
        assert!(!table.contains("elapsed_ms"), "{table}");
    }
}
