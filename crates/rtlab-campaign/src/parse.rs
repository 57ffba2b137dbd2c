//! The campaign file reader. It walks toml's spanned document by hand
//! rather than deriving `Deserialize`, so that every error, including an
//! unknown key or a wrong type, names the line, the column and the full
//! field path (`load[2].run[0]`).

use crate::error::{CampaignError, Position};
use crate::spec::*;
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::Policy;
use rtlab_core::units::{human_duration, parse_duration_ns};
use rtlab_probe::net::Placement;
use std::net::SocketAddr;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

type Value<'i> = Spanned<DeValue<'i>>;

/// Most runs a plan may have: far beyond any real campaign, low enough that
/// a typo in `repeat` cannot exhaust memory.
pub const MAX_RUNS: u64 = 100_000;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "duration",
    "repeat",
    "cooldown",
    "probe",
    "load",
    "configuration",
    "exclude",
    "budget",
];
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
const LOAD_KEYS: &[&str] = &["name", "run"];
const CONFIGURATION_KEYS: &[&str] = &[
    "name",
    "policy",
    "priority",
    "dl_runtime",
    "dma_latency",
    "sysctl",
];
const EXCLUDE_KEYS: &[&str] = &["probe", "load", "configuration"];

/// Reads a campaign from the text of its file. `origin` is the file path
/// (or `preset NAME`) used in messages; `check_load` validates one load spec
/// (`vm:workers=40,bytes=256M`) and says what is wrong with it.
pub fn parse(
    text: &str,
    origin: &str,
    check_load: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Campaign, CampaignError> {
    let r = Reader { text, origin };
    let root = DeTable::parse(text).map_err(|e| r.syntax(&e))?;
    let top = Section {
        table: root.get_ref(),
        path: String::new(),
        span: 0..0,
    };
    top.check_keys(&r, TOP_KEYS)?;

    let name_value = top.required(&r, "name")?;
    let name = r.name(name_value, "name")?;
    let description = match top.get("description") {
        Some(v) => Some(r.string(v, "description")?.0),
        None => None,
    };
    let duration_value = top.required(&r, "duration")?;
    let duration_ns = r.positive_duration(duration_value, "duration")?;
    let repeat = match top.get("repeat") {
        Some(v) => {
            let n = r.integer(v, "repeat")?;
            u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                r.error(
                    v.span(),
                    "repeat",
                    format!("{n} is not a count of runs (1 or more)"),
                )
            })?
        }
        None => 1,
    };
    let cooldown_ns = match top.get("cooldown") {
        Some(v) => r.duration(v, "cooldown")?,
        None => 0,
    };
    let budget = match top.get("budget") {
        Some(v) => Some(budget_text(&r, v)?),
        None => None,
    };

    let mut probes = Vec::new();
    let probe_sections = top.sections(&r, "probe", true)?;
    for section in &probe_sections {
        probes.push(probe(&r, section)?);
    }
    unique(
        &r,
        "probe",
        &probe_sections,
        &probes,
        |p| &p.name,
        "give each probe its own `name`",
    )?;
    for (section, probe) in probe_sections.iter().zip(&probes) {
        let Some(interval_ns) = probe.interval_ns() else {
            continue;
        };
        if duration_ns < interval_ns {
            return Err(r.error(
                duration_value.span(),
                "duration",
                format!(
                    "{} is shorter than the interval of probe `{}` ({}, line {})",
                    human_duration(duration_ns),
                    probe.name,
                    human_duration(interval_ns),
                    r.position(section.span.start).line
                ),
            ));
        }
    }

    let mut loads = Vec::new();
    let load_sections = top.sections(&r, "load", true)?;
    for section in &load_sections {
        loads.push(load(&r, section, check_load)?);
    }
    unique(&r, "load", &load_sections, &loads, |l| &l.name, "")?;

    let mut configurations = Vec::new();
    let configuration_sections = top.sections(&r, "configuration", true)?;
    for section in &configuration_sections {
        configurations.push(configuration(&r, section)?);
    }
    unique(
        &r,
        "configuration",
        &configuration_sections,
        &configurations,
        |c| &c.name,
        "",
    )?;

    let mut excludes = Vec::new();
    if top.get("exclude").is_some() {
        for section in top.sections(&r, "exclude", false)? {
            excludes.push(exclude(&r, &section, &probes, &loads, &configurations)?);
        }
    }
    // Only now: a pair the excludes remove entirely is never run, so it
    // must not be refused (a periodic probe beside a `policy = "other"`
    // configuration that an exclude keeps apart).
    for (section, c) in configuration_sections.iter().zip(&configurations) {
        for (probe_section, p) in probe_sections.iter().zip(&probes) {
            let runs = loads.iter().any(|l| {
                !excludes
                    .iter()
                    .any(|e| e.matches(&p.name, &l.name, &c.name))
            });
            if runs {
                let probe_line = r.position(probe_section.span.start).line;
                check_pair(&r, section, c, p, probe_line)?;
            }
        }
    }

    let cells = (probes.len() * loads.len() * configurations.len()) as u64;
    if cells.saturating_mul(u64::from(repeat)) > MAX_RUNS {
        let v = top.get("repeat").unwrap_or(duration_value);
        return Err(r.error(
            v.span(),
            "repeat",
            format!(
                "{cells} cells × {repeat} repeats is more than {MAX_RUNS} runs; split the campaign"
            ),
        ));
    }

    Ok(Campaign {
        name,
        description,
        duration_ns,
        repeat,
        cooldown_ns,
        probes,
        loads,
        configurations,
        excludes,
        budget,
        origin: origin.to_string(),
    })
}

/// The budget's text and where it starts; its clauses are checked by the
/// caller (see [`BudgetText`]).
fn budget_text(r: &Reader, v: &Value) -> Result<BudgetText, CampaignError> {
    let (text, span) = r.string(v, "budget")?;
    let raw = r.text.get(span.clone()).unwrap_or_default();
    let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else {
        1
    };
    // Verbatim: the characters between the quotes are the text itself, so
    // a clause's offset in the text is its offset in the file.
    let inner = raw.get(quote..quote + text.len());
    let verbatim = inner == Some(text.as_str()) && !text.contains('\n');
    let start = if verbatim {
        span.start + quote
    } else {
        span.start
    };
    Ok(BudgetText {
        text,
        position: r.position(start),
        verbatim,
    })
}

fn probe(r: &Reader, s: &Section) -> Result<ProbeSpec, CampaignError> {
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
        if noise.window_ns < rtlab_probe::noise::MIN_WINDOW_NS {
            return Err(r.error(
                v.span(),
                &s.field("window"),
                format!(
                    "{} is shorter than {}: the counters are read between windows",
                    human_duration(noise.window_ns),
                    human_duration(rtlab_probe::noise::MIN_WINDOW_NS)
                ),
            ));
        }
    }
    if let Some(v) = s.get("osnoise") {
        noise.osnoise = r.boolean(v, &s.field("osnoise"))?;
    }
    if noise.runtime_ns > noise.period_ns {
        let v = s
            .get("runtime")
            .or(s.get("period"))
            .map_or(s.span.clone(), |v| v.span());
        return Err(r.error(
            v,
            &s.field("runtime"),
            format!(
                "runtime {} is longer than the period {}",
                human_duration(noise.runtime_ns),
                human_duration(noise.period_ns)
            ),
        ));
    }
    if noise.window_ns > noise.runtime_ns {
        let v = s
            .get("window")
            .or(s.get("runtime"))
            .map_or(s.span.clone(), |v| v.span());
        return Err(r.error(
            v,
            &s.field("window"),
            format!(
                "window {} is longer than the runtime {}",
                human_duration(noise.window_ns),
                human_duration(noise.runtime_ns)
            ),
        ));
    }
    Ok(noise)
}

fn periodic_settings(r: &Reader, s: &Section) -> Result<PeriodicSettings, CampaignError> {
    s.check_keys(r, PERIODIC_KEYS)?;
    let mut p = PeriodicSettings::default();
    if let Some(v) = s.get("tasks") {
        let field = s.field("tasks");
        let n = r.integer(v, &field)?;
        p.tasks = usize::try_from(n)
            .ok()
            .filter(|n| (1..=rtlab_exec::periodic::MAX_TASKS).contains(n))
            .ok_or_else(|| {
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
        let min = rtlab_exec::periodic::MIN_PERIOD_NS;
        if p.period_ns < min {
            return Err(r.error(
                v.span(),
                &s.field("period"),
                format!(
                    "shorter than the minimum {}",
                    rtlab_core::units::human_duration(min)
                ),
            ));
        }
    }
    if let Some(v) = s.get("work") {
        p.work_ns = r.positive_duration(v, &s.field("work"))?;
    }
    if p.work_ns >= p.period_ns {
        let at = s.get("work").map_or(s.span.clone(), |v| v.span());
        return Err(r.error(
            at,
            &s.field("work"),
            "the work must be shorter than the period",
        ));
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
    if let Err(e) = net.config(1, placement, server).validate() {
        // The setting at fault, or the probe table when it was a default.
        let key = e.field;
        let at = s.get(key).map_or(s.span.clone(), |v| v.span());
        return Err(r.error(at, &s.field(key), e.message));
    }
    Ok(net)
}

fn load(
    r: &Reader,
    s: &Section,
    check_load: &dyn Fn(&str) -> Result<(), String>,
) -> Result<LoadEntry, CampaignError> {
    s.check_keys(r, LOAD_KEYS)?;
    let name = r.name(s.required(r, "name")?, &s.field("name"))?;
    let run_value = s.required(r, "run")?;
    let run = r.strings(
        run_value,
        &s.field("run"),
        "load specs such as [\"cpu\", \"io\"], or [] for none",
    )?;
    for (i, (spec, span)) in run.iter().enumerate() {
        let field = format!("{}[{i}]", s.field("run"));
        if spec.trim().is_empty() {
            return Err(r.error(span.clone(), &field, "empty load spec"));
        }
        check_load(spec).map_err(|e| r.error(span.clone(), &field, e))?;
    }
    Ok(LoadEntry {
        name,
        run: run.into_iter().map(|(spec, _)| spec).collect(),
    })
}

fn configuration(r: &Reader, s: &Section) -> Result<Configuration, CampaignError> {
    s.check_keys(r, CONFIGURATION_KEYS)?;
    let name = r.name(s.required(r, "name")?, &s.field("name"))?;
    let policy = match s.get("policy") {
        Some(v) => {
            let (text, span) = r.string(v, &s.field("policy"))?;
            text.parse::<Policy>()
                .map_err(|e| r.error(span, &s.field("policy"), e))?
        }
        None => Policy::Fifo,
    };
    let mut c = Configuration::new(&name, policy);
    if let Some(v) = s.get("priority") {
        let field = s.field("priority");
        let n = r.integer(v, &field)?;
        if !policy.takes_priority() {
            return Err(r.error(
                v.span(),
                &field,
                format!("priority applies only to fifo or rr (policy {policy})"),
            ));
        }
        if !(1..=99).contains(&n) {
            return Err(r.error(
                v.span(),
                &field,
                format!("priority {n} is out of range 1-99"),
            ));
        }
        c.priority = Some(n as u32);
    }
    if let Some(v) = s.get("dl_runtime") {
        let field = s.field("dl_runtime");
        let ns = r.positive_duration(v, &field)?;
        if policy != Policy::Deadline {
            return Err(r.error(
                v.span(),
                &field,
                format!("dl_runtime applies only to deadline (policy {policy})"),
            ));
        }
        c.dl_runtime_ns = Some(ns);
    }
    if let Some(v) = s.get("dma_latency") {
        c.dma_latency = r.boolean(v, &s.field("dma_latency"))?;
    }
    if let Some(v) = s.get("sysctl") {
        let field = s.field("sysctl");
        for (i, (text, span)) in r
            .strings(v, &field, "sysctls such as [\"kernel.timer_migration=0\"]")?
            .into_iter()
            .enumerate()
        {
            check_sysctl(&text).map_err(|e| r.error(span.clone(), &format!("{field}[{i}]"), e))?;
            // One value per sysctl: two ran with one of them, silently.
            let key = |t: &str| {
                let (k, v) = t.split_once('=').unwrap_or((t, ""));
                (k.trim().replace('/', "."), v.trim().to_string())
            };
            let (name, value) = key(&text);
            if let Some(first) = c.sysctl.iter().find(|t| {
                let (k, v) = key(t);
                k == name && v != value
            }) {
                return Err(r.error(
                    span,
                    &format!("{field}[{i}]"),
                    format!("{name} is given twice, as `{first}` and as `{text}`: give it once"),
                ));
            }
            c.sysctl.push(text);
        }
    }
    Ok(c)
}

/// What a configuration asks of the probe it schedules: deadline only for
/// timer probes (with a runtime that fits the probe's interval), fifo for
/// periodic tasks. Called for every probe × configuration pair that some
/// cell runs once the excludes are applied; the error is at the
/// configuration's policy (or dl_runtime) and names both, and the pair's
/// exclude as the way out.
fn check_pair(
    r: &Reader,
    s: &Section,
    c: &Configuration,
    p: &ProbeSpec,
    probe_line: usize,
) -> Result<(), CampaignError> {
    let policy = c.policy;
    let policy_at = s.get("policy").map_or(s.span.clone(), |v| v.span());
    let pair = format!(
        "configuration `{}` with probe `{}` (line {probe_line})",
        c.name, p.name
    );
    let way_out = format!(
        "or exclude the pair: [[exclude]] probe = \"{}\", configuration = \"{}\"",
        p.name, c.name
    );
    if policy == Policy::Deadline && p.kind != ProbeKind::Timer {
        return Err(r.error(
            policy_at,
            &s.field("policy"),
            format!(
                "policy deadline is for timer probes only; probe `{}` is a {} probe: {pair} (use fifo, rr or other, {way_out})",
                p.name, p.kind
            ),
        ));
    }
    if policy != Policy::Fifo && p.kind == ProbeKind::Periodic {
        return Err(r.error(
            policy_at,
            &s.field("policy"),
            format!(
                "periodic tasks run SCHED_FIFO; probe `{}` is a periodic probe: {pair} (use policy fifo, whose probe `mode` picks executive or fifo release, {way_out})",
                p.name
            ),
        ));
    }
    if let (Some(runtime), Some(interval)) = (c.dl_runtime_ns, p.interval_ns()) {
        // deadline = period = the probe's interval: the runtime must fit.
        if runtime > interval {
            let (at, field) = match s.get("dl_runtime") {
                Some(v) => (v.span(), "dl_runtime"),
                None => (policy_at, "policy"),
            };
            return Err(r.error(
                at,
                &s.field(field),
                format!(
                    "deadline runtime {} is longer than the period {} of probe `{}` (deadline = period = interval): {pair} ({way_out})",
                    human_duration(runtime),
                    human_duration(interval),
                    p.name
                ),
            ));
        }
    }
    Ok(())
}

/// `key=value` with a key made of the characters sysctl names use.
fn check_sysctl(text: &str) -> Result<(), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not key=value (e.g. kernel.timer_migration=0)"))?;
    let key_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-'));
    if !key_ok {
        return Err(format!(
            "`{key}` is not a sysctl name (e.g. kernel.timer_migration)"
        ));
    }
    if value.trim().is_empty() {
        return Err(format!("`{text}` has no value"));
    }
    Ok(())
}

fn exclude(
    r: &Reader,
    s: &Section,
    probes: &[ProbeSpec],
    loads: &[LoadEntry],
    configurations: &[Configuration],
) -> Result<Exclude, CampaignError> {
    s.check_keys(r, EXCLUDE_KEYS)?;
    let reference = |key: &str, names: Vec<&str>| -> Result<Option<String>, CampaignError> {
        let Some(v) = s.get(key) else {
            return Ok(None);
        };
        let field = s.field(key);
        let (name, span) = r.string(v, &field)?;
        if !names.contains(&name.as_str()) {
            return Err(r.error(
                span,
                &field,
                format!(
                    "there is no {key} named `{name}` (the {key}s are: {})",
                    names.join(", ")
                ),
            ));
        }
        Ok(Some(name))
    };
    let e = Exclude {
        probe: reference("probe", probes.iter().map(|p| p.name.as_str()).collect())?,
        load: reference("load", loads.iter().map(|l| l.name.as_str()).collect())?,
        configuration: reference(
            "configuration",
            configurations.iter().map(|c| c.name.as_str()).collect(),
        )?,
        position: Some(r.position(s.span.start)),
    };
    if e.probe.is_none() && e.load.is_none() && e.configuration.is_none() {
        return Err(r.error(
            s.span.clone(),
            &s.path,
            "an exclude needs at least one of probe, load or configuration",
        ));
    }
    Ok(e)
}

/// Names are unique within their section.
fn unique<T>(
    r: &Reader,
    section: &str,
    sections: &[Section],
    items: &[T],
    name: impl Fn(&T) -> &String,
    hint: &str,
) -> Result<(), CampaignError> {
    for (i, item) in items.iter().enumerate() {
        if let Some(first) = items[..i]
            .iter()
            .position(|other| name(other) == name(item))
        {
            let s = &sections[i];
            let span = s.get("name").map_or(s.span.clone(), |v| v.span());
            let mut message = format!(
                "two {section}s are named `{}` ({section}[{first}] at line {})",
                name(item),
                r.position(sections[first].span.start).line
            );
            if !hint.is_empty() {
                message += ": ";
                message += hint;
            }
            return Err(r.error(span, &s.field("name"), message));
        }
    }
    Ok(())
}

/// The text being read and its name, to turn byte offsets into messages.
struct Reader<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Reader<'_> {
    fn position(&self, offset: usize) -> Position {
        Position::of_offset(self.text, offset)
    }

    fn error(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> CampaignError {
        CampaignError {
            origin: self.origin.to_string(),
            position: Some(self.position(span.start)),
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    /// A TOML syntax error, at toml's own position.
    fn syntax(&self, e: &toml::de::Error) -> CampaignError {
        let message = e.message().trim_end();
        CampaignError {
            origin: self.origin.to_string(),
            position: Some(self.position(e.span().map_or(0, |s| s.start))),
            field: None,
            message: format!("TOML syntax: {message}"),
        }
    }

    fn expected(&self, v: &Value, field: &str, what: &str) -> CampaignError {
        self.error(
            v.span(),
            field,
            format!("expected {what}, found {}", v.get_ref().type_str()),
        )
    }

    fn string(&self, v: &Value, field: &str) -> Result<(String, Range<usize>), CampaignError> {
        match v.get_ref() {
            DeValue::String(s) => Ok((s.to_string(), v.span())),
            _ => Err(self.expected(v, field, "a string")),
        }
    }

    fn strings(
        &self,
        v: &Value,
        field: &str,
        what: &str,
    ) -> Result<Vec<(String, Range<usize>)>, CampaignError> {
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.expected(v, field, &format!("an array of strings: {what}")));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.string(item, &format!("{field}[{i}]")))
            .collect()
    }

    fn integer(&self, v: &Value, field: &str) -> Result<i64, CampaignError> {
        match v.get_ref() {
            DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
                .map_err(|_| self.error(v.span(), field, "integer too large")),
            _ => Err(self.expected(v, field, "an integer")),
        }
    }

    fn boolean(&self, v: &Value, field: &str) -> Result<bool, CampaignError> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err(self.expected(v, field, "true or false")),
        }
    }

    /// A duration string with its unit: `6s`, `500us`.
    fn duration(&self, v: &Value, field: &str) -> Result<u64, CampaignError> {
        match v.get_ref() {
            DeValue::String(s) => {
                parse_duration_ns(s).map_err(|e| self.error(v.span(), field, e.to_string()))
            }
            DeValue::Integer(_) | DeValue::Float(_) => Err(self.error(
                v.span(),
                field,
                "a duration is a string with its unit, e.g. \"6s\", \"500us\", \"1.5ms\"",
            )),
            _ => Err(self.expected(v, field, "a duration such as \"6s\"")),
        }
    }

    fn positive_duration(&self, v: &Value, field: &str) -> Result<u64, CampaignError> {
        match self.duration(v, field)? {
            0 => Err(self.error(v.span(), field, "must be longer than 0")),
            ns => Ok(ns),
        }
    }

    /// A label: letters, digits and `-_.+`, as used in tables and excludes.
    fn name(&self, v: &Value, field: &str) -> Result<String, CampaignError> {
        let (name, span) = self.string(v, field)?;
        if name.is_empty() {
            return Err(self.error(span, field, "a name cannot be empty"));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+')))
        {
            return Err(self.error(
                span,
                field,
                format!(
                    "`{name}`: a name may hold letters, digits, '-', '_', '.' and '+', not {bad:?}"
                ),
            ));
        }
        Ok(name)
    }
}

/// One table of the file with its field path (`load[2]`, or empty for the
/// top level) and the span of its header.
struct Section<'t, 'i> {
    table: &'t DeTable<'i>,
    path: String,
    span: Range<usize>,
}

impl<'t, 'i> Section<'t, 'i> {
    fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn get(&self, key: &str) -> Option<&'t Value<'i>> {
        self.table.get(key)
    }

    fn required(&self, r: &Reader, key: &str) -> Result<&'t Value<'i>, CampaignError> {
        self.get(key).ok_or_else(|| {
            let what = if self.path.is_empty() {
                "the campaign".to_string()
            } else {
                format!("`{}`", self.path)
            };
            r.error(
                self.span.clone(),
                &self.field(key),
                format!("missing: {what} needs `{key}`"),
            )
        })
    }

    /// Every key must be known; the first unknown one (in file order) is
    /// the error.
    fn check_keys(&self, r: &Reader, known: &[&str]) -> Result<(), CampaignError> {
        let unknown = self
            .table
            .iter()
            .filter(|(key, _)| !known.contains(&key.get_ref().as_ref()))
            .min_by_key(|(key, _)| key.span().start);
        match unknown {
            Some((key, _)) => Err(r.error(
                key.span(),
                &self.field(key.get_ref()),
                format!(
                    "unknown key `{}` (known keys here: {})",
                    key.get_ref(),
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The entries of an array of tables (`[[load]]`).
    fn sections(
        &self,
        r: &Reader,
        key: &str,
        at_least_one: bool,
    ) -> Result<Vec<Section<'t, 'i>>, CampaignError> {
        let Some(v) = self.get(key) else {
            return Err(r.error(
                self.span.clone(),
                key,
                format!("missing: a campaign needs at least one [[{key}]]"),
            ));
        };
        let DeValue::Array(items) = v.get_ref() else {
            return Err(r.expected(v, key, &format!("[[{key}]] (an array of tables)")));
        };
        if items.is_empty() && at_least_one {
            return Err(r.error(
                v.span(),
                key,
                format!("a campaign needs at least one [[{key}]]"),
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let path = format!("{key}[{i}]");
                match item.get_ref() {
                    DeValue::Table(table) => Ok(Section {
                        table,
                        path,
                        span: item.span(),
                    }),
                    _ => Err(r.expected(item, &path, "a table")),
                }
            })
            .collect()
    }
}
