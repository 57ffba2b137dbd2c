//! The witness: what the host did on the measured CPUs during a run, read
//! from /proc by a SCHED_OTHER thread beside the probe, and the
//! attribution of each series' largest samples to it (docs/runs.md,
//! "Spikes explained").
//!
//! - `settings`: its period, the one default and check;
//! - `counters`: /proc/interrupts and /proc/softirqs per watched CPU (the
//!   noise probe's parsers) and `procstat` (/proc/stat's irq, softirq and
//!   steal times);
//! - `threads`: which threads ran on the watched CPUs (schedstat), the
//!   probe's involuntary switches;
//! - `window`: one window's deltas, the ring of recent windows and those
//!   pinned by a top spike;
//! - `sampler`: the thread;
//! - `explain`: the attribution and its verdict.
//!
//! The engine (rtlab-run) starts a [`Witness`] beside every probe run,
//! pins the windows of the current top spikes at every checkpoint, and
//! explains them when the run ends.

mod counters;
mod explain;
mod procstat;
mod sampler;
mod settings;
mod threads;
mod window;

pub use explain::{explain, spots, verdict};
pub use sampler::{Seen, Totals, Watch, Witness};
pub use settings::{WitnessSettings, DEFAULT_PERIOD_NS, MAX_PERIOD_NS, MIN_PERIOD_NS};
pub use threads::ProbeThread;
pub use window::{CpuWindow, Spot, ThreadDelta, Window, Windows};
