//! The witness beside a probe run, as the engine drives it: started with
//! the probe's CPUs and threads, told the run's origin, shown the current
//! top spikes at every checkpoint (their windows are then kept however
//! long the run), and asked at the end to explain them.

use rtlab_core::clock;
use rtlab_core::result::{Series, WitnessReport};
use rtlab_probe::witness::{self, ProbeThread, Watch, Witness, WitnessSettings};
use rtlab_probe::ProbeRun;
use std::time::Duration;

/// The engine's side of a run's witness.
pub struct Witnessing {
    witness: Option<Witness>,
    /// CLOCK_MONOTONIC ns of the run's first deadline, once known.
    origin_ns: Option<u64>,
}

impl Witnessing {
    /// A witness for the probe whose first series are `series`, or none
    /// when `settings` is None, the series name no CPU, or the thread
    /// cannot start (then a warning). `checkpoint` is how often the engine
    /// pins: the witness keeps its recent windows for longer than that.
    pub fn start(
        settings: Option<&WitnessSettings>,
        series: &[Series],
        checkpoint: Duration,
        warnings: &mut Vec<String>,
    ) -> Witnessing {
        let off = Witnessing {
            witness: None,
            origin_ns: None,
        };
        let Some(settings) = settings else {
            return off;
        };
        let mut cpus: Vec<usize> = series.iter().filter_map(|s| s.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return off;
        }
        let probe_threads = series
            .iter()
            .filter_map(|s| {
                Some(ProbeThread {
                    cpu: s.cpu?,
                    tid: u32::try_from(s.thread.tid).ok().filter(|&t| t > 0)?,
                })
            })
            .collect();
        let mut settings = settings.clone();
        let pin_gap = checkpoint.as_nanos().min(u128::from(u64::MAX / 4)) as u64;
        settings.keep_ns = settings.keep_ns.max(3 * pin_gap);
        match Witness::start(
            &settings,
            Watch {
                cpus,
                probe_threads,
            },
        ) {
            Ok(witness) => Witnessing {
                witness: Some(witness),
                origin_ns: None,
            },
            Err(e) => {
                warnings.push(format!(
                    "no witness for the spikes: its thread did not start: {e}"
                ));
                off
            }
        }
    }

    /// Learns the run's origin once the probe has started measuring: now
    /// minus the time it has measured (every probe's `elapsed_ns` counts
    /// from its first deadline).
    pub fn look(&mut self, run: &dyn ProbeRun) {
        if self.origin_ns.is_some() || self.witness.is_none() {
            return;
        }
        let elapsed = run.elapsed_ns();
        if elapsed > 0 {
            let origin = clock::now_ns().saturating_sub(elapsed);
            self.origin_ns = Some(origin);
            if let Some(witness) = &self.witness {
                witness.origin(origin);
            }
        }
    }

    /// Keeps the windows of the current top spikes of `series`.
    pub fn pin(&self, series: &[Series]) {
        if let (Some(witness), Some(origin)) = (&self.witness, self.origin_ns) {
            witness.pin(witness::spots(series, origin));
        }
    }

    /// Stops the witness and explains the final `series`' top spikes;
    /// `elapsed_ns` is the run's measured time, now (the origin of a run
    /// too short to have been looked at).
    pub fn finish(self, series: &[Series], elapsed_ns: u64) -> Option<WitnessReport> {
        let witness = self.witness?;
        let origin = self
            .origin_ns
            .unwrap_or_else(|| clock::now_ns().saturating_sub(elapsed_ns));
        let seen = witness.finish();
        Some(witness::explain(&seen, series, origin))
    }
}
