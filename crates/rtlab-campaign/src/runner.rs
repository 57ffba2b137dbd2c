//! Runs a campaign: the request of each cell of the plan (its probe,
//! loads and settings) run by the engine (`rtlab_run`), each result stored
//! as soon as it ends.

use crate::{Plan, PlannedRun};
use crate::{ProbeSettings, ProbeSpec};
use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{CampaignRef, RunResult};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_load::LoadSpec;
use rtlab_probe::net::Placement;
use rtlab_probe::setup::ProcessOptions;
use rtlab_probe::timer::RunLength;
use rtlab_probe::{Probe, ProbeConfig};
use rtlab_run::{execute, Refused, RunContext, RunObserver, RunRequest, TICK};
use rtlab_store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Hooks for the terminal while a campaign runs.
pub trait CampaignObserver: RunObserver {
    /// A run starts; `remaining_ns` is the plan's estimate of what is left,
    /// this run included.
    fn run_starting(&mut self, _planned: &PlannedRun, _total: usize, _remaining_ns: u64) {}
    /// A run ended and was stored.
    fn run_stored(&mut self, _planned: &PlannedRun, _result: &RunResult) {}
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

/// The scheduling of the net probe's client when rtlab runs its own server:
/// the client is the measuring instrument, SCHED_FIFO 90 as every measuring
/// thread by default, whatever the configuration.
pub const NET_CLIENT_SCHED: SchedParams = SchedParams {
    policy: Policy::Fifo,
    priority: rtlab_probe::DEFAULT_PRIORITY,
    deadline: None,
};

/// The probe of one run, whatever crate it comes from: the executive's
/// periodic tasks, or one of rtlab-probe's ([`probe_config`]).
pub fn probe_for(
    spec: &ProbeSpec,
    sched: SchedParams,
    duration_ns: u64,
    online: &CpuSet,
) -> Result<Box<dyn Probe>, String> {
    let ProbeSettings::Periodic(settings) = &spec.settings else {
        return probe_config(spec, sched, duration_ns, online)
            .map(|p| Box::new(p) as Box<dyn Probe>);
    };
    // The configuration promotes the tasks; the executive runs above them.
    if sched.policy != Policy::Fifo {
        return Err(format!(
            "policy {}: periodic tasks run SCHED_FIFO (use policy fifo; the mode key picks executive or fifo release)",
            sched.policy
        ));
    }
    if let Some(cpu) = settings.cpu {
        if !online.contains(cpu) {
            return Err(format!("cpu: CPU {cpu} is not online (online: {online})"));
        }
    }
    let config = settings.config(duration_ns, sched.priority);
    config.validate().map_err(|e| e.to_string())?;
    Ok(Box::new(config))
}

/// The probe's config for one run of `duration_ns` with `sched`, its CPUs
/// resolved against `online`.
///
/// `sched` is the configuration's scheduling. It goes to the measuring
/// threads, except for the net probe with rtlab's own server: there it goes
/// to the server (the process whose promotion a campaign compares, as paper
/// 000 promoted its server) and the client runs [`NET_CLIENT_SCHED`]. With a
/// `target`, the server is not rtlab's and `sched` goes to the client. A net
/// run sends `duration / interval` messages (at least one).
pub fn probe_config(
    spec: &ProbeSpec,
    sched: SchedParams,
    duration_ns: u64,
    online: &CpuSet,
) -> Result<ProbeConfig, String> {
    Ok(match &spec.settings {
        ProbeSettings::Timer(settings) => {
            let cpus = settings
                .cpus
                .resolve(online)
                .map_err(|e| format!("cpus: {e}"))?;
            let length = RunLength::DurationNs(duration_ns);
            ProbeConfig::Timer(settings.config(cpus.iter().collect(), length, sched))
        }
        ProbeSettings::Switch(settings) => {
            let placement = switch_placement(settings.cpu, settings.cross_cpu, online)?;
            // The run's duration is shared by its mechanisms, so that a run
            // lasts what the plan says whatever the probe.
            let mechanisms = settings.mechanisms.len().max(1) as u64;
            let length = RunLength::DurationNs(duration_ns / mechanisms);
            ProbeConfig::Switch(settings.config(length, placement, sched))
        }
        ProbeSettings::Noise(settings) => {
            let cpus = settings
                .cpus
                .resolve(online)
                .map_err(|e| format!("cpus: {e}"))?;
            ProbeConfig::Noise(settings.config(cpus.iter().collect(), duration_ns, sched))
        }
        ProbeSettings::Net(settings) => {
            if sched.policy == Policy::Deadline {
                return Err(
                    "policy deadline is for timer probes only: use fifo, rr or other for a net probe"
                        .into(),
                );
            }
            let messages = duration_ns
                .checked_div(settings.interval_ns)
                .ok_or("interval: must be longer than 0")?
                .max(1);
            let own_server = settings.target.is_none();
            let (client_cpu, server_cpu) =
                net_placement(settings.client_cpu, settings.server_cpu, own_server, online)?;
            let config = if own_server {
                settings.config(
                    messages,
                    Placement {
                        cpu: client_cpu,
                        sched: NET_CLIENT_SCHED,
                    },
                    Some(Placement {
                        cpu: server_cpu,
                        sched,
                    }),
                )
            } else {
                settings.config(
                    messages,
                    Placement {
                        cpu: client_cpu,
                        sched,
                    },
                    None,
                )
            };
            config.validate().map_err(|e| e.to_string())?;
            ProbeConfig::Net(config)
        }
        ProbeSettings::Periodic(_) => {
            return Err("periodic probes come from the executive: see probe_for".into())
        }
    })
}

/// The net probe's client and server CPUs: the ones given (which must be
/// online) or, by default, the client on the first online CPU and rtlab's
/// server on the last, each avoiding the other's CPU; both unpinned on a
/// machine with one online CPU. No server CPU without `own_server`.
pub fn net_placement(
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
    own_server: bool,
    online: &CpuSet,
) -> Result<(Option<usize>, Option<usize>), String> {
    for (key, cpu) in [("client_cpu", client_cpu), ("server_cpu", server_cpu)] {
        if let Some(cpu) = cpu {
            if !online.contains(cpu) {
                return Err(format!("{key}: CPU {cpu} is not online (online: {online})"));
            }
        }
    }
    if !own_server {
        if server_cpu.is_some() {
            return Err("server_cpu: there is no server of rtlab's with a target".into());
        }
        let client = client_cpu.or_else(|| online.iter().next().filter(|_| online.len() >= 2));
        return Ok((client, None));
    }
    if online.len() < 2 {
        return Ok((client_cpu, server_cpu));
    }
    let client = client_cpu.or_else(|| online.iter().find(|&c| Some(c) != server_cpu));
    let server = server_cpu.or_else(|| {
        let cpus: Vec<usize> = online.iter().collect();
        cpus.into_iter().rev().find(|&c| Some(c) != client)
    });
    Ok((client, server))
}

/// The timer thread's and the task's CPUs for the switch probe: `cpu` (by
/// default the last online CPU, the one least busy with housekeeping on
/// most machines) and, across CPUs, the next online CPU after it.
pub fn switch_placement(
    cpu: Option<usize>,
    cross_cpu: bool,
    online: &CpuSet,
) -> Result<(usize, usize), String> {
    let cpus: Vec<usize> = online.iter().collect();
    let cpu = match cpu {
        Some(cpu) if online.contains(cpu) => cpu,
        Some(cpu) => return Err(format!("CPU {cpu} is not online (online: {online})")),
        None => *cpus.last().ok_or("no CPU is online")?,
    };
    if !cross_cpu {
        return Ok((cpu, cpu));
    }
    let at = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    match cpus.get((at + 1) % cpus.len()) {
        Some(&other) if other != cpu => Ok((cpu, other)),
        _ => Err(format!(
            "a cross-CPU switch needs two online CPUs (online: {online})"
        )),
    }
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
        // Kept as a file when the store cannot take it (disk full): the
        // error names the file, and the campaign stops, saying so.
        store.save_or_keep(&result).map_err(|e| {
            let rest = match plan.runs.len() - planned.index {
                0 => "it was the last".to_string(),
                n => format!("the {n} after it were not run"),
            };
            let before = match planned.index {
                1 => "",
                _ => "; the runs before it are stored",
            };
            anyhow::Error::new(e).context(format!(
                "campaign {} stopped at run {} of {} ({rest}{before}; execution {execution})",
                plan.campaign.name,
                planned.index,
                plan.runs.len()
            ))
        })?;
        observer.run_stored(planned, &result);
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
