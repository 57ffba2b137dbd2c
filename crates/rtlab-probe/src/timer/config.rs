//! The timer probe's settings: their defaults, what each thread gets from
//! them (its CPU, priority, period and start on the grid) and their one
//! validation, whose errors name the setting by its campaign key.

use super::wait::WaitMode;
use crate::settings::{check_priority, check_span, MAX_SPAN_NS};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use serde::Serialize;

/// How long each thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLength {
    /// Every thread runs for this long: duration / interval deadlines.
    DurationNs(u64),
    /// Every thread meets this many deadlines (samples + missed).
    Loops(u64),
}

/// Default period of the measuring threads (`--interval`, a campaign's
/// `interval`).
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000;
/// Default range of the cyclictest-style histogram: 1 µs bins up to this
/// (`--hist-max`, a campaign's `hist_max`).
pub const DEFAULT_HIST_MAX_NS: u64 = 1_000_000;
/// Default SCHED_DEADLINE runtime per period (`--dl-runtime`, a campaign
/// configuration's `dl_runtime`); deadline = period = the interval.
pub const DEFAULT_DL_RUNTIME_NS: u64 = 100_000;
/// The most floating threads `threads` takes: each one locks a prefaulted
/// stack and a sample ring in memory.
pub const MAX_THREADS: usize = 1024;

/// Everything the timer probe needs; serialized into the result as the
/// run's `config`, defaults included (the settings added since are written
/// only when set, so a result reads as it did before them).
#[derive(Debug, Clone, Serialize)]
pub struct TimerConfig {
    /// One pinned thread per CPU; with `threads`, the CPUs the floating
    /// threads may run on.
    pub cpus: Vec<usize>,
    /// This many threads, none pinned, each free to run on any of `cpus`
    /// (cyclictest `-t N` without `-a`); None: one thread pinned per CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    pub interval_ns: u64,
    /// Added to the interval of each further thread (cyclictest -d).
    pub distance_ns: u64,
    pub length: RunLength,
    pub sched: SchedParams,
    pub mode: WaitMode,
    /// Stop at the first sample above this latency.
    pub break_at_ns: Option<u64>,
    /// Histogram limit of the cyclictest histfile, when one is written.
    pub hist_max_us: Option<u64>,
    /// Thread i runs at the priority minus i (cyclictest `--priospread`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub priospread: bool,
    /// Thread i's first deadline comes i × this after the common one
    /// (cyclictest `-A`); 0: every thread's deadlines fall together.
    #[serde(skip_serializing_if = "is_zero")]
    pub aligned_ns: u64,
}

fn is_zero(ns: &u64) -> bool {
    *ns == 0
}

impl TimerConfig {
    /// A config measuring on `cpus` with every other setting at its
    /// default; callers set what they were given.
    pub fn new(cpus: Vec<usize>, length: RunLength, sched: SchedParams) -> TimerConfig {
        TimerConfig {
            cpus,
            threads: None,
            interval_ns: DEFAULT_INTERVAL_NS,
            distance_ns: 0,
            length,
            sched,
            mode: WaitMode::default(),
            break_at_ns: None,
            hist_max_us: None,
            priospread: false,
            aligned_ns: 0,
        }
    }

    /// Checks the settings together (each alone is checked where it is
    /// read); the error names the setting by its campaign key.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.cpus.is_empty() {
            return Err(FieldError::new("cpus", "no CPU to measure on"));
        }
        match self.threads {
            Some(0) => return Err(FieldError::new("threads", "must be at least 1")),
            Some(n) if n > MAX_THREADS => {
                return Err(FieldError::new(
                    "threads",
                    format!("{{threads}} {n} is more than the {MAX_THREADS} rtlab runs"),
                ))
            }
            _ => {}
        }
        if self.interval_ns == 0 {
            return Err(FieldError::new("interval", "must be above 0"));
        }
        self.check_periods()?;
        check_priority(&self.sched)?;
        self.check_priospread()?;
        if self.sched.policy == Policy::Deadline {
            if self.distance_ns != 0 {
                return Err(FieldError::new(
                    "distance",
                    "{distance} cannot be used with {policy} deadline (the period is the interval)",
                ));
            }
            let runtime_ns = self.sched.deadline.map_or(0, |dl| dl.runtime_ns);
            if runtime_ns > self.interval_ns {
                return Err(FieldError::new(
                    "dl_runtime",
                    format!(
                        "{{dl_runtime}} {} is longer than the {{interval}} {} (runtime <= deadline = period)",
                        human_duration(runtime_ns),
                        human_duration(self.interval_ns)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The last thread's period, its start on the grid and the whole run
    /// within [`MAX_SPAN_NS`] (the deadline arithmetic wraps beyond).
    fn check_periods(&self) -> Result<(), FieldError> {
        check_span("interval", self.interval_ns)?;
        let last = self.thread_count().saturating_sub(1) as u64;
        let within = |ns: &u64| *ns <= MAX_SPAN_NS;
        let period = self
            .distance_ns
            .checked_mul(last)
            .and_then(|d| d.checked_add(self.interval_ns))
            .filter(within);
        let Some(period) = period else {
            return Err(FieldError::new(
                "distance",
                format!(
                    "{{distance}} {} is too long: the last thread's period would be over {}",
                    human_duration(self.distance_ns),
                    human_duration(MAX_SPAN_NS)
                ),
            ));
        };
        let Some(offset) = self.aligned_ns.checked_mul(last).filter(within) else {
            return Err(FieldError::new(
                "aligned",
                format!(
                    "{{aligned}} {} is too long: the last thread would start over {} late",
                    human_duration(self.aligned_ns),
                    human_duration(MAX_SPAN_NS)
                ),
            ));
        };
        match self.length {
            RunLength::Loops(n)
                if n.checked_mul(period)
                    .and_then(|ns| ns.checked_add(offset))
                    .is_none_or(|ns| ns > MAX_SPAN_NS) =>
            {
                Err(FieldError::new(
                    "loops",
                    format!(
                        "{{loops}} {n} of {} is too long: a run may last at most {}",
                        human_duration(period),
                        human_duration(MAX_SPAN_NS)
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// `priospread` needs a static priority to spread, and room below it
    /// for every thread: the last runs at the priority minus threads − 1,
    /// at least 1.
    fn check_priospread(&self) -> Result<(), FieldError> {
        if !self.priospread {
            return Ok(());
        }
        let policy = self.sched.policy;
        if !policy.takes_priority() {
            return Err(FieldError::new(
                "priospread",
                format!(
                    "{{priospread}} needs {{policy}} fifo or rr (policy {policy} has no static priority to spread)"
                ),
            ));
        }
        let threads = self.thread_count();
        let lowest = i64::from(self.sched.priority) - (threads as i64 - 1);
        if lowest < 1 {
            return Err(FieldError::new(
                "priority",
                format!(
                    "{{priority}} {} with {{priospread}} over {threads} threads would run the last at priority {lowest}; the lowest is 1 (give {{priority}} {threads} or more, or fewer threads)",
                    self.sched.priority
                ),
            ));
        }
        Ok(())
    }

    /// How many measuring threads run.
    pub fn thread_count(&self) -> usize {
        self.threads.unwrap_or(self.cpus.len())
    }

    /// SCHED_DEADLINE refuses a thread whose affinity is narrower than its
    /// root domain, so deadline threads float, as `threads` asks; all
    /// others are pinned, one per CPU.
    pub fn pins_threads(&self) -> bool {
        self.sched.policy != Policy::Deadline && self.threads.is_none()
    }

    /// The CPU thread `thread` is pinned to, if it is.
    pub fn pinned_cpu_of(&self, thread: usize) -> Option<usize> {
        self.pins_threads().then(|| self.cpus[thread])
    }

    /// The CPUs a floating thread may run on: `cpus`, for `threads`
    /// (deadline threads are left as they are, see [`Self::pins_threads`]).
    pub fn floating_cpus(&self) -> Option<&[usize]> {
        (self.threads.is_some() && self.sched.policy != Policy::Deadline)
            .then_some(self.cpus.as_slice())
    }

    /// The scheduling of thread `thread`: the priority minus `thread` with
    /// `priospread`.
    pub fn sched_of(&self, thread: usize) -> SchedParams {
        let mut sched = self.sched;
        if self.priospread {
            sched.priority = sched.priority.saturating_sub(thread as u32);
        }
        sched
    }

    pub fn interval_of(&self, thread: usize) -> u64 {
        self.interval_ns + self.distance_ns * thread as u64
    }

    /// How long after the common start thread `thread`'s grid begins
    /// (`aligned`).
    pub fn offset_of(&self, thread: usize) -> u64 {
        self.aligned_ns * thread as u64
    }

    /// Deadlines thread `thread` must meet or miss before it is done.
    pub fn deadlines_of(&self, thread: usize) -> u64 {
        match self.length {
            RunLength::Loops(n) => n,
            RunLength::DurationNs(d) => (d / self.interval_of(thread)).max(1),
        }
    }

    /// Planned length of the run, ns.
    pub fn planned_ns(&self) -> u64 {
        (0..self.thread_count())
            .map(|i| (self.deadlines_of(i) * self.interval_of(i)).saturating_add(self.offset_of(i)))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::sched::DeadlineParams;
    use rtlab_core::settings::flag;

    fn config() -> TimerConfig {
        TimerConfig::new(
            vec![0],
            RunLength::Loops(10),
            crate::settings::sched_of(Policy::Fifo, None),
        )
    }

    fn deadline(runtime_ns: u64) -> SchedParams {
        SchedParams {
            policy: Policy::Deadline,
            priority: 0,
            deadline: Some(DeadlineParams {
                runtime_ns,
                deadline_ns: DEFAULT_INTERVAL_NS,
                period_ns: DEFAULT_INTERVAL_NS,
            }),
        }
    }

    fn refused(config: TimerConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn cpus_and_interval_are_needed() {
        let (field, _) = refused(TimerConfig {
            cpus: vec![],
            ..config()
        });
        assert_eq!(field, "cpus");
        let (field, _) = refused(TimerConfig {
            interval_ns: 0,
            ..config()
        });
        assert_eq!(field, "interval");
    }

    #[test]
    fn a_priority_needs_fifo_or_rr() {
        let other = TimerConfig {
            sched: crate::settings::sched_of(Policy::Other, Some(10)),
            ..config()
        };
        assert_eq!(refused(other).0, "priority");
    }

    #[test]
    fn deadline_takes_no_distance() {
        let ok = TimerConfig {
            sched: deadline(DEFAULT_DL_RUNTIME_NS),
            ..config()
        };
        assert_eq!(ok.validate(), Ok(()));
        let (field, text) = refused(TimerConfig {
            distance_ns: 1_000,
            ..ok
        });
        assert_eq!(field, "distance");
        assert_eq!(
            text,
            "--distance cannot be used with --policy deadline (the period is the interval)"
        );
    }

    #[test]
    fn the_deadline_runtime_fits_the_interval() {
        let fits = TimerConfig {
            sched: deadline(DEFAULT_INTERVAL_NS),
            ..config()
        };
        assert_eq!(fits.validate(), Ok(()));
        let (field, text) = refused(TimerConfig {
            sched: deadline(2 * DEFAULT_INTERVAL_NS),
            ..config()
        });
        assert_eq!(field, "dl_runtime");
        assert_eq!(
            text,
            "--dl-runtime 2ms is longer than the --interval 1ms (runtime <= deadline = period)"
        );
    }

    #[test]
    fn priospread_lowers_each_further_thread_by_one_down_to_1() {
        let spread = TimerConfig {
            cpus: vec![0, 1, 2],
            priospread: true,
            sched: crate::settings::sched_of(Policy::Fifo, Some(3)),
            ..config()
        };
        assert_eq!(spread.validate(), Ok(()));
        let priorities: Vec<u32> = (0..3).map(|i| spread.sched_of(i).priority).collect();
        assert_eq!(priorities, [3, 2, 1]);
        let (field, text) = refused(TimerConfig {
            sched: crate::settings::sched_of(Policy::Fifo, Some(2)),
            ..spread.clone()
        });
        assert_eq!(field, "priority");
        assert_eq!(
            text,
            "--priority 2 with --priospread over 3 threads would run the last at priority 0; \
             the lowest is 1 (give --priority 3 or more, or fewer threads)"
        );
        // Floating threads count, not CPUs.
        let (field, _) = refused(TimerConfig {
            threads: Some(4),
            ..spread.clone()
        });
        assert_eq!(field, "priority");
        let (field, text) = refused(TimerConfig {
            sched: crate::settings::sched_of(Policy::Other, None),
            ..spread
        });
        assert_eq!(field, "priospread");
        assert_eq!(
            text,
            "--priospread needs --policy fifo or rr (policy other has no static priority to spread)"
        );
    }

    #[test]
    fn floating_threads_are_counted_and_bounded() {
        let floating = TimerConfig {
            cpus: vec![0, 1],
            threads: Some(5),
            ..config()
        };
        assert_eq!(floating.validate(), Ok(()));
        assert_eq!(floating.thread_count(), 5);
        assert!(!floating.pins_threads());
        assert_eq!(floating.pinned_cpu_of(4), None);
        assert_eq!(floating.floating_cpus(), Some(&[0, 1][..]));
        let pinned = TimerConfig {
            cpus: vec![0, 1],
            ..config()
        };
        assert_eq!(pinned.pinned_cpu_of(1), Some(1));
        assert_eq!(pinned.floating_cpus(), None);
        for (threads, text) in [
            (0, "--threads: must be at least 1"),
            (
                MAX_THREADS + 1,
                "--threads 1025 is more than the 1024 rtlab runs",
            ),
        ] {
            let (field, message) = refused(TimerConfig {
                threads: Some(threads),
                ..config()
            });
            assert_eq!((field, message.as_str()), ("threads", text));
        }
    }

    #[test]
    fn aligned_threads_start_one_offset_apart_and_the_run_waits_for_the_last() {
        let aligned = TimerConfig {
            cpus: vec![0, 1, 2],
            aligned_ns: 100_000,
            ..config()
        };
        assert_eq!(aligned.validate(), Ok(()));
        assert_eq!(
            (0..3).map(|i| aligned.offset_of(i)).collect::<Vec<_>>(),
            [0, 100_000, 200_000]
        );
        assert_eq!(aligned.planned_ns(), 10 * DEFAULT_INTERVAL_NS + 200_000);
        let (field, text) = refused(TimerConfig {
            aligned_ns: MAX_SPAN_NS,
            ..aligned
        });
        assert_eq!(field, "aligned");
        assert!(
            text.starts_with("--aligned 106751d23h47m16s is too long"),
            "{text}"
        );
    }
}
