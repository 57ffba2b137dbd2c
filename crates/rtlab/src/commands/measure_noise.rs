//! `rtlab measure noise`: how long the system keeps each CPU away from a
//! spinning thread, and which source took the time (paper 002, Table 4.3).

use super::measure::measure;
use crate::cli::NoiseArgs;
use crate::input::{bad_input, InputError};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::units::human_duration;
use rtlab_probe::noise::{NoiseConfig, MIN_WINDOW_NS};
use rtlab_probe::ProbeConfig;
use std::process::ExitCode;

fn config_from(args: &NoiseArgs) -> anyhow::Result<NoiseConfig> {
    let cpus = args
        .cpus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--cpus: {e}")))?;
    let priority = match (args.policy, args.priority) {
        (Policy::Fifo | Policy::Rr, p) => p.unwrap_or(rtlab_probe::DEFAULT_PRIORITY),
        (Policy::Other, None) => 0,
        (Policy::Other, Some(p)) => bad_input!(
            "--priority {p} applies only to --policy fifo or rr (policy other has no static priority)"
        ),
        (policy, _) => bad_input!("--policy {policy}: the noise probe takes fifo, rr or other"),
    };
    if args.window < MIN_WINDOW_NS {
        bad_input!(
            "--window {} is shorter than {}: the counters are read between windows, which takes about 50 µs that are not measured",
            human_duration(args.window),
            human_duration(MIN_WINDOW_NS)
        );
    }
    if args.runtime > args.period {
        bad_input!(
            "--runtime {} is longer than the --period {}",
            human_duration(args.runtime),
            human_duration(args.period)
        );
    }
    if args.window > args.runtime {
        bad_input!(
            "--window {} is longer than the --runtime {}",
            human_duration(args.window),
            human_duration(args.runtime)
        );
    }
    if args.threshold >= args.window {
        bad_input!(
            "--threshold {} must be shorter than the --window {}",
            human_duration(args.threshold),
            human_duration(args.window)
        );
    }
    Ok(NoiseConfig {
        cpus: cpus.iter().collect(),
        threshold_ns: args.threshold,
        runtime_ns: args.runtime,
        period_ns: args.period,
        window_ns: args.window,
        duration_ns: args.duration,
        sched: SchedParams {
            policy: args.policy,
            priority,
            deadline: None,
        },
        osnoise: !args.no_osnoise,
    })
}

pub fn run(args: NoiseArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(ProbeConfig::Noise(config)), &args.run, &[])?.report(args.run.quiet)
}
