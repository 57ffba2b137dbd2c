//! `rtlab measure switch`: interrupt latency and the switch to a task
//! released through a synchronization mechanism (paper 001, Table 1).

use super::measure::measure;
use crate::cli::SwitchArgs;
use crate::input::{bad_input, InputError};
use rtlab_campaign::runner::switch_placement;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;
use rtlab_core::settings::flag;
use rtlab_probe::settings::sched_of;
use rtlab_probe::switch::{InjectDelay, Mechanism, SwitchConfig, DEFAULT_INTERVAL_NS};
use rtlab_probe::timer::RunLength;
use rtlab_probe::DEFAULT_DURATION_NS;
use std::process::ExitCode;

/// Checks the arguments that clap cannot check alone and builds the config;
/// the config's own rules ([`SwitchConfig::validate`]) name their flag.
fn config_from(args: &SwitchArgs) -> anyhow::Result<SwitchConfig> {
    let mechanisms = if args.all {
        Mechanism::ALL.to_vec()
    } else {
        let mut list: Vec<Mechanism> = Vec::new();
        for name in &args.mechanism {
            let mechanism: Mechanism = name
                .trim()
                .parse()
                .map_err(|e| InputError(format!("--mechanism: {e}")))?;
            list.push(mechanism);
        }
        list
    };
    // Narrower than the probe (which also takes batch and idle): the
    // command's --policy says fifo, rr or other.
    if !matches!(args.policy, Policy::Fifo | Policy::Rr | Policy::Other) {
        bad_input!(
            "--policy {}: the switch probe runs its task at or below the timer thread's priority, so it takes fifo, rr or other",
            args.policy
        );
    }
    let (cpu, task_cpu) = switch_placement(args.cpu, args.cross_cpu, &CpuSet::online())
        .map_err(|e| InputError(format!("--cpu: {e}")))?;
    let interval_ns = args.interval.or(args.rate).unwrap_or(DEFAULT_INTERVAL_NS);
    let inject = args.inject_delay.map(|delay_ns| InjectDelay {
        delay_ns,
        every: args.inject_every,
    });
    let config = SwitchConfig {
        mechanisms,
        interval_ns,
        length: match (args.events, args.duration) {
            (Some(n), _) => RunLength::Loops(n),
            (None, d) => RunLength::DurationNs(d.unwrap_or(DEFAULT_DURATION_NS)),
        },
        cpu,
        task_cpu,
        process: args.process,
        sched: sched_of(args.policy, args.priority),
        inject,
        pacing: args.pacing,
    };
    config
        .validate()
        .map_err(|e| InputError(e.render(flag_of)))?;
    Ok(config)
}

/// The flag of a setting of [`SwitchConfig`].
fn flag_of(key: &str) -> String {
    match key {
        "mechanisms" => "--mechanism".to_string(),
        key => flag(key),
    }
}

pub fn run(args: SwitchArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}
