//! `rtlab exec periodic|kurt-table`.

use super::exec_taskset::{CheckTasksetArgs, ImportRtAppArgs};
use super::shared::RunArgs;
use crate::input;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use rtlab_exec::guard::Guard;
use rtlab_exec::periodic::Mode;

#[derive(Subcommand)]
pub enum ExecCommand {
    /// Periodic tasks released by rtlab's executive (or self-timed SCHED_FIFO threads), with lateness and deadline statistics.
    Periodic(Box<ExecPeriodicArgs>),
    /// Paper 002's Tables 4.1/4.2: % of activations within 10-1000 µs, 1/10/20/30 tasks, SCHED_FIFO vs the executive, idle and loaded.
    KurtTable(Box<KurtTableArgs>),
    /// Internal: one task of a run with --processes (its plan as JSON).
    #[command(name = rtlab_exec::processes::WORKER_SUBCOMMAND, hide = true)]
    ProcessWorker { plan: String },
    /// Import the periodic tasks of an rt-app JSON file as a task set (TOML) for --taskset.
    ImportRtApp(ImportRtAppArgs),
    /// Check a task-set file and print its tasks and utilization per CPU.
    CheckTaskset(CheckTasksetArgs),
    /// Whether a task set meets every deadline (admission control): per CPU every test, per task its response bound.
    Admit(Box<super::exec_admit::ExecAdmitArgs>),
    /// The executive as a service: processes attach over a Unix socket and are released at their instants.
    Serve(Box<super::exec_serve::ExecServeArgs>),
    /// The processes attached to a running `exec serve`, with their statistics.
    Status(super::exec_serve::ExecStatusArgs),
}

/// `--mode`: the executive's own [`Mode`], each value with its help line.
fn periodic_mode() -> impl TypedValueParser<Value = Mode> {
    let help = |mode| match mode {
        Mode::Executive => {
            "rtlab's executive: sleep to the activation minus --guard, spin, release the task early"
        }
        Mode::Fifo => "Each task sleeps to its own activations (SCHED_FIFO, clock_nanosleep)",
    };
    let values = [Mode::Executive, Mode::Fifo]
        .map(|mode| PossibleValue::new(mode.as_str()).help(help(mode)));
    PossibleValuesParser::new(values).map(|text| text.parse().expect("a Mode's own name"))
}

/// `--baseline`: the [`Mode`] of the run compared with the executive's,
/// self-timed SCHED_FIFO threads only.
fn baseline_mode() -> impl TypedValueParser<Value = Mode> {
    let fifo = PossibleValue::new(Mode::Fifo.as_str()).help(
        "The same tasks as self-timed SCHED_FIFO threads (clock_nanosleep to each activation)",
    );
    PossibleValuesParser::new([fifo]).map(|text| text.parse().expect("a Mode's own name"))
}

/// `--guard`/`--release-early`: `auto` or a duration.
fn guard_value(text: &str) -> Result<Guard, String> {
    text.parse()
}

/// The task set of `rtlab exec periodic` and `rtlab exec kurt-table`.
#[derive(Args)]
pub struct PeriodicTaskArgs {
    /// Period of every task.
    #[arg(long, default_value = "10ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub period: u64,

    /// Spinning work of each activation (wall clock).
    #[arg(long, default_value = "100us", value_parser = input::duration, value_name = "DURATION")]
    pub work: u64,

    /// The CPU of every task and of the executive [default: the last online CPU].
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Activate every task at the same instants (default: task i at i × period / tasks).
    #[arg(long)]
    pub in_phase: bool,

    /// How early the executive wakes before an activation and spins: `auto` (learned online from its own wake-ups, per idle length, starting at 100 µs) or a duration.
    #[arg(long, default_value = "auto", value_parser = guard_value, value_name = "auto|DURATION")]
    pub guard: Guard,

    /// How early the executive releases a task, which spins to its instant: `auto` (learned from the tasks' wake-up delay, starting at 50 µs) or a duration (at most a fixed --guard).
    #[arg(long, default_value = "auto", value_parser = guard_value, value_name = "auto|DURATION")]
    pub release_early: Guard,

    /// With a learned guard: the most the executive and its tasks may spin before an activation, % of the time since the previous one.
    #[arg(long, default_value = "25%", value_parser = rtlab_exec::guard::parse_percent, value_name = "PERCENT")]
    pub spin_budget: u32,

    /// SCHED_FIFO priority of the executive.
    #[arg(long, default_value_t = rtlab_exec::periodic::EXECUTIVE_PRIORITY, value_parser = clap::value_parser!(u32).range(2..=99))]
    pub priority: u32,

    /// SCHED_FIFO priority of the tasks (both modes).
    #[arg(long, default_value_t = rtlab_exec::periodic::TASK_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=98))]
    pub task_priority: u32,

    /// Every task a separate process: attached to `rtlab exec serve` (executive) or SCHED_FIFO timing itself (fifo).
    #[arg(long)]
    pub processes: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec periodic                                  # 10 tasks every 10 ms, 100 µs work, 10 s, executive
  rtlab exec periodic --tasks 30 --period 10ms --work 200us --baseline fifo
  rtlab exec periodic --tasks 20 --mode fifo --load io --json fifo.json
  rtlab exec periodic --tasks 3 --processes --mode fifo  # each task a SCHED_FIFO process
  rtlab exec periodic --taskset examples/taskset.toml --duration 5s   # tasks of their own timing

Every task and the executive run on one CPU (--cpu, default the last online one), as
paper 002's uniprocessor. The executive (SCHED_FIFO 90) sleeps to each activation minus
--guard, spins, and releases the task (SCHED_FIFO 80, blocked on its futex) --release-early
before its instant; the task spins to the instant, stamps its lateness, works --work and
stamps its response. Both margins are learned online by default (--guard auto): the
99.5 % quantile of the executive's own wake-up lateness at each idle length, and of its
tasks' wake-up delay, plus a margin, the spin within --spin-budget; the result's
`executive` (and `rtlab show`) records the guards learned and the CPU spent spinning.
With --mode fifo each task sleeps to its own activations instead (the
paper's SCHED_FIFO). --baseline fifo runs the executive, then the same tasks self-timed, and
prints both with the % of activations within 10/50/100/500/1000 µs (two stored runs).
With --taskset FILE (docs/taskset.md) each task has its own period, offset, work, deadline,
budget, priority and CPU, with one executive per CPU in use; its series are <name>.lateness
and <name>.response, and <name>.execution for a task with a budget (missed = overruns).
Before a --taskset runs, admission (rtlab exec admit) analyses it with the overheads
measured here: not admitted, the refusal is printed and nothing runs (exit code 1) unless
--force. Missed activations and deadline misses are counted, never skipped. --budget checks every run,
e.g. --budget '*.response:missed=0,*.lateness:p99<100us' (deadline misses are the response
series' missed): exit code 1 when one is not kept (docs/budgets.md).")]
pub struct ExecPeriodicArgs {
    /// A task-set file (docs/taskset.md): each task with its own period, offset, work, deadline, budget, priority and CPU, instead of --tasks equal tasks.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tasks", "period", "work", "in_phase", "cpu", "task_priority"])]
    pub taskset: Option<std::path::PathBuf>,

    /// Number of periodic tasks.
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub tasks: u64,

    /// How long to run (activations = duration / period per task).
    #[arg(long, default_value = "10s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: u64,

    /// Who releases the tasks.
    #[arg(long, default_value = "executive", value_parser = periodic_mode())]
    pub mode: Mode,

    /// Also run the same tasks this way and print both side by side.
    #[arg(long, value_parser = baseline_mode())]
    pub baseline: Option<Mode>,

    /// With --taskset: run the set even when admission refuses it (the run records the refusal as a warning).
    #[arg(long, requires = "taskset")]
    pub force: bool,

    #[command(flatten)]
    pub task: PeriodicTaskArgs,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec kurt-table                        # 16 runs of 5 s: about 1.5 min
  rtlab exec kurt-table --duration 30s --json kurt.json
  rtlab exec kurt-table --tasks 1,30 --load vm  # the loaded table under vm instead of io
  rtlab exec kurt-table --processes            # every task a process: under exec serve vs SCHED_FIFO
  rtlab exec kurt-table --processes --focus 1 --tasks 1,10 --duration 2s --idle-only   # and focused

Runs each task count (--tasks, default 1,10,20,30) at --period 10 ms with --work 100 us,
as self-timed SCHED_FIFO threads and under rtlab's executive, idle (paper 002's Table 4.1)
and under --load (default io: Table 4.2), and prints the % of activations that started
within 10, 50, 100, 500 and 1000 µs of their instant. With --processes every task is a
separate process: attached to `rtlab exec serve` (rtlab-client), against SCHED_FIFO
processes timing themselves (paper 002's Program 4.7). --focus CPUS adds a third sub-table,
the executive form focused (paper 002's SCHED_KURT_PROCS against SCHED_ALL_PROCS): its
`rtlab exec serve --focus CPUS` gets those CPUs alone, the loads and every other process
moved to the rest; --cpu must be among them. Every run is stored; --json writes
the table and every run, rewritten after each one. --budget checks every run (one JUnit
testsuite each with --junit): exit code 1 when a run does not keep it.")]
pub struct KurtTableArgs {
    /// Task counts, one row each.
    #[arg(long, default_value = "1,10,20,30", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub tasks: Vec<u64>,

    /// How long each run (cell) lasts.
    #[arg(long, default_value = "5s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: u64,

    /// Only the idle table (no loaded runs).
    #[arg(long)]
    pub idle_only: bool,

    /// With --processes: also run the executive form focused on these CPUs (a list like 1; some CPU must stay for the rest), a third sub-table.
    #[arg(long, value_parser = input::cpus, value_name = "LIST")]
    pub focus: Option<rtlab_core::cpuset::CpuSelection>,

    #[command(flatten)]
    pub task: PeriodicTaskArgs,

    /// --load: the load of the loaded table [default: io]; --samples is refused (many runs).
    #[command(flatten)]
    pub run: RunArgs,
}

/// The command line writes its durations as text for `--help`; they must
/// be the executive's own defaults (the ones a campaign uses).
#[cfg(test)]
mod tests {
    use super::super::shared::parse_args as parse;
    use super::*;
    use rtlab_exec::periodic;

    #[test]
    fn periodic_defaults_are_the_executive_s() {
        let args: ExecPeriodicArgs = parse(&[]);
        assert_eq!(args.task.period, periodic::DEFAULT_PERIOD_NS);
        assert_eq!(args.task.work, periodic::DEFAULT_WORK_NS);
        assert_eq!(args.task.guard, Guard::Auto);
        assert_eq!(args.task.release_early, Guard::Auto);
        assert_eq!(
            args.task.spin_budget,
            rtlab_exec::guard::DEFAULT_SPIN_BUDGET_PERCENT
        );
        let args: ExecPeriodicArgs = parse(&["--guard", "100us", "--release-early", "50us"]);
        assert_eq!(args.task.guard, Guard::Fixed(periodic::GUARD_NS));
        assert_eq!(
            args.task.release_early,
            Guard::Fixed(periodic::RELEASE_EARLY_NS)
        );
        assert_eq!(args.duration, rtlab_probe::DEFAULT_DURATION_NS);
        assert_eq!(args.mode, Mode::Executive);
        assert_eq!(args.baseline, None);
        let args: ExecPeriodicArgs = parse(&["--mode", "fifo", "--baseline", "fifo"]);
        assert_eq!(args.mode, Mode::Fifo);
        assert_eq!(args.baseline, Some(Mode::Fifo));
    }
}
