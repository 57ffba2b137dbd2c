//! The dispatcher (paper 002's plan scheduler, §4.1): one SCHED_FIFO
//! thread that, for each event of a plan, sleeps on an absolute
//! clock_nanosleep programmed only for that event (KURT's on-demand timer)
//! until the event's time minus a guard, spins on the clock to the exact
//! nanosecond (§4.1.1's wake early and spin) and fires the event's module.
//!
//! Each event's dispatch error (fire time − planned time) is a sample of
//! the series `dispatch`; an event the dispatcher reaches more than
//! `skip_after` late is not fired (firm real time: it is worth nothing
//! then, and a burst of stale events would delay the next ones) and counts
//! as missed. Samples + missed = events.
//!
//! `config` holds the settings, `dispatcher` the loop, `pager` the window
//! of a mapped plan kept in memory, `calibrate` the warm start of a
//! learned guard, `extras` what a probe built on the dispatcher adds.

mod calibrate;
mod config;
mod dispatcher;
mod extras;
mod pager;

use crate::guard::Learner;
use crate::module;
use crate::plan::{self, LoadedPlan};
use calibrate::Calibration;
pub use config::{DispatchConfig, Guard, Inject, Repeat, MAX_GUARD_NS, MAX_SKIP_AFTER_NS};
use dispatcher::{Dispatcher, End};
pub use extras::{scaled, ExtraSeries, Extras, Lead, Modules};
use pager::{spawn_pager, Pager};
use rtlab_core::clock;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{ExecutiveReport, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched;
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::{ring_capacity, Recorder, SamplesCsv, SeriesInput};
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Time between the thread being ready and the plan's start.
const START_MARGIN_NS: u64 = 20_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(30);

impl Probe for DispatchConfig {
    fn kind(&self) -> &'static str {
        "plan"
    }

    fn planned_ns(&self) -> u64 {
        let Ok(plan) = plan::load(&self.plan) else {
            return 0;
        };
        let period = DispatchConfig::period_of(&plan);
        match self.repeat {
            Repeat::Times(n) => period.saturating_mul(n),
            Repeat::Forever => u64::MAX,
        }
    }

    fn config_json(&self) -> serde_json::Value {
        rtlab_probe::config_json(self)
    }

    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        Ok(Box::new(start_with(
            self,
            with.stop,
            with.samples_csv,
            Extras::default(),
        )?))
    }
}

/// What the dispatcher thread reports once set up.
struct Ready {
    settings: ThreadSettings,
    warnings: Vec<String>,
    guard_ns: u64,
    /// How early each event fires (Extras::lead).
    lead_ns: u64,
    calibration: Option<Calibration>,
}

/// A plan being dispatched.
pub struct DispatchRun {
    pager: Option<Pager>,
    /// Set when the plan's file changed size during the run.
    damaged: Arc<AtomicBool>,
    thread: Option<JoinHandle<End>>,
    recorder: Option<Recorder>,
    start_ns: u64,
    interval_ns: u64,
    /// The extra series' name, metric and interval, after `dispatch`.
    extra: Vec<(String, String, u64)>,
    lead_ns: u64,
    cpu: Option<usize>,
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// The plan of `path`, refused when it has no events or `rtlab plan check`
/// finds an error in it (the command line checked it too, but the file may
/// have changed since).
fn load_checked(path: &Path) -> anyhow::Result<LoadedPlan> {
    let plan = plan::load(path).map_err(anyhow::Error::new)?;
    anyhow::ensure!(
        !plan.events.is_empty(),
        "{}: the plan has no events",
        path.display()
    );
    let report =
        plan::check::check_lines(&plan.header, plan.events.as_ref(), plan.lines.as_deref());
    if let Some(error) = report
        .findings
        .iter()
        .find(|f| f.severity == plan::Severity::Error)
    {
        anyhow::bail!(
            "{}: {} ({} errors: see `rtlab plan check`)",
            path.display(),
            error.message,
            report.errors
        );
    }
    Ok(plan)
}

/// Dispatches `config`'s plan with `extras` (the default: what `rtlab
/// plan run` does): the caller's modules instead of the plan's, more
/// series in the recorder, the plan played at a speed.
pub fn start_with(
    config: &DispatchConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
    extras: Extras,
) -> anyhow::Result<DispatchRun> {
    config.validate()?;
    let plan = load_checked(&config.plan)?;
    let speed = extras.speed;
    let period = scaled(DispatchConfig::period_of(&plan), speed).max(1);
    let span = scaled(plan.events.event(plan.events.len() - 1).offset_ns, speed) + 1;
    // The ring holds two seconds of events at the plan's mean rate.
    // The mean spacing between events (the series' interval).
    let mean_spacing = (span.saturating_sub(1) / (plan.events.len() - 1).max(1)).max(1);
    let (mut producer, consumer) = rtrb::RingBuffer::new(ring_capacity(mean_spacing));
    let dropped = Arc::new(AtomicU64::new(0));
    let dispatch = SeriesInput {
        csv_label: "dispatch".into(),
        consumer,
        dropped: Arc::clone(&dropped),
    };
    let (inputs, extra) = extras::recorder_inputs(dispatch, extras.series);
    let given_modules = extras.modules;
    let lead = extras.lead;
    let recorder = Recorder::spawn(
        inputs,
        None,
        samples_csv.map(|out| SamplesCsv {
            out,
            label_column: "series",
        }),
    )?;

    // Where the dispatcher is, for the pager thread (off the hot path).
    let position = Arc::new(AtomicU64::new(0));
    let plan = Arc::new(plan);
    let mut launch: Launch<End, Ready> = Launch::new();
    let run_stop = Arc::clone(&stop);
    let cfg = config.clone();
    let thread_plan = Arc::clone(&plan);
    let thread_position = Arc::clone(&position);
    let builder = std::thread::Builder::new()
        .name("rtlab-dispatch".into())
        .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
    launch.spawn("the dispatcher".into(), builder, move |gate| {
        let plan = thread_plan;
        let set_up = launch::caught(|| set_up_thread(&cfg, &plan, given_modules, lead));
        let (ready, modules, guard_ns, lead_ns) = match set_up {
            Ok((ready, modules)) => {
                let (guard, lead) = (ready.guard_ns, ready.lead_ns);
                (Ok(ready), modules, guard, lead)
            }
            Err(why) => (Err(why), Vec::new(), 0, 0),
        };
        let planned = match cfg.repeat {
            Repeat::Times(n) => plan.events.len().saturating_mul(n),
            Repeat::Forever => u64::MAX,
        };
        match gate.ready(ready) {
            Some(start_ns) => {
                let mut dispatcher = Dispatcher {
                    events: plan.events.as_ref(),
                    position: &thread_position,
                    modules,
                    period,
                    speed,
                    learner: Learner::new(cfg.learning(), guard_ns, 0, false),
                    cpu: cfg.cpu,
                    lead_ns,
                    skip_after_ns: cfg.skip_after_ns,
                    inject: cfg.inject,
                };
                dispatcher.run(start_ns, planned, &mut producer, &dropped, &stop)
            }
            None => End {
                end_ns: clock::now_ns(),
                fired: 0,
                missed: 0,
                planned,
                module_counts: Vec::new(),
                guards: None,
            },
        }
    })?;
    let ready = match launch.wait_ready(READY_TIMEOUT) {
        Ok(mut reports) => reports.remove(0),
        Err(why) => {
            let error = launch.fail(why);
            let _ = recorder.finish();
            return Err(error);
        }
    };
    let mut warnings = ready.warnings;
    if let Some(c) = ready.calibration {
        warnings.push(format!(
            "guard auto: {} warm-up wake-ups were late by p50 {} ns, p95 {} ns, p99 {} ns, max {} ns: guard {} ns to start with, then learned from every wake-up (the result's executive)",
            c.wakeups, c.p50_ns, c.p95_ns, c.p99_ns, c.max_ns, c.guard_ns
        ));
    }
    let damaged = Arc::new(AtomicBool::new(false));
    let pager = spawn_pager(plan, position, run_stop, Arc::clone(&damaged));
    warnings.extend(throttle_warning(mean_spacing, ready.guard_ns));
    let start_ns =
        clock::now_ns() + START_MARGIN_NS.max(ready.guard_ns.saturating_mul(2)) + ready.lead_ns;
    let thread = launch.go(start_ns).remove(0);
    Ok(DispatchRun {
        pager,
        damaged,
        thread: Some(thread),
        recorder: Some(recorder),
        start_ns,
        interval_ns: mean_spacing,
        extra,
        lead_ns: ready.lead_ns,
        cpu: config.cpu,
        settings: ready.settings,
        warnings,
    })
}

/// The dispatcher thread's set-up, before the plan starts: its modules
/// (given, or built from the plan's declarations), its promotion, and the
/// guard it starts from (fixed, or a warm-up's: calibrate).
fn set_up_thread(
    cfg: &DispatchConfig,
    plan: &LoadedPlan,
    given_modules: Option<Modules>,
    lead: Lead,
) -> Result<(Ready, Modules), String> {
    let modules = match given_modules {
        Some(modules) => modules,
        None => {
            let mut modules = Vec::with_capacity(plan.header.modules.len());
            for decl in &plan.header.modules {
                modules.push((decl.name.clone(), module::build(decl)?));
            }
            modules
        }
    };
    let (settings, warnings) = rtlab_probe::thread::set_up_measuring_thread(cfg.cpu, &cfg.sched);
    let (guard_ns, calibration) = match cfg.guard {
        Guard::Fixed(ns) => (ns, None),
        Guard::Auto => {
            let c = calibrate::calibrate();
            (c.guard_ns, Some(c))
        }
    };
    let ready = Ready {
        settings,
        warnings,
        guard_ns,
        lead_ns: match lead {
            Lead::Fixed(ns) => ns,
            Lead::Guard => guard_ns,
        },
        calibration,
    };
    Ok((ready, modules))
}

/// Events closer than the guard keep the dispatcher spinning, which the
/// kernel's real-time throttling interrupts.
fn throttle_warning(mean_spacing: u64, guard_ns: u64) -> Option<String> {
    (mean_spacing <= guard_ns && rt_throttled()).then(|| format!(
        "events {} apart on average, within the {} guard: the dispatcher hardly sleeps, and the kernel's real-time throttling (kernel.sched_rt_runtime_us) will take the CPU from it for 5 % of every second, skipping events; --sysctl kernel.sched_rt_runtime_us=-1 lifts it for the run",
        rtlab_core::units::human_duration(mean_spacing),
        rtlab_core::units::human_duration(guard_ns)
    ))
}

/// Whether the kernel throttles real-time threads (sched_rt_runtime_us is
/// not -1).
fn rt_throttled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").is_ok_and(|v| v.trim() != "-1")
}

impl DispatchRun {
    /// How early each event fired (Extras::lead, the guard resolved).
    pub fn lead_ns(&self) -> u64 {
        self.lead_ns
    }

    /// `dispatch`, then the extra series, with `stats` in that order.
    fn series(&self, stats: Vec<SeriesStats>) -> Vec<Series> {
        let names = std::iter::once(("dispatch", "dispatch_error", self.interval_ns)).chain(
            self.extra
                .iter()
                .map(|(name, metric, interval)| (name.as_str(), metric.as_str(), *interval)),
        );
        names
            .zip(
                stats
                    .into_iter()
                    .chain(std::iter::repeat_with(SeriesStats::default)),
            )
            .map(|((name, metric, interval_ns), stats)| Series {
                name: name.into(),
                metric: metric.into(),
                cpu: self.cpu,
                interval_ns,
                thread: self.settings.clone(),
                stats,
            })
            .collect()
    }
}

impl ProbeRun for DispatchRun {
    fn series_names(&self) -> Vec<String> {
        std::iter::once("dispatch".to_string())
            .chain(self.extra.iter().map(|(name, _, _)| name.clone()))
            .collect()
    }

    fn live(&self) -> Vec<LiveStats> {
        self.recorder
            .as_ref()
            .map(Recorder::live)
            .unwrap_or_default()
    }

    fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    fn elapsed_ns(&self) -> u64 {
        clock::now_ns().saturating_sub(self.start_ns)
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn snapshot(&self) -> Vec<Series> {
        let stats = self
            .recorder
            .as_ref()
            .map(Recorder::stats)
            .unwrap_or_default();
        self.series(stats)
    }

    fn finish(mut self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let end = self
            .thread
            .take()
            .expect("finished once")
            .join()
            .map_err(|_| anyhow::anyhow!("the dispatcher thread panicked"))?;
        drop(self.pager.take());
        // From the plan's start to the dispatcher's end, not to when the
        // runner noticed it.
        let elapsed_ns = end.end_ns.saturating_sub(self.start_ns);
        let mut stats = self.recorder.take().expect("finished once").finish()?;
        // Skipped events ride on the next sample; those after the last
        // sample have none: the thread's own count is the whole truth.
        if let Some(dispatch) = stats.first_mut() {
            dispatch.missed = end.missed;
        }
        let mut warnings = std::mem::take(&mut self.warnings);
        for (name, fired, failed) in &end.module_counts {
            if *failed > 0 {
                warnings.push(format!("module {name}: {failed} of {fired} events failed"));
            }
        }
        warnings.extend(end.guards.as_ref().and_then(crate::guard::capped_warning));
        if end.missed > 0 {
            warnings.push(format!(
                "{} of {} events were reached too late and skipped",
                end.missed,
                end.fired + end.missed
            ));
        }
        let failure = self.damaged.load(Ordering::Relaxed).then(|| {
            "the plan's file changed size during the run: stopped before reading what was cut"
                .to_string()
        });
        Ok(ProbeOutcome {
            series: self.series(stats),
            elapsed_ns,
            stopped_early: end.fired + end.missed < end.planned && failure.is_none(),
            failure,
            warnings,
            executive: end.guards.map(|thread| ExecutiveReport {
                threads: vec![thread],
            }),
            ..ProbeOutcome::default()
        })
    }
}
