//! rtlab's probes: measuring threads that follow rtlab's hot-path rules
//! (memory locked, stacks prefaulted, absolute deadlines; no allocation,
//! lock, formatting or logging while measuring), and the recorder that
//! turns their samples into series.
//!
//! Every probe is started from its config and handed back as a
//! [`ProbeRun`]: the runner watches it, checkpoints it and finishes it the
//! same way whatever it measures.

pub mod launch;
pub mod net;
pub mod noise;
pub mod recorder;
pub mod run;
pub mod settings;
pub mod setup;
pub mod switch;
pub mod thread;
pub mod timer;
pub mod trace;
pub mod witness;

pub use settings::{DEFAULT_DURATION_NS, DEFAULT_PRIORITY};

use rtlab_core::journal::Journal;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{BreakEvent, NetReport, NoiseReport, Series, TrafficReport};
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// A probe measuring in the background.
pub trait ProbeRun {
    /// Names of the series, in the order of [`ProbeRun::live`] and
    /// [`ProbeRun::snapshot`].
    fn series_names(&self) -> Vec<String>;
    /// Live figures of every series, for a status line.
    fn live(&self) -> Vec<LiveStats>;
    /// Every measuring thread is done (planned end, stop flag or break).
    fn is_finished(&self) -> bool;
    /// Time since the measurement started, ns.
    fn elapsed_ns(&self) -> u64;
    /// Things the probe had to do differently from what was asked.
    fn warnings(&self) -> Vec<String>;
    /// The series as measured so far (for a result rewritten during the run).
    fn snapshot(&self) -> Vec<Series>;
    /// Waits for the measuring threads and the recorder; returns the result.
    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome>;
}

/// The end of a probe run.
#[derive(Debug, Default)]
pub struct ProbeOutcome {
    pub series: Vec<Series>,
    pub elapsed_ns: u64,
    pub break_event: Option<BreakEvent>,
    /// Stopped before its planned end (signal or break).
    pub stopped_early: bool,
    /// Why the probe could not measure to its planned end although nobody
    /// stopped it (e.g. the switch probe's task process died): the run is
    /// then `failed`, with this in its warnings.
    pub failure: Option<String>,
    pub warnings: Vec<String>,
    /// The noise probe's attribution.
    pub noise: Option<NoiseReport>,
    /// The net probe's message counts and timeline.
    pub net: Option<NetReport>,
    /// `rtlab traffic replay|record`'s packet accounting and accuracy.
    pub traffic: Option<TrafficReport>,
    /// The executive's learned guards and spin (periodic, plan).
    pub executive: Option<rtlab_core::result::ExecutiveReport>,
}

/// Anything the runner can run and record: each probe's config is one
/// (this crate's [`timer::TimerConfig`], [`switch::SwitchConfig`],
/// [`noise::NoiseConfig`] and [`net::NetConfig`], the executive's
/// dispatcher and periodic tasks), so that a command or a campaign hands
/// the engine `Box::new(config)` and a new probe adds no arm anywhere.
pub trait Probe: Send {
    /// The probe's name as recorded in `RunResult::probe`.
    fn kind(&self) -> &'static str;
    /// Planned length of the run, ns (for progress and ETAs).
    fn planned_ns(&self) -> u64;
    /// Every setting, defaults included: the result's `config` (see
    /// [`config_json`]).
    fn config_json(&self) -> serde_json::Value;
    /// Starts the probe with what the runner hands it.
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>>;
}

/// What the runner hands a probe it starts.
pub struct Start<'a> {
    /// Ends the probe early when set.
    pub stop: Arc<AtomicBool>,
    /// Receives every sample as CSV.
    pub samples_csv: Option<Box<dyn Write + Send>>,
    /// Where system changes the probe makes itself go (the switch probe's
    /// SysV semaphore set, the noise probe's osnoise tracer settings), so
    /// that `rtlab restore` undoes them after a crash.
    pub journal: &'a Arc<Mutex<Journal>>,
}

/// A probe's config as the result's `config`: its own serialization, as
/// [`Probe::config_json`] gives it.
pub fn config_json(config: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(config).unwrap_or(serde_json::Value::Null)
}
