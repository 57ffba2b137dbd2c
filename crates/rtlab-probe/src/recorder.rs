//! The recorder thread: a plain SCHED_OTHER thread that drains the
//! measuring threads' rings every few milliseconds into HDR-backed series
//! and, when asked, streams every sample to a CSV file. It may allocate and
//! block; the measuring threads never wait for it.

use rtlab_core::record::{LiveStats, SeriesRecorder};
use rtlab_core::result::SeriesStats;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// One sample as it crosses the ring.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Planned time of the deadline, ns since the run's start.
    pub at_ns: u64,
    pub latency_ns: u64,
    /// Deadlines that passed without their own wake-up before this one.
    pub missed: u64,
}

/// The consuming side of one measuring thread.
pub struct SeriesInput {
    /// Value of the CSV's first column (see [`SamplesCsv::label_column`]).
    pub csv_label: String,
    pub consumer: rtrb::Consumer<Sample>,
    /// Samples the producer could not push.
    pub dropped: Arc<AtomicU64>,
}

/// Ring capacity for a thread waking every `interval_ns`: two seconds of
/// samples, so a recorder starved for that long still loses nothing.
pub fn ring_capacity(interval_ns: u64) -> usize {
    let per_two_seconds = 2_000_000_000 / interval_ns.max(1);
    (per_two_seconds as usize).clamp(4096, 1 << 21)
}

const DRAIN_PERIOD: Duration = Duration::from_millis(5);

/// Where every sample is streamed as CSV: `LABEL,t_ns,latency_ns`.
pub struct SamplesCsv {
    pub out: Box<dyn Write + Send>,
    /// Header of the first column: `cpu` for the timer probe, `series` for
    /// probes with several series per thread.
    pub label_column: &'static str,
}

pub struct Recorder {
    series: Arc<Mutex<Vec<SeriesRecorder>>>,
    handle: JoinHandle<io::Result<()>>,
}

fn lock(series: &Mutex<Vec<SeriesRecorder>>) -> MutexGuard<'_, Vec<SeriesRecorder>> {
    // A panic elsewhere must not cost the data: use it as it is.
    series
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Recorder {
    pub fn spawn(
        inputs: Vec<SeriesInput>,
        histfile_limit_us: Option<u64>,
        samples_csv: Option<SamplesCsv>,
    ) -> io::Result<Recorder> {
        let series = Arc::new(Mutex::new(
            inputs
                .iter()
                .map(|_| SeriesRecorder::new(histfile_limit_us))
                .collect::<Vec<_>>(),
        ));
        let shared = Arc::clone(&series);
        let handle = std::thread::Builder::new()
            .name("rtlab-recorder".into())
            .spawn(move || record_loop(inputs, &shared, samples_csv))?;
        Ok(Recorder { series, handle })
    }

    pub fn live(&self) -> Vec<LiveStats> {
        lock(&self.series)
            .iter()
            .map(SeriesRecorder::live)
            .collect()
    }

    pub fn stats(&self) -> Vec<SeriesStats> {
        lock(&self.series)
            .iter()
            .map(SeriesRecorder::stats)
            .collect()
    }

    /// Waits until every producer is gone and every ring is drained.
    pub fn finish(self) -> io::Result<Vec<SeriesStats>> {
        let written = self
            .handle
            .join()
            .map_err(|_| io::Error::other("the recorder thread panicked"))?;
        let stats = lock(&self.series)
            .iter()
            .map(SeriesRecorder::stats)
            .collect();
        written.map(|()| stats)
    }
}

fn record_loop(
    mut inputs: Vec<SeriesInput>,
    series: &Mutex<Vec<SeriesRecorder>>,
    csv: Option<SamplesCsv>,
) -> io::Result<()> {
    let mut csv = match csv {
        Some(SamplesCsv {
            mut out,
            label_column,
        }) => {
            writeln!(out, "{label_column},t_ns,latency_ns")?;
            Some(out)
        }
        None => None,
    };
    let mut csv_error = None;
    loop {
        // Check before draining: a producer that is gone has pushed its last
        // sample, so one more drain after this sees everything.
        let all_done = inputs.iter().all(|input| input.consumer.is_abandoned());
        {
            let mut recorders = lock(series);
            for (input, recorder) in inputs.iter_mut().zip(recorders.iter_mut()) {
                while let Ok(sample) = input.consumer.pop() {
                    recorder.record(sample.latency_ns, sample.at_ns, sample.missed);
                    if let (Some(out), None) = (csv.as_mut(), &csv_error) {
                        if let Err(e) = writeln!(
                            out,
                            "{},{},{}",
                            input.csv_label, sample.at_ns, sample.latency_ns
                        ) {
                            // Keep measuring; report the broken file at the end.
                            csv_error = Some(e);
                        }
                    }
                }
                recorder.set_dropped(input.dropped.load(Ordering::Relaxed));
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
