//! The timer probe: measuring threads wait for a periodic deadline and
//! stamp how late they woke up (cyclictest's measurement), counting every
//! deadline that passed without its own wake-up. One pinned thread per CPU
//! by default, or floating threads (`threads`); every thread on one grid,
//! shifted per thread by `aligned`, at one priority or spread
//! (`priospread`).
//!
//! - `config`: the settings, their defaults and their one validation;
//! - `grid`: a thread's absolute grid of deadlines and its accounting;
//! - `wait`: the wait modes (`abs`, `rel`, `timerfd`, `posix`);
//! - `posix`: the POSIX interval timer `posix` waits on;
//! - `measure`: one measuring thread, its set-up and its loop;
//! - `run`: starting the threads and the recorder, and their result.

mod config;
mod grid;
mod measure;
mod posix;
mod run;
mod wait;

pub use config::{
    RunLength, TimerConfig, DEFAULT_DL_RUNTIME_NS, DEFAULT_HIST_MAX_NS, DEFAULT_INTERVAL_NS,
    MAX_THREADS,
};
pub use grid::Grid;
pub use run::{dedup_keep_order, start, TimerRun};
pub use wait::WaitMode;
