//! `rtlab measure switch`: interrupt latency and the switch to a task
//! released through a synchronization mechanism (paper 001, Table 1).

use super::measure::measure;
use crate::cli::SwitchArgs;
use crate::input::{bad_input, InputError};
use rtlab_campaign::runner::switch_placement;
use rtlab_campaign::DEFAULT_SWITCH_INTERVAL_NS;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_probe::switch::{InjectDelay, Mechanism, SwitchConfig};
use rtlab_probe::timer::RunLength;
use rtlab_probe::ProbeConfig;
use std::process::ExitCode;

const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

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
            if list.contains(&mechanism) {
                bad_input!("--mechanism: `{mechanism}` is listed twice");
            }
            list.push(mechanism);
        }
        list
    };
    let priority = match (args.policy, args.priority) {
        (Policy::Fifo | Policy::Rr, p) => p.unwrap_or(rtlab_probe::DEFAULT_PRIORITY),
        (Policy::Other, None) => 0,
        (Policy::Other, Some(p)) => bad_input!(
            "--priority {p} applies only to --policy fifo or rr (policy other has no static priority)"
        ),
        (policy, _) => bad_input!(
            "--policy {policy}: the switch probe runs its task one priority below the timer thread, so it takes fifo, rr or other"
        ),
    };
    let (cpu, task_cpu) = switch_placement(args.cpu, args.cross_cpu, &CpuSet::online())
        .map_err(|e| InputError(format!("--cpu: {e}")))?;
    let interval_ns = args
        .interval
        .or(args.rate)
        .unwrap_or(DEFAULT_SWITCH_INTERVAL_NS);
    let inject = args.inject_delay.map(|delay_ns| InjectDelay {
        delay_ns,
        every: args.inject_every,
    });
    Ok(SwitchConfig {
        mechanisms,
        interval_ns,
        length: match (args.events, args.duration) {
            (Some(n), _) => RunLength::Loops(n),
            (None, d) => RunLength::DurationNs(d.unwrap_or(DEFAULT_DURATION_NS)),
        },
        cpu,
        task_cpu,
        process: args.process,
        sched: SchedParams {
            policy: args.policy,
            priority,
            deadline: None,
        },
        inject,
    })
}

pub fn run(args: SwitchArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(ProbeConfig::Switch(config)), &args.run, &[])?.report(args.run.quiet)
}
