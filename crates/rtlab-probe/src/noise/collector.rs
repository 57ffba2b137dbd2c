//! The noise probe's recorder: a plain SCHED_OTHER thread, kept off the
//! measured CPUs where there is another one, that drains every spinner's
//! ring every few milliseconds. It groups each window's events, attributes
//! them ([`super::attribution`]) once the window's deltas arrive, and
//! aggregates per CPU (a [`SeriesRecorder`] over the events) and per
//! source. It reuses its buffers, so it does not keep mapping and
//! unmapping memory (an munmap sends TLB shootdowns to every CPU running
//! this process, the spinners' included).

use super::attribution::{attribute, NoiseEvent, Sources, UNATTRIBUTED};
use super::ring::{flags, Record};
use crate::run::LiveSource;
use rtlab_core::record::{LiveStats, SeriesRecorder};
use rtlab_core::result::SeriesStats;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

const DRAIN_PERIOD: Duration = Duration::from_millis(5);

/// The consuming side of one spinner.
pub(super) struct CpuInput {
    pub cpu: usize,
    pub consumer: rtrb::Consumer<Record>,
    /// Records the spinner could not push.
    pub dropped: Arc<AtomicU64>,
}

/// What one source did on one CPU.
#[derive(Debug, Clone, Default)]
pub(super) struct SourceTotals {
    pub events: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub counted: u64,
}

/// What one CPU saw so far.
pub(super) struct CpuTotals {
    pub cpu: usize,
    pub series: SeriesRecorder,
    pub sources: Vec<SourceTotals>,
    pub measured_ns: u64,
    pub windows: u64,
    pub events: u64,
    pub noise_ns: u64,
    pub max_single_ns: u64,
    /// Windows whose /proc/interrupts lines or CPU columns changed.
    pub irqs_changed: u64,
    pub softirqs_changed: u64,
    /// Windows with a counter that could not be read.
    pub unreadable: u64,
    pub dropped: u64,
    /// Gaps before each window in its period (the counter reads, and
    /// whatever held the spinner up during them), their number and the
    /// shortest: `gaps * min_gap_ns` is a lower bound of what the reads
    /// cost.
    pub gaps: u64,
    pub min_gap_ns: u64,
    /// The last window's period and end (ns since the start).
    last_window: Option<(u64, u64)>,
}

impl CpuTotals {
    fn new(cpu: usize, sources: usize) -> CpuTotals {
        CpuTotals {
            cpu,
            series: SeriesRecorder::new(None),
            sources: vec![SourceTotals::default(); sources],
            measured_ns: 0,
            windows: 0,
            events: 0,
            noise_ns: 0,
            max_single_ns: 0,
            irqs_changed: 0,
            softirqs_changed: 0,
            unreadable: 0,
            dropped: 0,
            gaps: 0,
            min_gap_ns: u64::MAX,
            last_window: None,
        }
    }

    /// Time the counter reads between windows took at least, ns.
    pub fn reads_at_least_ns(&self) -> u64 {
        if self.gaps == 0 {
            0
        } else {
            self.min_gap_ns.saturating_mul(self.gaps)
        }
    }

    /// Notes a window's place: the gap before it in its period, from the
    /// window before it or from the period's start (the reads at a
    /// period's start are as long as those between windows).
    fn place_window(&mut self, start_ns: u64, measured_ns: u64, period_ns: u64) {
        let period_ns = period_ns.max(1);
        let period = start_ns / period_ns;
        let since = match self.last_window {
            Some((last_period, last_end)) if last_period == period => last_end,
            _ => period * period_ns,
        };
        if start_ns >= since {
            self.gaps += 1;
            self.min_gap_ns = self.min_gap_ns.min(start_ns - since);
        }
        self.last_window = Some((period, start_ns.saturating_add(measured_ns)));
    }

    fn record(&mut self, event: &NoiseEvent) {
        let duration = event.duration_ns;
        self.series.record(duration, event.start_ns, 0);
        self.events += 1;
        self.noise_ns += duration;
        self.max_single_ns = self.max_single_ns.max(duration);
        let index = usize::from(event.source).min(self.sources.len() - 1);
        let source = &mut self.sources[index];
        source.min_ns = if source.events == 0 {
            duration
        } else {
            source.min_ns.min(duration)
        };
        source.events += 1;
        source.total_ns += duration;
        source.max_ns = source.max_ns.max(duration);
    }
}

/// A window being received.
struct Pending {
    events: Vec<NoiseEvent>,
    counts: Vec<u64>,
    tokens: Vec<u64>,
}

fn lock(totals: &Mutex<Vec<CpuTotals>>) -> MutexGuard<'_, Vec<CpuTotals>> {
    totals
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// CSV field for a source name (names may hold commas: `irq:16 a, b`).
fn csv_field(name: &str) -> String {
    if name.contains([',', '"', '\n']) {
        format!("\"{}\"", name.replace('"', "\"\""))
    } else {
        name.to_string()
    }
}

pub(super) struct Collector {
    totals: Arc<Mutex<Vec<CpuTotals>>>,
    handle: JoinHandle<io::Result<()>>,
}

/// Per CPU: events so far, the largest, mean and last duration.
impl LiveSource for Collector {
    fn live(&self) -> Vec<LiveStats> {
        lock(&self.totals).iter().map(|t| t.series.live()).collect()
    }
}

impl Collector {
    /// Starts the recorder thread; `samples_csv` gets
    /// `cpu,start_ns,duration_ns,source`, one line per event. `period_ns`:
    /// the duty cycle's period, to tell the gaps between the windows of a
    /// period from the sleeps between periods.
    pub(super) fn spawn(
        inputs: Vec<CpuInput>,
        sources: Arc<Sources>,
        samples_csv: Option<Box<dyn Write + Send>>,
        measured_cpus: &[usize],
        period_ns: u64,
    ) -> io::Result<Collector> {
        let totals = Arc::new(Mutex::new(
            inputs
                .iter()
                .map(|input| CpuTotals::new(input.cpu, sources.len()))
                .collect::<Vec<_>>(),
        ));
        let shared = Arc::clone(&totals);
        let avoid = measured_cpus.to_vec();
        let handle = std::thread::Builder::new()
            .name("rtlab-noise-rec".into())
            .spawn(move || {
                avoid_cpus(&avoid);
                collect_loop(inputs, &sources, &shared, samples_csv, period_ns)
            })?;
        Ok(Collector { totals, handle })
    }

    pub(super) fn stats(&self) -> Vec<SeriesStats> {
        lock(&self.totals)
            .iter()
            .map(|t| t.series.stats())
            .collect()
    }

    /// The recorder thread, for a start that was given up.
    pub(super) fn into_handle(self) -> JoinHandle<io::Result<()>> {
        self.handle
    }

    /// Waits until every spinner is gone and every ring is drained; the
    /// totals, and why they or the samples file are not whole, if so (the
    /// totals are kept either way: what was recorded stays).
    pub(super) fn finish(self) -> (Vec<CpuTotals>, Option<String>) {
        let failure = match self.handle.join() {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!(
                "the samples file could not be written ({e}): it lacks events that the \
result counts"
            )),
            Err(panic) => Some(format!(
                "the noise recorder thread panicked ({}): the figures stop where it did",
                crate::launch::panic_message(&*panic)
            )),
        };
        let totals = std::mem::take(&mut *lock(&self.totals));
        (totals, failure)
    }
}

/// Moves the calling thread off `cpus` when some other allowed CPU is
/// left; otherwise it stays where it may run (the spinners' sleeps leave
/// it room).
pub(super) fn avoid_cpus(cpus: &[usize]) {
    // SAFETY: cpu_set_t is plain data, filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        for &cpu in cpus {
            if cpu < 8 * size {
                libc::CPU_CLR(cpu, &mut set);
            }
        }
        if libc::CPU_COUNT(&set) > 0 {
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

fn collect_loop(
    mut inputs: Vec<CpuInput>,
    sources: &Sources,
    totals: &Mutex<Vec<CpuTotals>>,
    csv: Option<Box<dyn Write + Send>>,
    period_ns: u64,
) -> io::Result<()> {
    let names: Vec<String> = sources.names().iter().map(|n| csv_field(n)).collect();
    let mut csv = match csv {
        Some(mut out) => {
            writeln!(out, "cpu,start_ns,duration_ns,source")?;
            Some(out)
        }
        None => None,
    };
    let mut csv_error = None;
    let mut pending: Vec<Pending> = inputs
        .iter()
        .map(|_| Pending {
            events: Vec::with_capacity(4096),
            counts: vec![0; sources.len()],
            tokens: vec![0; sources.len()],
        })
        .collect();
    loop {
        // A producer that is gone has pushed its last record: one more
        // drain after this check sees everything.
        let all_done = inputs.iter().all(|input| input.consumer.is_abandoned());
        {
            let mut totals = lock(totals);
            for ((input, cpu), window) in inputs
                .iter_mut()
                .zip(totals.iter_mut())
                .zip(pending.iter_mut())
            {
                while let Ok(record) = input.consumer.pop() {
                    match record {
                        Record::Event {
                            start_ns,
                            duration_ns,
                        } => window.events.push(NoiseEvent {
                            start_ns,
                            duration_ns,
                            source: UNATTRIBUTED,
                        }),
                        Record::Counts {
                            len,
                            sources: indices,
                            counts,
                        } => {
                            for (&source, &count) in
                                indices.iter().zip(&counts).take(usize::from(len))
                            {
                                if let Some(slot) = window.counts.get_mut(usize::from(source)) {
                                    *slot += u64::from(count);
                                }
                            }
                        }
                        Record::Window {
                            start_ns,
                            measured_ns,
                            flags: window_flags,
                        } => {
                            cpu.place_window(start_ns, measured_ns, period_ns);
                            close_window(cpu, window, sources, measured_ns, window_flags);
                            if let (Some(out), None) = (csv.as_mut(), &csv_error) {
                                if let Err(e) = write_csv(out, cpu.cpu, &window.events, &names) {
                                    // Keep measuring; report the broken file at the end.
                                    csv_error = Some(e);
                                }
                            }
                            window.events.clear();
                        }
                    }
                }
                cpu.dropped = input.dropped.load(Ordering::Relaxed);
                cpu.series.set_dropped(cpu.dropped);
            }
            if all_done {
                // Events of a window that was never closed (cannot happen
                // with the ring's reserve, but must not be lost).
                for (cpu, window) in totals.iter_mut().zip(pending.iter_mut()) {
                    if !window.events.is_empty() {
                        window.counts.iter_mut().for_each(|c| *c = 0);
                        record_events(cpu, window, sources);
                        window.events.clear();
                    }
                }
            }
        }
        if all_done {
            break;
        }
        std::thread::sleep(DRAIN_PERIOD);
    }
    if let Some(mut out) = csv {
        out.flush()?;
    }
    csv_error.map_or(Ok(()), Err)
}

/// Attributes and records the pending events with the pending deltas,
/// and adds the deltas to the sources' `counted`.
fn record_events(cpu: &mut CpuTotals, window: &mut Pending, sources: &Sources) {
    window.tokens.copy_from_slice(&window.counts);
    attribute(&mut window.events, &mut window.tokens, sources);
    for event in &window.events {
        cpu.record(event);
    }
    for (source, count) in cpu.sources.iter_mut().zip(window.counts.iter_mut()) {
        source.counted += *count;
        *count = 0;
    }
}

/// Closes one window: its events and deltas, its time and its flags.
fn close_window(
    cpu: &mut CpuTotals,
    window: &mut Pending,
    sources: &Sources,
    measured_ns: u64,
    window_flags: u8,
) {
    record_events(cpu, window, sources);
    cpu.measured_ns += measured_ns;
    cpu.windows += 1;
    if window_flags & flags::IRQS_CHANGED != 0 {
        cpu.irqs_changed += 1;
    }
    if window_flags & flags::SOFTIRQS_CHANGED != 0 {
        cpu.softirqs_changed += 1;
    }
    let unreadable = flags::IRQS_UNREADABLE | flags::SOFTIRQS_UNREADABLE | flags::RUSAGE_UNREADABLE;
    if window_flags & unreadable != 0 {
        cpu.unreadable += 1;
    }
}

fn write_csv(
    out: &mut dyn Write,
    cpu: usize,
    events: &[NoiseEvent],
    names: &[String],
) -> io::Result<()> {
    for event in events {
        let name = names
            .get(usize::from(event.source))
            .map_or("unattributed", String::as_str);
        writeln!(out, "{cpu},{},{},{name}", event.start_ns, event.duration_ns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of 100 µs in periods of 1 ms, each read taking `read_ns`,
    /// with `held_ns` more lost at the start of periods 3 to 7.
    fn totals(read_ns: u64, held_ns: u64) -> CpuTotals {
        let mut totals = CpuTotals::new(1, 2);
        for period in 0..10u64 {
            let mut at = period * 1_000_000 + read_ns;
            if (3..8).contains(&period) {
                at += held_ns;
            }
            while at < period * 1_000_000 + 500_000 {
                let measured = 100_000 - (at % 100_000);
                totals.place_window(at, measured, 1_000_000);
                totals.measured_ns += measured;
                totals.windows += 1;
                at += measured + read_ns;
            }
        }
        totals
    }

    #[test]
    fn the_reads_between_windows_are_told_from_a_held_cpu() {
        // 55 µs reads: 45 % of each window measured, said to be the reads.
        let t = totals(55_000, 0);
        assert_eq!(t.min_gap_ns, 55_000);
        assert_eq!(t.gaps, 50, "5 windows in each of 10 periods");
        let w = super::super::report::warnings(&t, Some(5_000_000));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("counter reads between windows took at least"),
            "{w:?}"
        );
        assert!(w[0].contains("55.0 µs each, 50 times"), "{w:?}");

        // Short reads, the CPU held through half the periods: blamed on others.
        let t = totals(1_000, 2_500_000);
        let w = super::super::report::warnings(&t, Some(5_000_000));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("the spinner did not get the CPU"), "{w:?}");

        // Short reads, nothing held: nothing to say.
        let t = totals(1_000, 0);
        assert!(super::super::report::warnings(&t, Some(5_000_000)).is_empty());
    }
}
