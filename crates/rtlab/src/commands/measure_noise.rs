//! `rtlab measure noise`: how long the system keeps each CPU away from a
//! spinning thread, and which source took the time (paper 002, Table 4.3).

use super::measure::measure;
use crate::cli::NoiseArgs;
use crate::input::{bad_input, InputError};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;
use rtlab_core::settings::flag;
use rtlab_probe::noise::NoiseConfig;
use rtlab_probe::settings::sched_of;
use std::process::ExitCode;

/// Checks the arguments that clap cannot check alone and builds the config;
/// the config's own rules ([`NoiseConfig::validate`]) name their flag.
fn config_from(args: &NoiseArgs) -> anyhow::Result<NoiseConfig> {
    let cpus = args
        .cpus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--cpus: {e}")))?;
    // Narrower than the probe (which also takes batch and idle): the
    // command's --policy says fifo, rr or other.
    if !matches!(args.policy, Policy::Fifo | Policy::Rr | Policy::Other) {
        bad_input!(
            "--policy {}: the noise probe takes fifo, rr or other",
            args.policy
        );
    }
    let config = NoiseConfig {
        cpus: cpus.iter().collect(),
        threshold_ns: args.threshold,
        runtime_ns: args.runtime,
        period_ns: args.period,
        window_ns: args.window,
        duration_ns: args.duration,
        sched: sched_of(args.policy, args.priority),
        osnoise: !args.no_osnoise,
    };
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    Ok(config)
}

pub fn run(args: NoiseArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}
