//! `rtlab tune show|set|apply|watch|status|undo|systemd|check`.

use super::shared::parse_policy;
use clap::{Args, Subcommand};
use rtlab_core::sched::Policy;
use rtlab_tune::check::Severity;
use rtlab_tune::rules_file;
use rtlab_tune::systemd;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum TuneCommand {
    /// Every process and thread: policy, priority, affinity, CPU, context switches.
    Show(TuneShowArgs),
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
    Systemd(Box<SystemdArgs>),
    /// Audit the system's real-time settings, with a fix per finding.
    Check(TuneCheckArgs),
}

/// How a pattern on the command line is matched.
#[derive(Args, Clone)]
pub struct MatchArgs {
    /// Match the command line (anywhere in it, like `pgrep -f`) instead of
    /// the process name (whole, like `pgrep -x`).
    #[arg(long)]
    pub cmdline: bool,
    /// Take the pattern literally instead of as a regular expression.
    #[arg(long)]
    pub exact: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune show                    # every thread
  rtlab tune show 'irq/.*|ktimers/.*|ksoftirqd/.*'   # the kernel threads that matter
  rtlab tune show --cmdline java --rt
  rtlab tune show --json > threads.json

Kernel threads are shown in [brackets], as ps does. Patterns match the whole
process name (a regex, like `pgrep -x`) unless --cmdline or --exact.")]
pub struct TuneShowArgs {
    /// Only processes whose name matches (regex; whole name).
    pub pattern: Option<String>,
    #[command(flatten)]
    pub matching: MatchArgs,
    /// Only real-time threads (fifo, rr, deadline).
    #[arg(long)]
    pub rt: bool,
    /// One line per process (its main thread) instead of per thread.
    #[arg(long)]
    pub processes: bool,
    #[arg(long)]
    pub json: bool,
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
    pub pattern: String,
    #[command(flatten)]
    pub matching: MatchArgs,
    /// Only the threads (of matching processes) whose own name matches.
    #[arg(long, value_name = "PATTERN")]
    pub threads: Option<String>,
    /// Allow matching kernel threads.
    #[arg(long)]
    pub kernel: bool,
    /// Only processes running this executable (root's, and writable by no
    /// one else along its path). It names the file, not who runs it: alone
    /// it still takes only root's processes (add --user or --unit).
    #[arg(long, value_name = "PATH")]
    pub exe: Option<String>,
    /// Only processes whose real and effective user is USER (name or uid).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// Only processes of this systemd unit (e.g. alarmd.service).
    #[arg(long, value_name = "UNIT")]
    pub unit: Option<String>,
    /// Promote matching processes of any user, whatever file they run
    /// (without --user/--unit, only root's processes are promoted, running a
    /// file only root can change: anyone can choose a name).
    #[arg(long)]
    pub allow_any_user: bool,
    #[command(flatten)]
    pub promotion: PromotionArgs,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Confirm a pattern that matches more than 16 processes.
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

/// A rules file given by `--rules`.
#[derive(Args, Clone)]
pub struct RulesArgs {
    /// The rules file (TOML; see docs/tune-rules.md).
    #[arg(long, default_value = rules_file::DEFAULT_PATH, value_name = "FILE")]
    pub rules: PathBuf,
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
    pub rules: RulesArgs,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
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
    pub rules: RulesArgs,
    /// Rescan /proc instead of using the kernel's process events.
    #[arg(long)]
    pub poll: bool,
    /// How often to rescan when polling.
    #[arg(long, default_value = "500ms", value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub interval: u64,
    /// How often to rescan everything even with process events (catches
    /// threads someone demoted).
    #[arg(long, default_value = "10s", value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub rescan: u64,
    /// Demote to SCHED_OTHER a thread rtlab promoted (this watch, or an
    /// earlier command still in the record) that runs this long without
    /// once sleeping (a runaway loop), e.g. 2s. Off by default: a
    /// deliberate busy-poller would be demoted too.
    #[arg(long, value_parser = crate::input::positive_duration, value_name = "DURATION")]
    pub runaway_limit: Option<u64>,
    /// One JSON object per line per event.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune status                         # /etc/rtlab/rules.toml
  rtlab tune status --rules ./rules.toml --json

Exit code 0 when every matched thread has its rule's settings, 1 when some do
not (a restarted process nobody re-promoted, say). Changes nothing.")]
pub struct StatusArgs {
    #[command(flatten)]
    pub rules: RulesArgs,
    #[arg(long)]
    pub json: bool,
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
    pub all: bool,
    /// Restore even what was changed again after rtlab changed it.
    #[arg(long)]
    pub force: bool,
    /// Show what would be restored, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// List the recorded changes.
    #[arg(long, conflicts_with_all = ["all", "force", "dry_run"])]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune systemd alarmd --policy fifo --priority 50
  rtlab tune systemd alarmd.service --policy rr --priority 40 --affinity 1-3 --limit-rttime 200ms
  rtlab tune systemd alarmd --policy fifo --priority 50 --dry-run   # print, write nothing
  rtlab tune systemd --watch-unit --rules /etc/rtlab/rules.toml     # run `rtlab tune watch` as a service
  rtlab tune undo                                                   # remove what was written

Writes UNIT_DIR/UNIT.d/50-rtlab-tune.conf with CPUSchedulingPolicy=,
CPUSchedulingPriority=, CPUAffinity=, LimitRTPRIO= (default: the priority, so
the service may raise itself again) and LimitRTTIME= when asked, checks the unit
with `systemd-analyze verify` (a file that fails is taken back), and runs
`systemctl daemon-reload` where systemd runs. Details: docs/tune-systemd.md.")]
pub struct SystemdArgs {
    /// The service, e.g. alarmd or alarmd.service.
    #[arg(required_unless_present = "watch_unit")]
    pub unit: Option<String>,
    /// Write the unit that runs `rtlab tune watch` instead of a drop-in.
    #[arg(long, conflicts_with_all = ["unit", "policy", "priority", "affinity", "reset_on_fork", "limit_rtprio", "limit_rttime", "memlock_infinity"])]
    pub watch_unit: bool,
    /// The rules file the watch unit applies.
    #[arg(long, requires = "watch_unit", value_name = "FILE", default_value = rtlab_tune::rules_file::DEFAULT_PATH)]
    pub rules: PathBuf,
    /// fifo, rr, other, batch or idle (systemd cannot start a service at deadline).
    #[arg(long, required_unless_present = "watch_unit", value_parser = parse_policy)]
    pub policy: Option<Policy>,
    /// 1-98 for fifo and rr (99 only with --allow-99).
    #[arg(long)]
    pub priority: Option<u32>,
    /// CPUAffinity=, e.g. 1 or 1-3.
    #[arg(long, value_name = "CPULIST")]
    pub affinity: Option<String>,
    /// CPUSchedulingResetOnFork=yes: the service's children start at SCHED_OTHER.
    #[arg(long)]
    pub reset_on_fork: bool,
    /// LimitRTPRIO= (default: the priority).
    #[arg(long, value_name = "N")]
    pub limit_rtprio: Option<u32>,
    /// LimitRTTIME=: real-time CPU time without blocking before the kernel stops the service.
    #[arg(long, value_name = "DURATION", value_parser = crate::input::positive_duration)]
    pub limit_rttime: Option<u64>,
    /// LimitMEMLOCK=infinity, so the service may mlockall().
    #[arg(long)]
    pub memlock_infinity: bool,
    /// Allow priority 99.
    #[arg(long)]
    pub allow_99: bool,
    /// Where units live.
    #[arg(long, value_name = "DIR", default_value = systemd::DEFAULT_UNIT_DIR)]
    pub unit_dir: PathBuf,
    /// Keep the file even if `systemd-analyze verify` finds a problem (or skip the check).
    #[arg(long)]
    pub no_verify: bool,
    /// Print the file instead of writing it.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab tune check                     # every finding, worst first, with a fix each
  rtlab tune check --json | jq '.findings[] | select(.severity != \"ok\")'
  rtlab tune check --fail-on critical  # exit 1 if anything critical (for CI gates)

Checks: preemption model, RT throttling and RT group scheduling, CPU governor and
idle states, THP, swap, irqbalance and IRQ affinity, isolcpus/nohz_full/rcu_nocbs,
timer migration, clocksource, NMI watchdog, memlock and rtprio limits,
virtualization, and kernel threads (ktimers, ksoftirqd, rcu, irq/*) ranked
below a promoted application. Changes nothing. Details: docs/tune-check.md.")]
pub struct TuneCheckArgs {
    /// Exit 1 when the worst finding is at least this severity (warning or critical).
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<Severity>,
    #[arg(long)]
    pub json: bool,
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    s.parse()
}
