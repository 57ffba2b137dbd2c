//! What a run is asked to do ([`RunRequest`]) and what it runs with
//! ([`RunContext`]).

use rtlab_core::journal::Journal;
use rtlab_core::result::CampaignRef;
use rtlab_load::{Launcher, LoadSpec};
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::witness::WitnessSettings;
use rtlab_probe::Probe;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the runner looks at the probe, the loads and the stop flag.
pub const TICK: Duration = Duration::from_millis(100);
/// How often a running result is handed to
/// [`RunObserver::checkpoint`](crate::RunObserver::checkpoint).
pub const CHECKPOINT: Duration = Duration::from_secs(2);

/// Everything one run needs.
pub struct RunRequest {
    pub probe: Box<dyn Probe>,
    pub process: ProcessOptions,
    /// `key=value` sysctls set through the journal for the run.
    pub sysctls: Vec<String>,
    pub loads: Vec<LoadSpec>,
    /// The command line recorded in the result.
    pub command: Vec<String>,
    pub campaign: Option<CampaignRef>,
    pub samples_csv: Option<Box<dyn Write + Send>>,
}

/// What lives across the runs of one rtlab process.
pub struct RunContext {
    pub journal: Arc<Mutex<Journal>>,
    /// Set by the signal handler: the current run ends as `partial` and
    /// no further run starts.
    pub stop: Arc<AtomicBool>,
    pub launcher: Launcher,
    /// How often a run looks at its probe, loads and stop flag: [`TICK`]
    /// (a field so that tests need not wait for it).
    pub tick: Duration,
    /// How often a running result is checkpointed: [`CHECKPOINT`] (a field
    /// so that tests need not wait for it).
    pub checkpoint: Duration,
    /// The witness beside every run (what the host did on the measured
    /// CPUs, to explain the top spikes); None runs without one.
    pub witness: Option<WitnessSettings>,
}

impl RunContext {
    /// A context recording system changes in `journal`, stopped by `stop`,
    /// starting loads with `launcher`, at the [`TICK`] and [`CHECKPOINT`]
    /// every command uses. Installs no handler: see [`crate::begin`].
    pub fn new(
        journal: Arc<Mutex<Journal>>,
        stop: Arc<AtomicBool>,
        launcher: Launcher,
    ) -> RunContext {
        RunContext {
            journal,
            stop,
            launcher,
            tick: TICK,
            checkpoint: CHECKPOINT,
            witness: Some(WitnessSettings::default()),
        }
    }
}
