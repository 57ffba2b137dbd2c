//! `rtlab tune`: show threads, promote them (`set`, rules with `apply` and
//! `watch`), report whether rules hold (`status`), take changes back
//! (`undo`), write systemd drop-ins and audit the system (`check`).

use crate::input::bad_input;
use crate::invocation::command_line;
use anyhow::Context;
use clap::{Args, Subcommand};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{DeadlineParams, Policy};
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

#[derive(Subcommand)]
pub enum TuneCommand {
    /// Every process and thread: policy, priority, affinity, CPU, context switches.
    Show(ShowArgs),
    /// Promote the threads of matching processes now (chrt + pgrep in one safe command).
    Set(Box<SetArgs>),
    /// Apply a rules file once.
    Apply(ApplyArgs),
    /// Keep applying a rules file as matching processes and threads start.
    Watch(WatchArgs),
    /// Which rules of a rules file hold now, thread by thread.
    Status(StatusArgs),
    /// Take back what `rtlab tune` changed (the last command, or all).
    Undo(UndoArgs),
    /// Write a systemd drop-in that starts a service at a real-time priority.
    Systemd(Box<super::tune_systemd::SystemdArgs>),
    /// Audit the system's real-time settings, with a fix per finding.
    Check(super::tune_check::CheckArgs),
}

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

/// How a pattern on the command line is matched.
#[derive(Args, Clone)]
pub struct MatchArgs {
    /// Match the command line (anywhere in it, like `pgrep -f`) instead of
    /// the process name (whole, like `pgrep -x`).
    #[arg(long)]
    cmdline: bool,
    /// Take the pattern literally instead of as a regular expression.
    #[arg(long)]
    exact: bool,
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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune show                    # every thread
  rtlab tune show 'irq/.*|ktimers/.*|ksoftirqd/.*'   # the kernel threads that matter
  rtlab tune show --cmdline java --rt
  rtlab tune show --json > threads.json

Kernel threads are shown in [brackets], as ps does. Patterns match the whole
process name (a regex, like `pgrep -x`) unless --cmdline or --exact.")]
pub struct ShowArgs {
    /// Only processes whose name matches (regex; whole name).
    pattern: Option<String>,
    #[command(flatten)]
    matching: MatchArgs,
    /// Only real-time threads (fifo, rr, deadline).
    #[arg(long)]
    rt: bool,
    /// One line per process (its main thread) instead of per thread.
    #[arg(long)]
    processes: bool,
    #[arg(long)]
    json: bool,
}

fn show(args: &ShowArgs) -> anyhow::Result<ExitCode> {
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

/// The promotion flags shared by `set` (and mirrored by rules files).
#[derive(Args, Clone)]
pub struct PromotionArgs {
    /// fifo, rr, deadline, other, batch or idle.
    #[arg(long, value_parser = parse_policy)]
    pub policy: Policy,
    /// 1-98 for fifo and rr (99 only with --allow-99).
    #[arg(long)]
    pub priority: Option<u32>,
    /// SCHED_DEADLINE runtime, e.g. 2ms.
    #[arg(long, value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub runtime: Option<u64>,
    /// SCHED_DEADLINE relative deadline (default: the period).
    #[arg(long, value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub deadline: Option<u64>,
    /// SCHED_DEADLINE period, e.g. 10ms.
    #[arg(long, value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub period: Option<u64>,
    /// CPUs the threads may run on, e.g. 1 or 1-3 (default: left as is).
    #[arg(long, value_name = "CPULIST")]
    pub affinity: Option<String>,
    /// Children of the promoted threads start at SCHED_OTHER.
    #[arg(long)]
    pub reset_on_fork: bool,
    /// Allow priority 99 (the level of the kernel's watchdog and migration threads).
    #[arg(long)]
    pub allow_99: bool,
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune set alarmd --policy fifo --priority 50          # every thread of root's alarmd
  rtlab tune set alarmd --user alarm --policy fifo --priority 50   # alarmd run by user alarm
  rtlab tune set alarmd --unit alarmd.service --policy fifo --priority 50
  rtlab tune set 'alarmd|msgd' --policy fifo --priority 50   # paper 000: pgrep | xargs chrt -f
  rtlab tune set server --threads 'io-.*' --policy rr --priority 30 --affinity 1
  rtlab tune set --cmdline 'java .*Gateway' --policy fifo --priority 40 --dry-run
  rtlab tune set 'ktimers/.*' --kernel --policy fifo --priority 51
  rtlab tune set planner --policy deadline --runtime 2ms --period 10ms
  rtlab tune undo                                            # take it back

Every change is recorded first (see `rtlab tune undo --list`). Kernel threads are
touched only with --kernel; priority 99 only with --allow-99; rtlab itself never.")]
pub struct SetArgs {
    /// Processes to promote: a regex matched against the whole process name.
    pattern: String,
    #[command(flatten)]
    matching: MatchArgs,
    /// Only the threads (of matching processes) whose own name matches.
    #[arg(long, value_name = "PATTERN")]
    threads: Option<String>,
    /// Allow matching kernel threads.
    #[arg(long)]
    kernel: bool,
    /// Only processes running this executable (root's, and writable by no
    /// one else along its path). It names the file, not who runs it: alone
    /// it still takes only root's processes (add --user or --unit).
    #[arg(long, value_name = "PATH")]
    exe: Option<String>,
    /// Only processes whose real and effective user is USER (name or uid).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Only processes of this systemd unit (e.g. alarmd.service).
    #[arg(long, value_name = "UNIT")]
    unit: Option<String>,
    /// Promote matching processes of any user, whatever file they run
    /// (without --user/--unit, only root's processes are promoted, running a
    /// file only root can change: anyone can choose a name).
    #[arg(long)]
    allow_any_user: bool,
    #[command(flatten)]
    promotion: PromotionArgs,
    /// Show what would change, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Confirm a pattern that matches more than 16 processes.
    #[arg(long)]
    yes: bool,
    #[arg(long)]
    json: bool,
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
    let results = if args.dry_run {
        preview(&rules, &tasks)
    } else {
        let log = ChangeLog::default_location();
        let txn = log.begin(&command_line())?;
        promote::apply(&rules, &tasks, &txn)
    };
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

/// A rules file given by `--rules`.
#[derive(Args, Clone)]
pub struct RulesArgs {
    /// The rules file (TOML; see docs/tune-rules.md).
    #[arg(long, default_value = rules_file::DEFAULT_PATH, value_name = "FILE")]
    rules: PathBuf,
}

impl RulesArgs {
    fn load(&self) -> anyhow::Result<Vec<Rule>> {
        match rules_file::load(&self.rules) {
            Ok(rules) => Ok(rules),
            Err(e) => bad_input!("{e}"),
        }
    }
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune apply                           # /etc/rtlab/rules.toml once
  rtlab tune apply --rules ./rules.toml --dry-run
  rtlab tune watch                           # and keep it applied

The first rule that matches a thread decides its settings: put specific rules
first. Rules file format: docs/tune-rules.md.")]
pub struct ApplyArgs {
    #[command(flatten)]
    rules: RulesArgs,
    /// Show what would change, change nothing.
    #[arg(long)]
    dry_run: bool,
    #[arg(long)]
    json: bool,
}

fn apply(args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    let rules = args.rules.load()?;
    let tasks =
        task::scan_with(rtlab_tune::rule::detail_for(&rules)).context("cannot read /proc")?;
    let results = if args.dry_run {
        preview(&rules, &tasks)
    } else {
        let log = ChangeLog::default_location();
        let txn = log.begin(&command_line())?;
        promote::apply(&rules, &tasks, &txn)
    };
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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune watch                                  # /etc/rtlab/rules.toml, until stopped
  rtlab tune watch --rules ./rules.toml --json      # one JSON object per event
  rtlab tune watch --runaway-limit 2s               # demote a promoted thread that never sleeps
  rtlab tune systemd --watch-unit                   # run it as a service

It applies the rules to everything running, then to each thread as it starts,
renames itself or runs a new program, using the kernel's process events (root),
or by rescanning /proc every --interval without them. With --runaway-limit it
demotes a thread rtlab promoted that runs that long without sleeping. Every change is recorded
for `rtlab tune undo`; stopping the watch changes nothing back. SIGHUP re-reads
the rules file (a bad file keeps the rules in force).")]
pub struct WatchArgs {
    #[command(flatten)]
    rules: RulesArgs,
    /// Rescan /proc instead of using the kernel's process events.
    #[arg(long)]
    poll: bool,
    /// How often to rescan when polling.
    #[arg(long, default_value = "500ms", value_parser = crate::input::positive_duration, value_name = "DURATION")]
    interval: u64,
    /// How often to rescan everything even with process events (catches
    /// threads someone demoted).
    #[arg(long, default_value = "10s", value_parser = crate::input::positive_duration, value_name = "DURATION")]
    rescan: u64,
    /// Demote to SCHED_OTHER a thread rtlab promoted (this watch, or an
    /// earlier command still in the record) that runs this long without
    /// once sleeping (a runaway loop), e.g. 2s. Off by default: a
    /// deliberate busy-poller would be demoted too.
    #[arg(long, value_parser = crate::input::positive_duration, value_name = "DURATION")]
    runaway_limit: Option<u64>,
    /// One JSON object per line per event.
    #[arg(long)]
    json: bool,
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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune status                         # /etc/rtlab/rules.toml
  rtlab tune status --rules ./rules.toml --json

Exit code 0 when every matched thread has its rule's settings, 1 when some do
not (a restarted process nobody re-promoted, say). Changes nothing.")]
pub struct StatusArgs {
    #[command(flatten)]
    rules: RulesArgs,
    #[arg(long)]
    json: bool,
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

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune undo --list          # what is recorded
  rtlab tune undo                 # the last command's changes
  rtlab tune undo --all --dry-run
  rtlab tune undo --all

A thread is restored only if it is the same thread (id and start time) and
still has what rtlab gave it; one changed since is left alone unless --force.
Threads that ended need nothing. Files rtlab wrote get their old content back,
or are removed if rtlab created them.")]
pub struct UndoArgs {
    /// Every recorded change, not only the last command's.
    #[arg(long)]
    all: bool,
    /// Restore even what was changed again after rtlab changed it.
    #[arg(long)]
    force: bool,
    /// Show what would be restored, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// List the recorded changes.
    #[arg(long, conflicts_with_all = ["all", "force", "dry_run"])]
    list: bool,
    #[arg(long)]
    json: bool,
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
