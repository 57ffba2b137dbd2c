//! `[[probe]]`: each kind's keys, read with their defaults and checked
//! where they are written.

use super::reader::{Reader, Section};
use crate::error::CampaignError;
use crate::spec::*;
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_probe::net::Placement;
use std::net::SocketAddr;
use toml::de::DeValue;

const TIMER_KEYS: &[&str] = &[
    "kind", "name", "cpus", "interval", "distance", "mode", "hist_max",
];
const SWITCH_KEYS: &[&str] = &[
    "kind",
    "name",
    "mechanisms",
    "interval",
    "rate",
    "cpu",
    "cross_cpu",
    "process",
];
const NOISE_KEYS: &[&str] = &[
    "kind",
    "name",
    "cpus",
    "threshold",
    "runtime",
    "period",
    "window",
    "osnoise",
];
const PERIODIC_KEYS: &[&str] = &["kind", "name", "tasks", "period", "work", "mode", "cpu"];

const NET_KEYS: &[&str] = &[
    "kind",
    "name",
    "target",
    "transport",
    "mode",
    "interval",
    "round_trips",
    "payload",
    "timeout",
    "client_cpu",
    "server_cpu",
];
pub(super) fn probe(r: &Reader, s: &Section) -> Result<ProbeSpec, CampaignError> {
    let kind_value = s.required(r, "kind")?;
    let (kind_text, _) = r.string(kind_value, &s.field("kind"))?;
    let kind: ProbeKind = kind_text
        .parse()
        .map_err(|e: String| r.error(kind_value.span(), &s.field("kind"), e))?;
    let name = match s.get("name") {
        Some(v) => r.name(v, &s.field("name"))?,
        None => kind.to_string(),
    };
    let settings = match kind {
        ProbeKind::Timer => ProbeSettings::Timer(timer_settings(r, s)?),
        ProbeKind::Switch => ProbeSettings::Switch(switch_settings(r, s)?),
        ProbeKind::Noise => ProbeSettings::Noise(noise_settings(r, s)?),
        ProbeKind::Net => ProbeSettings::Net(net_settings(r, s)?),
        ProbeKind::Periodic => ProbeSettings::Periodic(periodic_settings(r, s)?),
    };
    Ok(ProbeSpec {
        name,
        kind,
        settings,
    })
}

fn cpus(r: &Reader, s: &Section) -> Result<Option<CpuSelection>, CampaignError> {
    let Some(v) = s.get("cpus") else {
        return Ok(None);
    };
    let (text, span) = r.string(v, &s.field("cpus"))?;
    CpuSelection::parse(&text)
        .map(Some)
        .map_err(|e| r.error(span, &s.field("cpus"), e.to_string()))
}

/// A CPU number under `key`, if given.
fn cpu_number(r: &Reader, s: &Section, key: &str) -> Result<Option<usize>, CampaignError> {
    let Some(v) = s.get(key) else {
        return Ok(None);
    };
    let n = r.integer(v, &s.field(key))?;
    usize::try_from(n)
        .map(Some)
        .map_err(|_| r.error(v.span(), &s.field(key), format!("{n} is not a CPU number")))
}

fn timer_settings(r: &Reader, s: &Section) -> Result<TimerSettings, CampaignError> {
    s.check_keys(r, TIMER_KEYS)?;
    let mut timer = TimerSettings::default();
    if let Some(cpus) = cpus(r, s)? {
        timer.cpus = cpus;
    }
    if let Some(v) = s.get("interval") {
        timer.interval_ns = r.positive_duration(v, &s.field("interval"))?;
    }
    if let Some(v) = s.get("distance") {
        timer.distance_ns = r.duration(v, &s.field("distance"))?;
    }
    if let Some(v) = s.get("mode") {
        let (text, span) = r.string(v, &s.field("mode"))?;
        timer.mode = text
            .parse()
            .map_err(|e: String| r.error(span, &s.field("mode"), e))?;
    }
    if let Some(v) = s.get("hist_max") {
        let ns = r.positive_duration(v, &s.field("hist_max"))?;
        if ns < 1_000 {
            return Err(r.error(
                v.span(),
                &s.field("hist_max"),
                "the histogram has 1 µs bins: give at least 1us",
            ));
        }
        timer.hist_max_ns = ns;
    }
    // The probe's own rules that need no configuration (a period its
    // deadline arithmetic takes); those with one are checked per pair.
    let length = rtlab_probe::timer::RunLength::DurationNs(STAND_IN_NS);
    timer
        .config(vec![0], length, STAND_IN_SCHED)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(timer)
}

fn switch_settings(r: &Reader, s: &Section) -> Result<SwitchSettings, CampaignError> {
    s.check_keys(r, SWITCH_KEYS)?;
    let mut switch = SwitchSettings::default();
    if let Some(v) = s.get("mechanisms") {
        let field = s.field("mechanisms");
        let mut mechanisms = Vec::new();
        if let DeValue::String(text) = v.get_ref() {
            if text.as_ref() != "all" {
                return Err(r.error(
                    v.span(),
                    &field,
                    "give \"all\" or a list such as [\"futex\", \"pipe\"]",
                ));
            }
            mechanisms = Mechanism::ALL.to_vec();
        } else {
            let list = r.strings(
                v,
                &field,
                "mechanisms such as [\"futex\", \"pipe\"], or \"all\"",
            )?;
            for (i, (text, span)) in list.into_iter().enumerate() {
                let mechanism: Mechanism = text
                    .parse()
                    .map_err(|e: String| r.error(span.clone(), &format!("{field}[{i}]"), e))?;
                if mechanisms.contains(&mechanism) {
                    return Err(r.error(
                        span,
                        &format!("{field}[{i}]"),
                        format!("`{text}` is listed twice"),
                    ));
                }
                mechanisms.push(mechanism);
            }
            if mechanisms.is_empty() {
                return Err(r.error(v.span(), &field, "give at least one mechanism"));
            }
        }
        switch.mechanisms = mechanisms;
    }
    match (s.get("interval"), s.get("rate")) {
        (Some(_), Some(rate)) => {
            return Err(r.error(
                rate.span(),
                &s.field("rate"),
                "give `interval` or `rate`, not both",
            ))
        }
        (Some(v), None) => switch.interval_ns = r.positive_duration(v, &s.field("interval"))?,
        (None, Some(v)) => {
            let (text, span) = r.string(v, &s.field("rate"))?;
            switch.interval_ns = rtlab_core::units::parse_rate_period_ns(&text)
                .map_err(|e| r.error(span, &s.field("rate"), e.to_string()))?;
        }
        (None, None) => {}
    }
    if let Some(cpu) = cpu_number(r, s, "cpu")? {
        switch.cpu = Some(cpu);
    }
    if let Some(v) = s.get("cross_cpu") {
        switch.cross_cpu = r.boolean(v, &s.field("cross_cpu"))?;
    }
    if let Some(v) = s.get("process") {
        switch.process = r.boolean(v, &s.field("process"))?;
    }
    Ok(switch)
}

fn noise_settings(r: &Reader, s: &Section) -> Result<NoiseSettings, CampaignError> {
    s.check_keys(r, NOISE_KEYS)?;
    let mut noise = NoiseSettings::default();
    if let Some(cpus) = cpus(r, s)? {
        noise.cpus = cpus;
    }
    if let Some(v) = s.get("threshold") {
        noise.threshold_ns = r.positive_duration(v, &s.field("threshold"))?;
    }
    if let Some(v) = s.get("runtime") {
        noise.runtime_ns = r.positive_duration(v, &s.field("runtime"))?;
    }
    if let Some(v) = s.get("period") {
        noise.period_ns = r.positive_duration(v, &s.field("period"))?;
    }
    if let Some(v) = s.get("window") {
        noise.window_ns = r.positive_duration(v, &s.field("window"))?;
    }
    if let Some(v) = s.get("osnoise") {
        noise.osnoise = r.boolean(v, &s.field("osnoise"))?;
    }
    noise
        .config(vec![0], STAND_IN_NS, STAND_IN_SCHED)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(noise)
}

fn periodic_settings(r: &Reader, s: &Section) -> Result<PeriodicSettings, CampaignError> {
    s.check_keys(r, PERIODIC_KEYS)?;
    let mut p = PeriodicSettings::default();
    if let Some(v) = s.get("tasks") {
        let field = s.field("tasks");
        let n = r.integer(v, &field)?;
        p.tasks = usize::try_from(n).map_err(|_| {
            r.error(
                v.span(),
                &field,
                format!(
                    "{n} tasks is out of range 1-{}",
                    rtlab_exec::periodic::MAX_TASKS
                ),
            )
        })?;
    }
    if let Some(v) = s.get("period") {
        p.period_ns = r.positive_duration(v, &s.field("period"))?;
    }
    if let Some(v) = s.get("work") {
        p.work_ns = r.positive_duration(v, &s.field("work"))?;
    }
    if let Some(v) = s.get("mode") {
        let (text, span) = r.string(v, &s.field("mode"))?;
        p.mode = match text.as_str() {
            "executive" => PeriodicMode::Executive,
            "fifo" => PeriodicMode::Fifo,
            _ => {
                return Err(r.error(
                    span,
                    &s.field("mode"),
                    format!("unknown mode `{text}` (expected executive or fifo)"),
                ))
            }
        };
    }
    p.cpu = cpu_number(r, s, "cpu")?;
    p.config(STAND_IN_NS, STAND_IN_SCHED.priority)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(p)
}

fn net_settings(r: &Reader, s: &Section) -> Result<NetSettings, CampaignError> {
    s.check_keys(r, NET_KEYS)?;
    let mut net = NetSettings::default();
    if let Some(v) = s.get("target") {
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
        net.target = Some(target);
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
        sched: crate::runner::NET_CLIENT_SCHED,
    };
    let server = net.target.is_none().then_some(placement);
    net.config(1, placement, server)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(net)
}

/// What a probe is checked with when its file is read, standing in for a
/// run's: one second, SCHED_FIFO at the default priority (what a
/// configuration asks of the probe is checked per pair, in `matrix`).
const STAND_IN_NS: u64 = 1_000_000_000;
const STAND_IN_SCHED: SchedParams = SchedParams {
    policy: Policy::Fifo,
    priority: rtlab_probe::DEFAULT_PRIORITY,
    deadline: None,
};

/// A probe's config refused a setting: the error is at the setting, or
/// when it was left to its default at the first other setting the message
/// names, else at the `[[probe]]` table.
fn at_setting(r: &Reader, s: &Section, e: &FieldError) -> CampaignError {
    let at = e
        .settings()
        .into_iter()
        .find_map(|key| s.get(key))
        .map_or(s.span.clone(), |v| v.span());
    r.error(at, &s.field(e.field), e.message_with(str::to_string))
}
