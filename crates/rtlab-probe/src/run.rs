//! What every probe run holds alike: its measuring threads, the thread that
//! records their samples, the series names, the common start and the
//! warnings gathered while starting. Each probe's run embeds a [`Threads`]
//! and hands [`ProbeRun`](crate::ProbeRun)'s common questions to it
//! ([`threads_answer_common_questions!`](crate::threads_answer_common_questions));
//! what differs per probe (its series, how it finishes) stays with the probe.

use crate::launch::Launch;
use crate::recorder::Recorder;
use rtlab_core::clock;
pub use rtlab_core::record::LiveStats;
use std::thread::JoinHandle;

/// Whatever gathers a run's samples and can tell their figures so far.
pub trait LiveSource {
    /// Live figures of every series, in the order of the series names.
    fn live(&self) -> Vec<LiveStats>;
}

impl LiveSource for Recorder {
    fn live(&self) -> Vec<LiveStats> {
        Recorder::live(self)
    }
}

/// The part of a probe run that every probe shares.
pub struct Threads<End, Source = Recorder> {
    /// The threads the run waits for (each returns an `End`).
    pub handles: Vec<JoinHandle<End>>,
    /// The thread recording the samples.
    pub recorder: Source,
    /// Names of the series, in the recorder's order.
    pub names: Vec<String>,
    /// The common start (the first deadline's grid), ns.
    pub start_ns: u64,
    /// Things the probe had to do differently from what was asked.
    pub warnings: Vec<String>,
}

impl<End: Send + 'static, Source> Threads<End, Source> {
    /// Gives the threads `launch` got ready their common start, `margin_ns`
    /// from now (so that every thread starts on the same grid), and holds
    /// them with the `recorder` of their samples.
    pub fn go<Ready: Send + 'static>(
        launch: Launch<End, Ready>,
        margin_ns: u64,
        recorder: Source,
        names: Vec<String>,
        warnings: Vec<String>,
    ) -> Self {
        let start_ns = clock::now_ns() + margin_ns;
        let handles = launch.go(start_ns);
        Threads {
            handles,
            recorder,
            names,
            start_ns,
            warnings,
        }
    }

    /// Waits for every thread, in order; the first that panicked is the
    /// error, named `what` (the threads after it are left to end alone).
    pub fn join(&mut self, what: &str) -> anyhow::Result<Vec<End>> {
        std::mem::take(&mut self.handles)
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .map_err(|_| anyhow::anyhow!("{what} panicked"))
            })
            .collect()
    }
}

impl<End, Source: LiveSource> Threads<End, Source> {
    pub fn series_names(&self) -> Vec<String> {
        self.names.clone()
    }

    pub fn live(&self) -> Vec<LiveStats> {
        self.recorder.live()
    }

    /// Every thread is done (planned end, stop flag or break).
    pub fn is_finished(&self) -> bool {
        self.handles.iter().all(JoinHandle::is_finished)
    }

    /// Time since the common start, ns.
    pub fn elapsed_ns(&self) -> u64 {
        clock::now_ns().saturating_sub(self.start_ns)
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

/// Inside `impl ProbeRun for SomeRun`: the methods every probe answers
/// alike (`series_names`, `live`, `is_finished`, `elapsed_ns`, `warnings`),
/// handed to the run's [`Threads`] field named `$threads`. The probe writes
/// its own `snapshot` and `finish` next to it.
#[macro_export]
macro_rules! threads_answer_common_questions {
    ($threads:ident) => {
        fn series_names(&self) -> ::std::vec::Vec<::std::string::String> {
            self.$threads.series_names()
        }

        fn live(&self) -> ::std::vec::Vec<$crate::run::LiveStats> {
            self.$threads.live()
        }

        fn is_finished(&self) -> bool {
            self.$threads.is_finished()
        }

        fn elapsed_ns(&self) -> u64 {
            self.$threads.elapsed_ns()
        }

        fn warnings(&self) -> ::std::vec::Vec<::std::string::String> {
            self.$threads.warnings()
        }
    };
}
