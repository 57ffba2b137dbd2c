//! `kind = "switch"`: interrupt latency and the switch to a released task
//! (`rtlab measure switch`). Its settings, its keys and their reader, and
//! its probe for one run with the threads' placement.

use super::cpus::cpu_or;
use super::kind::{KindDef, KindSettings, OneRun};
use crate::error::CampaignError;
use crate::parse::probe::{at_setting, cpu_number, STAND_IN_NS, STAND_IN_SCHED};
use crate::parse::reader::{Reader, Section};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::SchedParams;
use rtlab_core::units::human_duration;
pub use rtlab_probe::switch::Mechanism;
use rtlab_probe::switch::{Pacing, SwitchConfig};
use rtlab_probe::timer::RunLength;
use rtlab_probe::Probe;
use serde::Serialize;
use toml::de::DeValue;

/// Default period of the switch probe: 4 kHz, as paper 001.
pub use rtlab_probe::switch::DEFAULT_INTERVAL_NS as DEFAULT_SWITCH_INTERVAL_NS;

pub(crate) const KIND: KindDef = KindDef {
    name: "switch",
    keys: &[
        "mechanisms",
        "interval",
        "rate",
        "cpu",
        "cross_cpu",
        "process",
        "pacing",
    ],
    read: |r, s| Ok(Box::new(read(r, s)?)),
};

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
    /// `grid` (default) or `rt-tests`: see [`Pacing`].
    #[serde(default, skip_serializing_if = "Pacing::is_grid")]
    pub pacing: Pacing,
}

impl Default for SwitchSettings {
    fn default() -> Self {
        SwitchSettings {
            mechanisms: vec![Mechanism::Futex],
            interval_ns: DEFAULT_SWITCH_INTERVAL_NS,
            cpu: None,
            cross_cpu: false,
            process: false,
            pacing: Pacing::Grid,
        }
    }
}

impl SwitchSettings {
    /// The probe's config for `length` per mechanism with the timer thread
    /// on `cpu` and the task on `task_cpu` (see [`switch_placement`]); not
    /// checked: see [`SwitchConfig::validate`].
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
            pacing: self.pacing,
        }
    }
}

fn read(r: &Reader, s: &Section) -> Result<SwitchSettings, CampaignError> {
    let mut switch = SwitchSettings::default();
    if let Some(v) = s.get("mechanisms") {
        switch.mechanisms = mechanisms(r, s, v)?;
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
    if let Some(v) = s.get("pacing") {
        let (text, span) = r.string(v, &s.field("pacing"))?;
        switch.pacing = text
            .parse()
            .map_err(|e: String| r.error(span, &s.field("pacing"), e))?;
    }
    // The probe's own rules that need no configuration (rt-tests pacing's
    // mechanisms and threads); the policy is checked per pair.
    switch
        .config(RunLength::DurationNs(STAND_IN_NS), (0, 0), STAND_IN_SCHED)
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(switch)
}

/// `"all"` or a list of mechanisms, each once.
fn mechanisms(
    r: &Reader,
    s: &Section,
    v: &crate::parse::reader::Value,
) -> Result<Vec<Mechanism>, CampaignError> {
    let field = s.field("mechanisms");
    if let DeValue::String(text) = v.get_ref() {
        if text.as_ref() != "all" {
            return Err(r.error(
                v.span(),
                &field,
                "give \"all\" or a list such as [\"futex\", \"pipe\"]",
            ));
        }
        return Ok(Mechanism::ALL.to_vec());
    }
    let list = r.strings(
        v,
        &field,
        "mechanisms such as [\"futex\", \"pipe\"], or \"all\"",
    )?;
    let mut mechanisms = Vec::new();
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
    Ok(mechanisms)
}

impl KindSettings for SwitchSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn describe(&self) -> String {
        let mechanisms: Vec<&str> = self.mechanisms.iter().map(|m| m.as_str()).collect();
        format!(
            "{} every {} on {}{}{}{}",
            mechanisms.join(", "),
            human_duration(self.interval_ns),
            cpu_or(self.cpu, "the last CPU"),
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
            match self.pacing {
                Pacing::Grid => "",
                Pacing::RtTests => ", paced as rt-tests",
            },
        )
    }

    /// The configuration schedules the timer thread (the task runs one
    /// priority below, or at it with rt-tests pacing).
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String> {
        let placement = switch_placement(self.cpu, self.cross_cpu, run.online)?;
        // The run's duration is shared by its mechanisms, so that a run
        // lasts what the plan says whatever the probe.
        let mechanisms = self.mechanisms.len().max(1) as u64;
        let length = RunLength::DurationNs(run.duration_ns / mechanisms);
        Ok(Box::new(self.config(length, placement, run.sched)))
    }
}

/// The timer thread's and the task's CPUs for the switch probe: `cpu` (by
/// default the last online CPU, the one least busy with housekeeping on
/// most machines) and, across CPUs, the next online CPU after it.
pub fn switch_placement(
    cpu: Option<usize>,
    cross_cpu: bool,
    online: &CpuSet,
) -> Result<(usize, usize), String> {
    let cpus: Vec<usize> = online.iter().collect();
    let cpu = match cpu {
        Some(cpu) if online.contains(cpu) => cpu,
        Some(cpu) => return Err(format!("CPU {cpu} is not online (online: {online})")),
        None => *cpus.last().ok_or("no CPU is online")?,
    };
    if !cross_cpu {
        return Ok((cpu, cpu));
    }
    let at = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    match cpus.get((at + 1) % cpus.len()) {
        Some(&other) if other != cpu => Ok((cpu, other)),
        _ => Err(format!(
            "a cross-CPU switch needs two online CPUs (online: {online})"
        )),
    }
}
