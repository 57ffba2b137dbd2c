//! The net probe: end-to-end response time of a request/acknowledge
//! exchange over UDP or TCP (paper 000, §3.4 and §5.4), measured open loop
//! from a client thread, against any server or against rtlab's own server
//! started in a private network namespace joined to the client's by a veth
//! pair.
//!
//! Series: `response` (from each message's scheduled send time to its
//! last reply: what a user of the service waits), `response_from_send`
//! (from the actual first send: what a closed-loop tool such as sockperf
//! reports) and `send_lag` (actual − scheduled send: the client's own
//! lateness). Lost messages are `missed` in both response series.

pub mod auth;
pub mod client;
mod limiter;
pub mod netns;
mod outgoing;
mod recorder;
pub mod server;
pub mod wire;

use crate::launch::{self, Launch};
use crate::{Probe, ProbeOutcome, ProbeRun, Start};
use auth::Key;
use client::{Client, ClientCounters, ClientEnd, ClientPlan};
use netns::NetnsPair;
use recorder::NetRecorder;
use rtlab_core::clock;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{NetReport, Series, ThreadSettings};
use rtlab_core::sched::{self, SchedParams};
use rtlab_core::settings::FieldError;
use serde::Serialize;
use server::{Inject, ServeConfig, Server};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
pub use wire::{Mode, Transport};

/// Where a thread runs and how it is scheduled.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Placement {
    pub cpu: Option<usize>,
    pub sched: SchedParams,
}

/// rtlab's own server, started by the probe in its own namespace.
#[derive(Debug, Clone, Serialize)]
pub struct OwnServer {
    pub placement: Placement,
    /// Test hook: `--inject-delay`/`--every` of the server.
    pub inject_delay_ns: Option<u64>,
    pub inject_every: u64,
}

/// Default interval: a message every 30 ms, as paper 000 (`--interval`, a
/// campaign's `interval`).
pub const DEFAULT_INTERVAL_NS: u64 = 30_000_000;
/// Default round trips per message: four, as paper 000 counted with
/// Wireshark (`--round-trips`, `round_trips`).
pub const DEFAULT_ROUND_TRIPS: u8 = 4;
/// Default request size, bytes (`--payload`, `payload`).
pub const DEFAULT_PAYLOAD: usize = 64;
/// Default time after which a message with no last reply counts as lost
/// (`--timeout`, `timeout`).
pub const DEFAULT_TIMEOUT_NS: u64 = 100_000_000;

/// Everything the net probe needs; serialized into the result as `config`.
#[derive(Debug, Clone, Serialize)]
pub struct NetConfig {
    /// The server; None: rtlab's own, in a private namespace pair.
    pub target: Option<SocketAddr>,
    pub transport: Transport,
    pub mode: Mode,
    pub interval_ns: u64,
    pub messages: u64,
    pub round_trips: u8,
    /// Bytes per request.
    pub payload: usize,
    pub timeout_ns: u64,
    pub key_file: Option<PathBuf>,
    pub client: Placement,
    /// Set exactly when `target` is None.
    pub server: Option<OwnServer>,
}

/// Series names, in the order of every list the probe returns.
pub const SERIES: [&str; 3] = ["response", "response_from_send", "send_lag"];
const METRICS: [&str; 3] = ["response_time", "response_time_from_send", "send_lag"];

/// Time between the threads being ready and the first message.
const START_MARGIN_NS: u64 = 20_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Most messages in one run (two bits each are kept for the whole run).
pub const MAX_MESSAGES: u64 = 100_000_000;
/// Longest schedule accepted: a year.
const MAX_SCHEDULE_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;

impl NetConfig {
    /// Planned length: the schedule, then the last message's timeout.
    pub fn planned_ns(&self) -> u64 {
        self.messages
            .saturating_mul(self.interval_ns)
            .saturating_add(self.timeout_ns)
    }

    /// Checks what clap and the campaign parser cannot check alone. The
    /// field is the campaign key (`round_trips`); the CLI flag is the same
    /// with dashes (`--round-trips`), `count` being `--count`.
    pub fn validate(&self) -> Result<(), FieldError> {
        let invalid = |field, message: String| Err(FieldError { field, message });
        if self.interval_ns == 0 {
            return invalid("interval", "must be above 0".into());
        }
        if self.messages == 0 || self.messages > MAX_MESSAGES {
            return invalid(
                "count",
                format!("must be 1-{MAX_MESSAGES} messages (got {})", self.messages),
            );
        }
        if self.timeout_ns == 0 {
            return invalid("timeout", "must be above 0".into());
        }
        if self.planned_ns() > MAX_SCHEDULE_NS {
            return invalid(
                "count",
                "the schedule (count × interval) must fit in a year".into(),
            );
        }
        if self.timeout_ns / self.interval_ns + 2 > client::MAX_SLOTS {
            return invalid(
                "timeout",
                format!(
                    "{} at a {} interval keeps more than {} messages in flight; shorten the timeout or lengthen the interval",
                    rtlab_core::units::human_duration(self.timeout_ns),
                    rtlab_core::units::human_duration(self.interval_ns),
                    client::MAX_SLOTS
                ),
            );
        }
        if self.round_trips == 0 || u32::from(self.round_trips) > wire::MAX_STEPS {
            return invalid(
                "round_trips",
                format!("must be 1-{} (got {})", wire::MAX_STEPS, self.round_trips),
            );
        }
        let min = self.mode.min_size(self.key_file.is_some());
        // The same bound over TCP: frames are requests, not bulk data.
        let max = wire::MAX_DATAGRAM;
        if self.payload < min || self.payload > max {
            let keyed = if self.key_file.is_some() {
                " with a key"
            } else {
                ""
            };
            return invalid(
                "payload",
                format!(
                    "{} requests over {}{keyed} take {min}-{max} bytes (got {})",
                    self.mode, self.transport, self.payload
                ),
            );
        }
        if self.key_file.is_some() && self.mode != Mode::Exchange {
            return invalid(
                "key_file",
                format!(
                    "a key authenticates exchange requests; mode {} carries no tag",
                    self.mode
                ),
            );
        }
        if self.target.is_none() != self.server.is_some() {
            return invalid(
                "target",
                "give either a server's address or rtlab's own server, not both".into(),
            );
        }
        Ok(())
    }
}

/// What a thread reports once set up.
struct Ready {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// A net probe in progress.
pub struct NetRun {
    client: Option<JoinHandle<ClientEnd>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    server_stop: StopOnDrop,
    server_counters: Option<Arc<server::Counters>>,
    server_thread: Option<ThreadSettings>,
    counters: Arc<ClientCounters>,
    recorder: NetRecorder,
    config: NetConfig,
    target: SocketAddr,
    settings: ThreadSettings,
    warnings: Vec<String>,
    start_ns: u64,
    // Held until the end: the namespaces vanish when these close.
    _namespaces: Option<Arc<NetnsPair>>,
}

impl Probe for NetConfig {
    fn kind(&self) -> &'static str {
        "net"
    }
    fn planned_ns(&self) -> u64 {
        NetConfig::planned_ns(self)
    }
    fn config_json(&self) -> serde_json::Value {
        crate::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        start(self, with.stop, with.samples_csv)
    }
}

/// Starts rtlab's server (when asked), then the client, and the recorder.
pub fn start(
    config: &NetConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
) -> anyhow::Result<Box<dyn ProbeRun>> {
    config.validate()?;
    let mut warnings = Vec::new();
    let key = match &config.key_file {
        Some(path) => {
            let (key, warning) = Key::load(path).map_err(anyhow::Error::msg)?;
            warnings.extend(warning);
            Some(key)
        }
        None => None,
    };
    let namespaces = match config.server {
        Some(_) => Some(Arc::new(NetnsPair::create()?)),
        None => None,
    };
    let target = config.target.unwrap_or_else(NetnsPair::server_address);

    let server_stop = Arc::new(AtomicBool::new(false));
    let mut server_launch: Option<ServerLaunch> = None;
    if let (Some(own), Some(pair)) = (&config.server, &namespaces) {
        let server_stop = Arc::clone(&server_stop);
        server_launch = Some(launch_server(
            config,
            own,
            pair,
            target,
            key.clone(),
            server_stop,
        )?);
    }
    let mut server_counters = None;
    let mut server_thread = None;
    if let Some(launch) = server_launch.as_mut() {
        match launch.wait_ready(READY_TIMEOUT) {
            Ok(mut reports) => {
                let (ready, counters) = reports.remove(0);
                warnings.extend(ready.warnings.into_iter().map(|w| format!("server: {w}")));
                server_counters = Some(counters);
                server_thread = Some(ready.settings);
            }
            Err(why) => {
                return Err(server_launch.take().expect("launched").fail(why));
            }
        }
    }

    let plan = ClientPlan {
        target,
        transport: config.transport,
        mode: config.mode,
        steps: config.round_trips,
        payload: config.payload,
        interval_ns: config.interval_ns,
        timeout_ns: config.timeout_ns,
        messages: config.messages,
        key,
    };
    let counters = Arc::new(ClientCounters::default());
    let dropped = Arc::new(AtomicU64::new(0));
    let (mut producer, consumer) =
        rtrb::RingBuffer::new(crate::recorder::ring_capacity(config.interval_ns));
    let mut client_launch: Launch<ClientEnd, Ready> = Launch::new();
    let client_ns = namespaces.clone();
    let placement = config.client;
    let client_counters = Arc::clone(&counters);
    let client_dropped = Arc::clone(&dropped);
    let builder = std::thread::Builder::new()
        .name("rtlab-net-client".into())
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
    let spawned = client_launch.spawn("the net client".into(), builder, move |gate| {
        let set_up = launch::caught(|| {
            if let Some(pair) = &client_ns {
                netns::enter(pair.client())
                    .map_err(|e| format!("cannot enter the client's namespace: {e}"))?;
            }
            let (settings, warnings) =
                crate::thread::set_up_measuring_thread(placement.cpu, &placement.sched);
            let client = Client::connect(plan.clone()).map_err(|e| {
                format!("cannot reach {} over {}: {e}", plan.target, plan.transport)
            })?;
            Ok((settings, warnings, client))
        });
        let (ready, client) = match set_up {
            Ok((settings, warnings, client)) => (Ok(Ready { settings, warnings }), Some(client)),
            Err(why) => (Err(why), None),
        };
        match (gate.ready(ready), client) {
            (Some(start_ns), Some(mut client)) => client.run(
                start_ns,
                &mut producer,
                &client_dropped,
                &client_counters,
                &stop,
            ),
            _ => ClientEnd { failure: None },
        }
    });
    if let Err(e) = spawned {
        return Err(give_up(e.to_string(), client_launch, server_launch));
    }
    let recorder = match NetRecorder::spawn(consumer, Arc::clone(&dropped), samples_csv) {
        Ok(recorder) => recorder,
        Err(e) => {
            return Err(give_up(
                format!("cannot start the recorder thread: {e}"),
                client_launch,
                server_launch,
            ))
        }
    };
    let ready = match client_launch.wait_ready(READY_TIMEOUT) {
        Ok(mut reports) => reports.remove(0),
        Err(why) => return Err(give_up(why, client_launch, server_launch)),
    };
    warnings.extend(ready.warnings);
    crate::timer::dedup_keep_order(&mut warnings);

    let start_ns = clock::now_ns() + START_MARGIN_NS;
    let server = server_launch.map(|launch| launch.go(start_ns).remove(0));
    let client = client_launch.go(start_ns).remove(0);
    Ok(Box::new(NetRun {
        client: Some(client),
        server,
        server_stop: StopOnDrop(server_stop),
        server_counters,
        server_thread,
        counters,
        recorder,
        config: config.clone(),
        target,
        settings: ready.settings,
        warnings,
        start_ns,
        _namespaces: namespaces,
    }))
}

/// Stops rtlab's server when the run is finished or dropped (a client
/// thread that panicked must not leave the server serving for good).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

type ServerLaunch = Launch<std::io::Result<()>, (Ready, Arc<server::Counters>)>;

/// Starts rtlab's own server in the server's namespace of `pair`,
/// listening on `target`; it waits at the launch's gate until the client
/// is ready too.
fn launch_server(
    config: &NetConfig,
    own: &OwnServer,
    pair: &Arc<NetnsPair>,
    target: SocketAddr,
    key: Option<Key>,
    server_stop: Arc<AtomicBool>,
) -> anyhow::Result<ServerLaunch> {
    let mut launch = Launch::new();
    let serve = ServeConfig {
        listen: target,
        transport: config.transport,
        mode: config.mode,
        max_size: config.payload,
        // The probe is its only client: a limit would only cut the
        // probe's own messages at high rates.
        rate_limit: None,
        key,
        inject: own.inject_delay_ns.map(|delay_ns| Inject {
            delay_ns,
            every: own.inject_every.max(1),
        }),
        max_clients: 4,
        max_per_source: 4,
        frame_timeout_ns: u64::MAX,
        idle_timeout_ns: u64::MAX,
    };
    let placement = own.placement;
    let pair = Arc::clone(pair);
    let builder = std::thread::Builder::new().name("rtlab-net-server".into());
    launch.spawn("rtlab's net server".into(), builder, move |gate| {
        let set_up = launch::caught(|| {
            netns::enter(pair.server())
                .map_err(|e| format!("cannot enter the server's namespace: {e}"))?;
            let (settings, warnings) =
                crate::thread::set_up_measuring_thread(placement.cpu, &placement.sched);
            let server =
                Server::bind(serve).map_err(|e| format!("cannot listen on {}: {e}", target))?;
            Ok((settings, warnings, server))
        });
        let (ready, server) = match set_up {
            Ok((settings, warnings, server)) => {
                let counters = server.counters();
                (Ok((Ready { settings, warnings }, counters)), Some(server))
            }
            Err(why) => (Err(why), None),
        };
        match (gate.ready(ready), server) {
            (Some(_), Some(server)) => server.run(&server_stop, None, &mut |_| {}),
            _ => Ok(()),
        }
    })?;
    Ok(launch)
}

/// Sends every thread away after a failed start; the client's error wins.
fn give_up(
    why: String,
    client: Launch<ClientEnd, Ready>,
    server: Option<ServerLaunch>,
) -> anyhow::Error {
    let error = client.fail(why);
    if let Some(server) = server {
        let _ = server.fail(String::new());
    }
    error
}

fn build_series(
    config: &NetConfig,
    settings: &ThreadSettings,
    stats: Vec<rtlab_core::result::SeriesStats>,
) -> Vec<Series> {
    stats
        .into_iter()
        .enumerate()
        .map(|(i, stats)| Series {
            name: SERIES[i].into(),
            metric: METRICS[i].into(),
            cpu: config.client.cpu,
            interval_ns: config.interval_ns,
            thread: settings.clone(),
            stats,
        })
        .collect()
}

impl ProbeRun for NetRun {
    fn series_names(&self) -> Vec<String> {
        SERIES.iter().map(|s| s.to_string()).collect()
    }

    fn live(&self) -> Vec<LiveStats> {
        self.recorder.live()
    }

    fn is_finished(&self) -> bool {
        self.client.as_ref().is_none_or(JoinHandle::is_finished)
    }

    fn elapsed_ns(&self) -> u64 {
        clock::now_ns().saturating_sub(self.start_ns)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn snapshot(&self) -> Vec<Series> {
        build_series(&self.config, &self.settings, self.recorder.stats())
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let mut run = *self;
        let end = run
            .client
            .take()
            .expect("finished once")
            .join()
            .map_err(|_| anyhow::anyhow!("the net client thread panicked"))?;
        let elapsed_ns = run.elapsed_ns();
        run.server_stop.0.store(true, Ordering::Relaxed);
        let mut warnings = std::mem::take(&mut run.warnings);
        if let Some(server) = run.server.take() {
            match server.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => warnings.push(format!("rtlab's server failed: {e}")),
                Err(_) => warnings.push("rtlab's server thread panicked".into()),
            }
        }
        let recorded = run.recorder.finish()?;
        let messages = run.counters.snapshot(run.config.messages);
        let stopped_early = messages.unsent > 0;
        let mut failure = end.failure;
        if failure.is_none() && !stopped_early && messages.sent > 0 && messages.completed == 0 {
            failure = Some(format!(
                "no message got its reply from {} ({} sent): is a server in {} mode listening there over {}?",
                run.target, messages.sent, run.config.mode, run.config.transport
            ));
        }
        warnings.extend(recorded.csv_error.clone());
        let server = run.server_counters.as_ref().map(|c| c.snapshot());
        if let Some(c) = &server {
            let dropped = c.malformed + c.truncated + c.oversized + c.bad_auth + c.rate_limited;
            if dropped > 0 {
                warnings.push(format!(
                    "rtlab's server dropped {dropped} requests (see net.server): some losses are the server's, not the network's"
                ));
            }
        }
        let net = NetReport {
            target: run.target.to_string(),
            transport: run.config.transport.to_string(),
            mode: run.config.mode.to_string(),
            round_trips: u32::from(run.config.round_trips),
            payload_bytes: run.config.payload as u32,
            interval_ns: run.config.interval_ns,
            timeout_ns: run.config.timeout_ns,
            messages,
            server,
            server_thread: run.server_thread.take(),
            timeline: recorded.timeline,
            timeline_complete: recorded.timeline_complete,
        };
        Ok(ProbeOutcome {
            series: build_series(&run.config, &run.settings, recorded.stats),
            elapsed_ns,
            break_event: None,
            stopped_early: stopped_early && failure.is_none(),
            failure,
            warnings,
            noise: None,
            net: Some(net),
            traffic: None,
            executive: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;

    fn config() -> NetConfig {
        let placement = Placement {
            cpu: None,
            sched: crate::settings::sched_of(Policy::Fifo, None),
        };
        NetConfig {
            target: Some("127.0.0.1:7700".parse().unwrap()),
            transport: Transport::Udp,
            mode: Mode::Exchange,
            interval_ns: DEFAULT_INTERVAL_NS,
            messages: 10,
            round_trips: DEFAULT_ROUND_TRIPS,
            payload: DEFAULT_PAYLOAD,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            key_file: None,
            client: placement,
            server: None,
        }
    }

    fn refused(config: NetConfig) -> &'static str {
        config.validate().unwrap_err().field
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn each_setting_is_refused_by_its_key() {
        let zero = NetConfig {
            interval_ns: 0,
            ..config()
        };
        assert_eq!(refused(zero), "interval");
        let none = NetConfig {
            messages: 0,
            ..config()
        };
        assert_eq!(refused(none), "count");
        let long = NetConfig {
            interval_ns: 1_000,
            timeout_ns: 3_600_000_000_000,
            ..config()
        };
        assert_eq!(refused(long), "timeout");
        let e = NetConfig {
            round_trips: 0,
            ..config()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "round_trips");
        assert!(
            e.render(flag).starts_with("--round-trips: must be 1-"),
            "{e}"
        );
        let small = NetConfig {
            payload: 16,
            ..config()
        };
        assert_eq!(refused(small), "payload");
        let both = NetConfig {
            target: None,
            ..config()
        };
        assert_eq!(refused(both), "target");
    }
}
