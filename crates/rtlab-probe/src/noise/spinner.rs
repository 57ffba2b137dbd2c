//! The spinner: one pinned real-time thread per CPU that reads the clock in
//! a tight loop; every gap above the threshold is a noise event.
//!
//! Duty cycle: in every period the spinner measures for `runtime_ns`, then
//! sleeps (absolute `clock_nanosleep`) to the next period, so the machine
//! stays usable. The runtime is cut into attribution windows on a fixed
//! grid from the period's start. The counters are read between windows,
//! ordered so that the ones that matter most hug the spin:
//!
//! ```text
//!  period start: interrupts, softirqs, getrusage
//!  each window:  spin │ getrusage, softirqs, interrupts │ getrusage │ spin ...
//! ```
//!
//! A window's `/proc` counts run from the read before it to the read after
//! it: the read after window k is also the read before window k+1. Reading
//! `/proc/interrupts` costs about 50 µs on a small VM (the kernel walks
//! every irq number), so reading it once per window edge instead of twice
//! halves the time lost between windows (to under 1 % of a 10 ms window
//! here) and attributes no worse: each count still falls in exactly one window,
//! and a window's counting interval exceeds its spin only by about one
//! read either way. The thread's involuntary context switches, which take
//! the longest events, are read right before and right after each spin
//! (getrusage costs about 1 µs), so a preemption during a `/proc` read is
//! never counted in a window.
//!
//! The reads are not measured time: a window's first clock read comes
//! after them and its last one before the next, so a gap across a read is
//! never a noise event (a preemption or interrupt landing in a read is not
//! seen as a gap; the time lost that way is what `measured_ns` leaves out
//! of the runtime).
//!
//! Hot path: inside the spin only the clock and the ring push
//! of an event; between windows only `pread`/`getrusage` into buffers
//! allocated at set-up, parsed in place, and `getcpu` (rseq or vDSO, no
//! syscall) to notice a CPU gone offline under the spinner. No
//! allocation, lock, formatting or logging from the first window to the
//! last.

use super::attribution::{Sources, PREEMPTED};
use super::counters::{counter_delta, CpuCounterFile};
use super::ring::{flags, EventSink};
use rtlab_core::clock;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::SchedParams;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Longest single sleep between periods, so that the stop flag is seen.
const SLEEP_SLICE_NS: u64 = 50_000_000;

/// One read of every counter of one CPU.
struct Snapshot {
    irqs: Vec<u64>,
    softirqs: Vec<u64>,
    /// Columns-and-keys signature of each file's read; None when it failed
    /// or left a count unknown (the window's deltas are then not used).
    irq_signature: Option<u64>,
    softirq_signature: Option<u64>,
    involuntary_switches: Option<u64>,
}

impl Snapshot {
    fn new(irq_lines: usize, softirq_lines: usize) -> Snapshot {
        Snapshot {
            irqs: vec![0; irq_lines],
            softirqs: vec![0; softirq_lines],
            irq_signature: None,
            softirq_signature: None,
            involuntary_switches: None,
        }
    }
}

/// The thread's involuntary context switches so far.
fn involuntary_switches() -> Option<u64> {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer; RUSAGE_THREAD is the calling thread.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    (rc == 0).then_some(usage.ru_nivcsw as u64)
}

fn read_file(file: &mut Option<CpuCounterFile>, values: &mut [u64]) -> Option<u64> {
    file.as_mut()?.read_into(values).complete_signature()
}

/// The counters of one CPU and the two snapshots around a window.
pub(super) struct CpuCounters {
    irqs: Option<CpuCounterFile>,
    softirqs: Option<CpuCounterFile>,
    sources: Arc<Sources>,
    before: Snapshot,
    after: Snapshot,
}

impl CpuCounters {
    pub(super) fn new(
        irqs: Option<CpuCounterFile>,
        softirqs: Option<CpuCounterFile>,
        sources: Arc<Sources>,
    ) -> CpuCounters {
        let irq_lines = irqs.as_ref().map_or(0, CpuCounterFile::lines);
        let softirq_lines = softirqs.as_ref().map_or(0, CpuCounterFile::lines);
        CpuCounters {
            irqs,
            softirqs,
            sources,
            before: Snapshot::new(irq_lines, softirq_lines),
            after: Snapshot::new(irq_lines, softirq_lines),
        }
    }

    /// Reads at a period's start: the files first, getrusage last.
    #[inline]
    fn read_first(&mut self) {
        let s = &mut self.before;
        s.irq_signature = read_file(&mut self.irqs, &mut s.irqs);
        s.softirq_signature = read_file(&mut self.softirqs, &mut s.softirqs);
        s.involuntary_switches = involuntary_switches();
    }

    /// Reads after a window: getrusage first, the files last.
    #[inline]
    fn read_after(&mut self) {
        let s = &mut self.after;
        s.involuntary_switches = involuntary_switches();
        s.softirq_signature = read_file(&mut self.softirqs, &mut s.softirqs);
        s.irq_signature = read_file(&mut self.irqs, &mut s.irqs);
    }

    /// Makes the last window's end the next window's start, with a fresh
    /// getrusage right before the next spin.
    #[inline]
    fn chain(&mut self) {
        std::mem::swap(&mut self.before, &mut self.after);
        self.before.involuntary_switches = involuntary_switches();
    }

    /// The window's counter state ([`flags`]).
    fn flags(&self) -> u8 {
        fn file_flags(
            present: bool,
            before: Option<u64>,
            after: Option<u64>,
            changed: u8,
            unreadable: u8,
        ) -> u8 {
            match (present, before, after) {
                (false, _, _) => 0,
                (true, Some(b), Some(a)) if a == b => 0,
                (true, Some(_), Some(_)) => changed,
                _ => unreadable,
            }
        }
        let rusage = match (
            self.before.involuntary_switches,
            self.after.involuntary_switches,
        ) {
            (Some(_), Some(_)) => 0,
            _ => flags::RUSAGE_UNREADABLE,
        };
        rusage
            | file_flags(
                self.irqs.is_some(),
                self.before.irq_signature,
                self.after.irq_signature,
                flags::IRQS_CHANGED,
                flags::IRQS_UNREADABLE,
            )
            | file_flags(
                self.softirqs.is_some(),
                self.before.softirq_signature,
                self.after.softirq_signature,
                flags::SOFTIRQS_CHANGED,
                flags::SOFTIRQS_UNREADABLE,
            )
    }

    /// The window's deltas as (source index, delta), leaving out what
    /// `window_flags` marks unusable. No allocation.
    fn deltas(&self, window_flags: u8) -> impl Iterator<Item = (u16, u64)> + '_ {
        let preempted = match (
            self.before.involuntary_switches,
            self.after.involuntary_switches,
        ) {
            (Some(b), Some(a)) => a.saturating_sub(b),
            _ => 0,
        };
        let softirqs_ok =
            window_flags & (flags::SOFTIRQS_CHANGED | flags::SOFTIRQS_UNREADABLE) == 0;
        let irqs_ok = window_flags & (flags::IRQS_CHANGED | flags::IRQS_UNREADABLE) == 0;
        let sources = &self.sources;
        let softirqs = self
            .before
            .softirqs
            .iter()
            .zip(&self.after.softirqs)
            .enumerate()
            .filter(move |_| softirqs_ok)
            .filter_map(move |(line, (&b, &a))| {
                Some((sources.softirq(line)?, counter_delta(b, a)))
            });
        let irqs = self
            .before
            .irqs
            .iter()
            .zip(&self.after.irqs)
            .enumerate()
            .filter(move |_| irqs_ok)
            .filter_map(move |(line, (&b, &a))| Some((sources.irq(line)?, counter_delta(b, a))));
        std::iter::once((PREEMPTED, preempted))
            .chain(softirqs)
            .chain(irqs)
    }
}

/// Everything one spinner needs, moved into its thread.
pub(super) struct Spinner {
    pub cpu: usize,
    pub sched: SchedParams,
    pub threshold_ns: u64,
    pub window_ns: u64,
    pub runtime_ns: u64,
    pub period_ns: u64,
    pub duration_ns: u64,
    pub counters: CpuCounters,
    pub sink: EventSink,
}

/// How a spinner ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpinnerEnd {
    /// Ran to the planned end.
    Completed,
    /// Stopped by the flag.
    Stopped,
    /// Found itself on another CPU (its own went offline and the kernel
    /// moved it) and stopped: what it measures there is not its CPU's noise.
    LeftCpu {
        /// The CPU it was found on.
        now_on: usize,
        /// When, ns since the common start.
        at_ns: u64,
    },
    /// Never measured: its set-up failed, or it was told to leave before
    /// the common start.
    NotStarted,
}

/// The CPU the calling thread is on, when it is not `cpu` (`getcpu` from
/// the vDSO or rseq: no syscall).
#[inline]
fn moved_off(cpu: usize) -> Option<usize> {
    rtlab_core::sched::current_cpu().filter(|&now| now != cpu)
}

impl Spinner {
    /// Pins and promotes the calling thread, prefaults its stack, and reads
    /// every counter once so that the first window finds the buffers (and
    /// the kernel's seq_file buffers) warm. A thread that cannot be pinned
    /// to its CPU cannot measure it: that is an error, not a warning.
    pub(super) fn set_up(&mut self) -> Result<(ThreadSettings, Vec<String>), String> {
        let cpu = self.cpu;
        // Messages follow `the spinner of CPU n: `.
        rtlab_core::sched::pin_current_thread(cpu).map_err(|e| {
            format!(
                "cannot be pinned to its CPU ({e}): CPU {cpu} is offline or outside the CPUs \
this process may use"
            )
        })?;
        let (mut settings, warnings) = crate::thread::set_up_measuring_thread(None, &self.sched);
        settings.pinned_cpu = Some(cpu);
        if let Some(now_on) = moved_off(cpu) {
            return Err(format!(
                "runs on CPU {now_on} although pinned to CPU {cpu}: CPU {cpu} went offline"
            ));
        }
        self.counters.read_first();
        self.counters.read_after();
        self.counters.chain();
        std::hint::black_box(clock::now_ns());
        Ok((settings, warnings))
    }

    /// Measures from the common start `start_ns` to its planned end or
    /// until `stop` is set (seen between windows and while sleeping).
    /// A spinner that finds itself on another CPU stops there
    /// ([`SpinnerEnd::LeftCpu`]).
    pub(super) fn run(mut self, start_ns: u64, stop: &AtomicBool) -> SpinnerEnd {
        let end_of_run = start_ns.saturating_add(self.duration_ns);
        let mut period_start = start_ns;
        let left_cpu = |start_ns: u64, now_on: usize| SpinnerEnd::LeftCpu {
            now_on,
            at_ns: clock::now_ns().saturating_sub(start_ns),
        };
        'periods: loop {
            if period_start >= end_of_run {
                break SpinnerEnd::Completed;
            }
            if !clock::sleep_until_or_stop(period_start, stop, SLEEP_SLICE_NS) {
                break SpinnerEnd::Stopped;
            }
            if let Some(now_on) = moved_off(self.cpu) {
                break left_cpu(start_ns, now_on);
            }
            let runtime_end = period_start.saturating_add(self.runtime_ns).min(end_of_run);
            let mut window_end = period_start;
            self.counters.read_first();
            loop {
                let now = clock::now_ns();
                if now >= runtime_end {
                    break;
                }
                // The next edge of the window grid after now (a read that
                // was held up may have eaten whole windows).
                while window_end <= now {
                    window_end += self.window_ns;
                }
                let (first, last) = spin(
                    window_end.min(runtime_end),
                    self.threshold_ns,
                    start_ns,
                    &mut self.sink,
                );
                self.counters.read_after();
                let window_flags = self.counters.flags();
                self.sink.close_window(
                    self.counters.deltas(window_flags),
                    first.saturating_sub(start_ns),
                    last - first,
                    window_flags,
                );
                if stop.load(Ordering::Relaxed) {
                    break 'periods SpinnerEnd::Stopped;
                }
                if let Some(now_on) = moved_off(self.cpu) {
                    break 'periods left_cpu(start_ns, now_on);
                }
                self.counters.chain();
            }
            period_start = period_start.saturating_add(self.period_ns);
        }
    }
}

/// The measuring loop: reads the clock until `until_ns`; every gap above
/// `threshold_ns` between two reads goes to the ring, its start relative
/// to `origin_ns`. Returns the first and last clock reads. Only the clock
/// (vDSO, no syscall) and the ring push happen here.
#[inline(never)]
fn spin(until_ns: u64, threshold_ns: u64, origin_ns: u64, sink: &mut EventSink) -> (u64, u64) {
    let first = clock::now_ns();
    let mut last = first;
    while last < until_ns {
        let t = clock::now_ns();
        let gap = t.wrapping_sub(last);
        if gap > threshold_ns {
            sink.event(last.wrapping_sub(origin_ns), gap);
        }
        last = t;
    }
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::counters::{CounterFile, CounterKind, CounterLayout};
    use crate::noise::ring::{self, Record};
    use std::path::Path;
    use std::sync::atomic::AtomicU64;

    /// Three CPUs; CPU1's counts are 1000 + the line's number.
    const THREE_CPUS: &str = "\
           CPU0       CPU1       CPU2       
  0:         44       1000          7   IO-APIC   2-edge      timer
LOC:    2974414       1001    5000000   Local timer interrupts
CAL:     490008       1002    6000000   Function call interrupts
";

    /// CPU0 went offline: CPU1's column is now the first. CPU1 rose by 1,
    /// 2 and 3.
    const CPU0_GONE: &str = "\
           CPU1       CPU2       
  0:       1001          7   IO-APIC   2-edge      timer
LOC:       1003    5000000   Local timer interrupts
CAL:       1005    6000000   Function call interrupts
";

    /// The same, CPU1 risen again by 1 on LOC.
    const CPU0_GONE_LATER: &str = "\
           CPU1       CPU2       
  0:       1001          7   IO-APIC   2-edge      timer
LOC:       1004    5000000   Local timer interrupts
CAL:       1005    6000000   Function call interrupts
";

    /// CPU1 itself went offline.
    const CPU1_GONE: &str = "\
           CPU2       
  0:          7   IO-APIC   2-edge      timer
LOC:    5000000   Local timer interrupts
CAL:    6000000   Function call interrupts
";

    /// A line cut short: CPU1's LOC count is missing.
    const TRUNCATED: &str = "\
           CPU1       CPU2       
  0:       1001          7   IO-APIC   2-edge      timer
LOC:
CAL:       1005    6000000   Function call interrupts
";

    /// CPU1's counters read from `path` (holding THREE_CPUS at first).
    fn counters_of(path: &Path) -> (CpuCounters, Arc<Sources>) {
        let layout = CounterLayout::learn(THREE_CPUS, CounterKind::Irq).unwrap();
        let sources = Arc::new(Sources::new(
            Vec::new(),
            layout.lines.iter().map(|l| l.name.clone()).collect(),
        ));
        let file = CounterFile::open(path, CounterFile::capacity_for(THREE_CPUS.len())).unwrap();
        let irqs = CpuCounterFile::new(file, Arc::new(layout), 1);
        (
            CpuCounters::new(Some(irqs), None, Arc::clone(&sources)),
            sources,
        )
    }

    /// The window's irq deltas by name (preempted left out).
    fn irq_deltas(counters: &CpuCounters, sources: &Sources, flags: u8) -> Vec<(String, u64)> {
        counters
            .deltas(flags)
            .filter(|&(source, _)| source != PREEMPTED)
            .map(|(source, delta)| (sources.name(source).to_string(), delta))
            .collect()
    }

    #[test]
    fn a_cpu_going_offline_gives_no_bogus_delta() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("interrupts");
        std::fs::write(&path, THREE_CPUS).unwrap();
        let (mut counters, sources) = counters_of(&path);
        counters.read_first();

        // The window across the change: the columns moved, not compared.
        std::fs::write(&path, CPU0_GONE).unwrap();
        counters.read_after();
        let window = counters.flags();
        assert_eq!(window & flags::IRQS_CHANGED, flags::IRQS_CHANGED);
        assert_eq!(irq_deltas(&counters, &sources, window), vec![]);

        // The next window: CPU1's own column, wherever it now is.
        counters.chain();
        std::fs::write(&path, CPU0_GONE_LATER).unwrap();
        counters.read_after();
        let window = counters.flags() & !flags::RUSAGE_UNREADABLE;
        assert_eq!(window, 0);
        assert_eq!(
            irq_deltas(&counters, &sources, window),
            vec![
                ("irq:0 timer".to_string(), 0),
                ("irq:LOC".to_string(), 1),
                ("irq:CAL".to_string(), 0)
            ]
        );

        // CPU1 gone, then a line cut short: unreadable, no delta.
        for text in [CPU1_GONE, TRUNCATED] {
            counters.chain();
            std::fs::write(&path, text).unwrap();
            counters.read_after();
            let window = counters.flags();
            assert_eq!(window & flags::IRQS_UNREADABLE, flags::IRQS_UNREADABLE);
            assert_eq!(irq_deltas(&counters, &sources, window), vec![]);
            // And the window after it, starting from that read.
            counters.chain();
            std::fs::write(&path, CPU0_GONE).unwrap();
            counters.read_after();
            let window = counters.flags();
            assert_eq!(window & flags::IRQS_UNREADABLE, flags::IRQS_UNREADABLE);
            assert_eq!(irq_deltas(&counters, &sources, window), vec![]);
        }
    }

    #[test]
    fn a_spinner_off_its_cpu_stops_and_says_where() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 || rtlab_core::sched::pin_current_thread(0).is_err() {
            eprintln!("skipped: needs CPUs 0 and 1");
            return;
        }
        let sources = Arc::new(Sources::new(Vec::new(), Vec::new()));
        let (producer, mut consumer) = ring::prefaulted_ring(64);
        let spinner = Spinner {
            cpu: 1,
            sched: SchedParams {
                policy: rtlab_core::sched::Policy::Other,
                priority: 0,
                deadline: None,
            },
            threshold_ns: 5_000,
            window_ns: 1_000_000,
            runtime_ns: 10_000_000,
            period_ns: 10_000_000,
            duration_ns: 10_000_000_000,
            counters: CpuCounters::new(None, None, Arc::clone(&sources)),
            sink: EventSink::new(producer, sources.len(), Arc::new(AtomicU64::new(0))),
        };
        // Not set up (not pinned to CPU 1): it runs where this thread runs.
        let t0 = clock::now_ns();
        let end = spinner.run(clock::now_ns(), &AtomicBool::new(false));
        assert!(
            matches!(end, SpinnerEnd::LeftCpu { now_on: 0, .. }),
            "{end:?}"
        );
        assert!(clock::now_ns() - t0 < 5_000_000_000, "it did not stop");
        // It measured nothing on the wrong CPU.
        assert!(!matches!(consumer.pop(), Ok(Record::Window { .. })));
    }
}
