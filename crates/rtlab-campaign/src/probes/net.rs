//! `kind = "net"`: end-to-end response time of a request/acknowledge
//! exchange over UDP or TCP (`rtlab net probe`). Its settings, its keys
//! and their reader, and its probe for one run with the client's and
//! rtlab's server's placement.

use super::cpus::cpu_or;
use super::kind::{KindDef, KindSettings, OneRun};
use crate::error::CampaignError;
use crate::parse::probe::{at_setting, cpu_number};
use crate::parse::reader::{Reader, Section};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::units::human_duration;
pub use rtlab_probe::net::{Mode as NetMode, Transport};
use rtlab_probe::net::{NetConfig, OwnServer, Placement};
pub use rtlab_probe::net::{
    DEFAULT_INTERVAL_NS as DEFAULT_NET_INTERVAL_NS, DEFAULT_PAYLOAD as DEFAULT_NET_PAYLOAD,
    DEFAULT_ROUND_TRIPS as DEFAULT_NET_ROUND_TRIPS, DEFAULT_TIMEOUT_NS as DEFAULT_NET_TIMEOUT_NS,
};
use rtlab_probe::Probe;
use serde::Serialize;
use std::net::SocketAddr;

pub(crate) const KIND: KindDef = KindDef {
    name: "net",
    keys: &[
        "target",
        "transport",
        "mode",
        "interval",
        "round_trips",
        "payload",
        "timeout",
        "client_cpu",
        "server_cpu",
    ],
    read: |r, s| Ok(Box::new(read(r, s)?)),
};

/// `inject_every` of rtlab's server in campaigns (no delay is injected).
const NET_INJECT_EVERY: u64 = 100;

/// The scheduling of the net probe's client when rtlab runs its own server:
/// the client is the measuring instrument, SCHED_FIFO 90 as every measuring
/// thread by default, whatever the configuration.
pub const NET_CLIENT_SCHED: SchedParams = SchedParams {
    policy: Policy::Fifo,
    priority: rtlab_probe::DEFAULT_PRIORITY,
    deadline: None,
};

/// `udp` or `tcp`, as the net probe's `transport` key takes it.
pub fn parse_transport(text: &str) -> Result<Transport, String> {
    match text {
        "udp" => Ok(Transport::Udp),
        "tcp" => Ok(Transport::Tcp),
        _ => Err(format!("unknown transport `{text}` (expected udp or tcp)")),
    }
}

/// The net probe's own settings (as `rtlab net probe`). The scheduling of
/// a run's configuration goes to rtlab's own server (the process whose
/// promotion the campaign compares, as paper 000 promoted its server);
/// the client, the measuring instrument, always runs SCHED_FIFO 90. With a
/// `target` there is no server of ours and the configuration schedules the
/// client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetSettings {
    /// The server's address; None: rtlab starts its own server in a
    /// private network-namespace pair.
    pub target: Option<SocketAddr>,
    pub transport: Transport,
    pub mode: NetMode,
    /// One message is sent every interval (open loop).
    pub interval_ns: u64,
    /// Request/acknowledge round trips per message.
    pub round_trips: u8,
    /// Bytes per request.
    pub payload: usize,
    /// A message whose last reply has not come after this is lost.
    pub timeout_ns: u64,
    /// The client's CPU; None: the first online CPU (unpinned on a
    /// single-CPU machine).
    pub client_cpu: Option<usize>,
    /// rtlab's server's CPU; None: the last online CPU (unpinned on a
    /// single-CPU machine). Never set with a `target`.
    pub server_cpu: Option<usize>,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            target: None,
            transport: Transport::Udp,
            mode: NetMode::Exchange,
            interval_ns: DEFAULT_NET_INTERVAL_NS,
            round_trips: DEFAULT_NET_ROUND_TRIPS,
            payload: DEFAULT_NET_PAYLOAD,
            timeout_ns: DEFAULT_NET_TIMEOUT_NS,
            client_cpu: None,
            server_cpu: None,
        }
    }
}

impl NetSettings {
    /// The probe's config for `messages` messages with the threads placed
    /// as given (`server` exactly when there is no `target`); not checked:
    /// see [`NetConfig::validate`].
    pub fn config(&self, messages: u64, client: Placement, server: Option<Placement>) -> NetConfig {
        NetConfig {
            target: self.target,
            transport: self.transport,
            mode: self.mode,
            interval_ns: self.interval_ns,
            messages,
            round_trips: self.round_trips,
            payload: self.payload,
            timeout_ns: self.timeout_ns,
            key_file: None,
            client,
            server: server.map(|placement| OwnServer {
                placement,
                inject_delay_ns: None,
                inject_every: NET_INJECT_EVERY,
            }),
        }
    }

    /// The probe's config for one run, its CPUs resolved, checked.
    ///
    /// `run.sched` is the configuration's scheduling. With rtlab's own server
    /// it goes to the server (the process whose promotion a campaign
    /// compares, as paper 000 promoted its server) and the client runs
    /// [`NET_CLIENT_SCHED`]; with a `target`, the server is not rtlab's and
    /// `sched` goes to the client. A run sends `duration / interval`
    /// messages (at least one).
    pub fn config_for(&self, run: &OneRun) -> Result<NetConfig, String> {
        let OneRun {
            sched,
            duration_ns,
            online,
        } = *run;
        if sched.policy == Policy::Deadline {
            return Err(
                "policy deadline is for timer probes only: use fifo, rr or other for a net probe"
                    .into(),
            );
        }
        let messages = duration_ns
            .checked_div(self.interval_ns)
            .ok_or("interval: must be longer than 0")?
            .max(1);
        let own_server = self.target.is_none();
        let (client_cpu, server_cpu) =
            net_placement(self.client_cpu, self.server_cpu, own_server, online)?;
        let config = if own_server {
            self.config(
                messages,
                Placement {
                    cpu: client_cpu,
                    sched: NET_CLIENT_SCHED,
                },
                Some(Placement {
                    cpu: server_cpu,
                    sched,
                }),
            )
        } else {
            self.config(
                messages,
                Placement {
                    cpu: client_cpu,
                    sched,
                },
                None,
            )
        };
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }
}

fn read(r: &Reader, s: &Section) -> Result<NetSettings, CampaignError> {
    let mut net = NetSettings::default();
    if let Some(v) = s.get("target") {
        net.target = Some(target(r, s, v)?);
    }
    if let Some(v) = s.get("transport") {
        let (text, span) = r.string(v, &s.field("transport"))?;
        net.transport =
            parse_transport(&text).map_err(|e| r.error(span, &s.field("transport"), e))?;
    }
    if let Some(v) = s.get("mode") {
        let (text, span) = r.string(v, &s.field("mode"))?;
        net.mode = text
            .parse()
            .map_err(|e: String| r.error(span, &s.field("mode"), e))?;
    }
    if let Some(v) = s.get("interval") {
        net.interval_ns = r.positive_duration(v, &s.field("interval"))?;
    }
    if let Some(v) = s.get("round_trips") {
        let field = s.field("round_trips");
        let n = r.integer(v, &field)?;
        let max = rtlab_probe::net::wire::MAX_STEPS;
        net.round_trips = u8::try_from(n)
            .ok()
            .filter(|n| (1..=max).contains(&u32::from(*n)))
            .ok_or_else(|| {
                r.error(
                    v.span(),
                    &field,
                    format!("{n} round trips is out of range 1-{max}"),
                )
            })?;
    }
    if let Some(v) = s.get("payload") {
        let field = s.field("payload");
        let n = r.integer(v, &field)?;
        net.payload = usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| r.error(v.span(), &field, format!("{n} is not a size in bytes")))?;
    }
    if let Some(v) = s.get("timeout") {
        net.timeout_ns = r.positive_duration(v, &s.field("timeout"))?;
    }
    net.client_cpu = cpu_number(r, s, "client_cpu")?;
    net.server_cpu = cpu_number(r, s, "server_cpu")?;
    if let (Some(_), Some(v)) = (net.target, s.get("server_cpu")) {
        return Err(r.error(
            v.span(),
            &s.field("server_cpu"),
            "server_cpu places rtlab's own server; with `target` the server is not rtlab's (drop one of them)",
        ));
    }
    // What the probe itself checks (the payload against the mode's header
    // and the transport's limit), on a stand-in of one message.
    let placement = Placement {
        cpu: None,
        sched: NET_CLIENT_SCHED,
    };
    let server = net.target.is_none().then_some(placement);
    net.config(1, placement, server)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(net)
}

/// `target`: a server's ADDR:PORT.
fn target(
    r: &Reader,
    s: &Section,
    v: &crate::parse::reader::Value,
) -> Result<SocketAddr, CampaignError> {
    let field = s.field("target");
    let (text, span) = r.string(v, &field)?;
    let target: SocketAddr = text.trim().parse().map_err(|_| {
        r.error(
            span.clone(),
            &field,
            format!(
                "`{text}` is not an ADDR:PORT such as \"192.168.1.20:7000\" or \"[fd00::2]:7000\" (omit `target` for rtlab's own server)"
            ),
        )
    })?;
    if target.port() == 0 {
        return Err(r.error(
            span,
            &field,
            format!("`{text}`: port 0 is no server's port"),
        ));
    }
    Ok(target)
}

impl KindSettings for NetSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    /// `udp exchange every 30ms to rtlab's server, 4 round trips of 64 B,
    /// timeout 100ms, client on the first CPU, server on the last CPU`.
    fn describe(&self) -> String {
        let mut text = format!(
            "{} {} every {} to {}, {} round trip{} of {} B, timeout {}, client on {}",
            self.transport,
            self.mode,
            human_duration(self.interval_ns),
            self.target
                .map_or("rtlab's server".to_string(), |t| t.to_string()),
            self.round_trips,
            if self.round_trips == 1 { "" } else { "s" },
            self.payload,
            human_duration(self.timeout_ns),
            cpu_or(self.client_cpu, "the first CPU"),
        );
        if self.target.is_none() {
            text += ", server on ";
            text += &cpu_or(self.server_cpu, "the last CPU");
        }
        text
    }

    /// See [`NetSettings::config_for`].
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String> {
        Ok(Box::new(self.config_for(run)?))
    }

    fn scheduled_thread(&self) -> Option<&'static str> {
        self.target.is_none().then_some("server")
    }
}

/// The net probe's client and server CPUs: the ones given (which must be
/// online) or, by default, the client on the first online CPU and rtlab's
/// server on the last, each avoiding the other's CPU; both unpinned on a
/// machine with one online CPU. No server CPU without `own_server`.
pub fn net_placement(
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
    own_server: bool,
    online: &CpuSet,
) -> Result<(Option<usize>, Option<usize>), String> {
    for (key, cpu) in [("client_cpu", client_cpu), ("server_cpu", server_cpu)] {
        if let Some(cpu) = cpu {
            if !online.contains(cpu) {
                return Err(format!("{key}: CPU {cpu} is not online (online: {online})"));
            }
        }
    }
    if !own_server {
        if server_cpu.is_some() {
            return Err("server_cpu: there is no server of rtlab's with a target".into());
        }
        let client = client_cpu.or_else(|| online.iter().next().filter(|_| online.len() >= 2));
        return Ok((client, None));
    }
    if online.len() < 2 {
        return Ok((client_cpu, server_cpu));
    }
    let client = client_cpu.or_else(|| online.iter().find(|&c| Some(c) != server_cpu));
    let server = server_cpu.or_else(|| {
        let cpus: Vec<usize> = online.iter().collect();
        cpus.into_iter().rev().find(|&c| Some(c) != client)
    });
    Ok((client, server))
}
