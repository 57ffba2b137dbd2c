//! `rtlab measure timer|switch|noise` and `rtlab quick`.

use super::shared::{parse_policy, with_default_priority, BudgetArgs, RunArgs, StoreArgs};
use crate::input;
use crate::outputs::OutputTarget;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::Policy;
use rtlab_probe::timer::WaitMode;

#[derive(Subcommand)]
pub enum Measure {
    /// Timer wake-up latency per CPU, as cyclictest measures it.
    Timer(Box<TimerArgs>),
    /// Interrupt latency and the switch to a task released through a futex, semaphore, pipe, ...
    Switch(Box<SwitchArgs>),
    /// OS noise per CPU, attributed to interrupts, softirqs and preemption.
    Noise(Box<NoiseArgs>),
}

/// `--mode`: the probe's own [`WaitMode`], each value with its help line.
fn wait_mode() -> impl TypedValueParser<Value = WaitMode> {
    let help = |mode| match mode {
        WaitMode::Abs => "clock_nanosleep to absolute deadlines on a fixed grid",
        WaitMode::Rel => "clock_nanosleep relative to the time before sleeping (cyclictest -r)",
        WaitMode::Timerfd => "A periodic absolute timerfd; the kernel counts overruns",
        WaitMode::Posix => {
            "A POSIX interval timer signalling the thread, sigwaitinfo (cyclictest -x)"
        }
    };
    let values = WaitMode::ALL.map(|mode| PossibleValue::new(mode.as_str()).help(help(mode)));
    PossibleValuesParser::new(values).map(|text| text.parse().expect("one of WaitMode::ALL"))
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure timer                                   # every CPU, FIFO 90, 1 ms, 10 s
  rtlab measure timer --cpus 1 --duration 1m --json run.json
  rtlab measure timer --priority 30 --loops 100000 --histfile hist.txt --hist-max 1000us
                                                        # paper 000's cyclictest -p 30 -l 100000 -H 1000
  rtlab measure timer --break-at 500us                  # stop at the first wake-up later than 500 µs
  rtlab measure timer --smp --priority 95 --mode posix --duration 1d
                                                        # cyclictest -S -p 95 -x -D 1d
  rtlab measure timer --threads 4 --priospread --aligned 50us --duration 2h30m
                                                        # cyclictest -t 4 -p 90 --priospread -A 50 -D 150m
  rtlab measure timer --cpus 1 --witness-period 20ms    # top spikes explained from 20 ms windows (docs/runs.md)
  rtlab measure timer --duration 1m --budget 'p99.9<100us,max<2ms,missed=0' --junit budget.xml
                                                        # exit code 1 when a limit is not kept (CI)

Defaults: SCHED_FIFO 90, one thread pinned per online CPU (cyclictest -S), all threads
waking together (-A 0), absolute clock_nanosleep, memory locked, /dev/cpu_dma_latency held at 0, timer slack 1 ns. Every setting in
effect is recorded in the JSON result. Exit code: 0 done, 1 failure or --break-at
crossed or --budget not kept, 2 bad input, 130 stopped by a signal (the partial result is
stored, and written to --json, unless --no-store). Budgets: docs/budgets.md.")]
pub struct TimerArgs {
    /// CPUs to measure on, one pinned thread each: `all` or a list like 0,2-3.
    #[arg(long, default_value = "all", value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: CpuSelection,

    /// One thread pinned per online CPU, clock_nanosleep, one priority: cyclictest -S
    /// (rtlab's default layout, said explicitly).
    #[arg(long, conflicts_with_all = ["cpus", "threads", "priospread"])]
    pub smp: bool,

    /// N threads, none pinned, each free to run on any of --cpus (cyclictest -t N without -a).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Thread i runs at --priority minus i (cyclictest --priospread).
    #[arg(long)]
    pub priospread: bool,

    /// Thread i's deadlines come i × OFFSET after the first thread's (cyclictest -A);
    /// without OFFSET every thread wakes together, as by default.
    #[arg(long, value_name = "OFFSET", num_args = 0..=1, default_missing_value = "0us", value_parser = input::duration)]
    pub aligned: Option<u64>,

    /// Period of the measuring threads.
    #[arg(long, default_value = "1ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub interval: u64,

    /// Added to the interval of each further thread (cyclictest -d).
    #[arg(long, default_value = "0us", value_parser = input::duration, value_name = "DURATION")]
    pub distance: u64,

    /// How long to measure [default: 10s].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION", conflicts_with = "loops")]
    pub duration: Option<u64>,

    /// Deadlines per thread instead of a duration (samples + missed = N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,

    /// Scheduling policy of the measuring threads: fifo, rr, other, batch, idle, deadline.
    #[arg(long, default_value = "fifo", value_parser = parse_policy)]
    pub policy: Policy,

    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99), help = with_default_priority("Real-time priority 1-99 for fifo and rr"))]
    pub priority: Option<u32>,

    /// SCHED_DEADLINE runtime per period (deadline = period = interval).
    #[arg(long, default_value = "100us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub dl_runtime: u64,

    /// How the threads wait for their deadline.
    #[arg(long, default_value = "abs", value_parser = wait_mode())]
    pub mode: WaitMode,

    /// Write a histogram in cyclictest's --histfile layout.
    #[arg(long, value_name = "PATH", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub histfile: Option<OutputTarget>,

    /// Range of the histfile: 1 µs bins up to this latency (cyclictest -h).
    #[arg(long, default_value = "1000us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub hist_max: u64,

    /// Add the histfile's all-threads summary column (cyclictest -H).
    #[arg(long)]
    pub histofall: bool,

    /// Stop at the first wake-up later than this, mark the ftrace trace and report it.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub break_at: Option<u64>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure switch                       # futex, 4 kHz, 10 s, timer FIFO 90, task FIFO 89
  rtlab measure switch --all --events 20000  # every mechanism in turn: paper 001's Table 1
  rtlab measure switch --mechanism posix-sem --events 2000000 --rate 4khz
                                             # paper 001's run: 2 000 000 events at 4 kHz
  rtlab measure switch --mechanism pipe,mq --cross-cpu --process --load cpu
  rtlab measure switch --mechanism mq --pacing rt-tests --interval 1ms --events 2000
                                             # pmqtest's hand-off: pmqtest -t1 -a -i 1000 -l 2000

A timer thread (the \"interrupt\") wakes on absolute periodic deadlines and stamps its
wake-up latency, then releases a task blocked one priority below; the task stamps the
delay from the release to its running. Both series count every event: samples + missed
= events. Same CPU (default) measures a true context switch; --cross-cpu a wake-up on
another CPU. --pacing rt-tests copies the hand-off of ptsematest (pthread-mutex),
pmqtest (mq), sigwaittest (signal) and svsematest (sysv-sem): both threads at
--priority, the task sleeps --interval after each hand-off and hands a go-ahead back. Exit code: 0 done, 1 failure or --budget not kept (e.g. --budget
'*.switch:p99<50us'), 2 bad input, 130 stopped by a signal.")]
pub struct SwitchArgs {
    /// Mechanisms to measure, one after the other: futex, pthread-mutex, pthread-cond,
    /// posix-sem, sysv-sem, pipe, eventfd, mq, signal.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "futex",
        conflicts_with = "all"
    )]
    pub mechanism: Vec<String>,

    /// Every mechanism in turn.
    #[arg(long)]
    pub all: bool,

    /// Rate of the timer thread's deadlines [default: 4khz].
    #[arg(long, value_parser = input::rate_period, value_name = "RATE", conflicts_with = "interval")]
    pub rate: Option<u64>,

    /// Period of the timer thread's deadlines, instead of --rate.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub interval: Option<u64>,

    /// Events per mechanism (deadlines: samples + missed = N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "duration")]
    pub events: Option<u64>,

    /// How long to measure each mechanism [default: 10s].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// The timer thread's CPU [default: the last online CPU].
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Put the task on the next online CPU instead of the timer thread's.
    #[arg(long)]
    pub cross_cpu: bool,

    /// Run the task in its own process (sharing memory) instead of a thread.
    #[arg(long)]
    pub process: bool,

    /// Scheduling policy of both threads: fifo, rr or other.
    #[arg(long, default_value = "fifo", value_parser = parse_policy)]
    pub policy: Policy,

    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=99), help = with_default_priority("The timer thread's priority 2-99 (fifo, rr); the task runs one below"))]
    pub priority: Option<u32>,

    /// Testing the probe: spin this long between the release stamp and the release,
    /// every --inject-every events; it must show in the switch series only.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,

    /// With --inject-delay: every N-th event.
    #[arg(long, value_name = "N", default_value = "100", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub inject_every: u64,

    /// How the hand-offs are paced: grid (a timer thread's absolute deadlines) or
    /// rt-tests (as the rt-tests tool of the mechanism: relative sleeps, one priority).
    #[arg(long, default_value = "grid", value_name = "grid|rt-tests", value_parser = |s: &str| s.parse::<rtlab_probe::switch::Pacing>())]
    pub pacing: rtlab_probe::switch::Pacing,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure noise                        # every CPU, 10 s, 1 µs threshold, 900 ms of each 1 s
  rtlab measure noise --cpus 1 --duration 1m --load net
  rtlab measure noise --threshold 5us --window 1ms --json noise.json

On each CPU a FIFO thread spins reading the clock; every gap above --threshold is a
noise event. The CPU's /proc/interrupts and /proc/softirqs lines and the thread's
involuntary context switches are read at the edges of every --window and assign the
window's noise to irq:NAME, softirq:NAME, preempted or unattributed (what the kernel
does not count: the hypervisor, SMIs, firmware). The duty cycle (--runtime of every
--period) keeps the machine usable. Exit code: 0 done, 1 failure or --budget not kept (e.g.
--budget 'max<50us'), 2 bad input, 130 signal.")]
pub struct NoiseArgs {
    /// CPUs to measure on, one spinning thread each: `all` or a list like 0,2-3.
    #[arg(long, default_value = "all", value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: CpuSelection,

    /// A gap between two clock reads above this is noise.
    #[arg(long, default_value = "1us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub threshold: u64,

    /// Measuring time in every period.
    #[arg(long, default_value = "900ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub runtime: u64,

    /// Period of the duty cycle.
    #[arg(long, default_value = "1s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub period: u64,

    /// Attribution window: the counters are read at its edges.
    #[arg(long, default_value = "10ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub window: u64,

    /// How long to run.
    #[arg(long, default_value = "10s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: u64,

    /// Scheduling policy of the spinning threads: fifo, rr or other.
    #[arg(long, default_value = "fifo", value_parser = parse_policy)]
    pub policy: Policy,

    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99), help = with_default_priority("Real-time priority 1-99 for fifo and rr"))]
    pub priority: Option<u32>,

    /// Do not run the kernel's osnoise tracer after rtlab's measurement, where it exists.
    #[arg(long)]
    pub no_osnoise: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab quick
  rtlab quick --json quick.json --quiet
  rtlab quick --budget 'cpu*:max<5ms' --junit quick.xml   # exit code 1 when a run breaks it

Runs the built-in `quick` campaign (see `rtlab campaign plan quick`): the timer probe
on every CPU, idle and under cpu, vm and io load, once promoted (SCHED_FIFO 90) and
once not (SCHED_OTHER), 6 s each. Every run is stored; the verdict says the worst
case under each load and how much promotion changed p99.9 and the maximum.")]
pub struct QuickArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Write the campaign's results and verdict as JSON to PATH, or `-` for stdout.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,
    /// No progress bar and no tables (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// --budget overrides the campaign file's `budget`.
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// The command line writes its defaults as text for `--help`; they must
/// be the probes' own (the ones a campaign uses).
#[cfg(test)]
mod tests {
    use super::super::shared::parse_args as parse;
    use super::*;
    use rtlab_probe::{noise, switch, timer};

    #[test]
    fn timer_defaults_are_the_probe_s() {
        let args: TimerArgs = parse(&[]);
        assert_eq!(args.interval, timer::DEFAULT_INTERVAL_NS);
        assert_eq!(args.hist_max, timer::DEFAULT_HIST_MAX_NS);
        assert_eq!(args.dl_runtime, timer::DEFAULT_DL_RUNTIME_NS);
        assert_eq!(args.mode, WaitMode::default());
        let args: TimerArgs = parse(&["--mode", "timerfd"]);
        assert_eq!(args.mode, WaitMode::Timerfd);
        let args: TimerArgs = parse(&["--mode", "posix"]);
        assert_eq!(args.mode, WaitMode::Posix);
    }

    #[test]
    fn aligned_takes_an_offset_or_none() {
        let args: TimerArgs = parse(&[]);
        assert_eq!(args.aligned, None);
        let args: TimerArgs = parse(&["--aligned", "--duration", "1s"]);
        assert_eq!(
            (args.aligned, args.duration),
            (Some(0), Some(1_000_000_000))
        );
        let args: TimerArgs = parse(&["--aligned", "50us"]);
        assert_eq!(args.aligned, Some(50_000));
        let args: TimerArgs = parse(&["--aligned=1d"]);
        assert_eq!(args.aligned, Some(86_400_000_000_000));
    }

    #[test]
    fn noise_defaults_are_the_probe_s() {
        let args: NoiseArgs = parse(&[]);
        assert_eq!(args.threshold, noise::DEFAULT_THRESHOLD_NS);
        assert_eq!(args.runtime, noise::DEFAULT_RUNTIME_NS);
        assert_eq!(args.period, noise::DEFAULT_PERIOD_NS);
        assert_eq!(args.window, noise::DEFAULT_WINDOW_NS);
        assert_eq!(args.duration, rtlab_probe::DEFAULT_DURATION_NS);
    }

    #[test]
    fn switch_rates_are_periods() {
        let args: SwitchArgs = parse(&["--rate", "4khz"]);
        assert_eq!(args.rate, Some(switch::DEFAULT_INTERVAL_NS));
    }
}
