//! `rtlab exec periodic` and `rtlab exec kurt-table`: periodic tasks
//! released by rtlab's executive or self-timed SCHED_FIFO threads (paper
//! 002, KURT §4.3/§4.4.1), and the paper's Tables 4.1/4.2.

use super::measure::{measure, print_summary};
use crate::cli::{
    BudgetArgs, ExecPeriodicArgs, KurtTableArgs, PeriodicTaskArgs, RunArgs, StoreArgs,
};
use crate::input::{bad_input, InputError};
use crate::outputs::budget::{summary_text, title};
use crate::outputs::exit::{exit_code, kept_where, status_code};
use crate::outputs::{Outputs, Requested};
use rtlab_campaign::{LoadEntry, PeriodicSettings};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_core::settings::flag;
use rtlab_core::units::human_duration;
use rtlab_exec::periodic::{Mode, PeriodicConfig, Phasing, MAX_RUN_NS, MIN_PERIOD_NS};
use rtlab_report::probe_summary::{
    planned_activations, within_percentages, within_table, WITHIN_US,
};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

/// The periodic config of `tasks` tasks for `duration_ns` in `mode`; the
/// config's own rules ([`PeriodicConfig::validate`]) name their flag.
fn config_from(
    task: &PeriodicTaskArgs,
    tasks: u64,
    duration_ns: u64,
    mode: Mode,
) -> anyhow::Result<PeriodicConfig> {
    if duration_ns > MAX_RUN_NS {
        bad_input!(
            "--duration {}: longer than the longest run, {} days",
            human_duration(duration_ns),
            MAX_RUN_NS / 86_400_000_000_000
        );
    }
    let mut config = PeriodicConfig::new(tasks as usize, task.period, task.work, duration_ns);
    config.mode = mode;
    config.phasing = if task.in_phase {
        Phasing::InPhase
    } else {
        Phasing::Staggered
    };
    if let Some(cpu) = task.cpu {
        let online = rtlab_core::cpuset::CpuSet::online();
        if !online.iter().any(|c| c == cpu) {
            bad_input!("--cpu {cpu}: not an online CPU (online: {online})");
        }
        config.cpu = cpu;
    }
    config.executive_priority = task.priority;
    config.task_priority = task.task_priority;
    config.set_margins(task.guard, task.release_early, task.spin_budget);
    // A period under the minimum is refused as such, by validate().
    if task.period >= MIN_PERIOD_NS && duration_ns < task.period {
        bad_input!(
            "--duration {} is shorter than the --period {}: no activation",
            human_duration(duration_ns),
            human_duration(task.period)
        );
    }
    if let Err(e) = config.validate() {
        bad_input!("{}", e.render(flag));
    }
    Ok(config)
}

/// The shared flags of one of several runs: no --json, --samples or
/// --budget of their own (the command writes one document and checks the
/// budget for them all), quiet when asked, the load given.
fn inner_args(run: &RunArgs, load: Option<String>, quiet: bool) -> RunArgs {
    RunArgs {
        load,
        no_dma_latency: run.no_dma_latency,
        sysctl: run.sysctl.clone(),
        json: None,
        samples: None,
        store: StoreArgs {
            db: run.store.db.clone(),
        },
        no_store: run.no_store,
        quiet,
        budget: BudgetArgs::default(),
        witness: run.witness.clone(),
    }
}

/// The outputs of a command of several runs: `--json` (one document for
/// them all), `--budget` and `--junit`; its runs store themselves.
fn open_outputs(run: &RunArgs) -> anyhow::Result<Outputs> {
    let default_db = rtlab_store::Store::default_path().ok();
    Outputs::open(Requested {
        json: run.json.as_ref(),
        // --samples is refused: it takes one run.
        samples: None,
        store: run.store.db.as_deref().or(default_db.as_deref()),
        budget: run.budget.budget.as_ref(),
        junit: run.budget.junit.as_ref(),
        ..Requested::default()
    })
}

/// The end of a command of several runs: its JSON document (`doc`) and
/// JUnit file, then the exit code: the worst status of its runs, then the
/// budget.
fn finish_runs(
    outputs: &Outputs,
    run: &RunArgs,
    results: &[RunResult],
    evaluations: &[rtlab_report::budget::Evaluation],
    doc: impl FnOnce() -> anyhow::Result<serde_json::Value>,
) -> anyhow::Result<ExitCode> {
    outputs.finish(doc, &title(), evaluations)?;
    let status = results.iter().fold(None, |worst, r| worse(worst, r.status));
    let mut worst = results.last().expect("one run at least").clone();
    worst.status = status.unwrap_or(RunStatus::Complete);
    let stored = (!run.no_store).then(|| "stored".to_string());
    let code = status_code(&worst, &kept_where(stored, outputs.json()));
    Ok(ExitCode::from(exit_code(code, evaluations)))
}

/// One run's figures for the tables and the JSON: `activations` is the
/// plan (every task), `started` and `missed_activations` what became of
/// it, `not_reached` what a stopped run never got to.
fn cell_json(result: &RunResult) -> serde_json::Value {
    let lateness = result
        .series
        .iter()
        .filter(|s| s.metric == "activation_lateness");
    let (mut samples, mut missed) = (0, 0);
    for s in lateness {
        samples += s.stats.samples;
        missed += s.stats.missed;
    }
    let misses: u64 = result
        .series
        .iter()
        .filter(|s| s.metric == "response_time")
        .map(|s| s.stats.missed)
        .sum();
    let within = within_percentages(&result.series);
    let planned = planned_activations(&result.config).unwrap_or(samples + missed);
    json!({
        "run_id": result.id,
        "status": result.status,
        "activations": planned,
        "started": samples,
        "missed_activations": missed,
        "not_reached": planned.saturating_sub(samples + missed),
        "deadline_misses": misses,
        "within_us": WITHIN_US,
        "within_percent": within,
        "executive": result.executive,
    })
}

/// The worse of two exit statuses (failed or stopped wins over complete).
fn worse(a: Option<RunStatus>, b: RunStatus) -> Option<RunStatus> {
    let rank = |s: RunStatus| match s {
        RunStatus::Partial => 3,
        RunStatus::Failed => 2,
        RunStatus::Break => 1,
        _ => 0,
    };
    match a {
        Some(a) if rank(a) >= rank(b) => Some(a),
        _ => Some(b),
    }
}

/// `rtlab exec periodic`.
pub fn periodic(args: ExecPeriodicArgs) -> anyhow::Result<ExitCode> {
    let mode = args.mode;
    let config = match &args.taskset {
        Some(path) => super::exec_taskset::config_from_set(path, &args.task, args.duration, mode)?,
        None => config_from(&args.task, args.tasks, args.duration, mode)?,
    };
    // A task set is admitted before anything runs (campaigns are not gated).
    let gate = match &args.taskset {
        Some(_) => super::exec_admit::gate(&config, args.force),
        None => super::exec_admit::Gate::Run,
    };
    if let super::exec_admit::Gate::Refused(code) = gate {
        return Ok(code);
    }
    let Some(baseline_mode) = args.baseline else {
        let probe = gate.probe(super::exec_worker::probe(&args.task, config, None)?);
        return measure(probe, &args.run, &[])?.report(args.run.quiet);
    };
    if mode != Mode::Executive {
        bad_input!(
            "--baseline fifo compares the executive with SCHED_FIFO: leave --mode executive"
        );
    }
    if args.run.samples.is_some() {
        bad_input!("--samples takes one run: not with --baseline (run each mode on its own)");
    }
    let spec = args.run.budget.budget.as_ref();
    // The --json file is removed again if nothing is written to it (a
    // refused run).
    let outputs = open_outputs(&args.run)?;
    let mut human = outputs.human();
    let mut baseline = config.clone();
    baseline.mode = baseline_mode;
    let mut results: Vec<RunResult> = Vec::new();
    for config in [config, baseline] {
        let quiet = args.run.quiet || outputs.json_on_stdout();
        let measured = measure(
            gate.probe(super::exec_worker::probe(&args.task, config, None)?),
            &inner_args(&args.run, args.run.load.clone(), quiet),
            &[],
        )?;
        let result = measured.result;
        if !args.run.quiet {
            print_summary(&mut human, &result)?;
            if measured.stored {
                writeln!(human, "stored as run {}", result.id)?;
            }
            if let Some(spec) = spec {
                write!(human, "{}", spec.evaluate(&result).report())?;
            }
        }
        let stop = result.status == RunStatus::Partial;
        results.push(result);
        if stop {
            break;
        }
    }
    let rows: Vec<(String, Option<[f64; 5]>)> = results
        .iter()
        .map(|r| {
            let mode = r.config["mode"].as_str().unwrap_or("?");
            let label = if mode == "fifo" {
                "SCHED_FIFO".to_string()
            } else {
                "rtlab executive".to_string()
            };
            (label, within_percentages(&r.series))
        })
        .collect();
    let first = &results[0];
    if !args.run.quiet {
        let tasks = match &args.taskset {
            Some(path) => format!("the task set {}", path.display()),
            None => format!(
                "{} tasks every {}, work {}",
                args.tasks,
                human_duration(args.task.period),
                human_duration(args.task.work)
            ),
        };
        writeln!(
            human,
            "\n% of activations within x µs of the expected time: {tasks}{}",
            first
                .loads
                .first()
                .map_or_else(String::new, |l| format!(", under {}", l.spec)),
        )?;
        write!(human, "{}", within_table("scheduler", &rows))?;
    }
    let evaluations = outputs.evaluate(&results);
    let doc = || {
        Ok(json!({
            "schema": "rtlab.exec-periodic/1",
            "cells": results.iter().map(|r| {
                let mut cell = cell_json(r);
                cell["mode"] = r.config["mode"].clone();
                cell
            }).collect::<Vec<_>>(),
            "budget": outputs.budget_json(&evaluations),
            "runs": results,
        }))
    };
    finish_runs(&outputs, &args.run, &results, &evaluations, doc)
}

/// One cell of the KURT table: a run of the preset's plan.
struct Cell {
    load: Option<String>,
    tasks: u64,
    mode: Mode,
    /// The executive form's `exec serve --focus` (`--focus`).
    focus: Option<CpuSet>,
}

/// The campaign preset whose matrix the KURT table is (paper 002's
/// Tables 4.1/4.2: task counts × SCHED_FIFO or the executive × idle or
/// loaded).
const KURT_PRESET: &str = "srinivasan1998";

/// The cells of the table: the [`KURT_PRESET`] campaign with the task
/// counts, task set, duration and load of the command line, planned by the
/// campaign crate, in the paper's order (per load a table, per task count
/// SCHED_FIFO then the executive). The loads as the tables name them:
/// None for idle.
fn plan_cells(
    args: &KurtTableArgs,
    loaded: &str,
    focus: Option<&CpuSet>,
) -> anyhow::Result<(Vec<Cell>, Vec<Option<String>>)> {
    let no_check = |_: &str| -> Result<(), String> { Ok(()) };
    let mut campaign = rtlab_campaign::read(KURT_PRESET, &no_check)
        .map_err(|e| anyhow::anyhow!("the built-in preset: {e}"))?;
    campaign.duration_ns = args.duration;
    // The preset's probes, one per task count and release, with the task
    // set of the command line.
    let template = campaign.probes[0].clone();
    campaign.probes = args
        .tasks
        .iter()
        .flat_map(|&tasks| [Mode::Fifo, Mode::Executive].map(|mode| (tasks, mode)))
        .map(|(tasks, mode)| {
            let mut probe = template.clone();
            let short = if mode == Mode::Fifo { "fifo" } else { "exec" };
            probe.name = format!("{short}-{tasks}");
            if let Some(settings) = probe.settings_as_mut::<PeriodicSettings>() {
                settings.tasks = tasks as usize;
                settings.period_ns = args.task.period;
                settings.work_ns = args.task.work;
                settings.mode = mode;
                settings.cpu = args.task.cpu;
            }
            probe
        })
        .collect();
    // The preset's idle table, and its loaded one under the load given.
    campaign.loads.retain(|l| l.run.is_empty());
    if !args.idle_only {
        campaign.loads.push(LoadEntry {
            name: loaded.to_string(),
            run: vec![loaded.to_string()],
        });
    }
    let loads: Vec<Option<String>> = campaign
        .loads
        .iter()
        .map(|l| (!l.run.is_empty()).then(|| l.run.join(",")))
        .collect();
    let plan = rtlab_campaign::plan(campaign).map_err(|e| InputError(e.to_string()))?;
    let mut cells: Vec<(usize, Cell)> = plan
        .runs
        .iter()
        .filter_map(|run| {
            let settings = run.probe.settings_as::<PeriodicSettings>()?;
            let load = (!run.load.run.is_empty()).then(|| run.load.run.join(","));
            let table = loads.iter().position(|l| *l == load)?;
            let cell = Cell {
                load,
                tasks: settings.tasks as u64,
                mode: settings.mode,
                focus: None,
            };
            Some((table, cell))
        })
        .collect();
    // The plan runs probe by probe; the paper's tables load by load.
    cells.sort_by_key(|(table, _)| *table);
    let cells = cells.into_iter().map(|(_, cell)| cell);
    Ok((with_focused(cells, focus), loads))
}

/// `cells` with, after each executive cell, the same cell focused on
/// `focus` (paper 002's SCHED_KURT_PROCS beside SCHED_ALL_PROCS).
fn with_focused(cells: impl Iterator<Item = Cell>, focus: Option<&CpuSet>) -> Vec<Cell> {
    let mut out = Vec::new();
    for cell in cells {
        let focused = match focus {
            Some(cpus) if cell.mode == Mode::Executive => Some(Cell {
                load: cell.load.clone(),
                focus: Some(cpus.clone()),
                ..cell
            }),
            _ => None,
        };
        out.push(cell);
        out.extend(focused);
    }
    out
}

/// `--focus` as CPUs: only with `--processes` (its executive is a process
/// of its own, `rtlab exec serve`, which the partition takes in while the
/// table's process and loads stay out).
fn kurt_focus(args: &KurtTableArgs) -> anyhow::Result<Option<CpuSet>> {
    let Some(focus) = &args.focus else {
        return Ok(None);
    };
    if !args.task.processes {
        bad_input!(
            "--focus gives the executive's processes their CPUs alone: it needs --processes (without it the tasks are threads of this very process, which cannot be focused apart from its loads)"
        );
    }
    let cpus = focus
        .resolve(&CpuSet::online())
        .map_err(|e| InputError(format!("--focus: {e}")))?;
    Ok(Some(cpus))
}

/// Checks the command line and plans the cells, every cell's config
/// checked before the first run.
fn kurt_cells(args: &KurtTableArgs) -> anyhow::Result<(Vec<Cell>, Vec<Option<String>>)> {
    if args.run.samples.is_some() {
        bad_input!("--samples takes one run: kurt-table makes many (use rtlab exec periodic)");
    }
    if args.tasks.is_empty() {
        bad_input!("--tasks: at least one task count is needed");
    }
    let focus = kurt_focus(args)?;
    let runs_per_load = if focus.is_some() { 3 } else { 2 };
    let runs_per_count = if args.idle_only {
        runs_per_load
    } else {
        2 * runs_per_load
    };
    let total_ns = (args.tasks.len() as u64)
        .checked_mul(runs_per_count)
        .and_then(|runs| runs.checked_mul(args.duration))
        .filter(|ns| *ns <= MAX_RUN_NS);
    if total_ns.is_none() {
        bad_input!(
            "--duration {}: {} runs of it are longer than {} days in all (a shorter --duration, or fewer --tasks counts)",
            human_duration(args.duration),
            (args.tasks.len() as u64).saturating_mul(runs_per_count),
            MAX_RUN_NS / 86_400_000_000_000
        );
    }
    let loaded = kurt_load(args);
    rtlab_load::parse_list(&loaded).map_err(|e| InputError(format!("--load: {e}")))?;
    let (cells, loads) = plan_cells(args, &loaded, focus.as_ref())?;
    for cell in &cells {
        let config = config_from(&args.task, cell.tasks, args.duration, cell.mode)?;
        super::exec_worker::probe(&args.task, config, cell.focus.as_ref())?;
    }
    Ok((cells, loads))
}

/// The load of the loaded table: --load, else paper 002's disk activity.
fn kurt_load(args: &KurtTableArgs) -> String {
    args.run.load.clone().unwrap_or_else(|| "io".to_string())
}

/// `rtlab exec kurt-table`.
pub fn kurt_table(args: KurtTableArgs) -> anyhow::Result<ExitCode> {
    let (cells, loads) = kurt_cells(&args)?;
    // The --json file is removed again if nothing is written to it (a
    // refused run).
    let outputs = open_outputs(&args.run)?;
    let mut human = outputs.human();
    let total = cells.len();
    if !args.run.quiet {
        eprintln!(
            "kurt-table: {total} runs of {} ({} in all): tasks {:?} every {}, work {}, SCHED_FIFO and executive{}{}, idle{}",
            human_duration(args.duration),
            human_duration(args.duration.saturating_mul(total as u64)),
            args.tasks,
            human_duration(args.task.period),
            human_duration(args.task.work),
            if args.task.processes {
                " processes"
            } else {
                ""
            },
            args.focus.as_ref().map_or(String::new(), |_| {
                format!(", focused on CPUs {} and not", focus_name(&cells))
            }),
            if args.idle_only {
                String::new()
            } else {
                format!(" and under {}", kurt_load(&args))
            }
        );
    }
    let focus = focus_name(&cells);
    let table_json = |done: &[(Cell, RunResult)], evaluations: &[_]| {
        kurt_json(&args, &loads, &focus, done, &outputs, evaluations)
    };
    let mut done: Vec<(Cell, RunResult)> = Vec::new();
    for (index, cell) in cells.into_iter().enumerate() {
        let result = run_cell(&args, &cell, (index + 1, total))?;
        let stop = result.status == RunStatus::Partial;
        done.push((cell, result));
        let results: Vec<RunResult> = done.iter().map(|(_, r)| r.clone()).collect();
        let evaluations = outputs.evaluate(&results);
        outputs.snapshot_json(&table_json(&done, &evaluations))?;
        outputs.write_junit(&title(), &evaluations)?;
        if stop {
            break;
        }
    }
    let results: Vec<RunResult> = done.iter().map(|(_, r)| r.clone()).collect();
    let evaluations = outputs.evaluate(&results);
    if !args.run.quiet {
        write!(human, "{}", kurt_text(&args, &loads, &done))?;
        write!(human, "{}", summary_text(&evaluations))?;
    }
    let doc = || Ok(table_json(&done, &evaluations));
    finish_runs(&outputs, &args.run, &results, &evaluations, doc)
}

/// Runs one cell through `measure` (stored, quiet, no outputs of its
/// own), with its progress line on stderr: `[index/total] …`.
fn run_cell(
    args: &KurtTableArgs,
    cell: &Cell,
    (index, total): (usize, usize),
) -> anyhow::Result<RunResult> {
    let config = config_from(&args.task, cell.tasks, args.duration, cell.mode)?;
    let load_name = cell.load.clone().unwrap_or_else(|| "idle".into());
    if !args.run.quiet {
        eprint!(
            "[{index}/{total}] {} tasks, {}{}, {load_name} ... ",
            cell.tasks,
            cell.mode,
            cell.focus
                .as_ref()
                .map_or(String::new(), |cpus| format!(" focused on CPUs {cpus}"))
        );
    }
    let measured = measure(
        super::exec_worker::probe(&args.task, config, cell.focus.as_ref())?,
        &inner_args(&args.run, cell.load.clone(), true),
        &[],
    )?;
    let result = measured.result;
    if !args.run.quiet {
        let within = within_percentages(&result.series);
        eprintln!(
            "{} within 10 µs, {} within 100 µs{}, run {}{}{}",
            within.map_or("-".into(), |w| format!("{:.2}%", w[0])),
            within.map_or("-".into(), |w| format!("{:.2}%", w[2])),
            super::exec_guards::short_text(&result).map_or(String::new(), |g| format!(", {g}")),
            result.id,
            if result.status == RunStatus::Complete {
                String::new()
            } else {
                format!(
                    " ({})",
                    serde_json::to_value(result.status)?.as_str().unwrap_or("?")
                )
            },
            args.run
                .budget
                .budget
                .as_ref()
                .map_or(String::new(), |b| format!(
                    "; {}",
                    b.evaluate(&result).verdict()
                ))
        );
    }
    Ok(result)
}

/// The row of `tasks` in `mode`, focused or not, under `load`, if it ran.
fn find<'a>(
    done: &'a [(Cell, RunResult)],
    load: &Option<String>,
    tasks: u64,
    (mode, focused): (Mode, bool),
) -> Option<&'a RunResult> {
    done.iter()
        .find(|(c, _)| {
            &c.load == load && c.tasks == tasks && c.mode == mode && c.focus.is_some() == focused
        })
        .map(|(_, r)| r)
}

/// The focused CPUs of the table's cells, as a list (empty: none focused).
fn focus_name(cells: &[Cell]) -> String {
    cells
        .iter()
        .find_map(|c| c.focus.as_ref())
        .map_or(String::new(), CpuSet::to_string)
}

/// Paper 002's layout: per load a table, per scheduler a sub-table, rows =
/// task counts, columns = % within 10/50/100/500/1000 µs.
fn kurt_text(args: &KurtTableArgs, loads: &[Option<String>], done: &[(Cell, RunResult)]) -> String {
    let mut out = String::new();
    for (number, load) in loads.iter().enumerate() {
        out += &format!(
            "\nTable 4.{} ({}): % of activations within x µs of the expected time, tasks every {}, work {}, {} per run\n",
            number + 1,
            load.as_deref().map_or("idle".to_string(), |l| format!("load {l}")),
            human_duration(args.task.period),
            human_duration(args.task.work),
            human_duration(args.duration),
        );
        let titles = super::exec_worker::table_titles(args.task.processes, args.focus.is_some());
        for (letter, mode, focused, title) in titles {
            out += &format!("({letter}) {title}\n");
            let rows: Vec<(String, Option<[f64; 5]>)> = args
                .tasks
                .iter()
                .map(|&tasks| {
                    (
                        tasks.to_string(),
                        find(done, load, tasks, (mode, focused))
                            .and_then(|r| within_percentages(&r.series)),
                    )
                })
                .collect();
            out += &within_table("tasks", &rows);
        }
        out += &guards_text(args, load, done);
    }
    out
}

/// The guards the executive used and the CPU it spun, per task count
/// (its threads'; `rtlab show RUN` has each idle length).
fn guards_text(args: &KurtTableArgs, load: &Option<String>, done: &[(Cell, RunResult)]) -> String {
    let lines: Vec<String> = args
        .tasks
        .iter()
        .filter_map(|&tasks| {
            let result = find(done, load, tasks, (Mode::Executive, false))?;
            let text = super::exec_guards::short_text(result)?;
            Some(format!(
                "  {tasks} tasks: {text} (run {})
",
                result.id
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "the executive's guards and spin (rtlab show RUN: per idle length):\n{}",
        lines.concat()
    )
}

/// The `--json` document, `rtlab.kurt-table/1`: the table's cells, the
/// budget and every run.
fn kurt_json(
    args: &KurtTableArgs,
    loads: &[Option<String>],
    focus: &str,
    done: &[(Cell, RunResult)],
    outputs: &Outputs,
    evaluations: &[rtlab_report::budget::Evaluation],
) -> serde_json::Value {
    let budget_json = outputs.budget_json(evaluations);
    json!({
        "schema": "rtlab.kurt-table/1",
        "period_ns": args.task.period,
        "work_ns": args.task.work,
        "processes": args.task.processes,
        "focus": (!focus.is_empty()).then_some(focus),
        "duration_ns": args.duration,
        "tasks": args.tasks,
        "loads": loads.iter().map(|l| l.clone().unwrap_or_else(|| "idle".into())).collect::<Vec<_>>(),
        "cells": done.iter().map(|(cell, result)| {
            let mut value = cell_json(result);
            value["tasks"] = json!(cell.tasks);
            value["mode"] = json!(cell.mode.as_str());
            value["focused"] = json!(cell.focus.is_some());
            value["load"] = json!(cell.load.clone().unwrap_or_else(|| "idle".into()));
            value
        }).collect::<Vec<_>>(),
        "budget": budget_json,
        "runs": done.iter().map(|(_, r)| r).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_args;

    /// `--tasks`' default, written as text for `--help`, is the task counts
    /// of the preset whose plan the table is.
    #[test]
    fn kurt_table_default_tasks_are_the_preset_s() {
        let args: KurtTableArgs = parse_args(&[]);
        let campaign = rtlab_campaign::read(KURT_PRESET, &|_: &str| Ok(())).unwrap();
        let mut counts: Vec<u64> = campaign
            .probes
            .iter()
            .filter_map(|probe| probe.settings_as::<PeriodicSettings>())
            .map(|settings| settings.tasks as u64)
            .collect();
        counts.sort_unstable();
        counts.dedup();
        assert_eq!(args.tasks, counts);
    }

    /// With --focus each executive cell is followed by the same cell
    /// focused, under the same load: the two tables from one run.
    #[test]
    fn kurt_table_focus_adds_a_focused_cell_after_each_executive_one() {
        let args: KurtTableArgs = parse_args(&["--processes", "--tasks", "1,10"]);
        let focus = CpuSet::from_cpus(vec![1]);
        let (cells, loads) = plan_cells(&args, "io", Some(&focus)).unwrap();
        assert_eq!(loads, [None, Some("io".to_string())]);
        let kinds: Vec<(Option<&str>, u64, Mode, bool)> = cells
            .iter()
            .map(|c| (c.load.as_deref(), c.tasks, c.mode, c.focus.is_some()))
            .collect();
        let mut expected = Vec::new();
        for load in [None, Some("io")] {
            for tasks in [1, 10] {
                expected.push((load, tasks, Mode::Fifo, false));
                expected.push((load, tasks, Mode::Executive, false));
                expected.push((load, tasks, Mode::Executive, true));
            }
        }
        assert_eq!(kinds, expected);
        let (unfocused, _) = plan_cells(&args, "io", None).unwrap();
        assert_eq!(unfocused.len(), 8);
        assert!(unfocused.iter().all(|c| c.focus.is_none()));
    }
}
