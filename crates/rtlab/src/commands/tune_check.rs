//! `rtlab tune check`: the system audit, as text or JSON.

use clap::Args;
use rtlab_tune::check::{self, AuditInput, Severity};
use std::process::ExitCode;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune check                     # every finding, worst first, with a fix each
  rtlab tune check --json | jq '.findings[] | select(.severity != \"ok\")'
  rtlab tune check --fail-on critical  # exit 1 if anything critical (for CI gates)

Checks: preemption model, RT throttling and RT group scheduling, CPU governor and
idle states, THP, swap, irqbalance and IRQ affinity, isolcpus/nohz_full/rcu_nocbs,
timer migration, clocksource, NMI watchdog, memlock and rtprio limits,
virtualization, and kernel threads (ktimers, ksoftirqd, rcu, irq/*) ranked
below a promoted application. Changes nothing. Details: docs/tune-check.md.")]
pub struct CheckArgs {
    /// Exit 1 when the worst finding is at least this severity (warning or critical).
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    fail_on: Option<Severity>,
    #[arg(long)]
    json: bool,
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    s.parse()
}

pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let input = AuditInput::from_system()
        .map_err(|e| anyhow::anyhow!("tune check: cannot read /proc: {e}"))?;
    let report = check::audit(&input);
    if args.json {
        out!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        // Findings name threads (other users choose their names): escaped.
        put!("{}", report.render_text());
    }
    Ok(match args.fail_on {
        Some(threshold) if report.fails(threshold) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}
