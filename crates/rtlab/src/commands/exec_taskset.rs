//! Task-set files on the command line (docs/taskset.md): `exec periodic
//! --taskset` builds its config from one, `exec import-rt-app` writes one
//! from an rt-app file, `exec check-taskset` checks one.

use crate::cli::{CheckTasksetArgs, ImportRtAppArgs, PeriodicTaskArgs};
use crate::input::{bad_input, InputError};
use crate::terminal::out;
use rtlab_core::fsutil;
use rtlab_core::result::terminal_text;
use rtlab_core::settings::flag;
use rtlab_core::units::human_duration;
use rtlab_exec::periodic::{default_cpu, Mode, PeriodicConfig};
use rtlab_exec::taskset::{import_rt_app as import, TaskSet, Work};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Reads a task set; a file that does not read or check is bad input.
/// Reads a task-set file; a bad one is bad input (exit 2, FILE:LINE).
pub(super) fn load(path: &Path) -> anyhow::Result<TaskSet> {
    TaskSet::load(path).map_err(|e| anyhow::Error::new(InputError(e.to_string())))
}

/// The config of `exec periodic --taskset FILE`: the set's tasks, the
/// run's duration and mode, the executive's flags (--priority, --guard,
/// --release-early); the config's own rules name their flag.
pub fn config_from_set(
    path: &Path,
    task: &PeriodicTaskArgs,
    duration_ns: u64,
    mode: Mode,
) -> anyhow::Result<PeriodicConfig> {
    // A --duration beyond the longest run is the config's to refuse.
    let set = load(path)?;
    let mut config = PeriodicConfig::from_task_set(set, duration_ns);
    config.mode = mode;
    config.executive_priority = task.priority;
    config.set_margins(task.guard, task.release_early, task.spin_budget);
    if let Err(e) = config.validate() {
        bad_input!("{}", e.render(flag));
    }
    Ok(config)
}

/// Warnings of a file, on stderr, escaped (they quote the file).
fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("{}", terminal_text(&format!("warning: {warning}")));
    }
}

/// `rtlab exec import-rt-app`.
pub fn import_rt_app(args: ImportRtAppArgs) -> anyhow::Result<ExitCode> {
    let imported = import(&args.file).map_err(|e| InputError(e.to_string()))?;
    warn(&imported.warnings);
    let mut text = format!(
        "# Imported from {} by `rtlab exec import-rt-app`.\n",
        args.file.display()
    );
    for warning in &imported.warnings {
        text += &format!("# warning: {}\n", warning.replace('\n', " "));
    }
    text += &imported.set.to_toml();
    match &args.output {
        Some(output) => {
            fsutil::write_atomic_with(output, fsutil::Options::default(), |out| {
                out.write_all(text.as_bytes())
            })
            .map_err(|e| InputError(format!("--output {}: {e}", output.display())))?;
            if !args.json {
                eprintln!(
                    "{}",
                    terminal_text(&format!(
                        "{} tasks written to {}",
                        imported.set.tasks.len(),
                        output.display()
                    ))
                );
            }
        }
        None if !args.json => crate::terminal::emit(&text)?,
        None => {}
    }
    if args.json {
        let doc = json!({
            "schema": "rtlab.taskset-import/1",
            "file": args.file,
            "output": args.output,
            "tasks": imported.set.tasks,
            "warnings": imported.warnings,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// A task's work as the table shows it.
fn work_text(work: Work) -> String {
    match work {
        Work::Fixed { ns } => human_duration(ns),
        Work::Uniform { min_ns, max_ns } => {
            format!("{}-{}", human_duration(min_ns), human_duration(max_ns))
        }
    }
}

/// `rtlab exec check-taskset`.
pub fn check_taskset(args: CheckTasksetArgs) -> anyhow::Result<ExitCode> {
    let set = load(&args.file)?;
    let default = default_cpu();
    let cpu_of = |cpu: Option<usize>| cpu.unwrap_or(default);
    let mut cpus: Vec<usize> = set.tasks.iter().map(|t| cpu_of(t.cpu)).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let utilization: Vec<(usize, f64)> = cpus
        .iter()
        .map(|&cpu| {
            let sum = set
                .tasks
                .iter()
                .filter(|t| cpu_of(t.cpu) == cpu)
                .map(|t| t.utilization())
                .sum();
            (cpu, sum)
        })
        .collect();
    if args.json {
        let doc = json!({
            "schema": "rtlab.taskset-check/1",
            "file": args.file,
            "tasks": set.tasks,
            "default_cpu": default,
            "utilization": utilization
                .iter()
                .map(|(cpu, u)| json!({"cpu": cpu, "utilization": u}))
                .collect::<Vec<_>>(),
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{:<20} {:>10} {:>10} {:>16} {:>10} {:>10} {:>4} {:>4} {:>6}",
        "task",
        "period",
        "offset",
        "work",
        "deadline",
        "budget",
        "prio",
        "cpu",
        "util"
    );
    for t in &set.tasks {
        out!(
            "{:<20} {:>10} {:>10} {:>16} {:>10} {:>10} {:>4} {:>4} {:>5.1}%",
            t.name,
            human_duration(t.period_ns),
            human_duration(t.offset_ns),
            work_text(t.work),
            human_duration(t.deadline_ns),
            t.budget_ns.map_or_else(|| "-".into(), human_duration),
            t.priority,
            cpu_of(t.cpu),
            100.0 * t.utilization()
        );
    }
    for (cpu, u) in &utilization {
        let note = if *u > 1.0 {
            ": more than the CPU, activations will be missed"
        } else {
            ""
        };
        out!("CPU {cpu}: utilization {:.1}%{note}", 100.0 * u);
    }
    out!("{}: {} tasks, valid", args.file.display(), set.tasks.len());
    Ok(ExitCode::SUCCESS)
}
