//! `rtlab monitor`: measures every CPU of `--cpus` in bursts of `--duty`
//! and serves `/metrics` until SIGINT/SIGTERM or `--duration`.

use crate::cli::MonitorArgs;
use crate::input::{bad_input, InputError};
use crate::terminal::out;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;
use rtlab_core::sched;
use rtlab_core::settings::flag;
use rtlab_core::units::{human_duration, Micros};
use rtlab_monitor::config::{DEFAULT_DUTY_PERCENT, DEFAULT_INTERVAL_NS, DEFAULT_WINDOW_NS};
use rtlab_monitor::exposition::{environment_labels, own_cpu_seconds};
use rtlab_monitor::{CpuSummary, Exposition, Monitor, MonitorConfig, Server};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The schema of `--json`'s lines.
const JSON_SCHEMA: &str = "rtlab.monitor/1";
/// How often the main thread looks at the stop flag (and the status line).
const TICK: Duration = Duration::from_millis(100);

/// Checks the arguments and builds the config; the config's own rules
/// ([`MonitorConfig::validate`]) name their flag.
fn config_from(args: &MonitorArgs) -> anyhow::Result<MonitorConfig> {
    let cpus = args
        .cpus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--cpus: {e}")))?;
    let listen: SocketAddr = match args.listen.parse() {
        Ok(addr) => addr,
        Err(_) => bad_input!(
            "--listen {}: expected ADDR:PORT, e.g. 127.0.0.1:9477 or [::1]:9477",
            args.listen
        ),
    };
    let config = MonitorConfig {
        cpus: cpus.iter().collect(),
        interval_ns: args.interval.unwrap_or(DEFAULT_INTERVAL_NS),
        duty_percent: args.duty.unwrap_or(DEFAULT_DUTY_PERCENT),
        window_ns: args.window.unwrap_or(DEFAULT_WINDOW_NS),
        sched: MonitorConfig::sched_at(args.priority),
        listen,
    };
    if let Err(e) = config.validate() {
        bad_input!("{}", e.render(flag));
    }
    Ok(config)
}

/// Binds `--listen` before anything else starts: an address in use or
/// not allowed is bad input, named by its flag.
fn bind(config: &MonitorConfig, given: &str) -> anyhow::Result<Server> {
    Server::bind(config.listen).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                " (another process listens there: choose another port, or port 0 for a free one)"
            }
            std::io::ErrorKind::PermissionDenied => " (ports below 1024 need CAP_NET_BIND_SERVICE)",
            _ => "",
        };
        anyhow::Error::new(InputError(format!(
            "--listen {given}: cannot listen: {e}{hint}"
        )))
    })
}

pub fn run(args: MonitorArgs) -> anyhow::Result<ExitCode> {
    let config = config_from(&args)?;
    let server = bind(&config, &args.listen)?;
    let listen = server.local_addr()?;

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [libc::SIGINT, libc::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    if let Err(e) = sched::lock_memory() {
        eprintln!("warning: mlockall failed ({e}): the measuring threads' memory may be paged");
    }
    let environment = environment_labels(&Environment::capture());
    let measuring_stop = Arc::new(AtomicBool::new(false));
    let monitor = Monitor::start(&config, Arc::clone(&measuring_stop))?;
    for warning in &monitor.warnings {
        eprintln!("warning: {warning}");
    }
    let exposition = Arc::new(Exposition::new(monitor.figures(), environment));
    let serving_stop = Arc::new(AtomicBool::new(false));
    let server = server.spawn(exposition, Arc::clone(&serving_stop));
    let server = match server {
        Ok(server) => server,
        Err(e) => {
            monitor.finish();
            anyhow::bail!("cannot start the /metrics server thread: {e}");
        }
    };

    let started = Instant::now();
    announce(&config, listen, &monitor.warnings, args.json)?;
    let status = !args.json && std::io::stderr().is_terminal();
    let mut last_status = Instant::now();
    while !stop.load(Ordering::Relaxed)
        && args
            .duration
            .is_none_or(|d| started.elapsed() < Duration::from_nanos(d))
    {
        std::thread::sleep(TICK);
        if status && last_status.elapsed() >= Duration::from_secs(1) {
            last_status = Instant::now();
            status_line(&monitor.summary());
        }
    }
    if status {
        eprintln!();
    }
    serving_stop.store(true, Ordering::Relaxed);
    let summary = monitor.finish();
    let _ = server.join();
    report(&summary, started.elapsed(), args.json)?;
    Ok(ExitCode::SUCCESS)
}

/// The serving line: JSON with `--json`, else a sentence on stderr.
fn announce(
    config: &MonitorConfig,
    listen: SocketAddr,
    warnings: &[String],
    json: bool,
) -> anyhow::Result<()> {
    if json {
        let line = json!({
            "schema": JSON_SCHEMA,
            "event": "serving",
            "listen": listen.to_string(),
            "metrics_url": format!("http://{listen}/metrics"),
            "pid": std::process::id(),
            "cpus": config.cpus,
            "interval_ns": config.interval_ns,
            "duty_percent": config.duty_percent,
            "window_ns": config.window_ns,
            "priority": config.sched.priority,
            "warnings": warnings,
        });
        out!("{line}");
        std::io::stdout().flush()?;
    } else {
        eprintln!(
            "rtlab monitor: serving http://{listen}/metrics; CPUs {:?}, every {} for {}% of each second, {}, pid {}",
            config.cpus,
            human_duration(config.interval_ns),
            config.duty_percent,
            config.sched,
            std::process::id()
        );
    }
    Ok(())
}

/// One status line on a terminal: samples, missed and max of every CPU.
fn status_line(summary: &[CpuSummary]) {
    let text: Vec<String> = summary
        .iter()
        .map(|c| {
            format!(
                "cpu{} {} samples {} missed max {} µs",
                c.cpu,
                c.samples,
                c.missed,
                Micros(c.max_ns)
            )
        })
        .collect();
    eprint!("\r\x1b[K{}", text.join(" | "));
    let _ = std::io::stderr().flush();
}

/// The final summary: JSON with `--json`, else a table on stdout.
fn report(summary: &[CpuSummary], elapsed: Duration, json: bool) -> anyhow::Result<()> {
    if json {
        let line = json!({
            "schema": JSON_SCHEMA,
            "event": "summary",
            "elapsed_ns": elapsed.as_nanos() as u64,
            "monitor_cpu_seconds": own_cpu_seconds(),
            "cpus": summary,
        });
        out!("{line}");
        return Ok(());
    }
    out!(
        "{:>4} {:>10} {:>8} {:>8} {:>12} {:>12} {:>10}",
        "cpu",
        "samples",
        "missed",
        "dropped",
        "p99 µs",
        "max µs",
        "measured"
    );
    for c in summary {
        out!(
            "{:>4} {:>10} {:>8} {:>8} {:>12} {:>12} {:>10}",
            c.cpu,
            c.samples,
            c.missed,
            c.dropped,
            Micros(c.p99_ns).to_string(),
            Micros(c.max_ns).to_string(),
            human_duration(c.measuring_ns)
        );
    }
    let cpu_s = own_cpu_seconds();
    out!(
        "the monitor's own CPU time: {cpu_s:.3} s in {:.1} s ({:.2} % of one CPU)",
        elapsed.as_secs_f64(),
        100.0 * cpu_s / elapsed.as_secs_f64().max(1e-9)
    );
    Ok(())
}
