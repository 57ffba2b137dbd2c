//! `kind = "noise"`: OS noise seen by a spinning thread, by source
//! (`rtlab measure noise`). Its settings, its keys and their reader, and
//! its probe for one run.

use super::cpus::{cpus_as_text, cpus_phrase};
use super::kind::{KindDef, KindSettings, OneRun};
use crate::error::CampaignError;
use crate::parse::probe::{at_setting, cpus, STAND_IN_NS, STAND_IN_SCHED};
use crate::parse::reader::{Reader, Section};
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::SchedParams;
use rtlab_core::units::human_duration;
use rtlab_probe::noise::{self, NoiseConfig};
use rtlab_probe::Probe;
use serde::Serialize;

pub(crate) const KIND: KindDef = KindDef {
    name: "noise",
    keys: &[
        "cpus",
        "threshold",
        "runtime",
        "period",
        "window",
        "osnoise",
    ],
    read: |r, s| Ok(Box::new(read(r, s)?)),
};

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

fn read(r: &Reader, s: &Section) -> Result<NoiseSettings, CampaignError> {
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

impl KindSettings for NoiseSettings {
    fn interval_ns(&self) -> Option<u64> {
        None
    }

    fn describe(&self) -> String {
        format!(
            "on {}, threshold {}, {} of every {}",
            cpus_phrase(&self.cpus),
            human_duration(self.threshold_ns),
            human_duration(self.runtime_ns),
            human_duration(self.period_ns),
        )
    }

    /// The configuration schedules the spinners, one per CPU.
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String> {
        let cpus = self.cpus.resolve(run.online);
        let cpus = cpus.map_err(|e| format!("cpus: {e}"))?.iter().collect();
        Ok(Box::new(self.config(cpus, run.duration_ns, run.sched)))
    }
}
