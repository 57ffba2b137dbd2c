//! What the executive costs on this machine, measured by running its
//! release path for real: on each CPU in use, one executive thread
//! ([`ExecutivePlan::run`], the loop `exec periodic` releases with) and one
//! task of no work ([`TaskPlan::released`]), for [`MEASURE_NS`].
//!
//! * `release_jitter_ns`: the [`JITTER_QUANTILE`] of how late the task
//!   started after its activation instant, over the releases that came
//!   (activations a stall swallowed are counted in `activations -
//!   started`; the stall once, by the release it delayed). Not the
//!   maximum: on a VM the host stalls its guest for milliseconds a few
//!   times a second, and one such stall in the measurement would make the
//!   analysis refuse every task set with a deadline of a few ms, for an
//!   event the executive cannot prevent and that the run's own lateness
//!   series shows. `--jitter` overrides it.
//! * `release_cost_ns`: the executive thread's CPU time (its
//!   `/proc/thread-self/schedstat` runtime, read before and after its
//!   loop) per release: the sleep's wake-up, the spin from the guard to
//!   the release, the futex wake. It runs above every task of its CPU.

use crate::periodic::handoff::{Ring, Shared, Slot, TaskRings};
use crate::periodic::release::{ExecutivePlan, Released, TaskPlan};
use crate::periodic::threads::builder;
use crate::periodic::timing::WorkDraw;
use crate::taskset::Work;
use rtlab_admit::Overheads;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::units::human_duration;
use rtlab_probe::recorder::Sample;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

/// How long the release path runs on each CPU.
pub const MEASURE_NS: u64 = 300_000_000;
/// Activations of the measuring task: one per ms.
const PERIOD_NS: u64 = 1_000_000;
/// Margin between the threads' start and the first activation.
const START_MARGIN_NS: u64 = 20_000_000;
/// The quantile of release lateness taken as the release jitter.
pub const JITTER_QUANTILE: f64 = 0.99;

/// How the executive releases (the run's own settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseSettings {
    /// SCHED_FIFO priority of the executive thread.
    pub priority: u32,
    /// SCHED_FIFO priority of the task (below the executive's).
    pub task_priority: u32,
    pub guard_ns: u64,
    pub release_early_ns: u64,
}

impl Default for ReleaseSettings {
    /// `exec periodic`'s defaults.
    fn default() -> ReleaseSettings {
        use crate::periodic::{EXECUTIVE_PRIORITY, GUARD_NS, RELEASE_EARLY_NS, TASK_PRIORITY};
        ReleaseSettings {
            priority: EXECUTIVE_PRIORITY,
            task_priority: TASK_PRIORITY,
            guard_ns: GUARD_NS,
            release_early_ns: RELEASE_EARLY_NS,
        }
    }
}

/// What the release path cost on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CpuOverheads {
    pub cpu: usize,
    /// Activations released or missed, and those the task started (the
    /// rest were swallowed by a stall).
    pub activations: u64,
    pub started: u64,
    /// Release lateness at [`JITTER_QUANTILE`] and at its worst.
    pub jitter_ns: u64,
    pub jitter_max_ns: u64,
    /// The executive's CPU time per release.
    pub cost_ns: u64,
}

/// Overheads for the analysis and what they came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Measured {
    /// The worst CPU's jitter and cost (the analysis takes one figure).
    pub overheads: Overheads,
    pub per_cpu: Vec<CpuOverheads>,
    /// Why nothing was measured (no real-time privilege): then
    /// `overheads` is [`Overheads::none`].
    pub not_measured: Option<String>,
}

impl Measured {
    /// One line per CPU for a person.
    pub fn lines(&self) -> Vec<String> {
        if let Some(why) = &self.not_measured {
            return vec![format!("not measured ({why}): none assumed")];
        }
        self.per_cpu
            .iter()
            .map(|c| {
                format!(
                    "CPU {}: release jitter {} (p99 of {} releases; max {}), release cost {}",
                    c.cpu,
                    human_duration(c.jitter_ns),
                    c.activations,
                    human_duration(c.jitter_max_ns),
                    human_duration(c.cost_ns)
                )
            })
            .collect()
    }
}

/// Measures the release path on each of `cpus` in turn (about
/// [`MEASURE_NS`] each), with the executive's `settings`. Without the
/// privilege to run SCHED_FIFO, the overheads are none and
/// `not_measured` says why.
pub fn measure(cpus: &[usize], settings: &ReleaseSettings) -> Measured {
    let mut per_cpu = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        match measure_cpu(cpu, settings) {
            Ok(measured) => per_cpu.push(measured),
            Err(why) => {
                return Measured {
                    overheads: Overheads::none(),
                    per_cpu: Vec::new(),
                    not_measured: Some(why),
                }
            }
        }
    }
    Measured {
        overheads: worst_of(&per_cpu),
        per_cpu,
        not_measured: None,
    }
}

/// The figures the analysis takes: the worst CPU's.
fn worst_of(per_cpu: &[CpuOverheads]) -> Overheads {
    let jitter = per_cpu.iter().map(|c| c.jitter_ns).max().unwrap_or(0);
    let cost = per_cpu.iter().map(|c| c.cost_ns).max().unwrap_or(0);
    let cpus = CpuSet::from_cpus(per_cpu.iter().map(|c| c.cpu).collect::<Vec<_>>());
    let releases: u64 = per_cpu.iter().map(|c| c.activations).sum();
    Overheads {
        release_jitter_ns: jitter,
        release_cost_ns: cost,
        source: format!(
            "measured on CPU {cpus} ({releases} releases): jitter = p99 release lateness, \
             cost = executive CPU time per release; the worst CPU's"
        ),
    }
}

/// The quantile `q` of `values` (sorted in place); 0 when empty.
fn quantile(values: &mut [u64], q: f64) -> u64 {
    values.sort_unstable();
    match values.len() {
        0 => 0,
        n => values[((n - 1) as f64 * q) as usize],
    }
}

/// CPU time of the calling thread so far, ns (`schedstat`, field 1).
fn thread_runtime_ns() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")
        .map_err(|e| format!("/proc/thread-self/schedstat: {e}"))?;
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .ok_or_else(|| format!("/proc/thread-self/schedstat: no runtime in {text:?}"))
}

/// Pins and promotes the calling thread; an error when it did not get
/// SCHED_FIFO (figures measured without it would not be the executive's).
fn promote(cpu: usize, priority: u32) -> Result<(), String> {
    let fifo = SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    };
    let (settings, warnings) = rtlab_probe::thread::set_up_measuring_thread(Some(cpu), &fifo);
    let promoted = settings.actual.is_some_and(|s| s.policy == Policy::Fifo);
    if settings.pinned_cpu == Some(cpu) && promoted {
        Ok(())
    } else {
        Err(warnings.join("; "))
    }
}

fn ring(capacity: usize) -> (Ring, rtrb::Consumer<Sample>) {
    let (producer, consumer) = rtrb::RingBuffer::new(capacity);
    let dropped = Arc::new(AtomicU64::new(0));
    (Ring { producer, dropped }, consumer)
}

fn measure_cpu(cpu: usize, settings: &ReleaseSettings) -> Result<CpuOverheads, String> {
    // Refused up front, on a thread of its own (this one keeps its policy).
    let check = builder("rtlab-admit-chk")
        .spawn({
            let priority = settings.priority;
            move || promote(cpu, priority)
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    check
        .join()
        .map_err(|_| "the check thread panicked".to_string())??;
    let activations = MEASURE_NS / PERIOD_NS;
    let shared = Arc::new(Shared {
        stop: Arc::new(AtomicBool::new(false)),
        slots: vec![Slot::default()],
    });
    let (lateness, mut late) = ring(activations as usize + 16);
    let (response, _responses) = ring(activations as usize + 16);
    let mut rings = TaskRings {
        lateness,
        response,
        execution: None,
        deadline_ns: PERIOD_NS,
        budget_ns: u64::MAX,
    };
    let start_ns = rtlab_core::clock::now_ns() + START_MARGIN_NS;
    let task = {
        let shared = Arc::clone(&shared);
        let priority = settings.task_priority;
        builder("rtlab-admit-task").spawn(move || {
            let promoted = promote(cpu, priority);
            let mut plan = TaskPlan {
                index: 0,
                period_ns: PERIOD_NS,
                offset_ns: 0,
                activations,
                work: WorkDraw::new(Work::Fixed { ns: 0 }, "overheads"),
            };
            // Runs even when not promoted, so that the executive's
            // releases are taken; the error is reported after.
            plan.released(start_ns, &shared, &mut rings);
            promoted
        })
    }
    .map_err(|e| format!("cannot start a thread: {e}"))?;
    let executive = ExecutivePlan {
        cpu,
        priority: settings.priority,
        tasks: vec![Released {
            slot: 0,
            period_ns: PERIOD_NS,
            offset_ns: 0,
            activations,
        }],
        guard_ns: settings.guard_ns,
        release_early_ns: settings.release_early_ns,
        // The run's margins as given: 0.3 s is too short to learn them.
        learning: crate::guard::Learning::fixed(),
    };
    let releases = {
        let shared = Arc::clone(&shared);
        builder("rtlab-admit-exec").spawn(move || -> Result<(u64, u64), String> {
            let promoted = promote(executive.cpu, executive.priority);
            if let Err(why) = promoted {
                executive.quit(&shared);
                return Err(why);
            }
            let before = thread_runtime_ns()?;
            let end = executive.run(start_ns, &shared);
            let after = thread_runtime_ns()?;
            Ok((end.accounted, after.saturating_sub(before)))
        })
    }
    .map_err(|e| format!("cannot start a thread: {e}"))?;
    let released = releases
        .join()
        .map_err(|_| "the executive thread panicked".to_string())?;
    let task_promoted = task
        .join()
        .map_err(|_| "the task thread panicked".to_string())?;
    let (accounted, runtime_ns) = released?;
    task_promoted?;
    // One sample per release that came: a host stall that swallowed
    // several activations (missed, skipped by the executive) is one late
    // release, not one per activation it swallowed, so that one stall of
    // a few ms cannot fill the quantile's last percent alone.
    let mut lateness: Vec<u64> = Vec::with_capacity(activations as usize);
    while let Ok(sample) = late.pop() {
        lateness.push(sample.latency_ns);
    }
    let started = lateness.len() as u64;
    let jitter_max_ns = lateness.iter().copied().max().unwrap_or(0);
    Ok(CpuOverheads {
        cpu,
        activations: accounted,
        started,
        jitter_ns: quantile(&mut lateness, JITTER_QUANTILE),
        jitter_max_ns,
        cost_ns: runtime_ns / accounted.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_ignores_a_few_host_stalls() {
        let mut late: Vec<u64> = vec![2_000; 297];
        late.extend([5_000_000; 3]);
        assert_eq!(quantile(&mut late, JITTER_QUANTILE), 2_000);
        let mut more: Vec<u64> = vec![2_000; 290];
        more.extend([5_000_000; 10]);
        assert_eq!(quantile(&mut more, JITTER_QUANTILE), 5_000_000);
        assert_eq!(quantile(&mut [], JITTER_QUANTILE), 0);
    }

    #[test]
    fn the_worst_cpu_sets_each_figure() {
        let a = CpuOverheads {
            cpu: 0,
            activations: 300,
            started: 300,
            jitter_ns: 9_000,
            jitter_max_ns: 2_000_000,
            cost_ns: 40_000,
        };
        let b = CpuOverheads {
            cpu: 1,
            jitter_ns: 4_000,
            cost_ns: 60_000,
            ..a
        };
        let o = worst_of(&[a, b]);
        assert_eq!((o.release_jitter_ns, o.release_cost_ns), (9_000, 60_000));
        assert!(
            o.source.contains("CPU 0-1") || o.source.contains("CPU 0,1"),
            "{}",
            o.source
        );
    }

    /// Live: the release path of this machine, when SCHED_FIFO is allowed.
    #[test]
    fn measuring_here_accounts_for_every_release() {
        let cpu = crate::periodic::default_cpu();
        let measured = measure(&[cpu], &ReleaseSettings::default());
        if let Some(why) = &measured.not_measured {
            eprintln!("skipped: no real-time privilege here ({why})");
            assert_eq!(measured.overheads, Overheads::none());
            return;
        }
        let c = measured.per_cpu[0];
        eprintln!("{c:?}");
        assert_eq!(c.activations, MEASURE_NS / PERIOD_NS);
        // A host stall may make the task miss one: never more started.
        assert!(c.started > 0 && c.started <= c.activations, "{c:?}");
        assert!(c.jitter_ns <= c.jitter_max_ns, "{c:?}");
        // The executive spins from its guard to the release every time.
        assert!(c.cost_ns > 0, "{c:?}");
        assert_eq!(measured.overheads.release_cost_ns, c.cost_ns);
        assert_eq!(measured.lines().len(), 1);
    }
}
