//! Executes one run: system changes, process preparation, loads, the
//! probe; then stops the loads and restores the system before returning.

use crate::observer::RunObserver;
use crate::request::{RunContext, RunRequest};
use crate::witnessing::Witnessing;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;
use rtlab_core::journal::Journal;
use rtlab_core::result::{timestamp_now, Effective, RunResult, RunStatus, Series, RUN_SCHEMA};
use rtlab_core::rivals::{RivalScan, Watched};
use rtlab_load::RunningLoads;
use rtlab_probe::setup::PreparedProcess;
use rtlab_probe::timer;
use rtlab_probe::{ProbeOutcome, ProbeRun, Start};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A run refused before anything was measured: a setting it asks for
/// cannot be applied (another live rtlab holds it, the kernel rejects the
/// value, ...). Measuring anyway would record figures under a condition
/// they were not measured under. Whatever the run had already changed is
/// put back. `rtlab measure` exits 2 with the reason; a campaign stores
/// `result` (status `failed`, the reason in its warnings) and goes on.
#[derive(Debug)]
pub struct Refused {
    pub reason: String,
    pub result: Box<RunResult>,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Refused {}

fn lock(journal: &Mutex<Journal>) -> std::sync::MutexGuard<'_, Journal> {
    journal.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs one measurement: system changes, process preparation, loads, the
/// probe; then stops the loads and restores the system before returning.
/// A run that could not measure (a load that would not start) comes back
/// as `failed` with the reason in its warnings; a sysctl that cannot be
/// set is [`Refused`] (an `Err` that carries its failed result); other
/// errors leave no result at all.
pub fn execute(
    mut request: RunRequest,
    context: &RunContext,
    observer: &mut dyn RunObserver,
) -> anyhow::Result<RunResult> {
    let system_changes = set_sysctls(&mut request, context)?;
    let process = PreparedProcess::prepare(&request.process, &mut lock(&context.journal));
    let mut effective = process.effective.clone();
    effective.system_changes.extend(system_changes);
    let warnings = process.warnings.clone();
    let mut result = new_result(&mut request, effective, warnings);

    // Loads first, so the probe measures under them from its first sample.
    let loads = match RunningLoads::start(&request.loads, &context.launcher) {
        Ok(loads) => loads,
        Err(e) => {
            drop(process);
            return Ok(fail_before_measuring(result, context, format!("{e:#}")));
        }
    };
    // Taken after the changes and with the loads running: the conditions
    // of the measurement.
    result.environment = Environment::capture();

    let run_stop = Arc::new(AtomicBool::new(false));
    let start = Start {
        stop: Arc::clone(&run_stop),
        samples_csv: request.samples_csv,
        journal: &context.journal,
    };
    let run = match request.probe.start(start) {
        Ok(run) => run,
        Err(e) => {
            result.loads = loads.stop();
            drop(process);
            return Ok(fail_before_measuring(result, context, format!("{e:#}")));
        }
    };
    let mut measuring = Measuring {
        run,
        run_stop,
        loads,
        load_failure: None,
        rivals: RivalScan::new(),
        online: CpuSet::online(),
        witnessing: None,
    };
    measuring.started(&mut result, observer, context);
    measuring.watch(context, &mut result, observer);
    let (outcome, loads, load_failure) = measuring.finish(&mut result, observer);
    result.loads = loads.stop();
    drop(process);

    record_outcome(&mut result, outcome, load_failure);
    restore(context, &mut result);
    timer::dedup_keep_order(&mut result.warnings);
    Ok(result)
}

/// Sets the request's sysctls through the journal and returns them as the
/// result's system changes; the first one refused puts back those set
/// before it and refuses the run.
fn set_sysctls(request: &mut RunRequest, context: &RunContext) -> anyhow::Result<Vec<String>> {
    let mut system_changes = Vec::new();
    for assignment in &request.sysctls {
        let applied = lock(&context.journal).set_sysctl(assignment);
        if let Err(e) = applied {
            let reason = format!("sysctl {assignment} refused: {e}");
            let result = new_result(request, Effective::default(), Vec::new());
            let result = fail_before_measuring(result, context, reason.clone());
            return Err(anyhow::Error::new(Refused {
                reason,
                result: Box::new(result),
            }));
        }
        system_changes.push(format!("sysctl {assignment}"));
    }
    Ok(system_changes)
}

/// A probe measuring under its loads, and what the runner watches while
/// it does.
struct Measuring {
    run: Box<dyn ProbeRun>,
    /// The probe's own stop flag: set on a signal or a load's death.
    run_stop: Arc<AtomicBool>,
    loads: RunningLoads,
    /// Why a load ended before the run did.
    load_failure: Option<String>,
    // Other real-time threads that can take the probe's CPUs: looked for
    // when the probe starts, at every checkpoint and at the end, from this
    // SCHED_OTHER thread (never from a measuring loop).
    rivals: RivalScan,
    online: CpuSet,
    /// What the host did on the measured CPUs, to explain the top spikes.
    witnessing: Option<Witnessing>,
}

impl Measuring {
    /// The probe has started: its first warnings and series go into
    /// `result`, which `observer` is shown.
    fn started(
        &mut self,
        result: &mut RunResult,
        observer: &mut dyn RunObserver,
        context: &RunContext,
    ) {
        result.warnings.extend(self.run.warnings());
        result.series = self.run.snapshot();
        let found = self.rival_warnings(&result.series, "there when the probe started");
        result.warnings.extend(found);
        self.witnessing = Some(Witnessing::start(
            context.witness.as_ref(),
            &result.series,
            context.checkpoint,
            &mut result.warnings,
        ));
        observer.started(result, self.run.as_ref());
    }

    /// Every tick until the probe is done: passes a stop on to it, stops
    /// it when a load died, and checkpoints `result`.
    fn watch(
        &mut self,
        context: &RunContext,
        result: &mut RunResult,
        observer: &mut dyn RunObserver,
    ) {
        let mut last_checkpoint = Instant::now();
        while !self.run.is_finished() {
            std::thread::sleep(context.tick);
            if context.stop.load(Ordering::SeqCst) {
                self.run_stop.store(true, Ordering::SeqCst);
            }
            if self.load_failure.is_none() {
                if let Err(e) = self.loads.check() {
                    // A load that died leaves the rest of the run unloaded:
                    // stop, and say so, rather than measure something else.
                    self.load_failure = Some(format!("{e:#}"));
                    self.run_stop.store(true, Ordering::SeqCst);
                }
            }
            observer.tick(self.run.as_ref());
            if let Some(witnessing) = &mut self.witnessing {
                witnessing.look(self.run.as_ref());
            }
            if last_checkpoint.elapsed() >= context.checkpoint {
                self.checkpoint(result, observer);
                last_checkpoint = Instant::now();
            }
        }
    }

    /// The result so far, with the rivals found since the last look.
    fn checkpoint(&mut self, result: &mut RunResult, observer: &mut dyn RunObserver) {
        result.series = self.run.snapshot();
        result.elapsed_ns = self.run.elapsed_ns();
        if let Some(witnessing) = &self.witnessing {
            witnessing.pin(&result.series);
        }
        let when = format!(
            "found {} into the run",
            rtlab_core::units::human_duration(result.elapsed_ns)
        );
        for warning in self.rival_warnings(&result.series, &when) {
            observer.warning(&warning);
            result.warnings.push(warning);
        }
        observer.checkpoint(result);
    }

    /// The last look for rivals, then the probe's outcome; the loads are
    /// handed back still running, and why one died.
    fn finish(
        mut self,
        result: &mut RunResult,
        observer: &mut dyn RunObserver,
    ) -> (ProbeOutcome, RunningLoads, Option<String>) {
        // A probe that cannot finish (a thread that panicked, a samples file
        // that could not be written) must not cost what it measured: keep the
        // last snapshot and fail the run.
        let snapshot = self.run.snapshot();
        let elapsed_ns = self.run.elapsed_ns();
        if let Some(witnessing) = &mut self.witnessing {
            witnessing.look(self.run.as_ref());
        }
        // The last look: a run shorter than a checkpoint gets one too.
        for warning in self.rival_warnings(&snapshot, "found at the end of the run") {
            observer.warning(&warning);
            result.warnings.push(warning);
        }
        let outcome = self.run.finish().unwrap_or_else(|e| ProbeOutcome {
            series: snapshot,
            elapsed_ns,
            failure: Some(format!("the probe did not finish cleanly: {e:#}")),
            ..ProbeOutcome::default()
        });
        if let Some(witnessing) = self.witnessing.take() {
            result.witness = witnessing.finish(&outcome.series, outcome.elapsed_ns);
        }
        (outcome, self.loads, self.load_failure)
    }

    /// Warnings for the real-time threads not seen before that can preempt
    /// the measuring threads of `series`; `when` says when they were found.
    fn rival_warnings(&mut self, series: &[Series], when: &str) -> Vec<String> {
        self.rivals
            .new_warnings(&Watched::of_series(series, &self.online), when)
    }
}

/// The probe's outcome into `result`, and the run's status: a break, a
/// load that died or a probe that failed, stopped early, or complete.
fn record_outcome(result: &mut RunResult, outcome: ProbeOutcome, load_failure: Option<String>) {
    result.series = outcome.series;
    result.elapsed_ns = outcome.elapsed_ns;
    result.ended_at = Some(timestamp_now());
    result.warnings.extend(outcome.warnings);
    if let Some(failure) = &outcome.failure {
        result.warnings.push(failure.clone());
    }
    result.status = match (&outcome.break_event, &load_failure, outcome.stopped_early) {
        (Some(_), _, _) => RunStatus::Break,
        (None, Some(_), _) => RunStatus::Failed,
        _ if outcome.failure.is_some() => RunStatus::Failed,
        (None, None, true) => RunStatus::Partial,
        (None, None, false) => RunStatus::Complete,
    };
    if let Some(failure) = load_failure {
        result.warnings.push(format!(
            "stopped after {}: {failure}",
            rtlab_core::units::human_duration(result.elapsed_ns)
        ));
    }
    result.break_event = outcome.break_event;
    result.noise = outcome.noise;
    result.net = outcome.net;
    result.traffic = outcome.traffic;
    result.executive = outcome.executive;
    for series in &result.series {
        if series.stats.dropped > 0 {
            result.warnings.push(format!(
                "{}: {} samples were lost between the measuring thread and the recorder",
                series.name, series.stats.dropped
            ));
        }
    }
}

/// The result of `request` before it measures (status `running`).
fn new_result(request: &mut RunRequest, effective: Effective, warnings: Vec<String>) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: RunResult::new_id(),
        probe: request.probe.kind().into(),
        status: RunStatus::Running,
        started_at: timestamp_now(),
        ended_at: None,
        elapsed_ns: 0,
        command: std::mem::take(&mut request.command),
        config: request.probe.config_json(),
        effective,
        environment: Environment::default(),
        series: Vec::new(),
        break_event: None,
        loads: Vec::new(),
        campaign: request.campaign.take(),
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings,
    }
}

fn fail_before_measuring(mut result: RunResult, context: &RunContext, why: String) -> RunResult {
    result.environment = Environment::capture();
    result.status = RunStatus::Failed;
    result.ended_at = Some(timestamp_now());
    result.warnings.push(format!("nothing measured: {why}"));
    restore(context, &mut result);
    result
}

/// Puts the system back as it was before the run; what could not be put
/// back is a warning of the run (and printed, as it needs a human).
fn restore(context: &RunContext, result: &mut RunResult) {
    for restored in lock(&context.journal).restore() {
        if !restored.ok() {
            eprintln!("error: {restored}");
            result.warnings.push(restored.to_string());
        }
    }
}
