//! `rtlab measure timer`: timer wake-up latency per CPU.

use crate::cli::{ModeArg, TimerArgs};
use crate::input::{bad_input, InputError};
use crate::progress::LiveStatus;
use crate::session;
use anyhow::Context;
use rtlab_campaign::runner::{self, RunObserver, RunRequest};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal;
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_core::sched::{DeadlineParams, Policy, SchedParams};
use rtlab_core::units::{human_duration, Micros};
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::timer::{RunLength, TimerConfig, TimerRun, WaitMode};
use rtlab_report::export::{write_file, HistfileExporter, JsonExporter};
use rtlab_report::table::summary_table;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
const DEFAULT_PRIORITY: u32 = 90;

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
    if !args.hist_max.is_multiple_of(1000) {
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
    for assignment in &args.sysctl {
        journal::parse_sysctl(assignment).map_err(|e| InputError(format!("--sysctl: {e}")))?;
    }
    let loads = match &args.load {
        Some(list) => {
            rtlab_load::parse_list(list).map_err(|e| InputError(format!("--load: {e}")))?
        }
        None => Vec::new(),
    };
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
    // An explicit --db that cannot be opened is bad input; the default
    // store being unusable (no writable home) only costs the stored copy.
    let mut store = match (args.no_store, args.store.db.as_deref()) {
        (true, _) => None,
        (false, Some(db)) => Some(session::open_store(Some(db))?),
        (false, None) => match session::open_store(None) {
            Ok(store) => Some(store),
            Err(e) => {
                eprintln!("warning: the run will not be stored: {e:#}");
                None
            }
        },
    };

    let context = session::begin()?;
    let request = RunRequest {
        timer: config.clone(),
        process: ProcessOptions {
            mlock: true,
            dma_latency_us: (!args.no_dma_latency).then_some(0),
        },
        sysctls: args.sysctl.clone(),
        loads,
        command: std::env::args().collect(),
        campaign: None,
        samples_csv,
    };
    let mut observer = TimerObserver {
        status: None,
        planned_ns: config.planned_ns(),
        quiet: args.quiet,
        json_file: json_path.as_deref().filter(|p| *p != Path::new("-")),
    };
    let result = runner::execute(request, &context, &mut observer)?;
    if let Some(status) = observer.status.take() {
        status.finish();
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
    if let Some(store) = &mut store {
        store
            .save(&result)
            .with_context(|| format!("storing the run in {}", store.path().display()))?;
    }
    if !args.quiet {
        print_summary(&mut human, &result)?;
        if store.is_some() {
            writeln!(human, "stored as run {}", result.id)?;
        }
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
    match result.status {
        RunStatus::Failed => {
            eprintln!("error: the run failed: see the warnings above");
            Ok(ExitCode::from(1))
        }
        RunStatus::Partial => {
            eprintln!("stopped by a signal: the partial result was kept");
            Ok(ExitCode::from(130))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Live status on the terminal and the --json file rewritten during the run.
struct TimerObserver<'a> {
    status: Option<LiveStatus>,
    planned_ns: u64,
    quiet: bool,
    json_file: Option<&'a Path>,
}

impl RunObserver for TimerObserver<'_> {
    fn started(&mut self, result: &RunResult, run: &TimerRun) {
        for warning in &result.warnings {
            eprintln!("warning: {warning}");
        }
        self.checkpoint(result);
        self.status = LiveStatus::new(run.series_names(), self.planned_ns, self.quiet);
    }

    fn tick(&mut self, run: &TimerRun) {
        if let Some(status) = &self.status {
            status.update(run.series_names(), &run.live(), run.elapsed_ns());
        }
    }

    fn checkpoint(&mut self, result: &RunResult) {
        if let Some(path) = self.json_file {
            if let Err(e) = write_file(&JsonExporter, result, path) {
                eprintln!("warning: rewriting {}: {e}", path.display());
            }
        }
    }
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
    for load in &result.loads {
        let work: Vec<String> = load
            .work
            .iter()
            .map(|(name, value)| format!("{name} {}", rtlab_load::counter_text(name, *value)))
            .collect();
        writeln!(out, "under load {}: {}", load.spec, work.join(", "))?;
        for note in &load.notes {
            writeln!(out, "  {note}")?;
        }
    }
    for warning in &result.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}
