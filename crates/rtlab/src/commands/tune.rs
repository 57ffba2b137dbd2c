//! `rtlab tune`: show threads, promote them (`set`, rules with `apply` and
//! `watch`), report whether rules hold (`status`), take changes back
//! (`undo`), write systemd drop-ins and audit the system (`check`).

use crate::cli::{
    ApplyArgs, MatchArgs, PromotionArgs, RulesArgs, SetArgs, StatusArgs, TuneCommand, TuneShowArgs,
    UndoArgs, WatchArgs,
};
use crate::input::bad_input;
use crate::invocation::command_line;
use crate::terminal::out;
use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::DeadlineParams;
use rtlab_tune::changes::{Change, ChangeLog, UndoOutcome, UndoScope, Undone};
use rtlab_tune::promote::{self, Applied, Outcome};
use rtlab_tune::rule::{Field, Pattern, Promotion, Rule, Selector};
use rtlab_tune::rules_file;
use rtlab_tune::task::{self, Task};
use rtlab_tune::watch::{self, RuleSource, WatchEvent, WatchOptions};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn run(command: TuneCommand) -> anyhow::Result<ExitCode> {
    match command {
        TuneCommand::Show(args) => show(&args),
        TuneCommand::Set(args) => set(&args),
        TuneCommand::Apply(args) => apply(&args),
        TuneCommand::Watch(args) => watch_rules(&args),
        TuneCommand::Status(args) => status(&args),
        TuneCommand::Undo(args) => undo(&args),
        TuneCommand::Systemd(args) => super::tune_systemd::run(&args),
        TuneCommand::Check(args) => super::tune_check::run(&args),
    }
}

impl MatchArgs {
    fn pattern(&self, source: &str, flag: &str) -> anyhow::Result<Pattern> {
        let field = if self.cmdline {
            Field::Cmdline
        } else {
            Field::Name
        };
        match Pattern::new(source, field, self.exact) {
            Ok(p) => Ok(p),
            Err(e) => bad_input!("{flag}: {e}"),
        }
    }
}

fn show(args: &TuneShowArgs) -> anyhow::Result<ExitCode> {
    let pattern = match &args.pattern {
        Some(p) => Some(args.matching.pattern(p, "PATTERN")?),
        None => None,
    };
    let selector = pattern.map(|process| Selector {
        process,
        threads: None,
        kernel: true,
        vouch: Default::default(),
    });
    let tasks: Vec<Task> = task::scan()
        .context("cannot read /proc")?
        .into_iter()
        .filter(|t| selector.as_ref().is_none_or(|s| s.matches(t)))
        .filter(|t| !args.rt || t.policy.is_realtime())
        .filter(|t| !args.processes || t.pid == t.tid)
        .collect();
    if args.json {
        let doc = json!({ "schema": "rtlab.tune-show/1", "threads": tasks });
        out!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{:>7} {:>7}  {:<24} {:<8} {:>4} {:>4}  {:<9} {:>3} {:>10} {:>9}",
        "PID",
        "TID",
        "NAME",
        "POLICY",
        "PRIO",
        "NICE",
        "CPUS",
        "CPU",
        "VOLUNTARY",
        "PREEMPTED"
    );
    for t in &tasks {
        let name = if t.kernel_thread {
            format!("[{}]", t.name)
        } else if t.pid != t.tid && t.name != t.process_name {
            format!("{}/{}", t.process_name, t.name)
        } else {
            t.name.clone()
        };
        let count = |c: Option<u64>| c.map_or("-".to_string(), |c| c.to_string());
        out!(
            "{:>7} {:>7}  {:<24} {:<8} {:>4} {:>4}  {:<9} {:>3} {:>10} {:>9}",
            t.pid,
            t.tid,
            name,
            t.policy.to_string(),
            if t.policy.takes_priority() {
                t.priority.to_string()
            } else {
                "-".into()
            },
            t.nice,
            t.affinity,
            t.cpu.map_or("-".to_string(), |c| c.to_string()),
            count(t.voluntary_switches),
            count(t.involuntary_switches),
        );
    }
    let processes = tasks
        .iter()
        .map(|t| t.pid)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    out!(
        "{} threads in {} processes ({} real-time)",
        tasks.len(),
        processes,
        tasks.iter().filter(|t| t.policy.is_realtime()).count()
    );
    Ok(ExitCode::SUCCESS)
}

impl PromotionArgs {
    pub fn promotion(&self) -> anyhow::Result<Promotion> {
        let priority = match (self.priority, self.policy.takes_priority()) {
            (Some(p), _) => p,
            (None, true) => bad_input!("--priority: {} needs a priority from 1 to 98", self.policy),
            (None, false) => 0,
        };
        let deadline = match (self.runtime, self.deadline, self.period) {
            (None, None, None) => None,
            (Some(runtime_ns), deadline, Some(period_ns)) => Some(DeadlineParams {
                runtime_ns,
                deadline_ns: deadline.unwrap_or(period_ns),
                period_ns,
            }),
            _ => bad_input!(
                "--runtime and --period: the deadline policy needs both (and optionally --deadline)"
            ),
        };
        let affinity = match &self.affinity {
            Some(list) => match CpuSet::parse(list) {
                Ok(cpus) => Some(cpus),
                Err(e) => bad_input!("--affinity: {e}"),
            },
            None => None,
        };
        let promotion = Promotion {
            policy: self.policy,
            priority,
            deadline,
            affinity,
            reset_on_fork: self.reset_on_fork.then_some(true),
        };
        if let Err((field, message)) = promotion.validate(self.allow_99) {
            bad_input!("--{field}: {message}");
        }
        Ok(promotion)
    }
}

/// More processes than a critical path has: a pattern that matches more
/// is likely broader than meant (`.*`), and needs --yes.
const MANY_PROCESSES: usize = 16;

fn set(args: &SetArgs) -> anyhow::Result<ExitCode> {
    let process = args.matching.pattern(&args.pattern, "PATTERN")?;
    let threads = match &args.threads {
        Some(t) => match Pattern::new(t, Field::Name, args.matching.exact) {
            Ok(p) => Some(p),
            Err(e) => bad_input!("--threads: {e}"),
        },
        None => None,
    };
    let vouch = match rtlab_tune::identity::Vouch::new(
        args.exe.as_deref(),
        args.user.as_deref(),
        args.unit.as_deref(),
        None,
        args.allow_any_user,
    ) {
        Ok(vouch) => vouch,
        Err((field, message)) => bad_input!("--{field}: {message}"),
    };
    let rule = Rule {
        label: args.pattern.clone(),
        selector: Selector {
            process,
            threads,
            kernel: args.kernel,
            vouch,
        },
        promotion: args.promotion.promotion()?,
        origin: None,
    };
    let rules = [rule];
    let tasks =
        task::scan_with(rtlab_tune::rule::detail_for(&rules)).context("cannot read /proc")?;
    let skipped_kernel = if args.kernel {
        0
    } else {
        count_kernel_matches(&rules[0], &tasks)
    };
    if !args.dry_run && !args.yes {
        let mut processes: Vec<&str> = Vec::new();
        let mut pids = std::collections::BTreeSet::new();
        for t in tasks
            .iter()
            .filter(|t| rules[0].selector.matches(t) && !promote::is_rtlab(t))
        {
            if pids.insert(t.pid) && processes.len() < 5 {
                processes.push(&t.process_name);
            }
        }
        if pids.len() > MANY_PROCESSES {
            bad_input!(
                "PATTERN '{}' matches {} processes ({}, ...): check with --dry-run, then \
                 confirm with --yes",
                args.pattern,
                pids.len(),
                processes.join(", ")
            );
        }
    }
    let results = apply_or_preview(&rules, &tasks, args.dry_run)?;
    if results.is_empty() && !args.json {
        eprintln!("no thread matches {}", rules[0].selector.process);
        if skipped_kernel > 0 {
            eprintln!(
                "{skipped_kernel} kernel thread(s) match; they are left alone without --kernel"
            );
        }
        return Ok(ExitCode::from(1));
    }
    report_applied("set", &results, args.dry_run, args.json, skipped_kernel)?;
    // Only skipped processes: nothing the user asked for was promoted.
    if results
        .iter()
        .all(|a| matches!(a.outcome, Outcome::Skipped { .. }))
    {
        return Ok(ExitCode::from(1));
    }
    Ok(applied_exit(&results))
}

/// Kernel threads a rule would match if it allowed them: named in the
/// output so a user who meant them learns about --kernel.
fn count_kernel_matches(rule: &Rule, tasks: &[Task]) -> usize {
    let mut with_kernel = rule.selector.clone();
    with_kernel.kernel = true;
    tasks
        .iter()
        .filter(|t| t.kernel_thread && with_kernel.matches(t))
        .count()
}

/// Applies `rules` to `tasks` in one recorded transaction, or with
/// `dry_run` only says what that would do.
fn apply_or_preview(rules: &[Rule], tasks: &[Task], dry_run: bool) -> anyhow::Result<Vec<Applied>> {
    if dry_run {
        return Ok(preview(rules, tasks));
    }
    let log = ChangeLog::default_location();
    let txn = log.begin(&command_line())?;
    Ok(promote::apply(rules, tasks, &txn))
}

/// What `apply` would do, without doing it.
fn preview(rules: &[Rule], tasks: &[Task]) -> Vec<Applied> {
    promote::status(rules, tasks)
        .into_iter()
        .enumerate()
        .flat_map(|(index, status)| {
            let label = status.label.clone();
            let skipped = status.skipped;
            status
                .threads
                .into_iter()
                .map(move |t| Applied {
                    rule: Some(index),
                    label: label.clone(),
                    pid: t.pid,
                    tid: t.tid,
                    starttime: t.starttime,
                    name: t.name,
                    process_name: t.process_name,
                    outcome: if t.holds {
                        Outcome::Held {
                            settings: t.settings,
                        }
                    } else {
                        Outcome::Changed {
                            old: t.settings,
                            new: t.target,
                        }
                    },
                })
                .chain(skipped)
        })
        .collect()
}

fn report_applied(
    verb: &str,
    results: &[Applied],
    dry_run: bool,
    json: bool,
    skipped_kernel: usize,
) -> anyhow::Result<()> {
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|a| f(&a.outcome)).count();
    let changed = count(|o| matches!(o, Outcome::Changed { .. }));
    let held = count(|o| matches!(o, Outcome::Held { .. }));
    let failed = count(|o| matches!(o, Outcome::Failed { .. }));
    let vanished = count(|o| matches!(o, Outcome::Vanished));
    let skipped = count(|o| matches!(o, Outcome::Skipped { .. }));
    if json {
        let doc = json!({
            "schema": format!("rtlab.tune-{verb}/1"),
            "dry_run": dry_run,
            "threads": results,
            "changed": changed,
            "held": held,
            "failed": failed,
            "vanished": vanished,
            "skipped": skipped,
            "kernel_threads_skipped": skipped_kernel,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    for a in results {
        let line = a.to_string();
        out!(
            "{}",
            if dry_run {
                line.replacen("changed ", "would   ", 1)
            } else {
                line
            }
        );
    }
    out!(
        "{} thread(s): {} {}, {} already held, {} failed, {} ended first, {} skipped{}",
        results.len(),
        changed,
        if dry_run { "would change" } else { "changed" },
        held,
        failed,
        vanished,
        skipped,
        if dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if skipped_kernel > 0 {
        out!("{skipped_kernel} kernel thread(s) also match; they are left alone without --kernel");
    }
    Ok(())
}

fn applied_exit(results: &[Applied]) -> ExitCode {
    if results.iter().any(Applied::failed) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

impl RulesArgs {
    fn load(&self) -> anyhow::Result<Vec<Rule>> {
        match rules_file::load(&self.rules) {
            Ok(rules) => Ok(rules),
            Err(e) => bad_input!("{e}"),
        }
    }
}

fn apply(args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    let rules = args.rules.load()?;
    let tasks =
        task::scan_with(rtlab_tune::rule::detail_for(&rules)).context("cannot read /proc")?;
    let results = apply_or_preview(&rules, &tasks, args.dry_run)?;
    report_applied("apply", &results, args.dry_run, args.json, 0)?;
    if !args.json {
        for (i, rule) in rules.iter().enumerate() {
            if !results.iter().any(|a| a.rule == Some(i)) {
                out!("rule '{}' matches no thread now", rule.label);
            }
        }
    }
    Ok(applied_exit(&results))
}

struct FileRules(PathBuf);

impl RuleSource for FileRules {
    fn load(&self) -> Result<Vec<Rule>, String> {
        rules_file::load(&self.0).map_err(|e| e.to_string())
    }
}

fn watch_rules(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    // Refuse a bad file with exit 2 before anything starts.
    args.rules.load()?;
    let stop = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload))?;
    let options = WatchOptions {
        poll_interval: std::time::Duration::from_nanos(args.interval),
        rescan_interval: std::time::Duration::from_nanos(args.rescan),
        poll_only: args.poll,
        runaway_limit: args.runaway_limit.map(std::time::Duration::from_nanos),
    };
    let json = args.json;
    let rules_path = args.rules.rules.display().to_string();
    let stop_on_closed_output = Arc::clone(&stop);
    let mut report = |event: WatchEvent| {
        if let Err(e) = print_watch_event(&event, json, &rules_path) {
            // Nobody reads the output any more (a closed pipe): stop
            // rather than promote unseen.
            eprintln!("tune watch: cannot write its output ({e}); stopping");
            stop_on_closed_output.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let log = ChangeLog::default_location();
    let source = FileRules(args.rules.rules.clone());
    match watch::watch(&source, &log, &options, &stop, &reload, &mut report) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => anyhow::bail!("tune watch: {e}"),
    }
}

fn print_watch_event(event: &WatchEvent, json: bool, rules: &str) -> std::io::Result<()> {
    if json {
        out!("{}", serde_json::to_string(event)?);
        return Ok(());
    }
    match event {
        WatchEvent::Started {
            mode,
            reason,
            rules: count,
        } => {
            out!("watching with {mode}: {count} rule(s) from {rules}");
            if let Some(reason) = reason {
                out!("  ({reason})");
            }
        }
        WatchEvent::Applied(a) => out!("{a}"),
        WatchEvent::Runaway {
            cpu_ms,
            wall_ms,
            applied,
        } => {
            let who = format!("{}/{} {}", applied.pid, applied.tid, applied.name);
            match &applied.outcome {
                Outcome::Changed { old, new } => out!(
                    "runaway  {who}: ran {cpu_ms} ms of the last {wall_ms} ms without sleeping; \
                     demoted: {old} -> {new}"
                ),
                other => out!(
                    "runaway  {who}: ran {cpu_ms} ms of the last {wall_ms} ms without sleeping; \
                     could not demote it: {}",
                    match other {
                        Outcome::Failed { error, .. } => error.clone(),
                        _ => "it already had normal scheduling".into(),
                    }
                ),
            }
        }
        WatchEvent::Reloaded { rules } => out!("reloaded: {rules} rule(s)"),
        WatchEvent::ReloadFailed { error } => {
            eprintln!("reload refused, the previous rules stay in force: {error}")
        }
        WatchEvent::Stopped { changed, failed } => out!(
            "stopped: {changed} change(s), {failed} failure(s); \
             nothing is changed back (rtlab tune undo does that)"
        ),
    }
    Ok(())
}

fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let rules = args.rules.load()?;
    let tasks =
        task::scan_with(rtlab_tune::rule::detail_for(&rules)).context("cannot read /proc")?;
    let statuses = promote::status(&rules, &tasks);
    let all_hold = statuses.iter().all(|s| s.holds());
    if args.json {
        let doc = json!({
            "schema": "rtlab.tune-status/1",
            "rules_file": args.rules.rules,
            "holds": all_hold,
            "rules": statuses,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for s in &statuses {
            let held = s.threads.iter().filter(|t| t.holds).count();
            let verdict = match (s.threads.len(), s.holds()) {
                (0, _) => "no thread matches now".to_string(),
                (n, true) => format!("holds on all {n} thread(s)"),
                (n, false) => format!("DOES NOT HOLD on {} of {n} thread(s)", n - held),
            };
            out!("rule '{}' ({}): {verdict}", s.label, s.promotion);
            for t in s.threads.iter().filter(|t| !t.holds) {
                out!("  {}/{} {}: {}", t.pid, t.tid, t.name, t.settings);
            }
            for a in &s.skipped {
                out!("  {a}");
            }
        }
    }
    Ok(if all_hold {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn undo(args: &UndoArgs) -> anyhow::Result<ExitCode> {
    let log = ChangeLog::default_location();
    if args.list {
        let entries = log.entries()?;
        if args.json {
            let doc =
                json!({ "schema": "rtlab.tune-changes/1", "file": log.path(), "entries": entries });
            out!("{}", serde_json::to_string_pretty(&doc)?);
        } else if entries.is_empty() {
            out!("no changes recorded in {}", log.path().display());
        } else {
            for e in &entries {
                out!("#{:<4} {}  {e}  [{}]", e.txn, e.at, e.command);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let scope = if args.all {
        UndoScope::All
    } else {
        UndoScope::Last
    };
    let undone = log.undo(scope, args.force, args.dry_run)?;
    // Left alone counts as not done: the user has something to decide.
    let incomplete = undone.iter().any(|u| {
        matches!(
            u.outcome,
            UndoOutcome::Failed { .. } | UndoOutcome::ChangedSince { .. }
        )
    });
    let files_restored: Vec<&Undone> = undone
        .iter()
        .filter(|u| {
            !args.dry_run
                && u.outcome == UndoOutcome::Restored
                && matches!(u.entry.change, Change::File { .. })
        })
        .collect();
    // systemd keeps what it read until told to read again.
    let reload = (!files_restored.is_empty()).then(rtlab_tune::systemd::reload);
    if args.json {
        let doc = json!({
            "schema": "rtlab.tune-undo/1",
            "dry_run": args.dry_run,
            "undone": undone,
            "reload": reload,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else if undone.is_empty() {
        out!(
            "nothing to undo (no changes recorded in {})",
            log.path().display()
        );
    } else {
        for u in &undone {
            let what = match &u.outcome {
                UndoOutcome::Restored if args.dry_run => "would restore".to_string(),
                UndoOutcome::Restored => "restored".to_string(),
                UndoOutcome::Gone => "gone (ended; nothing to restore)".to_string(),
                UndoOutcome::ChangedSince { now } => {
                    format!("left alone: changed since ({now}); --force restores it")
                }
                UndoOutcome::Failed { error } => format!("FAILED: {error}"),
            };
            out!("{}: {what}", u.entry);
        }
        if let Some(reload) = &reload {
            out!("{reload}");
        }
        for u in &files_restored {
            if let Change::File { path, .. } = &u.entry.change {
                if path.ends_with(rtlab_tune::systemd::WATCH_UNIT_NAME) {
                    out!(
                        "if it was enabled: systemctl disable --now {}",
                        rtlab_tune::systemd::WATCH_UNIT_NAME
                    );
                }
            }
        }
    }
    Ok(if incomplete {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
