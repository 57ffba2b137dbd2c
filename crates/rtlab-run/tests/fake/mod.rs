//! A probe that measures nothing: it hands back a known series, journals
//! one change of a file of the test's own (so that a test sees whether
//! the engine puts it back) and ends after a number of looks or when
//! stopped. No root, no real-time thread, no timing.

use rtlab_core::journal::Journal;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{Percentiles, RunResult, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_load::{Launcher, LoadSpec};
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use rtlab_run::{RunContext, RunObserver, RunRequest};
use std::fs::{self, DirBuilder};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// What the knob holds before and while a fake probe measures.
pub const KNOB_BEFORE: &str = "1";
pub const KNOB_MEASURING: &str = "0";

/// A fake run that nobody stops ends by itself after this, failed with
/// [`NOT_STOPPED`]: a test that waits for a stop that never comes fails
/// instead of hanging.
const NEVER_STOPPED: Duration = Duration::from_secs(60);
pub const NOT_STOPPED: &str = "the fake probe was never stopped";

/// The series every fake run reports.
pub fn known_series() -> Vec<Series> {
    let stats = SeriesStats {
        samples: 3,
        min_ns: 1_000,
        max_ns: 3_000,
        mean_ns: 2_000.0,
        stdev_ns: 1_000.0,
        percentiles_ns: Percentiles {
            p50: 2_000,
            p90: 3_000,
            p99: 3_000,
            p99_9: 3_000,
            p99_99: 3_000,
        },
        histogram_ns: vec![[1_000, 1], [2_000, 1], [3_000, 1]],
        histogram_us: vec![[1, 1], [2, 1], [3, 1]],
        ..SeriesStats::default()
    };
    vec![Series {
        name: "fake0".into(),
        metric: "wakeup_latency".into(),
        cpu: None,
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 0,
            pinned_cpu: None,
            requested: SchedParams {
                policy: Policy::Fifo,
                priority: 99,
                deadline: None,
            },
            actual: None,
            timer_slack_ns: None,
        },
        stats,
    }]
}

/// Series compared as the JSON they are stored as.
pub fn as_json(series: &[Series]) -> serde_json::Value {
    serde_json::to_value(series).unwrap()
}

pub struct FakeProbe {
    /// Looks at `is_finished` before the run ends by itself; `None`: it
    /// ends only when stopped.
    pub looks: Option<u64>,
    /// The file the probe changes through the journal when it starts.
    pub knob: PathBuf,
    /// Set when the probe is started.
    pub started: Arc<AtomicBool>,
}

impl Probe for FakeProbe {
    fn kind(&self) -> &'static str {
        "fake"
    }
    fn planned_ns(&self) -> u64 {
        self.looks.unwrap_or(0) * 1_000
    }
    fn config_json(&self) -> serde_json::Value {
        serde_json::json!({ "looks": self.looks })
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        self.started.store(true, Ordering::SeqCst);
        let stop = with.stop;
        with.journal
            .lock()
            .unwrap()
            .set_file(&self.knob, KNOB_MEASURING)?;
        Ok(Box::new(FakeRun {
            stop,
            looks: AtomicU64::new(0),
            limit: self.looks,
            began: Instant::now(),
        }))
    }
}

struct FakeRun {
    stop: Arc<AtomicBool>,
    looks: AtomicU64,
    limit: Option<u64>,
    began: Instant,
}

impl FakeRun {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

impl ProbeRun for FakeRun {
    fn series_names(&self) -> Vec<String> {
        known_series().into_iter().map(|s| s.name).collect()
    }
    fn live(&self) -> Vec<LiveStats> {
        Vec::new()
    }
    fn is_finished(&self) -> bool {
        let looks = self.looks.fetch_add(1, Ordering::SeqCst) + 1;
        self.stopped()
            || self.limit.is_some_and(|limit| looks >= limit)
            || self.began.elapsed() > NEVER_STOPPED
    }
    fn elapsed_ns(&self) -> u64 {
        // One µs a look: known, whatever the machine's timing.
        self.looks.load(Ordering::SeqCst) * 1_000
    }
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    fn snapshot(&self) -> Vec<Series> {
        known_series()
    }
    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let waited_in_vain = self.limit.is_none() && !self.stopped();
        Ok(ProbeOutcome {
            series: known_series(),
            elapsed_ns: self.elapsed_ns(),
            stopped_early: self.stopped(),
            failure: waited_in_vain.then(|| NOT_STOPPED.to_string()),
            ..ProbeOutcome::default()
        })
    }
}

/// A context with its journal in a directory of its own, looking every
/// millisecond and checkpointing at every look, and a knob for the fake
/// probe to change.
pub struct Fixture {
    pub context: RunContext,
    pub knob: PathBuf,
    pub state_dir: PathBuf,
    pub started: Arc<AtomicBool>,
    _tmp: TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = TempDir::new().unwrap();
        let state_dir = tmp.path().join("state");
        DirBuilder::new().mode(0o700).create(&state_dir).unwrap();
        let knob = tmp.path().join("knob");
        fs::write(&knob, format!("{KNOB_BEFORE}\n")).unwrap();
        let journal = Arc::new(Mutex::new(Journal::new(state_dir.clone())));
        let mut context = RunContext::new(journal, Arc::default(), launcher());
        context.tick = Duration::from_millis(1);
        context.checkpoint = Duration::ZERO;
        Fixture {
            context,
            knob,
            state_dir,
            started: Arc::default(),
            _tmp: tmp,
        }
    }

    /// A request for a fake probe that ends after `looks` (or when
    /// stopped), under `loads` and `sysctls`.
    pub fn request(&self, looks: Option<u64>, loads: &str, sysctls: &[String]) -> RunRequest {
        let loads: Vec<LoadSpec> = match loads {
            "" => Vec::new(),
            specs => rtlab_load::parse_list(specs).unwrap(),
        };
        RunRequest {
            probe: Box::new(FakeProbe {
                looks,
                knob: self.knob.clone(),
                started: Arc::clone(&self.started),
            }),
            process: ProcessOptions {
                mlock: false,
                dma_latency_us: None,
            },
            sysctls: sysctls.to_vec(),
            loads,
            command: vec!["rtlab".into(), "measure".into(), "fake".into()],
            campaign: None,
            samples_csv: None,
        }
    }

    pub fn knob(&self) -> String {
        read_value(&self.knob)
    }

    /// Nothing a run changed is left: the knob holds its value, the
    /// journal has no entry and its directory no file.
    pub fn assert_restored(&self) {
        assert_eq!(self.knob(), KNOB_BEFORE, "the knob is put back");
        let journal = self.context.journal.lock().unwrap();
        assert!(journal.entries().is_empty(), "{:?}", journal.entries());
        let left: Vec<_> = fs::read_dir(&self.state_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "journal files left: {left:?}");
    }
}

/// This test binary as a load worker (see main).
pub fn launcher() -> Launcher {
    Launcher::this_executable(&[crate::LOAD_WORKER]).unwrap()
}

pub fn read_value(path: &Path) -> String {
    fs::read_to_string(path).unwrap().trim().to_string()
}

/// What an observer was shown, in order.
#[derive(Debug, PartialEq)]
pub enum Seen {
    Started {
        knob: String,
    },
    Tick,
    Checkpoint {
        running: bool,
        series: serde_json::Value,
    },
}

/// Writes down what it is shown; stops the run (as a signal would) at
/// the tick `stop_at`.
pub struct Recorder {
    pub seen: Vec<Seen>,
    pub knob: PathBuf,
    pub stop_at: Option<(usize, Arc<AtomicBool>)>,
}

impl Recorder {
    pub fn new(fixture: &Fixture) -> Recorder {
        Recorder {
            seen: Vec::new(),
            knob: fixture.knob.clone(),
            stop_at: None,
        }
    }
    pub fn count(&self, which: impl Fn(&Seen) -> bool) -> usize {
        self.seen.iter().filter(|seen| which(seen)).count()
    }
}

impl RunObserver for Recorder {
    fn started(&mut self, _result: &RunResult, _run: &dyn ProbeRun) {
        self.seen.push(Seen::Started {
            knob: read_value(&self.knob),
        });
    }
    fn tick(&mut self, _run: &dyn ProbeRun) {
        self.seen.push(Seen::Tick);
        if let Some((at, stop)) = &self.stop_at {
            if self.count(|s| *s == Seen::Tick) == *at {
                stop.store(true, Ordering::SeqCst);
            }
        }
    }
    fn checkpoint(&mut self, result: &RunResult) {
        self.seen.push(Seen::Checkpoint {
            running: result.status == rtlab_core::result::RunStatus::Running,
            series: as_json(&result.series),
        });
    }
    fn warning(&mut self, _warning: &str) {}
}
