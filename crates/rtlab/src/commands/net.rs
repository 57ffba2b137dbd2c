//! `rtlab net serve` and `rtlab net probe`: end-to-end response time of a
//! request/acknowledge exchange (paper 000, §3.4 and §5.4).

use super::measure::measure;
use crate::cli::{NetProbeArgs, NetServeArgs, TransportArgs};
use crate::input::{bad_input, InputError};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::NetServerCounters;
use rtlab_core::sched::{self, Policy, SchedParams};
use rtlab_core::settings::flag;
use rtlab_probe::net::auth::Key;
use rtlab_probe::net::server::{self, Inject, RateLimit, ServeConfig, Server};
use rtlab_probe::net::{Mode, NetConfig, OwnServer, Placement, Transport};
use rtlab_probe::settings;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const CLIENT_PRIORITY: u32 = rtlab_probe::DEFAULT_PRIORITY;
const SERVER_PRIORITY: u32 = 80;
const DEFAULT_COUNT: u64 = 1000;

fn transport(args: TransportArgs) -> Transport {
    if args.tcp {
        Transport::Tcp
    } else {
        Transport::Udp
    }
}

/// `fifo`/`rr` with their priority (`default` when none is given),
/// `other` without one; `prefix` is the flags' (`server-`).
fn sched_of(
    prefix: &str,
    policy: Policy,
    priority: Option<u32>,
    default: u32,
) -> anyhow::Result<SchedParams> {
    if !matches!(policy, Policy::Fifo | Policy::Rr | Policy::Other) {
        bad_input!("--{prefix}policy {policy}: takes fifo, rr or other");
    }
    let mut sched = settings::sched_of(policy, priority);
    if policy.takes_priority() && priority.is_none() {
        sched.priority = default;
    }
    settings::check_priority(&sched)
        .map_err(|e| InputError(e.render(|key| format!("--{prefix}{}", key.replace('_', "-")))))?;
    Ok(sched)
}

fn resolve(flag: &str, text: &str) -> anyhow::Result<SocketAddr> {
    match text.to_socket_addrs() {
        // IPv4 first: `localhost` names both, and most servers listen on 4.
        Ok(addrs) => {
            let mut addrs: Vec<SocketAddr> = addrs.collect();
            addrs.sort_by_key(|a| a.is_ipv6());
            match addrs.first() {
                Some(addr) if addr.port() == 0 && flag != "--listen" => {
                    bad_input!("{flag} {text}: port 0 is no server's port")
                }
                Some(addr) => Ok(*addr),
                None => bad_input!("{flag} {text}: the name has no address"),
            }
        }
        Err(e) => bad_input!("{flag} {text}: expected ADDR:PORT or HOST:PORT ({e})"),
    }
}

fn check_cpu(flag: &str, cpu: Option<usize>, online: &CpuSet) -> anyhow::Result<()> {
    if let Some(cpu) = cpu {
        if !online.contains(cpu) {
            bad_input!("{flag} {cpu}: not an online CPU (online: {online})");
        }
    }
    Ok(())
}

fn check_key(path: &Option<std::path::PathBuf>) -> anyhow::Result<Option<Key>> {
    match path {
        Some(path) => {
            let (key, warning) =
                Key::load(path).map_err(|why| InputError(format!("--key-file: {why}")))?;
            if let Some(warning) = warning {
                eprintln!("warning: {warning}");
            }
            Ok(Some(key))
        }
        None => Ok(None),
    }
}

fn probe_config(args: &NetProbeArgs) -> anyhow::Result<NetConfig> {
    let online = CpuSet::online();
    check_cpu("--cpu", args.cpu, &online)?;
    check_cpu("--server-cpu", args.server_cpu, &online)?;
    let client_sched = sched_of("", args.policy, args.priority, CLIENT_PRIORITY)?;
    let target = match &args.target {
        Some(text) => Some(resolve("the server", text)?),
        None => None,
    };
    let cpus: Vec<usize> = online.iter().collect();
    let places_server =
        args.server_cpu.is_some() || args.server_policy.is_some() || args.server_priority.is_some();
    if !args.netns && places_server {
        bad_input!(
            "--server-cpu, --server-policy and --server-priority place rtlab's own server: they need --netns"
        );
    }
    let server = if args.netns {
        let server_sched = sched_of(
            "server-",
            args.server_policy.unwrap_or(Policy::Fifo),
            args.server_priority,
            SERVER_PRIORITY,
        )?;
        // Client and server on different CPUs, as on two hosts.
        let server_cpu = args
            .server_cpu
            .or_else(|| (cpus.len() > 1).then(|| cpus[cpus.len() - 1]));
        Some(OwnServer {
            placement: Placement {
                cpu: server_cpu,
                sched: server_sched,
            },
            inject_delay_ns: None,
            inject_every: 100,
        })
    } else {
        None
    };
    let client_cpu = match (args.cpu, args.netns) {
        (Some(cpu), _) => Some(cpu),
        (None, true) if cpus.len() > 1 => Some(cpus[0]),
        _ => None,
    };
    let messages = match (args.count, args.duration) {
        (Some(n), _) => n,
        (None, Some(duration)) => (duration / args.interval).max(1),
        (None, None) => DEFAULT_COUNT,
    };
    check_key(&args.key_file)?;
    let config = NetConfig {
        target,
        transport: transport(args.transport),
        mode: args.mode,
        interval_ns: args.interval,
        messages,
        round_trips: args.round_trips,
        payload: args.payload,
        timeout_ns: args.timeout,
        key_file: args.key_file.clone(),
        client: Placement {
            cpu: client_cpu,
            sched: client_sched,
        },
        server,
    };
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    Ok(config)
}

pub fn probe(args: NetProbeArgs) -> anyhow::Result<ExitCode> {
    let config = probe_config(&args)?;
    measure(Box::new(config), &args.run, &[])?.report(args.run.quiet)
}

fn serve_config(args: &NetServeArgs) -> anyhow::Result<ServeConfig> {
    let listen = resolve("--listen", &args.listen)?;
    let key = check_key(&args.key_file)?;
    if key.is_some() && args.mode != Mode::Exchange {
        bad_input!(
            "--key-file authenticates exchange requests; mode {} carries no tag",
            args.mode
        );
    }
    let rate_limit = (args.rate_limit > 0).then(|| RateLimit {
        per_second: args.rate_limit,
        burst: args.burst.unwrap_or((args.rate_limit / 10).max(10)),
    });
    if args.burst.is_some() && rate_limit.is_none() {
        bad_input!("--burst needs a --rate-limit above 0");
    }
    if args.burst == Some(0) {
        bad_input!("--burst 0 would refuse every request: give at least 1");
    }
    let smallest = args.mode.min_size(key.is_some());
    if (args.max_size as usize) < smallest {
        bad_input!(
            "--max-size {}: a {} request{} has at least {smallest} bytes",
            args.max_size,
            args.mode,
            if key.is_some() { " with its tag" } else { "" }
        );
    }
    Ok(ServeConfig {
        listen,
        transport: transport(args.transport),
        mode: args.mode,
        max_size: args.max_size as usize,
        rate_limit,
        key,
        inject: args.inject_delay.map(|delay_ns| Inject {
            delay_ns,
            every: args.every,
        }),
        max_clients: args.max_clients as usize,
        max_per_source: args.max_per_source as usize,
        frame_timeout_ns: args.frame_timeout,
        idle_timeout_ns: args.idle_timeout,
    })
}

/// Prints the counters; `event` says why (`signal`: SIGUSR1, `exit`).
fn print_counters(counters: &NetServerCounters, json: bool, event: &str) {
    if json {
        let line = serde_json::json!({
            "event": event,
            "at": rtlab_core::result::timestamp_now(),
            "counters": counters,
        });
        println!("{line}");
        let _ = std::io::stdout().flush();
    } else {
        eprintln!("rtlab net serve: {}", server::counters_line(counters));
    }
}

pub fn serve(args: NetServeArgs) -> anyhow::Result<ExitCode> {
    let config = serve_config(&args)?;
    check_cpu("--cpu", args.cpu, &CpuSet::online())?;
    let sched = sched_of("", args.policy, args.priority, SERVER_PRIORITY)?;
    let (transport, mode) = (config.transport, config.mode);
    let server = Server::bind(config)
        .map_err(|e| InputError(format!("--listen {}: cannot listen: {e}", args.listen)))?;

    // Promote this thread as asked; what is refused is a warning.
    if let Err(e) = sched::lock_memory() {
        eprintln!("warning: mlockall failed ({e}): the server's memory may be paged");
    }
    let (settings, warnings) = rtlab_probe::thread::set_up_measuring_thread(args.cpu, &sched);
    for warning in warnings {
        eprintln!("warning: {warning}");
    }

    // Signals wake the server's poll through a self-pipe.
    let stop = Arc::new(AtomicBool::new(false));
    let usr1 = Arc::new(AtomicBool::new(false));
    let (wake_read, wake_write) = UnixStream::pair()?;
    wake_read.set_nonblocking(true)?;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
        signal_hook::low_level::pipe::register(signal, wake_write.try_clone()?)?;
    }
    signal_hook::flag::register(libc::SIGUSR1, Arc::clone(&usr1))?;
    signal_hook::low_level::pipe::register(libc::SIGUSR1, wake_write)?;
    if let Some(duration) = args.duration {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_nanos(duration));
            stop.store(true, Ordering::Relaxed);
        });
    }

    let placement = match settings.pinned_cpu {
        Some(cpu) => format!(" on CPU {cpu}"),
        None => String::new(),
    };
    let actual = settings
        .actual
        .map_or_else(|| sched.to_string(), |a| a.to_string());
    eprintln!(
        "rtlab net serve: listening on {} ({transport}, {mode} mode), {actual}{placement}, pid {}",
        server.local_addr(),
        std::process::id()
    );
    let counters = server.counters();
    let json = args.json;
    let result = server.run(&stop, Some(wake_read.as_raw_fd()), &mut |counters| {
        if usr1.swap(false, Ordering::Relaxed) {
            print_counters(&counters.snapshot(), json, "signal");
        }
    });
    print_counters(&counters.snapshot(), json, "exit");
    result?;
    Ok(ExitCode::SUCCESS)
}
