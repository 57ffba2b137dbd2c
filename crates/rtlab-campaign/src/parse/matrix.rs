//! `[[load]]`, `[[configuration]]` and `[[exclude]]`, and what a
//! configuration asks of each probe it runs with.

use super::reader::{Reader, Section};
use crate::error::CampaignError;
use crate::spec::*;
use rtlab_core::sched::Policy;
use rtlab_core::units::human_duration;

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

pub(super) fn load(
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

pub(super) fn configuration(r: &Reader, s: &Section) -> Result<Configuration, CampaignError> {
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
/// probes that take it (timer probes, with a runtime that fits the probe's
/// interval), fifo for those that run SCHED_FIFO only (periodic tasks),
/// and whatever else the probe's own config refuses with it. Called for every probe × configuration pair that some
/// cell runs once the excludes are applied; the error is at the
/// configuration's policy (or dl_runtime) and names both, and the pair's
/// exclude as the way out.
pub(super) fn check_pair(
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
    if policy == Policy::Deadline && !p.settings.takes_deadline() {
        return Err(r.error(
            policy_at,
            &s.field("policy"),
            format!(
                "policy deadline is for timer probes only; probe `{}` is a {} probe: {pair} (use fifo, rr or other, {way_out})",
                p.name, p.kind
            ),
        ));
    }
    if policy != Policy::Fifo && p.settings.fifo_only() {
        return Err(r.error(
            policy_at,
            &s.field("policy"),
            format!(
                "periodic tasks run SCHED_FIFO; probe `{}` is a periodic probe: {pair} (use policy fifo, whose probe `mode` picks executive or fifo release, {way_out})",
                p.name
            ),
        ));
    }
    // What the probe itself refuses with this scheduling (the timer probe:
    // a runtime longer than the interval, deadline = period = interval; a
    // distance).
    let sched = c.sched_params(p.interval_ns());
    let Err(e) = p.settings.check_sched(sched) else {
        return Ok(());
    };
    let (at, field) = match s.get(e.field) {
        Some(v) if CONFIGURATION_KEYS.contains(&e.field) => (v.span(), e.field),
        _ => (policy_at, "policy"),
    };
    let message = match (e.field, c.dl_runtime_ns) {
        ("dl_runtime", Some(runtime)) => format!(
            "deadline runtime {} is longer than the period {} of probe `{}` (deadline = period = interval)",
            human_duration(runtime),
            human_duration(p.interval_ns().unwrap_or(0)),
            p.name
        ),
        _ => e.message_with(str::to_string),
    };
    Err(r.error(
        at,
        &s.field(field),
        format!("{message}: {pair} ({way_out})"),
    ))
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

pub(super) fn exclude(
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
