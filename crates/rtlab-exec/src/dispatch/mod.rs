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

mod calibrate;
mod extras;

use crate::module::{self, Module, Slot};
use crate::plan::{self, EventSource, LoadedPlan};
use calibrate::Calibration;
pub use extras::{scaled, ExtraSeries, Extras, Lead, Modules};
use rtlab_core::clock;
use rtlab_core::record::LiveStats;
use rtlab_core::result::{Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{self, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::{ring_capacity, Recorder, Sample, SamplesCsv, SeriesInput};
use rtlab_probe::settings::check_priority;
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How early the dispatcher wakes before an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// From a warm-up of this machine's own wake-up latency.
    Auto,
    Fixed(u64),
}

/// How often the plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Repeat {
    Times(u64),
    Forever,
}

/// A test hook: spin this long before firing every `every`-th event; the
/// stall must show in the dispatch-error series at exactly those events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Inject {
    pub delay_ns: u64,
    pub every: u64,
}

/// Everything the dispatcher needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct DispatchConfig {
    pub plan: PathBuf,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
    pub repeat: Repeat,
    pub guard: Guard,
    /// An event reached later than this is skipped and counted missed.
    pub skip_after_ns: u64,
    pub inject: Option<Inject>,
}

/// Longest fixed guard: the dispatcher spins for the guard at every event.
pub const MAX_GUARD_NS: u64 = 1_000_000_000;
/// Longest `skip_after`: an hour late is never worth firing.
pub const MAX_SKIP_AFTER_NS: u64 = 3_600_000_000_000;

/// Time between the thread being ready and the plan's start.
const START_MARGIN_NS: u64 = 20_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(30);

impl DispatchConfig {
    /// Checks the settings (the plan's file is checked when it is loaded);
    /// the error names the setting as `rtlab plan run`'s flag without its
    /// dashes (`guard`, `skip_after`).
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Guard::Fixed(ns) = self.guard {
            if ns > MAX_GUARD_NS {
                return Err(FieldError::new(
                    "guard",
                    format!(
                        "{{guard}} {}: at most {} (the dispatcher spins for the guard at every event)",
                        human_duration(ns),
                        human_duration(MAX_GUARD_NS)
                    ),
                ));
            }
        }
        if self.skip_after_ns > MAX_SKIP_AFTER_NS {
            return Err(FieldError::new("skip_after", "at most 1h"));
        }
        if self.repeat == Repeat::Times(0) {
            return Err(FieldError::new("repeat", "must be at least 1"));
        }
        if self.inject.is_some_and(|inject| inject.every == 0) {
            return Err(FieldError::new("inject_every", "must be at least 1"));
        }
        // The stall is a spin at real-time priority, deaf to a stop: an
        // hour of it held a CPU through SIGINT and SIGTERM.
        if self
            .inject
            .is_some_and(|inject| inject.delay_ns > MAX_GUARD_NS)
        {
            return Err(FieldError::new(
                "inject_delay",
                format!(
                    "at most {} (the dispatcher spins through it, deaf to a stop)",
                    human_duration(MAX_GUARD_NS)
                ),
            ));
        }
        check_priority(&self.sched)
    }

    /// One repetition's length: the plan's repeat period, or back to back
    /// (the last offset plus one ns).
    fn period_of(plan: &LoadedPlan) -> u64 {
        let last = if plan.events.is_empty() {
            0
        } else {
            plan.events.event(plan.events.len() - 1).offset_ns
        };
        plan.header
            .repeat_ns
            .unwrap_or(last.saturating_add(1))
            .max(1)
    }
}

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

/// How the dispatcher thread ended.
struct End {
    /// When the loop ended (CLOCK_MONOTONIC), for the measured length.
    end_ns: u64,
    fired: u64,
    missed: u64,
    planned: u64,
    module_counts: Vec<(String, u64, u64)>,
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
        let set_up = launch::caught(|| {
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
            let (settings, warnings) =
                rtlab_probe::thread::set_up_measuring_thread(cfg.cpu, &cfg.sched);
            let (guard_ns, calibration) = match cfg.guard {
                Guard::Fixed(ns) => (ns, None),
                Guard::Auto => {
                    let c = calibrate::calibrate();
                    (c.guard_ns, Some(c))
                }
            };
            Ok((
                Ready {
                    settings,
                    warnings,
                    guard_ns,
                    lead_ns: match lead {
                        Lead::Fixed(ns) => ns,
                        Lead::Guard => guard_ns,
                    },
                    calibration,
                },
                modules,
            ))
        });
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
                    guard_ns,
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
            "guard auto: {} warm-up wake-ups were late by p50 {} ns, p95 {} ns, p99 {} ns, max {} ns: guard {} ns",
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

/// Keeps a mapped plan's resident memory to a window around the
/// dispatcher: every PAGER_PERIOD it locks the events ahead and drops
/// those behind (on this thread, never the dispatcher's), and stops the
/// run if the plan's file changes size. That check is a tick behind: a
/// file cut under a running plan can still kill the process with SIGBUS
/// when the dispatcher reaches the cut first.
struct Pager {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

const PAGER_PERIOD: Duration = Duration::from_millis(20);
/// Events prefetched ahead of the dispatcher (6 MiB of records).
const PAGER_AHEAD: u64 = 1 << 18;

fn spawn_pager(
    plan: Arc<LoadedPlan>,
    position: Arc<AtomicU64>,
    run_stop: Arc<AtomicBool>,
    damaged: Arc<AtomicBool>,
) -> Option<Pager> {
    if !plan.binary {
        return None;
    }
    // The window the dispatcher starts in, before it starts; a plan that
    // fits the window whole stays locked in and is never advised again.
    plan.events.advise(0, PAGER_AHEAD);
    let whole = plan.events.len() <= PAGER_AHEAD;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("rtlab-pager".into())
        .spawn(move || {
            let n = plan.events.len();
            while !flag.load(Ordering::Relaxed) {
                // Another process cut the file: stop before the dispatcher
                // reads a page that is gone (which would be a SIGBUS).
                if !plan.events.intact() {
                    damaged.store(true, Ordering::Relaxed);
                    run_stop.store(true, Ordering::Relaxed);
                    return;
                }
                // Events dispatched so far, over all repetitions: the
                // window follows it and wraps to the plan's start.
                if !whole {
                    let at = position.load(Ordering::Relaxed) % n;
                    plan.events.advise(at, at + PAGER_AHEAD);
                }
                std::thread::sleep(PAGER_PERIOD);
            }
        })
        .ok()?;
    Some(Pager {
        stop,
        thread: Some(thread),
    })
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The dispatching loop's state: everything allocated before the first event.
struct Dispatcher<'a> {
    events: &'a dyn EventSource,
    /// Events dispatched so far, over all repetitions (for the pager).
    position: &'a AtomicU64,
    modules: Vec<(String, Box<dyn Module>)>,
    /// One repetition's length, after the speed.
    period: u64,
    /// Offsets are divided by this (extras::scaled).
    speed: f64,
    guard_ns: u64,
    /// Events fire this long before their instant (Extras::lead).
    lead_ns: u64,
    skip_after_ns: u64,
    inject: Option<Inject>,
}

impl Dispatcher<'_> {
    /// Hot path: the clock, the sleep, the spin, the module and the ring
    /// push; nothing else until the plan is done or `stop` is set.
    fn run(
        &mut self,
        start_ns: u64,
        planned: u64,
        ring: &mut rtrb::Producer<Sample>,
        dropped: &AtomicU64,
        stop: &AtomicBool,
    ) -> End {
        let n = self.events.len();
        let mut done: u64 = 0;
        let mut fired: u64 = 0;
        let mut missed: u64 = 0;
        let mut repetition_start = start_ns;
        let mut pending_missed = 0;
        'plan: loop {
            for index in 0..n {
                if done >= planned {
                    break 'plan;
                }
                self.position.store(done, Ordering::Relaxed);
                let event = self.events.event(index);
                let planned = repetition_start.saturating_add(scaled(event.offset_ns, self.speed));
                let at = planned.saturating_sub(self.lead_ns);
                if !wait_until(at.saturating_sub(self.guard_ns), stop) {
                    break 'plan;
                }
                let mut now = clock::now_ns();
                while now < at {
                    now = clock::now_ns();
                }
                done += 1;
                // Checked at the instant, after the sleep: a wake-up that a
                // host stall made late skips the event as surely as a
                // dispatcher that fell behind.
                if now - at > self.skip_after_ns {
                    missed += 1;
                    pending_missed += 1;
                    continue;
                }
                if let Some(inject) = self.inject {
                    if done.is_multiple_of(inject.every) {
                        let until = now + inject.delay_ns;
                        while now < until {
                            now = clock::now_ns();
                        }
                    }
                }
                let fire = clock::now_ns();
                if let Some((_, module)) = self.modules.get_mut(usize::from(event.module)) {
                    let slot = Slot {
                        index: done - 1,
                        start_ns,
                        planned_ns: planned - start_ns,
                    };
                    module.fire_at(&event, slot, fire);
                }
                fired += 1;
                let sample = Sample {
                    at_ns: planned - start_ns,
                    latency_ns: fire - at,
                    missed: pending_missed,
                };
                pending_missed = 0;
                if ring.push(sample).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            repetition_start = repetition_start.saturating_add(self.period);
        }
        End {
            end_ns: clock::now_ns(),
            fired,
            missed,
            planned,
            module_counts: self
                .modules
                .iter()
                .map(|(name, m)| {
                    let (n, failed) = m.counts();
                    (name.clone(), n, failed)
                })
                .collect(),
        }
    }
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

/// The longest single sleep: a stop is seen within this even when the next
/// event is far away.
const STOP_CHECK_NS: u64 = 50_000_000;

/// Sleeps to `wake_ns` (absolute, programmed only for that instant) in
/// steps of at most STOP_CHECK_NS; false when `stop` was set meanwhile.
fn wait_until(wake_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock::now_ns();
        if now >= wake_ns {
            return true;
        }
        clock::sleep_until(wake_ns.min(now + STOP_CHECK_NS));
    }
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
            ..ProbeOutcome::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;

    fn config() -> DispatchConfig {
        DispatchConfig {
            plan: PathBuf::from("ticks.plan"),
            cpu: None,
            sched: SchedParams {
                policy: Policy::Fifo,
                priority: rtlab_probe::DEFAULT_PRIORITY,
                deadline: None,
            },
            repeat: Repeat::Times(1),
            guard: Guard::Auto,
            skip_after_ns: 1_000_000,
            inject: None,
        }
    }

    fn refused(config: DispatchConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn a_fixed_guard_is_at_most_1s() {
        let max = DispatchConfig {
            guard: Guard::Fixed(MAX_GUARD_NS),
            ..config()
        };
        assert_eq!(max.validate(), Ok(()));
        let (field, text) = refused(DispatchConfig {
            guard: Guard::Fixed(2 * MAX_GUARD_NS),
            ..config()
        });
        assert_eq!(field, "guard");
        assert!(text.starts_with("--guard 2s: at most 1s"), "{text}");
    }

    #[test]
    fn skip_after_is_at_most_an_hour() {
        let max = DispatchConfig {
            skip_after_ns: MAX_SKIP_AFTER_NS,
            ..config()
        };
        assert_eq!(max.validate(), Ok(()));
        let (field, text) = refused(DispatchConfig {
            skip_after_ns: MAX_SKIP_AFTER_NS + 1,
            ..config()
        });
        assert_eq!(field, "skip_after");
        assert_eq!(text, "--skip-after: at most 1h");
    }

    #[test]
    fn repeats_injections_and_priority_are_checked() {
        assert_eq!(
            refused(DispatchConfig {
                repeat: Repeat::Times(0),
                ..config()
            })
            .0,
            "repeat"
        );
        let inject = |every| DispatchConfig {
            inject: Some(Inject {
                delay_ns: 1_000,
                every,
            }),
            ..config()
        };
        assert_eq!(inject(1).validate(), Ok(()));
        assert_eq!(refused(inject(0)).0, "inject_every");
        let stall = |delay_ns| DispatchConfig {
            inject: Some(Inject { delay_ns, every: 1 }),
            ..config()
        };
        assert_eq!(stall(MAX_GUARD_NS).validate(), Ok(()));
        assert_eq!(refused(stall(3_600_000_000_000)).0, "inject_delay");
        let mut zero = config();
        zero.sched.priority = 0;
        assert_eq!(refused(zero).0, "priority");
    }
}
