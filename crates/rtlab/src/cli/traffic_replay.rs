//! `rtlab traffic replay`.
//!
//! CONTRACT (issue 20): the replay part owns this file and may add flags;
//! the names below are the contract.

use super::shared::RunArgs;
use crate::input;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab traffic gen constant --rate 2k --count 2000 -o cbr.plan
  rtlab traffic replay cbr.plan --to 127.0.0.1:7000
  rtlab traffic replay capture.plan --to 10.0.0.2:7000 --speed 2 --loop 10 --cpu 1 --json run.json

Every packet leaves at its planned instant on an absolute schedule (the
dispatcher sleeps to the instant minus a guard and spins to the
nanosecond), never relative to the previous packet. Departures are the
kernel's software transmit timestamps where it gives them, else the time of
the send. Series: departure (departure - planned instant), gap (|departure
gap - planned gap|), dispatch. --budget 'departure:p99.9<5us' checks the run.
Docs: docs/traffic-replay.md.
Exit code: 0 done, 1 failure or --budget not kept, 2 bad input, 130 signal.")]
pub struct TrafficReplayArgs {
    /// The traffic plan (see `rtlab traffic gen|import|record`).
    pub plan: PathBuf,
    /// Send every flow here (else each flow's dest=).
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: Option<String>,
    /// Play faster (2) or slower (0.5): offsets divided by it.
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub speed: f64,
    /// Play the plan N times (its repeat period apart, or back to back); without N, until stopped.
    #[arg(long = "loop", value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub repeat: Option<u64>,
    /// Pin the sender to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// The sender's real-time priority (SCHED_FIFO).
    #[arg(long, default_value_t = rtlab_probe::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: u32,
    /// How early to wake before each packet and spin: auto or a duration.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION")]
    pub guard: String,
    /// Do not send a packet reached later than this (counted skipped).
    #[arg(long, default_value = "1ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub skip_after: u64,
    /// A packet that left later than this after its instant counts late.
    #[arg(long, default_value = "5us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub late: u64,
    /// Send the plan's bytes only: no stamp at the start of each datagram.
    #[arg(long)]
    pub no_stamp: bool,
    /// Departure times: kernel (software transmit timestamps where given) or user (the send's clock).
    #[arg(long, default_value = "kernel", value_name = "kernel|user")]
    pub timestamps: String,
    /// SO_TXTIME (an fq or etf qdisc on the route): off, auto (delta = the guard, from the measured wake-up latency) or a delta.
    #[arg(long, default_value = "off", value_name = "off|auto|DURATION")]
    pub txtime: String,
    /// Testing the replay: spin this long before every --inject-every-th packet.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,
    /// With --inject-delay: every N-th packet.
    #[arg(long, default_value = "100", value_name = "N", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub inject_every: u64,
    #[command(flatten)]
    pub run: RunArgs,
}
