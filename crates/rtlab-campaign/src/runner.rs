//! Executes runs: one measurement under its loads and settings (the unit
//! that `rtlab measure timer` and every cell of a campaign share), and a
//! whole plan of them with each result stored as soon as it ends.

use crate::{Plan, PlannedRun};
use crate::{ProbeSettings, ProbeSpec};
use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;
use rtlab_core::journal::Journal;
use rtlab_core::result::{
    timestamp_now, CampaignRef, Effective, RunResult, RunStatus, Series, RUN_SCHEMA,
};
use rtlab_core::rivals::{RivalScan, Watched};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_load::{Launcher, LoadSpec, RunningLoads};
use rtlab_probe::net::Placement;
use rtlab_probe::setup::{PreparedProcess, ProcessOptions};
use rtlab_probe::timer::{self, RunLength};
use rtlab_probe::{Probe, ProbeConfig, ProbeOutcome, ProbeRun};
use rtlab_store::Store;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the runner looks at the probe, the loads and the stop flag.
pub const TICK: Duration = Duration::from_millis(100);
/// How often a running result is handed to [`RunObserver::checkpoint`].
pub const CHECKPOINT: Duration = Duration::from_secs(2);

/// Everything one run needs.
pub struct RunRequest {
    pub probe: Box<dyn Probe>,
    pub process: ProcessOptions,
    /// `key=value` sysctls set through the journal for the run.
    pub sysctls: Vec<String>,
    pub loads: Vec<LoadSpec>,
    /// The command line recorded in the result.
    pub command: Vec<String>,
    pub campaign: Option<CampaignRef>,
    pub samples_csv: Option<Box<dyn Write + Send>>,
}

/// What lives across the runs of one rtlab process.
pub struct RunContext {
    pub journal: Arc<Mutex<Journal>>,
    /// Set by the signal handler: the current run ends as `partial` and
    /// no further run starts.
    pub stop: Arc<AtomicBool>,
    pub launcher: Launcher,
}

/// Hooks for the terminal (progress) and for files written during a run.
pub trait RunObserver {
    /// The probe is measuring.
    fn started(&mut self, _result: &RunResult, _run: &dyn ProbeRun) {}
    /// Called every [`TICK`].
    fn tick(&mut self, _run: &dyn ProbeRun) {}
    /// Called every [`CHECKPOINT`] with the result so far (status `running`).
    fn checkpoint(&mut self, _result: &RunResult) {}
    /// A warning found while the probe measures (it is also in the
    /// result); those found before are in the result given to `started`.
    fn warning(&mut self, warning: &str) {
        eprintln!("warning: {warning}");
    }
}

/// An observer that observes nothing.
pub struct Unobserved;
impl RunObserver for Unobserved {}

/// A run refused before anything was measured: a setting it asks for
/// cannot be applied (another live rtlab holds it, the kernel rejects the
/// value, ...). Measuring anyway would record figures under a condition
/// they were not measured under. Whatever the run had already changed is
/// put back. `rtlab measure` exits 2 with the reason; a campaign stores
/// `result` (status `failed`, the reason in its warnings) and goes on.
#[derive(Debug)]
pub struct Refused {
    pub reason: String,
    pub result: Box<RunResult>,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Refused {}

fn lock(journal: &Mutex<Journal>) -> std::sync::MutexGuard<'_, Journal> {
    journal.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs one measurement: system changes, process preparation, loads, the
/// probe; then stops the loads and restores the system before returning.
/// A run that could not measure (a load that would not start) comes back
/// as `failed` with the reason in its warnings; a sysctl that cannot be
/// set is [`Refused`] (an `Err` that carries its failed result); other
/// errors leave no result at all.
pub fn execute(
    mut request: RunRequest,
    context: &RunContext,
    observer: &mut dyn RunObserver,
) -> anyhow::Result<RunResult> {
    let mut warnings = Vec::new();
    let mut system_changes = Vec::new();
    for assignment in &request.sysctls {
        let applied = lock(&context.journal).set_sysctl(assignment);
        if let Err(e) = applied {
            let reason = format!("sysctl {assignment} refused: {e}");
            let result = new_result(&mut request, Effective::default(), Vec::new());
            let result = fail_before_measuring(result, context, reason.clone());
            return Err(anyhow::Error::new(Refused {
                reason,
                result: Box::new(result),
            }));
        }
        system_changes.push(format!("sysctl {assignment}"));
    }
    let process = PreparedProcess::prepare(&request.process, &mut lock(&context.journal));
    let mut effective = process.effective.clone();
    effective.system_changes.extend(system_changes);
    warnings.extend(process.warnings.iter().cloned());
    let mut result = new_result(&mut request, effective, warnings);

    // Loads first, so the probe measures under them from its first sample.
    let loads = match RunningLoads::start(&request.loads, &context.launcher) {
        Ok(loads) => loads,
        Err(e) => {
            drop(process);
            return Ok(fail_before_measuring(result, context, format!("{e:#}")));
        }
    };
    // Taken after the changes and with the loads running: the conditions
    // of the measurement.
    result.environment = Environment::capture();

    let run_stop = Arc::new(AtomicBool::new(false));
    let run =
        match request
            .probe
            .start(Arc::clone(&run_stop), request.samples_csv, &context.journal)
        {
            Ok(run) => run,
            Err(e) => {
                result.loads = loads.stop();
                drop(process);
                return Ok(fail_before_measuring(result, context, format!("{e:#}")));
            }
        };
    result.warnings.extend(run.warnings());
    result.series = run.snapshot();
    // Other real-time threads that can take the probe's CPUs: looked for
    // here, at every checkpoint and at the end, from this SCHED_OTHER
    // thread (never from a measuring loop).
    let online = CpuSet::online();
    let mut rivals = RivalScan::new();
    result.warnings.extend(rival_warnings(
        &mut rivals,
        &result.series,
        &online,
        "there when the probe started",
    ));
    observer.started(&result, run.as_ref());

    let mut loads = loads;
    let mut load_failure = None;
    let mut last_checkpoint = Instant::now();
    while !run.is_finished() {
        std::thread::sleep(TICK);
        if context.stop.load(Ordering::SeqCst) {
            run_stop.store(true, Ordering::SeqCst);
        }
        if load_failure.is_none() {
            if let Err(e) = loads.check() {
                // A load that died leaves the rest of the run unloaded:
                // stop, and say so, rather than measure something else.
                load_failure = Some(format!("{e:#}"));
                run_stop.store(true, Ordering::SeqCst);
            }
        }
        observer.tick(run.as_ref());
        if last_checkpoint.elapsed() >= CHECKPOINT {
            result.series = run.snapshot();
            result.elapsed_ns = run.elapsed_ns();
            let when = format!(
                "found {} into the run",
                rtlab_core::units::human_duration(result.elapsed_ns)
            );
            for warning in rival_warnings(&mut rivals, &result.series, &online, &when) {
                observer.warning(&warning);
                result.warnings.push(warning);
            }
            observer.checkpoint(&result);
            last_checkpoint = Instant::now();
        }
    }
    // A probe that cannot finish (a thread that panicked, a samples file
    // that could not be written) must not cost what it measured: keep the
    // last snapshot and fail the run.
    let snapshot = run.snapshot();
    let elapsed_ns = run.elapsed_ns();
    // The last look: a run shorter than a checkpoint gets one too.
    for warning in rival_warnings(
        &mut rivals,
        &snapshot,
        &online,
        "found at the end of the run",
    ) {
        observer.warning(&warning);
        result.warnings.push(warning);
    }
    let outcome = run.finish().unwrap_or_else(|e| ProbeOutcome {
        series: snapshot,
        elapsed_ns,
        failure: Some(format!("the probe did not finish cleanly: {e:#}")),
        ..ProbeOutcome::default()
    });
    result.loads = loads.stop();
    drop(process);

    result.series = outcome.series;
    result.elapsed_ns = outcome.elapsed_ns;
    result.ended_at = Some(timestamp_now());
    result.warnings.extend(outcome.warnings);
    if let Some(failure) = &outcome.failure {
        result.warnings.push(failure.clone());
    }
    result.status = match (&outcome.break_event, &load_failure, outcome.stopped_early) {
        (Some(_), _, _) => RunStatus::Break,
        (None, Some(_), _) => RunStatus::Failed,
        _ if outcome.failure.is_some() => RunStatus::Failed,
        (None, None, true) => RunStatus::Partial,
        (None, None, false) => RunStatus::Complete,
    };
    if let Some(failure) = load_failure {
        result.warnings.push(format!(
            "stopped after {}: {failure}",
            rtlab_core::units::human_duration(result.elapsed_ns)
        ));
    }
    result.break_event = outcome.break_event;
    result.noise = outcome.noise;
    result.net = outcome.net;
    for series in &result.series {
        if series.stats.dropped > 0 {
            result.warnings.push(format!(
                "{}: {} samples were lost between the measuring thread and the recorder",
                series.name, series.stats.dropped
            ));
        }
    }
    restore(context, &mut result);
    timer::dedup_keep_order(&mut result.warnings);
    Ok(result)
}

/// Warnings for the real-time threads not seen before that can preempt
/// the measuring threads of `series`; `when` says when they were found.
fn rival_warnings(
    rivals: &mut RivalScan,
    series: &[Series],
    online: &CpuSet,
    when: &str,
) -> Vec<String> {
    rivals.new_warnings(&Watched::of_series(series, online), when)
}

/// The result of `request` before it measures (status `running`).
fn new_result(request: &mut RunRequest, effective: Effective, warnings: Vec<String>) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: RunResult::new_id(),
        probe: request.probe.kind().into(),
        status: RunStatus::Running,
        started_at: timestamp_now(),
        ended_at: None,
        elapsed_ns: 0,
        command: std::mem::take(&mut request.command),
        config: request.probe.config_json(),
        effective,
        environment: Environment::default(),
        series: Vec::new(),
        break_event: None,
        loads: Vec::new(),
        campaign: request.campaign.take(),
        noise: None,
        net: None,
        warnings,
    }
}

fn fail_before_measuring(mut result: RunResult, context: &RunContext, why: String) -> RunResult {
    result.environment = Environment::capture();
    result.status = RunStatus::Failed;
    result.ended_at = Some(timestamp_now());
    result.warnings.push(format!("nothing measured: {why}"));
    restore(context, &mut result);
    result
}

/// Puts the system back as it was before the run; what could not be put
/// back is a warning of the run (and printed, as it needs a human).
fn restore(context: &RunContext, result: &mut RunResult) {
    for restored in lock(&context.journal).restore() {
        if !restored.ok() {
            eprintln!("error: {restored}");
            result.warnings.push(restored.to_string());
        }
    }
}

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
