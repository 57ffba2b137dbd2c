//! The measuring threads: one per CPU, SCHED_FIFO, pinned, memory locked,
//! each waking on an absolute grid of `--interval` in one burst of
//! `--duty` per second and sleeping (absolutely, too) between bursts.
//! Samples leave through a preallocated ring that is never waited on.

use crate::config::{MonitorConfig, BURST_PERIOD_NS};
use rtlab_core::clock;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched;
use rtlab_probe::launch::{self, Launch};
use rtlab_probe::recorder::Sample;
use rtlab_probe::timer::Grid;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Margin between the threads being ready and the first burst.
const START_MARGIN_NS: u64 = 50_000_000;
/// How long the threads get to set themselves up.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Between bursts a thread sleeps at most this long at a time, so that a
/// stop is seen within it.
const STOP_CHECK_NS: u64 = 100_000_000;

/// One CPU's side for the aggregator: its ring and the samples that found
/// it full.
pub struct CpuInput {
    pub cpu: usize,
    pub consumer: rtrb::Consumer<Sample>,
    pub dropped: Arc<AtomicU64>,
}

/// The measuring threads of a monitor, measuring.
pub struct Measuring {
    pub threads: Vec<JoinHandle<()>>,
    /// CLOCK_MONOTONIC ns of the common start: samples' `at_ns` count from it.
    pub start_ns: u64,
    pub settings: Vec<ThreadSettings>,
    pub warnings: Vec<String>,
}

/// What one measuring thread does.
#[derive(Clone, Copy)]
struct Plan {
    cpu: usize,
    interval_ns: u64,
    deadlines_per_burst: u64,
    burst_offset_ns: u64,
}

/// A thread's set-up report.
struct Ready {
    settings: ThreadSettings,
    warnings: Vec<String>,
}

/// Starts one measuring thread per CPU of `config` (validated by the
/// caller); they run until `stop`. Returns them with the rings' consuming
/// sides, in `config.cpus` order.
pub fn start(
    config: &MonitorConfig,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(Measuring, Vec<CpuInput>)> {
    let mut launch: Launch<(), Ready> = Launch::new();
    let mut inputs = Vec::with_capacity(config.cpus.len());
    for (index, &cpu) in config.cpus.iter().enumerate() {
        let capacity = rtlab_probe::recorder::ring_capacity(config.interval_ns);
        let (producer, consumer) = rtrb::RingBuffer::new(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        inputs.push(CpuInput {
            cpu,
            consumer,
            dropped: Arc::clone(&dropped),
        });
        let plan = Plan {
            cpu,
            interval_ns: config.interval_ns,
            deadlines_per_burst: config.deadlines_per_burst(),
            burst_offset_ns: config.burst_offset_ns(index),
        };
        let sched = config.sched;
        let stop = Arc::clone(stop);
        let builder = std::thread::Builder::new()
            .name(format!("rtlab-mon{cpu}"))
            .stack_size(sched::PREFAULT_STACK_BYTES + 512 * 1024);
        let spawned = launch.spawn(
            format!("the measuring thread of CPU {cpu}"),
            builder,
            move |gate| {
                let ready = launch::caught(|| {
                    let (settings, warnings) =
                        rtlab_probe::thread::set_up_measuring_thread(Some(plan.cpu), &sched);
                    Ok(Ready { settings, warnings })
                });
                if let Some(start_ns) = gate.ready(ready) {
                    plan.measure(start_ns, producer, &dropped, &stop);
                }
            },
        );
        if let Err(e) = spawned {
            return Err(launch.fail(e.to_string()));
        }
    }
    let reports = match launch.wait_ready(READY_TIMEOUT) {
        Ok(reports) => reports,
        Err(why) => return Err(launch.fail(why)),
    };
    let mut settings = Vec::with_capacity(reports.len());
    let mut warnings = Vec::new();
    for report in reports {
        settings.push(report.settings);
        warnings.extend(report.warnings);
    }
    rtlab_probe::timer::dedup_keep_order(&mut warnings);
    let start_ns = clock::now_ns() + START_MARGIN_NS;
    let threads = launch.go(start_ns);
    Ok((
        Measuring {
            threads,
            start_ns,
            settings,
            warnings,
        },
        inputs,
    ))
}

impl Plan {
    /// The measuring loop, until `stop`. Hot-path rules: no allocation,
    /// lock, formatting or system call here other than the clock, the
    /// sleep and the ring push.
    fn measure(
        &self,
        start_ns: u64,
        mut ring: rtrb::Producer<Sample>,
        dropped: &AtomicU64,
        stop: &AtomicBool,
    ) {
        let interval = self.interval_ns;
        let mut burst_start = start_ns + self.burst_offset_ns;
        loop {
            if !clock::sleep_until_or_stop(burst_start, stop, STOP_CHECK_NS) {
                return;
            }
            // One burst: deadlines on the absolute grid from its start. A
            // stall that runs past the burst's end still counts the
            // burst's deadlines it swallowed, no more (the time between
            // bursts is not measured, and the counters say how much was).
            let first = burst_start + interval;
            let mut grid = Grid::new(start_ns, first, interval, self.deadlines_per_burst);
            while !grid.is_done() {
                clock::sleep_until(grid.next_ns);
                grid.wake_up(clock::now_ns(), None, &mut ring, dropped);
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }
            // The next burst is one period on, on the grid: a burst late
            // because of a stall starts at once, late, and counts it.
            burst_start += BURST_PERIOD_NS;
        }
    }
}
