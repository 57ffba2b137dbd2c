//! `rtlab measure timer`: timer wake-up latency per CPU.

use crate::cli::{ModeArg, TimerArgs};
use crate::input::{bad_input, InputError};
use crate::progress::{LiveStatus, REFRESH};
use crate::signals;
use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;
use rtlab_core::journal::{self, Journal};
use rtlab_core::result::{timestamp_now, RunResult, RunStatus, RUN_SCHEMA};
use rtlab_core::sched::{DeadlineParams, Policy, SchedParams};
use rtlab_core::units::{human_duration, Micros};
use rtlab_probe::setup::{PreparedProcess, ProcessOptions};
use rtlab_probe::timer::{self, RunLength, TimerConfig, WaitMode};
use rtlab_report::export::{write_file, HistfileExporter, JsonExporter};
use rtlab_report::table::summary_table;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
const DEFAULT_PRIORITY: u32 = 90;
/// How often a --json file is rewritten while the run goes on.
const JSON_REWRITE: Duration = Duration::from_secs(2);

/// Checks the arguments that clap cannot check alone and builds the config.
fn config_from(args: &TimerArgs) -> anyhow::Result<TimerConfig> {
    let cpus = args
        .cpus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--cpus: {e}")))?;
    let priority = match (args.policy.takes_priority(), args.priority) {
        (true, p) => p.unwrap_or(DEFAULT_PRIORITY),
        (false, None) => 0,
        (false, Some(p)) => bad_input!(
            "--priority {p} applies only to --policy fifo or rr (policy {} has no static priority)",
            args.policy
        ),
    };
    let deadline = (args.policy == Policy::Deadline).then_some(DeadlineParams {
        runtime_ns: args.dl_runtime,
        deadline_ns: args.interval,
        period_ns: args.interval,
    });
    if args.policy == Policy::Deadline {
        if args.distance != 0 {
            bad_input!(
                "--distance cannot be used with --policy deadline (the period is the interval)"
            );
        }
        if args.dl_runtime > args.interval {
            bad_input!(
                "--dl-runtime {} is longer than the --interval {} (runtime <= deadline = period)",
                human_duration(args.dl_runtime),
                human_duration(args.interval)
            );
        }
    }
    if args.hist_max % 1000 != 0 {
        bad_input!(
            "--hist-max {}: the histfile has 1 µs bins, give a whole number of µs",
            human_duration(args.hist_max)
        );
    }
    let hist_max_us = args.hist_max / 1000;
    if hist_max_us > 10_000_000 {
        bad_input!(
            "--hist-max {}: at most 10s of 1 µs bins",
            human_duration(args.hist_max)
        );
    }
    Ok(TimerConfig {
        cpus: cpus.iter().collect(),
        interval_ns: args.interval,
        distance_ns: args.distance,
        length: match (args.loops, args.duration) {
            (Some(n), _) => RunLength::Loops(n),
            (None, d) => RunLength::DurationNs(d.unwrap_or(DEFAULT_DURATION_NS)),
        },
        sched: SchedParams {
            policy: args.policy,
            priority,
            deadline,
        },
        mode: match args.mode {
            ModeArg::Abs => WaitMode::Abs,
            ModeArg::Rel => WaitMode::Rel,
            ModeArg::Timerfd => WaitMode::Timerfd,
        },
        break_at_ns: args.break_at,
        hist_max_us: args.histfile.as_ref().map(|_| hist_max_us),
    })
}

/// Opens an output file before measuring, so a bad path fails in the first
/// second and not after a ten-minute run.
fn create_output(path: &Path, what: &str) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).map_err(|e| {
        anyhow::Error::new(InputError(format!(
            "{what} {}: cannot create: {e}",
            path.display()
        )))
    })
}

pub fn run(args: TimerArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    let mut sysctls = Vec::new();
    for assignment in &args.sysctl {
        journal::parse_sysctl(assignment).map_err(|e| InputError(format!("--sysctl: {e}")))?;
        sysctls.push(assignment.clone());
    }
    let json_path = args.json.clone();
    let to_stdout = json_path.as_deref() == Some(Path::new("-"));
    // With --json - the table goes to stderr, so stdout is JSON only.
    let mut human: Box<dyn Write> = if to_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    for (path, what) in [(&args.histfile, "--histfile"), (&json_path, "--json")] {
        if let Some(path) = path.as_deref().filter(|p| *p != Path::new("-")) {
            create_output(path, what)?;
        }
    }
    let samples_csv: Option<Box<dyn Write + Send>> = match &args.samples {
        Some(path) => Some(Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            create_output(path, "--samples")?,
        ))),
        None => None,
    };

    // What an earlier, killed rtlab left changed is put back first.
    for recovered in journal::recover_stale(&journal::state_dir()) {
        eprintln!("restore: {recovered}");
    }
    let journal = Arc::new(Mutex::new(Journal::for_this_process()));
    journal::install_panic_restore(Arc::clone(&journal));
    let stop = Arc::new(AtomicBool::new(false));
    signals::install(Arc::clone(&stop), Arc::clone(&journal))
        .context("installing signal handlers")?;

    let mut warnings = Vec::new();
    let mut system_changes = Vec::new();
    for assignment in &sysctls {
        let outcome = journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_sysctl(assignment);
        match outcome {
            Ok(()) => system_changes.push(format!("sysctl {assignment}")),
            Err(e) => warnings.push(format!("--sysctl {assignment} not applied: {e}")),
        }
    }
    let process = {
        let mut journal = journal.lock().unwrap_or_else(|p| p.into_inner());
        PreparedProcess::prepare(
            &ProcessOptions {
                mlock: true,
                dma_latency_us: (!args.no_dma_latency).then_some(0),
            },
            &mut journal,
        )
    };
    let mut effective = process.effective.clone();
    effective.system_changes.extend(system_changes);
    warnings.extend(process.warnings.iter().cloned());
    // Taken after the changes, so it shows the tuning in effect.
    let environment = Environment::capture();

    let mut result = RunResult {
        schema: RUN_SCHEMA.into(),
        id: RunResult::new_id(),
        probe: "timer".into(),
        status: RunStatus::Running,
        started_at: timestamp_now(),
        ended_at: None,
        elapsed_ns: 0,
        command: std::env::args().collect(),
        config: serde_json::to_value(&config)?,
        effective,
        environment,
        series: Vec::new(),
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        warnings,
    };

    let run = timer::start(&config, Arc::clone(&stop), samples_csv)?;
    result.warnings.extend(run.warnings().iter().cloned());
    for warning in &result.warnings {
        eprintln!("warning: {warning}");
    }
    let json_file = json_path.as_deref().filter(|p| *p != Path::new("-"));
    if let Some(path) = json_file {
        result.series = run.snapshot();
        write_file(&JsonExporter, &result, path)
            .with_context(|| format!("writing {}", path.display()))?;
    }

    let status = LiveStatus::new(run.series_names(), config.planned_ns(), args.quiet);
    let mut last_json = Instant::now();
    while !run.is_finished() {
        std::thread::sleep(REFRESH);
        if let Some(status) = &status {
            status.update(run.series_names(), &run.live(), run.elapsed_ns());
        }
        if let Some(path) = json_file.filter(|_| last_json.elapsed() >= JSON_REWRITE) {
            result.series = run.snapshot();
            result.elapsed_ns = run.elapsed_ns();
            if let Err(e) = write_file(&JsonExporter, &result, path) {
                eprintln!("warning: rewriting {}: {e}", path.display());
            }
            last_json = Instant::now();
        }
    }
    if let Some(status) = status {
        status.finish();
    }
    let outcome = run.finish()?;
    drop(process);

    result.series = outcome.series;
    result.elapsed_ns = outcome.elapsed_ns;
    result.ended_at = Some(timestamp_now());
    result.warnings = outcome
        .warnings
        .into_iter()
        .chain(result.warnings.drain(..))
        .collect();
    timer::dedup_keep_order(&mut result.warnings);
    let interrupted = stop.load(Ordering::SeqCst) && outcome.break_event.is_none();
    result.status = match (&outcome.break_event, outcome.stopped_early) {
        (Some(_), _) => RunStatus::Break,
        (None, true) => RunStatus::Partial,
        (None, false) => RunStatus::Complete,
    };
    result.break_event = outcome.break_event;
    for series in &result.series {
        if series.stats.dropped > 0 {
            result.warnings.push(format!(
                "{}: {} samples were lost between the measuring thread and the recorder",
                series.name, series.stats.dropped
            ));
        }
    }

    // The system goes back as it was before anything is reported.
    let restored = journal.lock().unwrap_or_else(|p| p.into_inner()).restore();
    for r in &restored {
        if !r.ok() {
            eprintln!("error: {r}");
        }
    }

    if let Some(path) = &json_path {
        write_file(&JsonExporter, &result, path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.histfile {
        let exporter = HistfileExporter {
            hist_max_us: args.hist_max / 1000,
            all_threads_column: args.histofall,
        };
        write_file(&exporter, &result, path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !args.quiet {
        print_summary(&mut human, &result)?;
    }
    if let Some(event) = &result.break_event {
        eprintln!(
            "break: {} woke {} µs late (> {} µs) at {} (sample {}); {}",
            event.series,
            Micros(event.latency_ns),
            Micros(event.threshold_ns),
            human_duration(event.at_ns),
            event.sample,
            event.trace_note
        );
        return Ok(ExitCode::from(1));
    }
    if interrupted {
        eprintln!("stopped by a signal: the partial result was kept");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(out: &mut dyn Write, result: &RunResult) -> std::io::Result<()> {
    writeln!(out)?;
    write!(out, "{}", summary_table(result))?;
    let sched = result
        .series
        .first()
        .and_then(|s| s.thread.actual)
        .map_or_else(|| "unknown".to_string(), |p| p.to_string());
    writeln!(
        out,
        "status {}, {} measured, policy in effect: {sched}, mlockall {}, cpu_dma_latency {}",
        serde_json::to_value(result.status)?.as_str().unwrap_or("?"),
        human_duration(result.elapsed_ns),
        if result.effective.mlockall {
            "on"
        } else {
            "OFF"
        },
        result
            .effective
            .dma_latency_us
            .map_or_else(|| "not held".to_string(), |v| format!("{v} us")),
    )?;
    for warning in &result.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}
