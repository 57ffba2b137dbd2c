//! The probe kinds a campaign runs: each kind's own settings (defaults
//! filled in, the probe's own defaults), how a run's probe config is made
//! from them, and [`ProbeKind`], the one list of kinds. See
//! docs/campaign.md for their keys.

use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::SchedParams;
pub use rtlab_probe::net::{Mode as NetMode, Transport};
use rtlab_probe::net::{NetConfig, OwnServer, Placement};
use rtlab_probe::noise::{self, NoiseConfig};
pub use rtlab_probe::switch::Mechanism;
use rtlab_probe::switch::SwitchConfig;
pub use rtlab_probe::timer::WaitMode;
use rtlab_probe::timer::{RunLength, TimerConfig};
use serde::{Serialize, Serializer};
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// Default interval and histogram range of a timer probe (as `rtlab
/// measure timer`).
pub use rtlab_probe::timer::{DEFAULT_HIST_MAX_NS, DEFAULT_INTERVAL_NS};

/// What a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// Wake-up latency of periodic threads (`rtlab measure timer`).
    Timer,
    /// Interrupt latency and the switch to a released task (`rtlab measure switch`).
    Switch,
    /// OS noise seen by a spinning thread, by source (`rtlab measure noise`).
    Noise,
    /// End-to-end response time of a request/acknowledge exchange over UDP
    /// or TCP (`rtlab net probe`).
    Net,
    /// Periodic tasks released by rtlab's executive or by their own
    /// SCHED_FIFO sleeps (`rtlab exec periodic`).
    Periodic,
}

impl ProbeKind {
    pub const ALL: &'static [ProbeKind] = &[
        ProbeKind::Timer,
        ProbeKind::Switch,
        ProbeKind::Noise,
        ProbeKind::Net,
        ProbeKind::Periodic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Timer => "timer",
            ProbeKind::Switch => "switch",
            ProbeKind::Noise => "noise",
            ProbeKind::Net => "net",
            ProbeKind::Periodic => "periodic",
        }
    }
}

impl fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for ProbeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ProbeKind, String> {
        ProbeKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = ProbeKind::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown probe kind `{s}` (known kinds: {})",
                    known.join(", ")
                )
            })
    }
}

/// The timer probe's own settings; the scheduling comes from the
/// configuration of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimerSettings {
    /// `all` or a CPU list, as `--cpus`; serialized as that text.
    #[serde(serialize_with = "cpus_as_text")]
    pub cpus: CpuSelection,
    pub interval_ns: u64,
    /// Added to the interval of each further thread (cyclictest -d).
    pub distance_ns: u64,
    pub mode: WaitMode,
    /// Range of the cyclictest-style histogram (1 µs bins up to this).
    pub hist_max_ns: u64,
}

impl Default for TimerSettings {
    fn default() -> Self {
        TimerSettings {
            cpus: CpuSelection::All,
            interval_ns: DEFAULT_INTERVAL_NS,
            distance_ns: 0,
            mode: WaitMode::Abs,
            hist_max_ns: DEFAULT_HIST_MAX_NS,
        }
    }
}

impl TimerSettings {
    /// The probe's config on `cpus` for `length`, scheduled by `sched` (the
    /// run's configuration, deadline parameters included); not checked:
    /// see [`TimerConfig::validate`].
    pub fn config(&self, cpus: Vec<usize>, length: RunLength, sched: SchedParams) -> TimerConfig {
        TimerConfig {
            cpus,
            interval_ns: self.interval_ns,
            distance_ns: self.distance_ns,
            length,
            sched,
            mode: self.mode,
            break_at_ns: None,
            hist_max_us: None,
        }
    }
}

/// `all` or the CPU list in kernel notation.
pub fn cpus_text(cpus: &CpuSelection) -> String {
    match cpus {
        CpuSelection::All => "all".to_string(),
        CpuSelection::List(set) => set.to_string(),
    }
}

fn cpus_as_text<S: Serializer>(cpus: &CpuSelection, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cpus_text(cpus))
}

/// Default period of the switch probe: 4 kHz, as paper 001.
pub use rtlab_probe::switch::DEFAULT_INTERVAL_NS as DEFAULT_SWITCH_INTERVAL_NS;

/// The switch probe's own settings (as `rtlab measure switch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchSettings {
    pub mechanisms: Vec<Mechanism>,
    pub interval_ns: u64,
    /// The timer thread's CPU; None = the last online CPU.
    pub cpu: Option<usize>,
    /// The task on another CPU than the timer thread.
    pub cross_cpu: bool,
    /// The task in its own process.
    pub process: bool,
}

impl Default for SwitchSettings {
    fn default() -> Self {
        SwitchSettings {
            mechanisms: vec![Mechanism::Futex],
            interval_ns: DEFAULT_SWITCH_INTERVAL_NS,
            cpu: None,
            cross_cpu: false,
            process: false,
        }
    }
}

impl SwitchSettings {
    /// The probe's config for `length` per mechanism with the timer thread
    /// on `cpu` and the task on `task_cpu` (see
    /// [`crate::runner::switch_placement`]); not checked: see
    /// [`SwitchConfig::validate`].
    pub fn config(
        &self,
        length: RunLength,
        (cpu, task_cpu): (usize, usize),
        sched: SchedParams,
    ) -> SwitchConfig {
        SwitchConfig {
            mechanisms: self.mechanisms.clone(),
            interval_ns: self.interval_ns,
            length,
            cpu,
            task_cpu,
            process: self.process,
            sched,
            inject: None,
        }
    }
}

/// The noise probe's own settings (as `rtlab measure noise`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoiseSettings {
    #[serde(serialize_with = "cpus_as_text")]
    pub cpus: CpuSelection,
    pub threshold_ns: u64,
    pub runtime_ns: u64,
    pub period_ns: u64,
    pub window_ns: u64,
    /// Run the kernel's osnoise tracer beside rtlab where it exists.
    pub osnoise: bool,
}

impl Default for NoiseSettings {
    fn default() -> Self {
        NoiseSettings {
            cpus: CpuSelection::All,
            threshold_ns: noise::DEFAULT_THRESHOLD_NS,
            runtime_ns: noise::DEFAULT_RUNTIME_NS,
            period_ns: noise::DEFAULT_PERIOD_NS,
            window_ns: noise::DEFAULT_WINDOW_NS,
            osnoise: true,
        }
    }
}

pub use rtlab_probe::net::{
    DEFAULT_INTERVAL_NS as DEFAULT_NET_INTERVAL_NS, DEFAULT_PAYLOAD as DEFAULT_NET_PAYLOAD,
    DEFAULT_ROUND_TRIPS as DEFAULT_NET_ROUND_TRIPS, DEFAULT_TIMEOUT_NS as DEFAULT_NET_TIMEOUT_NS,
};
/// `inject_every` of rtlab's server in campaigns (no delay is injected).
const NET_INJECT_EVERY: u64 = 100;

impl NoiseSettings {
    /// The probe's config on `cpus` for `duration_ns`; not checked: see
    /// [`NoiseConfig::validate`].
    pub fn config(&self, cpus: Vec<usize>, duration_ns: u64, sched: SchedParams) -> NoiseConfig {
        NoiseConfig {
            cpus,
            threshold_ns: self.threshold_ns,
            runtime_ns: self.runtime_ns,
            period_ns: self.period_ns,
            window_ns: self.window_ns,
            duration_ns,
            sched,
            osnoise: self.osnoise,
        }
    }
}

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

pub use rtlab_exec::periodic::Mode as PeriodicMode;
use rtlab_exec::periodic::PeriodicConfig;

/// The periodic probe's own settings (as `rtlab exec periodic`): the
/// configuration's priority is the tasks'; the executive runs 10 above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeriodicSettings {
    pub tasks: usize,
    pub period_ns: u64,
    pub work_ns: u64,
    pub mode: PeriodicMode,
    /// The CPU of every task (and the executive); None: the last online CPU.
    pub cpu: Option<usize>,
}

impl Default for PeriodicSettings {
    /// Paper 002's Table 4.1: 10 ms periods, a little work.
    fn default() -> PeriodicSettings {
        PeriodicSettings {
            tasks: 1,
            period_ns: rtlab_exec::periodic::DEFAULT_PERIOD_NS,
            work_ns: rtlab_exec::periodic::DEFAULT_WORK_NS,
            mode: PeriodicMode::Executive,
            cpu: None,
        }
    }
}

impl PeriodicSettings {
    /// The executive's config for `duration_ns` with the tasks at the
    /// configuration's `priority` (1-98) and the executive 10 above (at
    /// most 99), on the last online CPU unless `cpu` is given (not checked
    /// here: see [`crate::runner::probe_for`] and
    /// [`PeriodicConfig::validate`]).
    pub fn config(&self, duration_ns: u64, priority: u32) -> PeriodicConfig {
        let mut config = PeriodicConfig::new(self.tasks, self.period_ns, self.work_ns, duration_ns);
        config.mode = self.mode;
        if let Some(cpu) = self.cpu {
            config.cpu = cpu;
        }
        config.task_priority = priority.clamp(1, 98);
        config.executive_priority = (config.task_priority + 10).min(99);
        config
    }
}

/// A probe's own settings, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ProbeSettings {
    Timer(TimerSettings),
    Switch(SwitchSettings),
    Noise(NoiseSettings),
    Net(NetSettings),
    Periodic(PeriodicSettings),
}

impl ProbeSettings {
    /// The settings of whatever kind, as the campaign asks of every kind.
    pub fn kind_settings(&self) -> &dyn KindSettings {
        match self {
            ProbeSettings::Timer(t) => t,
            ProbeSettings::Switch(s) => s,
            ProbeSettings::Noise(n) => n,
            ProbeSettings::Net(n) => n,
            ProbeSettings::Periodic(p) => p,
        }
    }
}

/// One `[[probe]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeSpec {
    /// Label in tables and excludes; defaults to the kind.
    pub name: String,
    pub kind: ProbeKind,
    #[serde(flatten)]
    pub settings: ProbeSettings,
}

fn cpus_phrase(cpus: &CpuSelection) -> String {
    match cpus {
        CpuSelection::All => "all CPUs".to_string(),
        CpuSelection::List(set) if set.len() == 1 => format!("CPU {set}"),
        CpuSelection::List(set) => format!("CPUs {set}"),
    }
}

impl ProbeSpec {
    /// The period of the probe's deadlines, for a periodic probe (timer,
    /// switch; net: the period of its messages); None for the noise probe.
    pub fn interval_ns(&self) -> Option<u64> {
        self.settings.kind_settings().interval_ns()
    }

    /// The net settings, for a net probe.
    pub fn net(&self) -> Option<&NetSettings> {
        match &self.settings {
            ProbeSettings::Net(n) => Some(n),
            _ => None,
        }
    }

    /// The timer settings, for a timer probe.
    pub fn timer(&self) -> Option<&TimerSettings> {
        match &self.settings {
            ProbeSettings::Timer(t) => Some(t),
            _ => None,
        }
    }

    /// The settings for humans: `every 1ms on all CPUs, mode abs`.
    pub fn describe(&self) -> String {
        self.settings.kind_settings().describe()
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
}

/// What a campaign asks of every probe kind's own settings. Each settings
/// type implements it; [`ProbeSettings::kind_settings`] is the one match
/// over the kinds that everything else goes through.
pub trait KindSettings {
    /// The period of the probe's deadlines or messages; None for a probe
    /// without one (noise).
    fn interval_ns(&self) -> Option<u64>;
    /// The settings for humans: `every 1ms on all CPUs, mode abs`.
    fn describe(&self) -> String;
}

impl KindSettings for TimerSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }
    fn describe(&self) -> String {
        let cpus = cpus_phrase(&self.cpus);
        let mut text = format!(
            "every {} on {cpus}, mode {}",
            rtlab_core::units::human_duration(self.interval_ns),
            self.mode
        );
        if self.distance_ns > 0 {
            text += &format!(
                ", distance {}",
                rtlab_core::units::human_duration(self.distance_ns)
            );
        }
        text
    }
}

impl KindSettings for SwitchSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }
    fn describe(&self) -> String {
        let mechanisms: Vec<&str> = self.mechanisms.iter().map(|m| m.as_str()).collect();
        let cpu = self
            .cpu
            .map_or("the last CPU".to_string(), |c| format!("CPU {c}"));
        format!(
            "{} every {} on {cpu}{}{}",
            mechanisms.join(", "),
            rtlab_core::units::human_duration(self.interval_ns),
            if self.cross_cpu {
                ", task on another CPU"
            } else {
                ""
            },
            if self.process {
                ", task in its own process"
            } else {
                ""
            },
        )
    }
}

impl KindSettings for NoiseSettings {
    fn interval_ns(&self) -> Option<u64> {
        None
    }
    fn describe(&self) -> String {
        format!(
            "on {}, threshold {}, {} of every {}",
            cpus_phrase(&self.cpus),
            rtlab_core::units::human_duration(self.threshold_ns),
            rtlab_core::units::human_duration(self.runtime_ns),
            rtlab_core::units::human_duration(self.period_ns),
        )
    }
}

impl KindSettings for NetSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }
    /// `udp exchange every 30ms to rtlab's server, 4 round trips of 64 B,
    /// timeout 100ms, client on the first CPU, server on the last CPU`.
    fn describe(&self) -> String {
        let on = |cpu: Option<usize>, default: &str| {
            cpu.map_or(default.to_string(), |c| format!("CPU {c}"))
        };
        let mut text = format!(
            "{} {} every {} to {}, {} round trip{} of {} B, timeout {}, client on {}",
            self.transport,
            self.mode,
            rtlab_core::units::human_duration(self.interval_ns),
            self.target
                .map_or("rtlab's server".to_string(), |t| t.to_string()),
            self.round_trips,
            if self.round_trips == 1 { "" } else { "s" },
            self.payload,
            rtlab_core::units::human_duration(self.timeout_ns),
            on(self.client_cpu, "the first CPU"),
        );
        if self.target.is_none() {
            text += ", server on ";
            text += &on(self.server_cpu, "the last CPU");
        }
        text
    }
}

impl KindSettings for PeriodicSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.period_ns)
    }
    fn describe(&self) -> String {
        format!(
            "{} task{} every {}, {} work, {} on {}",
            self.tasks,
            if self.tasks == 1 { "" } else { "s" },
            rtlab_core::units::human_duration(self.period_ns),
            rtlab_core::units::human_duration(self.work_ns),
            self.mode,
            self.cpu
                .map_or("the last CPU".to_string(), |c| format!("CPU {c}")),
        )
    }
}
