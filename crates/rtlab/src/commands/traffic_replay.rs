//! `rtlab traffic replay`: a traffic plan's packets, each at its planned
//! instant, with their departures measured.

use super::measure::measure;
use super::plan_run::{check_cpu, checked_plan, guard_of};
use crate::cli::TrafficReplayArgs;
use crate::input::{self, bad_input, InputError};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::flag;
use rtlab_exec::dispatch::{Inject, Repeat};
use rtlab_exec::module::connected_udp;
use rtlab_exec::traffic::replay::{flows_of, qdisc_for, ReplayConfig, TxStamps, TxTime};
use std::net::SocketAddr;
use std::process::ExitCode;

/// A random stream id, so that a receiver tells this replay's packets
/// from an earlier one's.
fn random_stream() -> u32 {
    let mut bytes = [0u8; 4];
    // SAFETY: getrandom fills the 4 bytes given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == 4 {
        u32::from_le_bytes(bytes)
    } else {
        // Without getrandom (very old kernels): the pid and the clock.
        std::process::id() ^ rtlab_core::clock::now_ns() as u32
    }
}

fn timestamps_of(text: &str) -> anyhow::Result<TxStamps> {
    Ok(match text {
        "kernel" => TxStamps::Kernel,
        "user" => TxStamps::User,
        other => bad_input!("--timestamps {other}: expected kernel or user"),
    })
}

fn txtime_of(text: &str) -> anyhow::Result<TxTime> {
    Ok(match text {
        "off" => TxTime::Off,
        "auto" => TxTime::Auto,
        text => match input::duration(text) {
            Ok(ns) => TxTime::Delta(ns),
            Err(e) => bad_input!("--txtime {text}: expected off, auto or a duration ({e})"),
        },
    })
}

/// Checks what clap cannot (the plan included: a traffic plan whose every
/// flow has somewhere to go) and builds the config; its own rules
/// ([`ReplayConfig::validate`]) name their flag.
fn config_from(args: &TrafficReplayArgs) -> anyhow::Result<ReplayConfig> {
    check_cpu(args.cpu)?;
    let to = match args.to.as_deref().map(str::parse::<SocketAddr>) {
        None => None,
        Some(Ok(to)) if to.port() != 0 => Some(to),
        Some(_) => bad_input!(
            "--to {}: expected ADDR:PORT with a port above 0, e.g. 127.0.0.1:7000",
            args.to.as_deref().unwrap_or_default()
        ),
    };
    let config = ReplayConfig {
        plan: args.plan.clone(),
        to,
        speed: args.speed,
        repeat: match args.repeat {
            None => Repeat::Times(1),
            Some(0) => Repeat::Forever,
            Some(n) => Repeat::Times(n),
        },
        cpu: args.cpu,
        sched: SchedParams {
            policy: Policy::Fifo,
            priority: args.priority,
            deadline: None,
        },
        guard: guard_of(&args.guard)?,
        skip_after_ns: args.skip_after,
        late_after_ns: args.late,
        stamp: !args.no_stamp,
        stream: random_stream(),
        timestamps: timestamps_of(&args.timestamps)?,
        txtime: txtime_of(&args.txtime)?,
        inject: args.inject_delay.map(|delay_ns| Inject {
            delay_ns,
            every: args.inject_every,
        }),
    };
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    let plan = checked_plan(&args.plan)?;
    let flows = match flows_of(&plan, to) {
        Ok(flows) => flows,
        Err(e) => bad_input!("{}: {e}", args.plan.display()),
    };
    // Back to back, a plan whose events are all at one instant repeats
    // every nanosecond: a loop of it is a flood, not a replay.
    let last_offset = plan.events.event(plan.events.len() - 1).offset_ns;
    if config.repeat != Repeat::Times(1) && plan.header.repeat_ns.is_none() && last_offset == 0 {
        bad_input!(
            "--loop: {}: every event is at offset 0 and the plan has no repeat period, so its \
             repetitions would follow each other 1 ns apart; give it a `repeat` period",
            args.plan.display()
        );
    }
    // A destination the kernel will not send to (a broadcast address:
    // rtlab never sets SO_BROADCAST; no route) is bad input, said now by
    // its flow, not a failed run stored after the warm-up.
    for flow in &flows {
        if let Err(e) = connected_udp(flow.dest) {
            let by = if to.is_some() { "--to" } else { "dest=" };
            bad_input!(
                "{}: flow {}: cannot send to {} ({by}): {e}",
                args.plan.display(),
                flow.name,
                flow.dest
            );
        }
    }
    // SO_TXTIME needs a qdisc that honours it on every flow's route.
    if config.txtime != TxTime::Off {
        let mut dests: Vec<SocketAddr> = flows.iter().map(|f| f.dest).collect();
        dests.sort_unstable();
        dests.dedup();
        for dest in dests {
            if let Err(e) = qdisc_for(dest) {
                bad_input!("--txtime: {e}");
            }
        }
    }
    Ok(config)
}

pub fn run(args: TrafficReplayArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}
