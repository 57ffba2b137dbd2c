//! `kind = "timer"`: wake-up latency of periodic threads (`rtlab measure
//! timer`). Its settings, its keys and their reader, and its probe for one
//! run.

use super::cpus::{cpus_as_text, cpus_phrase};
use super::kind::{KindDef, KindSettings, OneRun};
use crate::error::CampaignError;
use crate::parse::probe::{at_setting, cpus, STAND_IN_NS, STAND_IN_SCHED};
use crate::parse::reader::{Reader, Section};
use rtlab_core::cpuset::{CpuSelection, CpuSet};
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use rtlab_probe::timer::{RunLength, TimerConfig};
pub use rtlab_probe::timer::{WaitMode, DEFAULT_HIST_MAX_NS, DEFAULT_INTERVAL_NS};
use rtlab_probe::Probe;
use serde::Serialize;

pub(crate) const KIND: KindDef = KindDef {
    name: "timer",
    keys: &[
        "cpus",
        "interval",
        "distance",
        "mode",
        "hist_max",
        "threads",
        "priospread",
        "aligned",
    ],
    read: |r, s| Ok(Box::new(read(r, s)?)),
};

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
    /// Floating threads instead of one pinned per CPU (`--threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Thread i at the priority minus i (`--priospread`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub priospread: bool,
    /// Thread i's grid i × this after the first's (`--aligned`).
    #[serde(skip_serializing_if = "is_zero")]
    pub aligned_ns: u64,
}

fn is_zero(ns: &u64) -> bool {
    *ns == 0
}

impl Default for TimerSettings {
    fn default() -> Self {
        TimerSettings {
            cpus: CpuSelection::All,
            interval_ns: DEFAULT_INTERVAL_NS,
            distance_ns: 0,
            mode: WaitMode::Abs,
            hist_max_ns: DEFAULT_HIST_MAX_NS,
            threads: None,
            priospread: false,
            aligned_ns: 0,
        }
    }
}

impl TimerSettings {
    /// The probe's config on `cpus` for `length`, scheduled by `sched` (the
    /// run's configuration, deadline parameters included); not checked:
    /// see [`TimerConfig::validate`].
    pub fn config(&self, cpus: Vec<usize>, length: RunLength, sched: SchedParams) -> TimerConfig {
        let mut config = TimerConfig::new(cpus, length, sched);
        config.interval_ns = self.interval_ns;
        config.distance_ns = self.distance_ns;
        config.mode = self.mode;
        config.threads = self.threads;
        config.priospread = self.priospread;
        config.aligned_ns = self.aligned_ns;
        config
    }

    /// The CPUs the settings name on this machine, to check them with
    /// before a run (`priospread` needs room for every thread): a CPU that
    /// is not online is the run's own error, so it stands in for one CPU.
    fn cpus_here(&self) -> Vec<usize> {
        self.cpus
            .resolve(&CpuSet::online())
            .map_or(vec![0], |set| set.iter().collect())
    }
}

fn read(r: &Reader, s: &Section) -> Result<TimerSettings, CampaignError> {
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
    if let Some(v) = s.get("threads") {
        let n = r.integer(v, &s.field("threads"))?;
        let n = usize::try_from(n)
            .map_err(|_| r.error(v.span(), &s.field("threads"), "must be at least 1"))?;
        timer.threads = Some(n);
    }
    if let Some(v) = s.get("priospread") {
        timer.priospread = r.boolean(v, &s.field("priospread"))?;
    }
    if let Some(v) = s.get("aligned") {
        timer.aligned_ns = r.duration(v, &s.field("aligned"))?;
    }
    // The probe's own rules that need no configuration (a period its
    // deadline arithmetic takes); those with one are checked per pair.
    timer
        .config(
            timer.cpus_here(),
            RunLength::DurationNs(STAND_IN_NS),
            STAND_IN_SCHED,
        )
        .validate()
        .map_err(|e| at_setting(r, s, &e))?;
    Ok(timer)
}

impl KindSettings for TimerSettings {
    fn interval_ns(&self) -> Option<u64> {
        Some(self.interval_ns)
    }

    fn describe(&self) -> String {
        let cpus = cpus_phrase(&self.cpus);
        let mut text = format!(
            "every {} on {cpus}, mode {}",
            human_duration(self.interval_ns),
            self.mode
        );
        if self.distance_ns > 0 {
            text += &format!(", distance {}", human_duration(self.distance_ns));
        }
        if let Some(n) = self.threads {
            text += &format!(", {n} floating threads");
        }
        if self.priospread {
            text += ", priospread";
        }
        if self.aligned_ns > 0 {
            text += &format!(", aligned {}", human_duration(self.aligned_ns));
        }
        text
    }

    /// The configuration schedules the measuring threads, one per CPU (or
    /// `threads` floating ones).
    fn probe(&self, run: &OneRun) -> Result<Box<dyn Probe>, String> {
        let cpus = self.cpus.resolve(run.online);
        let cpus = cpus.map_err(|e| format!("cpus: {e}"))?.iter().collect();
        let length = RunLength::DurationNs(run.duration_ns);
        Ok(Box::new(self.config(cpus, length, run.sched)))
    }

    fn takes_deadline(&self) -> bool {
        true
    }

    /// A deadline runtime longer than the interval (deadline = period =
    /// interval), a distance with deadline scheduling, a priority too low
    /// to spread over the threads.
    fn check_sched(&self, sched: SchedParams) -> Result<(), FieldError> {
        self.config(self.cpus_here(), RunLength::DurationNs(1), sched)
            .validate()
    }
}
