//! The timer probe: one thread per CPU waits for a periodic deadline and
//! stamps how late it woke up (cyclictest's measurement), counting every
//! deadline that passed without its own wake-up.

use crate::launch::{self, Launch};
use crate::recorder::{ring_capacity, Recorder, Sample, SamplesCsv, SeriesInput};
use crate::run::Threads;
use crate::settings::{check_priority, check_span, MAX_SPAN_NS};
use crate::trace::TraceMarker;
use crate::{Probe, ProbeOutcome, ProbeRun, Start};
use rtlab_core::clock::{self, PeriodicTimer};
use rtlab_core::result::{BreakEvent, Series, SeriesStats, ThreadSettings};
use rtlab_core::sched::{self, Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How a measuring thread waits for its next deadline: `--mode` of
/// `rtlab measure timer` and `mode` of a campaign's timer probe, written
/// `abs`, `rel` or `timerfd` (in results too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// clock_nanosleep(TIMER_ABSTIME) on a fixed grid (default).
    #[default]
    Abs,
    /// clock_nanosleep relative to the time before sleeping (cyclictest -r).
    Rel,
    /// A periodic absolute timerfd; the kernel counts the overruns.
    Timerfd,
}

impl WaitMode {
    pub const ALL: [WaitMode; 3] = [WaitMode::Abs, WaitMode::Rel, WaitMode::Timerfd];

    pub fn as_str(self) -> &'static str {
        match self {
            WaitMode::Abs => "abs",
            WaitMode::Rel => "rel",
            WaitMode::Timerfd => "timerfd",
        }
    }
}

impl fmt::Display for WaitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for WaitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<WaitMode, String> {
        WaitMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown mode `{s}` (expected abs, rel or timerfd)"))
    }
}

/// How long each thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLength {
    /// Every thread runs for this long: duration / interval deadlines.
    DurationNs(u64),
    /// Every thread meets this many deadlines (samples + missed).
    Loops(u64),
}

/// Default period of the measuring threads (`--interval`, a campaign's
/// `interval`).
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000;
/// Default range of the cyclictest-style histogram: 1 µs bins up to this
/// (`--hist-max`, a campaign's `hist_max`).
pub const DEFAULT_HIST_MAX_NS: u64 = 1_000_000;
/// Default SCHED_DEADLINE runtime per period (`--dl-runtime`, a campaign
/// configuration's `dl_runtime`); deadline = period = the interval.
pub const DEFAULT_DL_RUNTIME_NS: u64 = 100_000;

/// Everything the timer probe needs; serialized into the result as the
/// run's `config`, defaults included.
#[derive(Debug, Clone, Serialize)]
pub struct TimerConfig {
    pub cpus: Vec<usize>,
    pub interval_ns: u64,
    /// Added to the interval of each further thread (cyclictest -d).
    pub distance_ns: u64,
    pub length: RunLength,
    pub sched: SchedParams,
    pub mode: WaitMode,
    /// Stop at the first sample above this latency.
    pub break_at_ns: Option<u64>,
    /// Histogram limit of the cyclictest histfile, when one is written.
    pub hist_max_us: Option<u64>,
}

impl TimerConfig {
    /// Checks the settings together (each alone is checked where it is
    /// read); the error names the setting by its campaign key.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.cpus.is_empty() {
            return Err(FieldError::new("cpus", "no CPU to measure on"));
        }
        if self.interval_ns == 0 {
            return Err(FieldError::new("interval", "must be above 0"));
        }
        self.check_periods()?;
        check_priority(&self.sched)?;
        if self.sched.policy == Policy::Deadline {
            if self.distance_ns != 0 {
                return Err(FieldError::new(
                    "distance",
                    "{distance} cannot be used with {policy} deadline (the period is the interval)",
                ));
            }
            let runtime_ns = self.sched.deadline.map_or(0, |dl| dl.runtime_ns);
            if runtime_ns > self.interval_ns {
                return Err(FieldError::new(
                    "dl_runtime",
                    format!(
                        "{{dl_runtime}} {} is longer than the {{interval}} {} (runtime <= deadline = period)",
                        human_duration(runtime_ns),
                        human_duration(self.interval_ns)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The last thread's period and the whole run within
    /// [`MAX_SPAN_NS`] (the deadline arithmetic wraps beyond).
    fn check_periods(&self) -> Result<(), FieldError> {
        check_span("interval", self.interval_ns)?;
        let last = self.cpus.len().saturating_sub(1) as u64;
        let period = self
            .distance_ns
            .checked_mul(last)
            .and_then(|d| d.checked_add(self.interval_ns))
            .filter(|ns| *ns <= MAX_SPAN_NS);
        let Some(period) = period else {
            return Err(FieldError::new(
                "distance",
                format!(
                    "{{distance}} {} is too long: the last thread's period would be over {}",
                    human_duration(self.distance_ns),
                    human_duration(MAX_SPAN_NS)
                ),
            ));
        };
        match self.length {
            RunLength::Loops(n) if n.checked_mul(period).is_none_or(|ns| ns > MAX_SPAN_NS) => {
                Err(FieldError::new(
                    "loops",
                    format!(
                        "{{loops}} {n} of {} is too long: a run may last at most {}",
                        human_duration(period),
                        human_duration(MAX_SPAN_NS)
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    pub fn interval_of(&self, thread: usize) -> u64 {
        self.interval_ns + self.distance_ns * thread as u64
    }

    /// Deadlines thread `thread` must meet or miss before it is done.
    pub fn deadlines_of(&self, thread: usize) -> u64 {
        match self.length {
            RunLength::Loops(n) => n,
            RunLength::DurationNs(d) => (d / self.interval_of(thread)).max(1),
        }
    }

    /// SCHED_DEADLINE refuses a thread whose affinity is narrower than its
    /// root domain, so deadline threads float; all others are pinned.
    pub fn pins_threads(&self) -> bool {
        self.sched.policy != Policy::Deadline
    }

    /// Planned length of the run, ns.
    pub fn planned_ns(&self) -> u64 {
        (0..self.cpus.len())
            .map(|i| self.deadlines_of(i) * self.interval_of(i))
            .max()
            .unwrap_or(0)
    }
}

impl Probe for TimerConfig {
    fn kind(&self) -> &'static str {
        "timer"
    }
    fn planned_ns(&self) -> u64 {
        TimerConfig::planned_ns(self)
    }
    fn config_json(&self) -> serde_json::Value {
        crate::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        Ok(Box::new(start(self, with.stop, with.samples_csv)?))
    }
}

/// What a measuring thread reports once it has set itself up.
struct ThreadReady {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// How a measuring thread ended.
struct ThreadEnd {
    /// Deadlines met or missed.
    deadlines: u64,
    planned: u64,
    /// Something the thread had to do differently once measuring.
    warning: Option<String>,
}

/// State shared by the measuring threads of one run.
struct Shared {
    stop: Arc<AtomicBool>,
    break_claimed: AtomicBool,
    break_event: Mutex<Option<BreakEvent>>,
}

/// A timer probe in progress.
pub struct TimerRun {
    run: Threads<ThreadEnd>,
    shared: Arc<Shared>,
    cpus: Vec<Option<usize>>,
    intervals: Vec<u64>,
    settings: Vec<ThreadSettings>,
}

/// Margin between the threads being ready and their first deadline, so
/// that every thread starts on the same grid.
const START_MARGIN_NS: u64 = 50_000_000;
/// How long the threads get to set themselves up.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts the measuring threads and the recorder. `stop` ends the run
/// early when set (by a signal handler, or by `--break-at`).
pub fn start(
    config: &TimerConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
) -> anyhow::Result<TimerRun> {
    config.validate()?;
    let n = config.cpus.len();
    let shared = Arc::new(Shared {
        stop,
        break_claimed: AtomicBool::new(false),
        break_event: Mutex::new(None),
    });
    // Each thread sets itself up, reports, and waits for the common start;
    // any failure sends the started threads away (never parked for good).
    let mut launch: Launch<ThreadEnd, ThreadReady> = Launch::new();

    let mut inputs = Vec::with_capacity(n);
    let mut names = Vec::with_capacity(n);
    let mut cpus = Vec::with_capacity(n);
    let mut intervals = Vec::with_capacity(n);
    for (index, &cpu) in config.cpus.iter().enumerate() {
        let interval = config.interval_of(index);
        let (producer, consumer) = rtrb::RingBuffer::new(ring_capacity(interval));
        let dropped = Arc::new(AtomicU64::new(0));
        let pinned_cpu = config.pins_threads().then_some(cpu);
        let name = match pinned_cpu {
            Some(cpu) => format!("cpu{cpu}"),
            None => format!("thread{index}"),
        };
        inputs.push(SeriesInput {
            csv_label: pinned_cpu.map_or(index.to_string(), |c| c.to_string()),
            consumer,
            dropped: Arc::clone(&dropped),
        });
        let plan = ThreadPlan {
            pinned_cpu,
            interval_ns: interval,
            deadlines: config.deadlines_of(index),
            sched: config.sched,
            mode: config.mode,
            break_at_ns: config.break_at_ns,
            series_name: name.clone(),
        };
        let shared = Arc::clone(&shared);
        let builder = std::thread::Builder::new()
            .name(format!("rtlab-{name}"))
            .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
        let spawned = launch.spawn(
            format!("the measuring thread {name}"),
            builder,
            move |gate| {
                let set_up = launch::caught(|| {
                    let marker = plan.break_at_ns.map(|_| TraceMarker::open());
                    let (settings, warnings) = plan.set_up();
                    Ok((ThreadReady { settings, warnings }, marker))
                });
                let (ready, marker) = match set_up {
                    Ok((ready, marker)) => (Ok(ready), marker),
                    Err(why) => (Err(why), None),
                };
                match gate.ready(ready) {
                    Some(start_ns) => plan.measure(start_ns, producer, &dropped, &shared, marker),
                    None => ThreadEnd {
                        deadlines: 0,
                        planned: plan.deadlines,
                        warning: None,
                    },
                }
            },
        );
        if let Err(e) = spawned {
            return Err(launch.fail(e.to_string()));
        }
        names.push(name);
        cpus.push(pinned_cpu);
        intervals.push(interval);
    }

    let csv = samples_csv.map(|out| SamplesCsv {
        out,
        label_column: "cpu",
    });
    let recorder = match Recorder::spawn(inputs, config.hist_max_us, csv) {
        Ok(recorder) => recorder,
        Err(e) => return Err(launch.fail(format!("cannot start the recorder thread: {e}"))),
    };
    let reports = match launch.wait_ready(READY_TIMEOUT) {
        Ok(reports) => reports,
        Err(why) => {
            let error = launch.fail(why);
            // The producers are gone with their threads: the recorder ends.
            let _ = recorder.finish();
            return Err(error);
        }
    };
    let mut warnings = Vec::new();
    let mut settings = Vec::with_capacity(n);
    for report in reports {
        warnings.extend(report.warnings);
        settings.push(report.settings);
    }
    dedup_keep_order(&mut warnings);
    Ok(TimerRun {
        run: Threads::go(launch, START_MARGIN_NS, recorder, names, warnings),
        shared,
        cpus,
        intervals,
        settings,
    })
}

/// Removes repeated messages, keeping the first of each in order.
pub fn dedup_keep_order(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(item.clone()));
}

impl ProbeRun for TimerRun {
    crate::threads_answer_common_questions!(run);

    /// Series as measured so far (for a result file rewritten during the run).
    fn snapshot(&self) -> Vec<Series> {
        build_series(
            &self.run.names,
            &self.cpus,
            &self.intervals,
            &self.settings,
            self.run.recorder.stats(),
        )
    }

    /// Waits for every thread and the recorder, and returns the result.
    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let TimerRun {
            mut run,
            shared,
            cpus,
            intervals,
            settings,
        } = *self;
        let mut stopped_early = false;
        for end in run.join("a measuring thread")? {
            stopped_early |= end.deadlines < end.planned;
            if let Some(warning) = end.warning {
                run.warnings.push(warning);
            }
        }
        let elapsed_ns = run.elapsed_ns();
        let break_event = shared
            .break_event
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let stats = run.recorder.finish()?;
        let series = build_series(&run.names, &cpus, &intervals, &settings, stats);
        Ok(ProbeOutcome {
            series,
            elapsed_ns,
            break_event,
            stopped_early,
            warnings: run.warnings,
            noise: None,
            net: None,
            traffic: None,
            executive: None,
            failure: None,
        })
    }
}

fn build_series(
    names: &[String],
    cpus: &[Option<usize>],
    intervals: &[u64],
    settings: &[ThreadSettings],
    stats: Vec<SeriesStats>,
) -> Vec<Series> {
    stats
        .into_iter()
        .enumerate()
        .map(|(i, stats)| Series {
            name: names[i].clone(),
            metric: "wakeup_latency".into(),
            cpu: cpus[i],
            interval_ns: intervals[i],
            thread: settings[i].clone(),
            stats,
        })
        .collect()
}

/// A measuring thread's place on its absolute grid of deadlines, and how
/// a wake-up becomes a sample: the timer probe's loop and `rtlab
/// monitor`'s bursts count theirs here. A wake-up late by k periods missed
/// k − 1 deadlines of its own: they are skipped (never measured as fake
/// catch-up samples) and counted, at most those still planned, so that a
/// stall weighs what it cost (coordinated omission avoided).
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    /// Where [`Sample::at_ns`] counts from.
    pub origin_ns: u64,
    /// The deadline waited for (CLOCK_MONOTONIC ns).
    pub next_ns: u64,
    pub interval_ns: u64,
    /// Deadlines met or missed so far.
    pub done: u64,
    pub planned: u64,
}

impl Grid {
    /// `planned` deadlines every `interval_ns` from `first_ns` on.
    pub fn new(origin_ns: u64, first_ns: u64, interval_ns: u64, planned: u64) -> Grid {
        Grid {
            origin_ns,
            next_ns: first_ns,
            interval_ns,
            done: 0,
            planned,
        }
    }

    pub fn is_done(&self) -> bool {
        self.done >= self.planned
    }

    /// Counts the wake-up at `woke_ns` for the deadline `next_ns` (with
    /// the overruns the kernel counted, for a timerfd), pushes its sample
    /// into `ring` (or counts it in `dropped` when the ring is full) and
    /// moves to the next deadline of its own. Hot path: no allocation, no
    /// system call.
    #[inline]
    pub fn wake_up(
        &mut self,
        woke_ns: u64,
        missed_by_kernel: Option<u64>,
        ring: &mut rtrb::Producer<Sample>,
        dropped: &AtomicU64,
    ) -> Sample {
        let latency = woke_ns.saturating_sub(self.next_ns);
        let left = self.planned.saturating_sub(self.done + 1);
        let missed = missed_by_kernel
            .unwrap_or(latency / self.interval_ns)
            .min(left);
        let sample = Sample {
            at_ns: self.next_ns - self.origin_ns,
            latency_ns: latency,
            missed,
        };
        if ring.push(sample).is_err() {
            dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.done += 1 + missed;
        self.next_ns += (1 + missed) * self.interval_ns;
        sample
    }
}

/// What one measuring thread does.
struct ThreadPlan {
    pinned_cpu: Option<usize>,
    interval_ns: u64,
    deadlines: u64,
    sched: SchedParams,
    mode: WaitMode,
    break_at_ns: Option<u64>,
    series_name: String,
}

impl ThreadPlan {
    fn set_up(&self) -> (ThreadSettings, Vec<String>) {
        crate::thread::set_up_measuring_thread(self.pinned_cpu, &self.sched)
    }

    /// The measuring loop. Hot-path rules: no allocation, lock, formatting
    /// or syscall here other than the clock, the wait and the ring push,
    /// until the loop ends.
    fn measure(
        &self,
        start_ns: u64,
        mut ring: rtrb::Producer<Sample>,
        dropped: &AtomicU64,
        shared: &Shared,
        mut marker: Option<TraceMarker>,
    ) -> ThreadEnd {
        let interval = self.interval_ns;
        let planned = self.deadlines;
        let mut warning = None;
        let timerfd = match self.mode {
            WaitMode::Timerfd => match PeriodicTimer::new(start_ns + interval, interval) {
                Ok(timer) => Some(timer),
                Err(e) => {
                    warning = Some(format!(
                        "{}: timerfd unavailable ({e}), measured with clock_nanosleep instead",
                        self.series_name
                    ));
                    None
                }
            },
            _ => None,
        };
        if self.mode == WaitMode::Rel {
            // Relative periods still start on the common grid.
            clock::sleep_until(start_ns);
        }
        let mut grid = Grid::new(start_ns, start_ns + interval, interval, planned);
        let mut samples: u64 = 0;
        while !grid.is_done() && !shared.stop.load(Ordering::Relaxed) {
            let (woke, missed_by_kernel) = match (&self.mode, &timerfd) {
                (WaitMode::Timerfd, Some(timer)) => {
                    let expirations = timer.wait();
                    (clock::now_ns(), Some(expirations.saturating_sub(1)))
                }
                (WaitMode::Rel, _) => {
                    let before = clock::now_ns();
                    grid.next_ns = before + interval;
                    clock::sleep_for(interval);
                    (clock::now_ns(), None)
                }
                _ => {
                    clock::sleep_until(grid.next_ns);
                    (clock::now_ns(), None)
                }
            };
            let sample = grid.wake_up(woke, missed_by_kernel, &mut ring, dropped);
            samples += 1;
            if let Some(limit) = self.break_at_ns {
                if sample.latency_ns > limit {
                    self.report_break(shared, limit, sample, samples - 1, marker.as_mut());
                    break;
                }
            }
        }
        ThreadEnd {
            deadlines: grid.done,
            planned,
            warning,
        }
    }

    /// Leaves the hot path for good: marks the trace, records the event and
    /// stops every thread of the run.
    fn report_break(
        &self,
        shared: &Shared,
        limit: u64,
        sample: Sample,
        sample_index: u64,
        marker: Option<&mut TraceMarker>,
    ) {
        let first = !shared.break_claimed.swap(true, Ordering::AcqRel);
        shared.stop.store(true, Ordering::Relaxed);
        if !first {
            return;
        }
        let (written, note) = match marker {
            Some(marker) => {
                let line = format!(
                    "rtlab: {} latency {} ns > break-at {} ns\n",
                    self.series_name, sample.latency_ns, limit
                );
                (marker.write(line.as_bytes()), marker.describe())
            }
            None => (false, "no trace marker".into()),
        };
        let event = BreakEvent {
            series: self.series_name.clone(),
            threshold_ns: limit,
            latency_ns: sample.latency_ns,
            at_ns: sample.at_ns,
            sample: sample_index,
            trace_marker: written,
            trace_note: note,
        };
        *shared.break_event.lock().unwrap_or_else(|p| p.into_inner()) = Some(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::DeadlineParams;
    use rtlab_core::settings::flag;

    fn config() -> TimerConfig {
        TimerConfig {
            cpus: vec![0],
            interval_ns: DEFAULT_INTERVAL_NS,
            distance_ns: 0,
            length: RunLength::Loops(10),
            sched: crate::settings::sched_of(Policy::Fifo, None),
            mode: WaitMode::default(),
            break_at_ns: None,
            hist_max_us: None,
        }
    }

    fn deadline(runtime_ns: u64) -> SchedParams {
        SchedParams {
            policy: Policy::Deadline,
            priority: 0,
            deadline: Some(DeadlineParams {
                runtime_ns,
                deadline_ns: DEFAULT_INTERVAL_NS,
                period_ns: DEFAULT_INTERVAL_NS,
            }),
        }
    }

    fn refused(config: TimerConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn cpus_and_interval_are_needed() {
        let (field, _) = refused(TimerConfig {
            cpus: vec![],
            ..config()
        });
        assert_eq!(field, "cpus");
        let (field, _) = refused(TimerConfig {
            interval_ns: 0,
            ..config()
        });
        assert_eq!(field, "interval");
    }

    #[test]
    fn a_priority_needs_fifo_or_rr() {
        let other = TimerConfig {
            sched: crate::settings::sched_of(Policy::Other, Some(10)),
            ..config()
        };
        assert_eq!(refused(other).0, "priority");
    }

    #[test]
    fn deadline_takes_no_distance() {
        let ok = TimerConfig {
            sched: deadline(DEFAULT_DL_RUNTIME_NS),
            ..config()
        };
        assert_eq!(ok.validate(), Ok(()));
        let (field, text) = refused(TimerConfig {
            distance_ns: 1_000,
            ..ok
        });
        assert_eq!(field, "distance");
        assert_eq!(
            text,
            "--distance cannot be used with --policy deadline (the period is the interval)"
        );
    }

    #[test]
    fn the_deadline_runtime_fits_the_interval() {
        let fits = TimerConfig {
            sched: deadline(DEFAULT_INTERVAL_NS),
            ..config()
        };
        assert_eq!(fits.validate(), Ok(()));
        let (field, text) = refused(TimerConfig {
            sched: deadline(2 * DEFAULT_INTERVAL_NS),
            ..config()
        });
        assert_eq!(field, "dl_runtime");
        assert_eq!(
            text,
            "--dl-runtime 2ms is longer than the --interval 1ms (runtime <= deadline = period)"
        );
    }

    #[test]
    fn a_late_wake_up_counts_the_deadlines_it_swallowed_within_the_plan() {
        let (mut ring, mut out) = rtrb::RingBuffer::new(8);
        let dropped = AtomicU64::new(0);
        let mut grid = Grid::new(1_000, 2_000, 100, 10);
        // On time, then 350 late: the deadlines at 2_200, 2_300 and 2_400
        // passed meanwhile.
        assert_eq!(grid.wake_up(2_010, None, &mut ring, &dropped).missed, 0);
        let late = grid.wake_up(2_450, None, &mut ring, &dropped);
        assert_eq!((late.at_ns, late.latency_ns, late.missed), (1_100, 350, 3));
        assert_eq!((grid.done, grid.next_ns), (5, 2_500));
        // A stall longer than the rest of the plan counts the rest only.
        let stalled = grid.wake_up(9_000, None, &mut ring, &dropped);
        assert_eq!(stalled.missed, 4);
        assert!(grid.is_done());
        assert_eq!(grid.done, grid.planned);
        assert_eq!(out.pop().unwrap().latency_ns, 10);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn wait_modes_read_and_write_as_in_results() {
        for mode in WaitMode::ALL {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.as_str());
            assert_eq!(mode.as_str().parse::<WaitMode>(), Ok(mode));
        }
        assert_eq!(
            "sleep".parse::<WaitMode>(),
            Err("unknown mode `sleep` (expected abs, rel or timerfd)".to_string())
        );
    }
}
