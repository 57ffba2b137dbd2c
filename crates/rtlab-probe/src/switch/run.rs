//! The switch probe as the runner sees it: a [`ProbeRun`] over the driver
//! thread and the recorder. Every series exists from the start (with 0
//! samples until its mechanism runs), so names, live figures and
//! snapshots keep their order and length for the whole run.

use super::driver::{DriverEnd, RunState};
use crate::recorder::Recorder;
use crate::timer::dedup_keep_order;
use crate::{ProbeOutcome, ProbeRun};
use rtlab_core::clock;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{Series, SeriesStats};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What each series is, in series order.
pub struct SeriesInfo {
    pub name: String,
    pub metric: &'static str,
    pub cpu: usize,
    /// Switch series: missed events no sample carried, set by the timer
    /// thread when its measuring ends (see the `interrupt` module).
    pub missed_tail: Option<Arc<AtomicU64>>,
}

impl SeriesInfo {
    fn missed_tail(&self) -> u64 {
        self.missed_tail
            .as_ref()
            .map_or(0, |tail| tail.load(Ordering::Acquire))
    }
}

pub struct SwitchRun {
    pub(super) driver: JoinHandle<DriverEnd>,
    pub(super) recorder: Recorder,
    pub(super) state: Arc<RunState>,
    pub(super) series: Vec<SeriesInfo>,
    pub(super) interval_ns: u64,
}

/// The series as measured, with each thread's settings as set up so far.
fn build_series(
    infos: &[SeriesInfo],
    interval_ns: u64,
    state: &RunState,
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    let settings = state
        .settings
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    infos
        .iter()
        .zip(stats)
        .zip(settings)
        .map(|((info, mut stats), thread)| {
            stats.missed += info.missed_tail();
            Series {
                name: info.name.clone(),
                metric: info.metric.into(),
                cpu: Some(info.cpu),
                interval_ns,
                thread,
                stats,
            }
        })
        .collect()
}

/// The warnings so far, each once, in order.
fn warnings_of(state: &RunState) -> Vec<String> {
    let mut warnings = state
        .warnings
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    dedup_keep_order(&mut warnings);
    warnings
}

impl ProbeRun for SwitchRun {
    fn series_names(&self) -> Vec<String> {
        self.series.iter().map(|s| s.name.clone()).collect()
    }

    fn live(&self) -> Vec<LiveStats> {
        let mut live = self.recorder.live();
        for (stats, info) in live.iter_mut().zip(&self.series) {
            stats.missed += info.missed_tail();
        }
        live
    }

    fn is_finished(&self) -> bool {
        self.driver.is_finished()
    }

    /// Time since the first mechanism's grid started, ns (0 before).
    fn elapsed_ns(&self) -> u64 {
        let origin = self.state.origin_ns.load(Ordering::Acquire);
        if origin == 0 {
            return 0;
        }
        let end = match self.state.end_ns.load(Ordering::Acquire) {
            0 => clock::now_ns(),
            end => end,
        };
        end.saturating_sub(origin)
    }

    fn warnings(&self) -> Vec<String> {
        warnings_of(&self.state)
    }

    fn snapshot(&self) -> Vec<Series> {
        build_series(
            &self.series,
            self.interval_ns,
            &self.state,
            self.recorder.stats(),
        )
    }

    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let run = *self;
        let driver = run
            .driver
            .join()
            .map_err(|_| anyhow::anyhow!("the switch probe's driver thread panicked"))?;
        let elapsed_ns = {
            let origin = run.state.origin_ns.load(Ordering::Acquire);
            let end = run.state.end_ns.load(Ordering::Acquire);
            if origin == 0 {
                0
            } else {
                end.saturating_sub(origin)
            }
        };
        let warnings = warnings_of(&run.state);
        let failures = run
            .state
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let failure = (!failures.is_empty()).then(|| failures.join("; "));
        let stats = run.recorder.finish()?;
        let series = build_series(&run.series, run.interval_ns, &run.state, stats);
        Ok(ProbeOutcome {
            series,
            elapsed_ns,
            break_event: None,
            stopped_early: driver.stopped_early,
            warnings,
            noise: None,
            net: None,
            traffic: None,
            executive: None,
            failure,
        })
    }
}
