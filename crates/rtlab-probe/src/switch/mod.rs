//! The switch probe (paper 001, Table 1): a timer thread (the
//! "interrupt") wakes on absolute periodic deadlines, stamps its own
//! wake-up latency, and releases a task blocked one priority below on a
//! synchronization mechanism; the task stamps the delay from the release
//! to its running.
//!
//! Per mechanism two series: `{mechanism}.interrupt` (metric
//! `interrupt_latency`: the timer thread's wake-up minus its deadline) and
//! `{mechanism}.switch` (metric `switch_latency`: the task's first
//! instruction after its wait returns minus the timer thread's release
//! stamp). In both, `samples + missed` is the number of events, however
//! the mechanism ends (its task may die): see the `interrupt` module for
//! how the missed ones are counted.
//!
//! With `process`, the task is a forked child sharing one
//! `MAP_SHARED|MAP_ANONYMOUS` region with the timer thread (threads use the
//! same region, so both modes run the same code). The child does not
//! inherit memory locks: when the parent has its memory locked, the child
//! locks its own (mlockall copies the pages it shares copy-on-write with
//! the parent, before the first deadline). Process-shared pthread mutexes
//! are robust in process mode, so a task killed while holding one cannot
//! hang the timer thread; a task process that dies ends its mechanism (the
//! timer thread releases nothing more, and teardown waits for nothing the
//! dead task held) and fails the run. The futex mechanism always uses
//! non-private futex operations.
//!
//! With [`Pacing::RtTests`] there is no timer: the releasing thread and
//! the task copy the hand-off of the rt-tests tool of the mechanism (see
//! the `paced` module), both at one priority.
//!
//! Modules: `shared` (the shared mapping), `mechanism` (set-up and
//! teardown), `release` and `wait` (the two sides of each mechanism),
//! `interrupt` (the timer thread), `paced` (the rt-tests pacing's two
//! loops and go-ahead), `task` (the task, thread or forked process),
//! `driver` (one mechanism after the other), `run` (the [`ProbeRun`]),
//! `options` (mechanisms, pacing, injected delay), `sys` (system-call
//! helpers).

mod driver;
mod interrupt;
mod mechanism;
mod options;
mod paced;
mod release;
mod run;
mod shared;
mod sys;
mod task;
mod wait;

/// The futex calls, for other crates' hand-offs (the executive's wake module and tasks).
pub use options::{InjectDelay, Mechanism, Pacing};
pub use sys::{futex_wait, futex_wait_for, futex_wake};

use crate::recorder::{ring_capacity, Recorder, SamplesCsv, SeriesInput};
use crate::settings::{check_priority, check_span, refuse_deadline};
use crate::timer::RunLength;
use crate::{Probe, ProbeRun, Start};
use anyhow::Context;
use rtlab_core::journal::Journal;
use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::SchedParams;
use rtlab_core::settings::FieldError;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

/// Default period of the timer thread: 4 kHz, as paper 001 (`--rate`, a
/// campaign's `interval` or `rate`).
pub const DEFAULT_INTERVAL_NS: u64 = 250_000;

/// Everything the switch probe needs; serialized into the result as the
/// run's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchConfig {
    /// Run one after the other, each for `length`.
    pub mechanisms: Vec<Mechanism>,
    /// Period of the timer thread's deadlines (4 kHz = 250 µs).
    pub interval_ns: u64,
    /// Per mechanism: events (`Loops`: deadlines met or missed) or time.
    pub length: RunLength,
    /// The timer thread's CPU.
    pub cpu: usize,
    /// The task's CPU: `cpu` for a true context switch, another for `--cross-cpu`.
    pub task_cpu: usize,
    /// The task runs in its own forked process sharing memory with the timer.
    pub process: bool,
    /// The timer thread's scheduling; the task runs one priority below
    /// (fifo/rr), or at the same policy (other/batch).
    pub sched: SchedParams,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inject: Option<InjectDelay>,
    /// How the hand-offs are paced (`--pacing`, campaign key `pacing`).
    #[serde(default, skip_serializing_if = "Pacing::is_grid")]
    pub pacing: Pacing,
}

impl SwitchConfig {
    /// Checks the settings together (each alone is checked where it is
    /// read); the error names the setting by its campaign key.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.mechanisms.is_empty() {
            return Err(FieldError::new("mechanisms", "no mechanism to measure"));
        }
        for (i, mechanism) in self.mechanisms.iter().enumerate() {
            if self.mechanisms[..i].contains(mechanism) {
                return Err(FieldError::new(
                    "mechanisms",
                    format!("`{mechanism}` is listed twice"),
                ));
            }
        }
        if self.interval_ns == 0 {
            return Err(FieldError::new("interval", "must be above 0"));
        }
        check_span("interval", self.interval_ns)?;
        if let Some(inject) = self.inject {
            check_span("inject_delay", inject.delay_ns)?;
        }
        refuse_deadline(
            &self.sched,
            "the switch probe runs its task one priority below the timer thread, which SCHED_DEADLINE has not",
        )?;
        check_priority(&self.sched)?;
        if self.inject.is_some_and(|inject| inject.every == 0) {
            return Err(FieldError::new("inject_every", "must be at least 1"));
        }
        self.validate_pacing()
    }

    /// `rt-tests` pacing copies a tool's hand-off: only the mechanisms one
    /// of them measures, with both sides as threads (as the tools run by
    /// default) at one priority (or both SCHED_OTHER, as a tool without
    /// `-p`).
    fn validate_pacing(&self) -> Result<(), FieldError> {
        if self.pacing != Pacing::RtTests {
            return Ok(());
        }
        if let Some(other) = self.mechanisms.iter().find(|m| m.rt_tests_tool().is_none()) {
            return Err(FieldError::new(
                "pacing",
                format!(
                    "rt-tests: `{other}` has no rt-tests counterpart (pthread-mutex: ptsematest, mq: pmqtest, signal: sigwaittest, sysv-sem: svsematest)"
                ),
            ));
        }
        if self.process {
            return Err(FieldError::new(
                "process",
                "the rt-tests pacing runs the sender and the receiver as threads, as the tools do by default",
            ));
        }
        Ok(())
    }

    /// Planned length of the whole run (every mechanism), ns.
    pub fn planned_ns(&self) -> u64 {
        let per_mechanism = match self.length {
            RunLength::Loops(n) => n.saturating_mul(self.interval_ns),
            RunLength::DurationNs(d) => d,
        };
        per_mechanism.saturating_mul(self.mechanisms.len() as u64)
    }

    /// Deadlines (events) each mechanism meets or misses: `n` for
    /// `Loops(n)`, `d / interval` (at least 1) for `DurationNs(d)`.
    fn events_per_mechanism(&self) -> u64 {
        match self.length {
            RunLength::Loops(n) => n,
            RunLength::DurationNs(d) => (d / self.interval_ns.max(1)).max(1),
        }
    }

    /// The task's scheduling: one priority below the timer thread for
    /// fifo/rr (the same priority, with a warning, when there is none
    /// below), the same parameters for other/batch/idle.
    fn task_sched(&self) -> (SchedParams, Option<String>) {
        let sched = self.sched;
        // The rt-tests tools give one pair's two threads the same priority.
        if !sched.policy.takes_priority() || self.pacing == Pacing::RtTests {
            return (sched, None);
        }
        if sched.priority > 1 {
            let task = SchedParams {
                priority: sched.priority - 1,
                ..sched
            };
            return (task, None);
        }
        let warning = format!(
            "the switch task runs at the timer thread's priority ({sched}): there is no lower {} priority",
            sched.policy
        );
        (sched, Some(warning))
    }
}

/// The SysV semaphore set of `sysv-sem` goes through the journal.
impl Probe for SwitchConfig {
    fn kind(&self) -> &'static str {
        "switch"
    }
    fn planned_ns(&self) -> u64 {
        SwitchConfig::planned_ns(self)
    }
    fn config_json(&self) -> serde_json::Value {
        crate::config_json(self)
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        let journal = Some(Arc::clone(with.journal));
        start(self, with.stop, with.samples_csv, journal)
    }
}

/// Name of the interrupt series of `mechanism`.
fn interrupt_series(mechanism: Mechanism) -> String {
    format!("{mechanism}.interrupt")
}

/// Name of the switch series of `mechanism`.
fn switch_series(mechanism: Mechanism) -> String {
    format!("{mechanism}.switch")
}

/// Starts the switch probe: the mechanisms run one after the other in a
/// driver thread. The first mechanism is set up here, so a mechanism that
/// cannot work on this system is an error; a later one that cannot is the
/// run's failure (naming it: [`ProbeOutcome::failure`](crate::ProbeOutcome)),
/// its series stay empty and the other mechanisms still run. So is a task
/// that dies or whose wait fails before its mechanism's end.
///
/// `journal`: where the SysV semaphore set of `sysv-sem` is recorded while
/// it exists, so that `rtlab restore` removes it after a SIGKILL (without
/// one it is only removed by this process).
pub fn start(
    config: &SwitchConfig,
    stop: Arc<AtomicBool>,
    samples_csv: Option<Box<dyn Write + Send>>,
    journal: Option<Arc<Mutex<Journal>>>,
) -> anyhow::Result<Box<dyn ProbeRun>> {
    config.validate()?;
    let (task_sched, sched_warning) = config.task_sched();

    let region = shared::Region::new().context("switch probe: cannot map its shared memory")?;
    let first = mechanism::Setup::new(
        config.mechanisms[0],
        region.block(),
        config.process,
        config.pacing,
        journal.as_ref(),
    )
    .with_context(|| format!("switch probe: cannot set up {}", config.mechanisms[0]))?;

    let mut inputs = Vec::new();
    let mut lanes = Vec::new();
    let mut series = Vec::new();
    let capacity = ring_capacity(config.interval_ns);
    for &mechanism in &config.mechanisms {
        let (interrupt, interrupt_consumer) = rtrb::RingBuffer::new(capacity);
        let (switch, switch_consumer) = rtrb::RingBuffer::new(capacity);
        let interrupt_dropped = Arc::new(AtomicU64::new(0));
        let switch_dropped = Arc::new(AtomicU64::new(0));
        let switch_missed_tail = Arc::new(AtomicU64::new(0));
        let interrupt_missed_tail = Arc::new(AtomicU64::new(0));
        // rt-tests pacing: the interrupt series is the task's sleep, on its CPU.
        let interrupt_cpu = match config.pacing {
            Pacing::Grid => config.cpu,
            Pacing::RtTests => config.task_cpu,
        };
        for (name, metric, cpu, consumer, dropped, missed_tail) in [
            (
                interrupt_series(mechanism),
                "interrupt_latency",
                interrupt_cpu,
                interrupt_consumer,
                &interrupt_dropped,
                Some(Arc::clone(&interrupt_missed_tail)),
            ),
            (
                switch_series(mechanism),
                "switch_latency",
                config.task_cpu,
                switch_consumer,
                &switch_dropped,
                Some(Arc::clone(&switch_missed_tail)),
            ),
        ] {
            inputs.push(SeriesInput {
                csv_label: name.clone(),
                consumer,
                dropped: Arc::clone(dropped),
            });
            series.push(run::SeriesInfo {
                name,
                metric,
                cpu,
                missed_tail,
            });
        }
        lanes.push(interrupt::Rings {
            interrupt,
            switch,
            interrupt_dropped,
            switch_dropped,
            switch_missed_tail,
            interrupt_missed_tail,
        });
    }

    let placeholder = |requested: SchedParams| ThreadSettings {
        tid: 0,
        pinned_cpu: None,
        requested,
        actual: None,
        timer_slack_ns: None,
    };
    let settings = config
        .mechanisms
        .iter()
        .flat_map(|_| [placeholder(config.sched), placeholder(task_sched)])
        .collect();
    let state = Arc::new(driver::RunState {
        origin_ns: AtomicU64::new(0),
        end_ns: AtomicU64::new(0),
        settings: Mutex::new(settings),
        warnings: Mutex::new(sched_warning.into_iter().collect()),
        failures: Mutex::new(Vec::new()),
    });

    let csv = samples_csv.map(|out| SamplesCsv {
        out,
        label_column: "series",
    });
    let recorder = Recorder::spawn(inputs, None, csv)?;
    let plan = driver::DriverPlan {
        mechanisms: config.mechanisms.clone(),
        cpu: config.cpu,
        task_cpu: config.task_cpu,
        process: config.process,
        sched: config.sched,
        task_sched,
        pacing: config.pacing,
        interval_ns: config.interval_ns,
        events: config.events_per_mechanism(),
        inject: config.inject,
        stop,
        state: Arc::clone(&state),
        journal,
    };
    let driver = std::thread::Builder::new()
        .name("rtlab-switch".into())
        .stack_size(driver::STACK_BYTES)
        .spawn(move || driver::drive(plan, region, first, lanes))?;
    Ok(Box::new(run::SwitchRun {
        driver,
        recorder,
        state,
        series,
        interval_ns: config.interval_ns,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::sched_of;
    use rtlab_core::sched::Policy;
    use rtlab_core::settings::flag;

    fn config() -> SwitchConfig {
        SwitchConfig {
            mechanisms: vec![Mechanism::Futex],
            interval_ns: DEFAULT_INTERVAL_NS,
            length: RunLength::Loops(10),
            cpu: 0,
            task_cpu: 0,
            process: false,
            sched: sched_of(Policy::Fifo, None),
            inject: None,
            pacing: Pacing::Grid,
        }
    }

    fn refused(config: SwitchConfig) -> &'static str {
        config.validate().unwrap_err().field
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn mechanisms_are_given_once_each() {
        let all = SwitchConfig {
            mechanisms: Mechanism::ALL.to_vec(),
            ..config()
        };
        assert_eq!(all.validate(), Ok(()));
        let e = SwitchConfig {
            mechanisms: vec![Mechanism::Pipe, Mechanism::Pipe],
            ..config()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "mechanisms");
        assert_eq!(e.render(flag), "--mechanisms: `pipe` is listed twice");
        let none = SwitchConfig {
            mechanisms: vec![],
            ..config()
        };
        assert_eq!(refused(none), "mechanisms");
    }

    #[test]
    fn the_interval_is_above_0() {
        let zero = SwitchConfig {
            interval_ns: 0,
            ..config()
        };
        assert_eq!(refused(zero), "interval");
    }

    #[test]
    fn deadline_is_refused_and_batch_taken() {
        let batch = SwitchConfig {
            sched: sched_of(Policy::Batch, None),
            ..config()
        };
        assert_eq!(batch.validate(), Ok(()));
        let deadline = SwitchConfig {
            sched: sched_of(Policy::Deadline, None),
            ..config()
        };
        assert_eq!(refused(deadline), "policy");
        let other = SwitchConfig {
            sched: sched_of(Policy::Other, Some(10)),
            ..config()
        };
        assert_eq!(refused(other), "priority");
    }

    #[test]
    fn an_injected_delay_comes_every_1_or_more_events() {
        let every = |every| SwitchConfig {
            inject: Some(InjectDelay {
                delay_ns: 1_000,
                every,
            }),
            ..config()
        };
        assert_eq!(every(1).validate(), Ok(()));
        assert_eq!(refused(every(0)), "inject_every");
    }

    #[test]
    fn rt_tests_pacing_takes_the_four_tools_mechanisms_as_threads() {
        let paced = |mechanisms: Vec<Mechanism>| SwitchConfig {
            mechanisms,
            pacing: Pacing::RtTests,
            ..config()
        };
        let four = vec![
            Mechanism::PthreadMutex,
            Mechanism::Mq,
            Mechanism::Signal,
            Mechanism::SysvSem,
        ];
        assert_eq!(paced(four.clone()).validate(), Ok(()));
        let e = paced(vec![Mechanism::Mq, Mechanism::Futex])
            .validate()
            .unwrap_err();
        assert_eq!(e.field, "pacing");
        assert!(
            e.render(flag)
                .starts_with("--pacing: rt-tests: `futex` has no rt-tests counterpart"),
            "{}",
            e.render(flag)
        );
        let process = SwitchConfig {
            process: true,
            ..paced(four.clone())
        };
        assert_eq!(refused(process), "process");
        let other = SwitchConfig {
            sched: sched_of(Policy::Other, None),
            ..paced(four)
        };
        assert_eq!(other.validate(), Ok(()));
    }

    #[test]
    fn rt_tests_pacing_gives_both_threads_one_priority() {
        let paced = SwitchConfig {
            mechanisms: vec![Mechanism::Mq],
            pacing: Pacing::RtTests,
            ..config()
        };
        assert_eq!(paced.task_sched().0, paced.sched);
        assert_eq!(paced.task_sched().1, None);
    }
}
