//! A timer probe run: its measuring threads started on one grid with the
//! recorder of their samples, and the series they leave.

use super::config::TimerConfig;
use super::measure::{Shared, ThreadEnd, ThreadPlan};
use crate::launch::{self, Launch};
use crate::recorder::{ring_capacity, Recorder, SamplesCsv, SeriesInput};
use crate::run::Threads;
use crate::trace::TraceMarker;
use crate::{ProbeOutcome, ProbeRun, Start};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{Series, SeriesStats, ThreadSettings};
use rtlab_core::sched;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

impl crate::Probe for TimerConfig {
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
    let n = config.thread_count();
    let shared = Arc::new(Shared {
        stop,
        break_claimed: AtomicBool::new(false),
        break_event: Mutex::new(None),
    });
    // Each thread sets itself up, reports, and waits for the common start;
    // any failure sends the started threads away (never parked for good).
    let mut launch: Launch<ThreadEnd, ThreadReady> = Launch::new();
    let floating = config
        .floating_cpus()
        .map(|cpus| CpuSet::from_cpus(cpus.to_vec()));

    let mut inputs = Vec::with_capacity(n);
    let mut names = Vec::with_capacity(n);
    let mut cpus = Vec::with_capacity(n);
    let mut intervals = Vec::with_capacity(n);
    for index in 0..n {
        let interval = config.interval_of(index);
        let (producer, consumer) = rtrb::RingBuffer::new(ring_capacity(interval));
        let dropped = Arc::new(AtomicU64::new(0));
        let pinned_cpu = config.pinned_cpu_of(index);
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
            allowed: floating.clone(),
            interval_ns: interval,
            offset_ns: config.offset_of(index),
            deadlines: config.deadlines_of(index),
            sched: config.sched_of(index),
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
