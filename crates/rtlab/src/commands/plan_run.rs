//! `rtlab plan run`: the dispatcher fires a plan's events at their exact
//! times and records each one's dispatch error (paper 002's plan scheduler).

use super::measure::measure;
use crate::cli::PlanRunArgs;
use crate::input::{bad_input, InputError};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::flag;
use rtlab_exec::dispatch::{DispatchConfig, Guard, Inject, Repeat};
use rtlab_exec::plan::LoadedPlan;
use std::path::Path;
use std::process::ExitCode;

/// Checks the arguments that clap cannot check alone, the plan's file
/// included, and builds the config; the config's own rules
/// ([`DispatchConfig::validate`]) name their flag.
fn config_from(args: &PlanRunArgs) -> anyhow::Result<DispatchConfig> {
    check_cpu(args.cpu)?;
    let guard = guard_of(&args.guard)?;
    let config = DispatchConfig {
        plan: args.file.clone(),
        cpu: args.cpu,
        sched: SchedParams {
            policy: Policy::Fifo,
            priority: args.priority,
            deadline: None,
        },
        repeat: if args.forever {
            Repeat::Forever
        } else {
            Repeat::Times(args.repeat.unwrap_or(1))
        },
        guard,
        spin_budget_percent: args.spin_budget,
        skip_after_ns: args.skip_after,
        inject: args.inject_delay.map(|delay_ns| Inject {
            delay_ns,
            every: args.inject_every,
        }),
    };
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    checked_plan(&args.file)?;
    Ok(config)
}

/// `--cpu N` is an online CPU (the dispatcher pins itself there).
pub fn check_cpu(cpu: Option<usize>) -> anyhow::Result<()> {
    if let Some(cpu) = cpu {
        let online = CpuSet::online();
        if !online.contains(cpu) {
            bad_input!("--cpu {cpu}: not an online CPU (online: {online})");
        }
    }
    Ok(())
}

/// `--guard auto|DURATION`.
pub fn guard_of(text: &str) -> anyhow::Result<Guard> {
    match text.parse() {
        Ok(guard) => Ok(guard),
        Err(e) => bad_input!("--guard {text}: {e}"),
    }
}

/// Reads and checks a plan before anything runs: a bad file is bad input,
/// named with its line (`rtlab plan run`, `rtlab traffic replay`).
pub fn checked_plan(file: &Path) -> anyhow::Result<LoadedPlan> {
    let plan = match rtlab_exec::plan::load(file) {
        Ok(plan) => plan,
        Err(e) => bad_input!("{e}"),
    };
    if plan.events.is_empty() {
        bad_input!("{}: the plan has no events", file.display());
    }
    let report = rtlab_exec::plan::check::check_lines(
        &plan.header,
        plan.events.as_ref(),
        plan.lines.as_deref(),
    );
    if let Some(error) = report
        .findings
        .iter()
        .find(|f| f.severity == rtlab_exec::plan::Severity::Error)
    {
        let at = error.line.map_or(String::new(), |l| format!(":{l}"));
        bad_input!(
            "{}{at}: {} ({} errors: see `rtlab plan check`)",
            file.display(),
            error.message,
            report.errors
        );
    }
    Ok(plan)
}

pub fn run(args: PlanRunArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}
