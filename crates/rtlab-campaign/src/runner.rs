//! Runs a campaign: the request of each cell of the plan (its probe,
//! loads and settings) run by the engine (`rtlab_run`), each result stored
//! as soon as it ends.

/// Where `rtlab measure switch` and the tests find the placements the
/// switch and net probes' kinds use for a run.
pub use crate::probes::{net_placement, switch_placement, NET_CLIENT_SCHED};
use crate::{OneRun, ProbeSpec};
use crate::{Plan, PlannedRun};
use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{CampaignRef, RunResult};
use rtlab_core::sched::SchedParams;
use rtlab_load::LoadSpec;
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::Probe;
use rtlab_run::{execute, Refused, RunContext, RunObserver, RunRequest, TICK};
use rtlab_store::{Store, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Hooks for the terminal while a campaign runs.
pub trait CampaignObserver: RunObserver {
    /// A run starts; `remaining_ns` is the plan's estimate of what is left,
    /// this run included.
    fn run_starting(&mut self, _planned: &PlannedRun, _total: usize, _remaining_ns: u64) {}
    /// A run ended and was stored.
    fn run_stored(&mut self, _planned: &PlannedRun, _result: &RunResult) {}
    /// A run ended but its store could not be reached: it was kept as a
    /// file (`kept` says where and how to store it later), and the
    /// campaign goes on.
    fn run_kept(&mut self, _planned: &PlannedRun, _result: &RunResult, _kept: &StoreError) {}
}

/// The runs a campaign execution produced, in plan order.
pub struct CampaignOutcome {
    /// Id shared by every run of this execution.
    pub execution: String,
    pub results: Vec<RunResult>,
    /// Set when a signal stopped the campaign before its end.
    pub interrupted: bool,
}

/// The request for one cell of the plan.
pub fn request_for(
    planned: &PlannedRun,
    plan: &Plan,
    execution: &str,
    command: &[String],
) -> anyhow::Result<RunRequest> {
    let configuration = &planned.configuration;
    let mut loads = Vec::new();
    for spec in &planned.load.run {
        loads.push(
            spec.parse::<LoadSpec>()
                .with_context(|| format!("load {}", planned.load.name))?,
        );
    }
    let probe = probe_for(
        &planned.probe,
        planned.sched_params(),
        planned.duration_ns,
        &CpuSet::online(),
    )
    .map_err(|e| anyhow::anyhow!("probe {}: {e}", planned.probe.name))?;
    Ok(RunRequest {
        probe,
        process: ProcessOptions {
            mlock: true,
            dma_latency_us: configuration.dma_latency.then_some(0),
        },
        sysctls: configuration.sysctl.clone(),
        loads,
        command: command.to_vec(),
        campaign: Some(CampaignRef {
            name: plan.campaign.name.clone(),
            execution: execution.to_string(),
            index: planned.index,
            total: plan.runs.len(),
            configuration: configuration.name.clone(),
            load: planned.load.name.clone(),
            repeat: planned.repeat,
        }),
        samples_csv: None,
    })
}

/// The probe of one run, whatever its kind: the kind's own settings build
/// it ([`KindSettings::probe`](crate::KindSettings::probe)) with the
/// configuration's `sched` for `duration_ns`, its CPUs resolved against
/// `online`.
pub fn probe_for(
    spec: &ProbeSpec,
    sched: SchedParams,
    duration_ns: u64,
    online: &CpuSet,
) -> Result<Box<dyn Probe>, String> {
    spec.settings.probe(&OneRun {
        sched,
        duration_ns,
        online,
    })
}

/// Runs every run of the plan in order and stores each result when it
/// ends. A signal ends the current run as `partial` (stored) and starts no
/// further run.
pub fn run_campaign(
    plan: &Plan,
    context: &RunContext,
    store: &mut Store,
    command: &[String],
    observer: &mut dyn CampaignObserver,
) -> anyhow::Result<CampaignOutcome> {
    let execution = RunResult::new_id();
    let mut results = Vec::new();
    let per_run_ns = |run: &PlannedRun| plan.eta_of(run);
    let mut remaining_ns: u64 = plan.runs.iter().map(per_run_ns).sum();
    let mut kept = 0usize;
    for planned in &plan.runs {
        if context.stop.load(Ordering::SeqCst) {
            break;
        }
        observer.run_starting(planned, plan.runs.len(), remaining_ns);
        let request = request_for(planned, plan, &execution, command)?;
        // A refused cell is stored as failed, with why; the others run.
        let result = match execute(request, context, observer) {
            Ok(result) => result,
            Err(e) => *e.downcast::<Refused>()?.result,
        };
        // Kept as a file when the store cannot take it. A store that cannot
        // be reached (a PostgreSQL server down, the network gone) may come
        // back: the campaign goes on, keeping each run, and the binary
        // pushes them at its end or `rtlab store push` later. Any other
        // failure (disk full, a run refused) stops it, saying so.
        match store.save_or_keep(&result) {
            Ok(()) => observer.run_stored(planned, &result),
            Err(e) if kept_while_unreachable(&e) => {
                kept += 1;
                observer.run_kept(planned, &result, &e);
            }
            Err(e) => {
                let rest = match plan.runs.len() - planned.index {
                    0 => "it was the last".to_string(),
                    n => format!("the {n} after it were not run"),
                };
                let before = match (planned.index, kept) {
                    (1, _) => String::new(),
                    (_, 0) => "; the runs before it are stored".into(),
                    (_, k) => format!("; the runs before it are stored ({k} kept as files)"),
                };
                return Err(anyhow::Error::new(e).context(format!(
                    "campaign {} stopped at run {} of {} ({rest}{before}; execution {execution})",
                    plan.campaign.name,
                    planned.index,
                    plan.runs.len()
                )));
            }
        }
        results.push(result);
        remaining_ns = remaining_ns.saturating_sub(per_run_ns(planned));
        if planned.index < plan.runs.len() && plan.campaign.cooldown_ns > 0 {
            sleep_unless_stopped(
                Duration::from_nanos(plan.campaign.cooldown_ns),
                &context.stop,
            );
        }
    }
    Ok(CampaignOutcome {
        execution,
        interrupted: context.stop.load(Ordering::SeqCst),
        results,
    })
}

/// The run was kept as a file because its store could not be reached.
fn kept_while_unreachable(error: &StoreError) -> bool {
    matches!(error, StoreError::Unsaved { cause, kept: Ok(_), .. } if cause.is_connection())
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let end = Instant::now() + total;
    while !stop.load(Ordering::SeqCst) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(TICK));
    }
}
