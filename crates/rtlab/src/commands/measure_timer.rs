//! `rtlab measure timer`: timer wake-up latency per CPU.

use super::measure::measure;
use crate::cli::TimerArgs;
use crate::input::{self, bad_input, InputError};
use crate::outputs::ResultFile;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{DeadlineParams, Policy};
use rtlab_core::settings::flag;
use rtlab_core::units::{human_duration, Micros};
use rtlab_probe::settings::sched_of;
use rtlab_probe::timer::{RunLength, TimerConfig};
use rtlab_probe::DEFAULT_DURATION_NS;
use rtlab_report::export::HistfileExporter;
use std::process::ExitCode;
use std::sync::Arc;

/// Checks the arguments that clap cannot check alone and builds the config;
/// the config's own rules ([`TimerConfig::validate`]) name their flag.
fn config_from(args: &TimerArgs) -> anyhow::Result<TimerConfig> {
    let cpus = args
        .cpus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--cpus: {e}")))?;
    let mut sched = sched_of(args.policy, args.priority);
    sched.deadline = (args.policy == Policy::Deadline).then_some(DeadlineParams {
        runtime_ns: args.dl_runtime,
        deadline_ns: args.interval,
        period_ns: args.interval,
    });
    let length = match (args.loops, args.duration) {
        (Some(n), _) => RunLength::Loops(n),
        (None, d) => RunLength::DurationNs(d.unwrap_or(DEFAULT_DURATION_NS)),
    };
    // --smp is the default layout (every online CPU, one pinned thread
    // each): clap keeps it from --cpus, --threads and --priospread.
    let mut config = TimerConfig::new(cpus.iter().collect(), length, sched);
    config.threads = args.threads;
    config.interval_ns = args.interval;
    config.distance_ns = args.distance;
    config.mode = args.mode;
    config.break_at_ns = args.break_at;
    config.hist_max_us = args.histfile.as_ref().map(|_| args.hist_max / 1000);
    config.priospread = args.priospread;
    config.aligned_ns = args.aligned.unwrap_or(0);
    if let Err(e) = config.validate() {
        bad_input!("{}", e.render(flag));
    }
    input::hist_max_us(args.hist_max)?;
    Ok(config)
}

pub fn run(args: TimerArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    let histfile = args.histfile.as_ref().map(|target| ResultFile {
        flag: "--histfile",
        target,
        exporter: Arc::new(HistfileExporter {
            hist_max_us: args.hist_max / 1000,
            all_threads_column: args.histofall,
        }),
    });
    let measured = measure(Box::new(config), &args.run, histfile.as_slice())?;
    let break_event = measured.result.break_event.clone();
    let code = measured.report(args.run.quiet)?;
    if let Some(event) = break_event {
        eprintln!(
            "break: {} woke {} µs late (> {} µs) at {} (sample {}); {}",
            event.series,
            Micros(event.latency_ns),
            Micros(event.threshold_ns),
            human_duration(event.at_ns),
            event.sample,
            event.trace_note
        );
    }
    Ok(code)
}
