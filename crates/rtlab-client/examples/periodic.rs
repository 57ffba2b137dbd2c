//! A Rust program that runs periodically under rtlab's executive, the
//! twin of examples/c/periodic.c (docs/librtlab.md): it attaches, works a
//! little at each of its activations, detaches and prints its statistics.
//!
//! ```text
//! cargo build --release -p rtlab-client --example periodic
//! target/release/examples/periodic [PERIOD_MS [ACTIVATIONS]]   # every 10 ms, 100 times
//! ```
//!
//! It needs `rtlab exec serve` running (its socket: `$RTLAB_SOCKET`, else
//! /run/rtlab/exec.sock). Exit code 0 when every call succeeded, 1 when one
//! failed (the reason on stderr), 2 for bad arguments.

use rtlab_client::{Params, Periodic, Stats};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: periodic [PERIOD_MS [ACTIVATIONS]]";

/// A whole number from 1 to `max`, or what is wrong with it.
fn parse(text: &str, what: &str, max: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(value) if (1..=max).contains(&value) => Ok(value),
        _ => Err(format!(
            "{what} '{text}' is not a whole number from 1 to {max}"
        )),
    }
}

/// The periodic work: spins for `length` (a real program computes here).
fn work(length: Duration) {
    let start = Instant::now();
    while start.elapsed() < length {
        std::hint::spin_loop();
    }
}

fn run(period_ms: u64, activations: u64) -> Result<Stats, (&'static str, rtlab_client::Error)> {
    let period = Duration::from_millis(period_ms);
    // A tenth of the period, at most 100 µs.
    let work_length = (period / 10).min(Duration::from_micros(100));
    let mut task =
        Periodic::attach(&Params::every(period_ms * 1_000_000)).map_err(|e| ("attach", e))?;
    println!("periodic: attached, every {period_ms} ms for {activations} activations");
    for _ in 0..activations {
        task.wait_next().map_err(|e| ("wait_next", e))?;
        work(work_length);
    }
    task.detach().map_err(|e| ("detach", e))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [] => Ok((10, 100)),
        [period] => parse(period, "PERIOD_MS", 60_000).map(|p| (p, 100)),
        [period, count] => parse(period, "PERIOD_MS", 60_000)
            .and_then(|p| Ok((p, parse(count, "ACTIVATIONS", 100_000_000)?))),
        _ => Err("too many arguments".to_string()),
    };
    let (period_ms, activations) = match parsed {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("periodic: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(period_ms, activations) {
        Ok(stats) => {
            println!("activations      {}", stats.activations);
            println!("missed           {}", stats.missed_activations);
            println!("deadline misses  {}", stats.deadline_misses);
            println!("budget overruns  {}", stats.budget_overruns);
            println!("lateness p50     {} ns", stats.lateness_p50_ns);
            println!("lateness p99     {} ns", stats.lateness_p99_ns);
            println!("lateness max     {} ns", stats.lateness_max_ns);
            ExitCode::SUCCESS
        }
        Err((call, error)) => {
            // The code as the C example shows it, and the reason.
            eprintln!("periodic: {call}: {error} (code {})", error.code());
            ExitCode::from(1)
        }
    }
}
