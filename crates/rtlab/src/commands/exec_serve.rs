//! `rtlab exec serve`: the executive as a service, until a signal or
//! `--duration`, each ended attachment's run stored as it comes; and
//! `rtlab exec status`: what a running one has attached.

use super::measure::{open_run_store, save};
use crate::cli::{ExecServeArgs, ExecStatusArgs};
use crate::input::InputError;
use crate::outputs::{Outputs, Requested};
use crate::session;
use crate::terminal::{out, put};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::RunResult;
use rtlab_core::settings::flag;
use rtlab_core::units::human_duration;
use rtlab_exec::serve::access::{group_id, user_id};
use rtlab_exec::serve::{Event, ServeConfig, Server};
use rtlab_probe::setup::{PreparedProcess, ProcessOptions};
use rtlab_store::Store;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The JSON document of `--json`.
const SERVE_SCHEMA: &str = "rtlab.serve/1";
/// The JSON document of `exec status --json`.
const STATUS_SCHEMA: &str = "rtlab.exec-status/1";

fn config(args: &ExecServeArgs) -> anyhow::Result<ServeConfig> {
    let mut config = ServeConfig::new(args.socket.clone());
    if let Some(cpus) = &args.cpus {
        let cpus = cpus
            .resolve(&CpuSet::online())
            .map_err(|e| InputError(format!("--cpus: {e}")))?;
        config.cpus = cpus.iter().collect();
    }
    for user in &args.allow_user {
        config
            .allow_users
            .push(user_id(user).map_err(|e| InputError(format!("--allow-user: {e}")))?);
    }
    for group in &args.allow_group {
        config
            .allow_groups
            .push(group_id(group).map_err(|e| InputError(format!("--allow-group: {e}")))?);
    }
    config.max_priority = args.max_priority;
    config.priority = args.priority;
    config.max_tasks = args.max_tasks as usize;
    config.hang_timeout_ns = args.hang_timeout;
    config.admission = args.admission;
    if let Some(focus) = &args.focus {
        config.focus = Some(
            focus
                .resolve(&CpuSet::online())
                .map_err(|e| InputError(format!("--focus: {e}")))?,
        );
    }
    if let Some(path) = &args.taskset {
        config.taskset = Some(super::exec_taskset::load(path)?);
    }
    config.command = session::recorded_command();
    config.validate().map_err(|e| InputError(e.render(flag)))?;
    Ok(config)
}

/// What the command keeps of the runs.
struct Keeper {
    store: Option<Store>,
    no_file: bool,
    outputs: Outputs,
    runs: Vec<RunResult>,
    socket: String,
    /// What `--focus` did, every task and IRQ that stayed with why (null:
    /// not focused).
    focus: serde_json::Value,
}

impl Keeper {
    fn document(&self) -> serde_json::Value {
        serde_json::json!({
            "schema": SERVE_SCHEMA,
            "socket": self.socket,
            "focus": self.focus,
            "runs": self.runs,
        })
    }

    fn take(&mut self, event: Event) -> anyhow::Result<()> {
        eprintln!("rtlab exec serve: {}", event.line);
        let Some(run) = event.run else {
            return Ok(());
        };
        // A store that fails keeps the run as a file (and says so); the
        // server must go on serving the others.
        if let Err(e) = save(&mut self.store, &run, self.no_file) {
            eprintln!("error: run {}: {e:#}", run.id);
        } else if self.store.is_some() {
            eprintln!("rtlab exec serve: stored as run {}", run.id);
        }
        self.runs.push(*run);
        self.outputs.snapshot_json(&self.document())
    }
}

pub fn serve(args: ExecServeArgs) -> anyhow::Result<ExitCode> {
    let config = config(&args)?;
    let store_path = match &args.store.db {
        Some(db) => Some(db.clone()),
        None if args.no_store => None,
        None => Store::default_path().ok(),
    };
    let outputs = Outputs::open(Requested {
        json: args.json.as_ref(),
        store: store_path.as_deref(),
        ..Requested::default()
    })?;
    let store = open_run_store(args.no_store, args.store.db.as_deref())?;
    let mut config = config;
    let context = rtlab_run::begin(&[session::LOAD_WORKER])?;
    // Memory locked and /dev/cpu_dma_latency held at 0 while serving, as
    // every measurement; what is refused is a warning.
    let prepared = PreparedProcess::prepare(
        &ProcessOptions::default(),
        &mut context.journal.lock().unwrap_or_else(|p| p.into_inner()),
    );
    for warning in &prepared.warnings {
        eprintln!("warning: {warning}");
    }
    config.effective = prepared.effective.clone();
    let cpus = config.cpus.clone();
    let handle = Server::start(config, std::sync::Arc::clone(&context.journal)).map_err(|e| {
        // What this process holds (the PM QoS hold) goes now, not at the
        // next rtlab's recovery.
        restore_all(&context.journal);
        // A focus that cannot be had is the --focus flag's to say.
        match e.downcast_ref::<rtlab_focus::FocusError>() {
            Some(rtlab_focus::FocusError::Invalid(_)) => InputError(format!("{e:#}")).into(),
            Some(_) => e,
            None => anyhow::Error::new(InputError(format!(
                "--socket {}: {e:#}",
                args.socket.display()
            ))),
        }
    })?;
    for warning in &handle.warnings {
        eprintln!("warning: {warning}");
    }
    for line in handle.admission.iter().flat_map(|m| m.lines()) {
        eprintln!("rtlab exec serve: admission: {line}");
    }
    for line in handle
        .focus
        .iter()
        .flat_map(rtlab_exec::serve::focused::describe)
    {
        eprintln!("rtlab exec serve: {line}");
    }
    eprintln!(
        "rtlab exec serve: listening at {} (CPUs {}), pid {}",
        args.socket.display(),
        CpuSet::from_cpus(cpus),
        std::process::id()
    );
    let mut keeper = Keeper {
        store,
        no_file: args.no_store,
        outputs,
        runs: Vec::new(),
        socket: args.socket.display().to_string(),
        focus: serde_json::to_value(&handle.focus)?,
    };
    let mut died = false;
    let until = args
        .duration
        .map(|ns| Instant::now() + Duration::from_nanos(ns));
    while !context.stop.load(Ordering::Acquire) && until.is_none_or(|t| Instant::now() < t) {
        if let Some(event) = handle.next_event(Duration::from_millis(100)) {
            keeper.take(event)?;
        } else if !handle.is_running() {
            // The control thread died (a panic, reported above it): the
            // panic hook restored the journal; stop with an error.
            died = true;
            break;
        }
    }
    for event in handle.stop() {
        keeper.take(event)?;
    }
    // Each entry went with its attachment; anything left goes now.
    restore_all(&context.journal);
    drop(prepared);
    keeper.outputs.measured();
    keeper.outputs.write_json(&keeper.document())?;
    eprintln!("rtlab exec serve: stopped, {} runs", keeper.runs.len());
    if died {
        anyhow::bail!("the control thread of exec serve ended unexpectedly");
    }
    Ok(ExitCode::SUCCESS)
}

/// Undoes what is left in `journal`, saying what could not be.
fn restore_all(journal: &std::sync::Mutex<rtlab_core::journal::Journal>) {
    for restored in journal.lock().unwrap_or_else(|p| p.into_inner()).restore() {
        if !restored.ok() {
            eprintln!("error: {restored}");
        }
    }
}

pub fn status(args: &ExecStatusArgs) -> anyhow::Result<ExitCode> {
    let status = rtlab_client::executive_status(args.socket.as_deref())
        .map_err(|e| InputError(format!("exec status: {e}")))?;
    if args.json {
        let mut doc = serde_json::to_value(&status)?;
        doc["schema"] = STATUS_SCHEMA.into();
        out!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "executive pid {} at {}, CPUs {}: {} processes attached",
        status.pid,
        status.socket,
        CpuSet::from_cpus(status.cpus.clone()),
        status.tasks.len()
    );
    if status.tasks.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    put!(
        "{:>8} {:<16} {:>3} {:>4} {:>8} {:>11} {:>7} {:>9} {:>9} {:>10} {:>10} {:>10}\n",
        "pid",
        "name",
        "cpu",
        "prio",
        "period",
        "activations",
        "missed",
        "dl-misses",
        "overruns",
        "late-p50",
        "late-p99",
        "late-max"
    );
    for t in &status.tasks {
        put!(
            "{:>8} {:<16} {:>3} {:>4} {:>8} {:>11} {:>7} {:>9} {:>9} {:>10} {:>10} {:>10}\n",
            t.pid,
            t.name,
            t.cpu,
            t.priority,
            human_duration(t.period_ns),
            t.stats.activations,
            t.stats.missed_activations,
            t.stats.deadline_misses,
            t.stats.budget_overruns,
            human_duration(t.stats.lateness_p50_ns),
            human_duration(t.stats.lateness_p99_ns),
            human_duration(t.stats.lateness_max_ns)
        );
    }
    Ok(ExitCode::SUCCESS)
}
