//! One measuring thread of the timer probe: its set-up (pinned or
//! floating, promoted) and its loop, under the hot-path rules.

use super::grid::Grid;
use super::wait::{WaitMode, Waiter};
use crate::recorder::Sample;
use crate::trace::TraceMarker;
use rtlab_core::clock;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{BreakEvent, ThreadSettings};
use rtlab_core::sched::{self, SchedParams};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// State shared by the measuring threads of one run.
pub(super) struct Shared {
    pub stop: Arc<AtomicBool>,
    pub break_claimed: AtomicBool,
    pub break_event: Mutex<Option<BreakEvent>>,
}

/// How a measuring thread ended.
pub(super) struct ThreadEnd {
    /// Deadlines met or missed.
    pub deadlines: u64,
    pub planned: u64,
    /// Something the thread had to do differently once measuring.
    pub warning: Option<String>,
}

/// What one measuring thread does.
pub(super) struct ThreadPlan {
    pub pinned_cpu: Option<usize>,
    /// A floating thread's CPUs (`threads`); None: pinned, or left as it is.
    pub allowed: Option<CpuSet>,
    pub interval_ns: u64,
    /// After the common start, before this thread's grid begins (`aligned`).
    pub offset_ns: u64,
    pub deadlines: u64,
    pub sched: SchedParams,
    pub mode: WaitMode,
    pub break_at_ns: Option<u64>,
    pub series_name: String,
}

impl ThreadPlan {
    pub fn set_up(&self) -> (ThreadSettings, Vec<String>) {
        let (settings, mut warnings) =
            crate::thread::set_up_measuring_thread(self.pinned_cpu, &self.sched);
        if let Some(cpus) = &self.allowed {
            if let Err(e) = sched::set_thread_affinity(settings.tid, cpus) {
                warnings.push(format!(
                    "could not keep {} on CPUs {cpus}: {e}",
                    self.series_name
                ));
            }
        }
        (settings, warnings)
    }

    /// The measuring loop. Hot-path rules: no allocation, lock, formatting
    /// or syscall here other than the clock, the wait and the ring push,
    /// until the loop ends.
    pub fn measure(
        &self,
        start_ns: u64,
        mut ring: rtrb::Producer<Sample>,
        dropped: &AtomicU64,
        shared: &Shared,
        mut marker: Option<TraceMarker>,
    ) -> ThreadEnd {
        let interval = self.interval_ns;
        let planned = self.deadlines;
        let first_ns = start_ns + self.offset_ns + interval;
        wait_for_own_start(start_ns + self.offset_ns, &shared.stop);
        let (waiter, mut warning) = Waiter::new(self.mode, first_ns, interval, &self.series_name);
        let mut grid = Grid::new(start_ns, first_ns, interval, planned);
        let mut samples: u64 = 0;
        while !grid.is_done() && !shared.stop.load(Ordering::Relaxed) {
            let (woke, missed_by_kernel) = match waiter.wait(&mut grid) {
                Ok(woke) => woke,
                Err(errno) => {
                    let e = std::io::Error::from_raw_os_error(errno);
                    warning = Some(format!(
                        "{}: waiting for the timer failed ({e}) after {} deadlines",
                        self.series_name, grid.done
                    ));
                    break;
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

/// Sleeps until `at_ns` (a thread's own start: `--aligned` puts thread i
/// i offsets after the common start, possibly hours) in slices of at most
/// [`START_SLICE_NS`], so that a stop ends the run at once rather than
/// after the whole offset. Before the first deadline: not the hot path.
fn wait_for_own_start(at_ns: u64, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = clock::now_ns();
        if now.saturating_add(START_SLICE_NS) >= at_ns {
            return;
        }
        clock::sleep_for(START_SLICE_NS);
    }
}

/// The longest a thread waiting for its own start sleeps before it looks
/// at the stop flag again.
const START_SLICE_NS: u64 = 100_000_000;
