//! The command line: `rtlab <noun> <verb>`.

use crate::input;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::Policy;
use rtlab_report::budget::Budget;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "rtlab",
    version,
    about = "Make a stock Linux machine time-critical and prove it",
    after_help = "Examples:
  rtlab quick                          # timer latency idle and under load, promoted and not (~1 min)
  rtlab measure timer --duration 10s --load vm,io
  rtlab campaign run hallberg2017      # paper 000's loads x promotion
  rtlab net probe --netns              # response time of 4 round trips per message, open loop
  rtlab runs                           # every stored result
  rtlab compare RUN_A RUN_B            # percentiles side by side, with significance
  rtlab restore                        # undo what a killed rtlab left changed"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The command line as clap sees it, with what the derive attributes would
/// have to repeat on every duration: its value may start with `-`, so that
/// `--duration -1s` reaches the duration parser and gets its message
/// ("negative durations are not allowed") instead of clap's "unexpected
/// argument". Every duration argument is named `DURATION`.
pub fn command() -> clap::Command {
    fn durations_take_hyphens(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|arg| {
            let duration = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|n| n == "DURATION"));
            if duration {
                arg.allow_hyphen_values(true)
            } else {
                arg
            }
        })
        .mut_subcommands(durations_take_hyphens)
    }
    durations_take_hyphens(Cli::command())
}

/// Parses the process's arguments with [`command`]; exits with clap's
/// message and code 2 on bad usage.
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches)
        .map_err(|e| e.format(&mut command()))
        .unwrap_or_else(|e| e.exit())
}

#[derive(Subcommand)]
pub enum Command {
    /// Measure latencies of this machine.
    #[command(subcommand)]
    Measure(Measure),
    /// Undo system changes left by an rtlab that was killed.
    #[command(
        after_help = "Example:\n  rtlab restore          # after `kill -9` of a running rtlab\n\n\
Every change rtlab makes (sysctls, /dev/cpu_dma_latency, ...) is journaled\n\
before it is made. A run restores them itself on exit, on SIGINT/SIGTERM and\n\
on panic; this command (also run at the start of every measurement) restores\n\
what a SIGKILL or a power loss left behind."
    )]
    Restore(RestoreArgs),
    /// The quick campaign (idle, cpu, vm, io × promoted / not promoted, ~1 min) and a verdict.
    Quick(QuickArgs),
    /// Plan or run a campaign: probes × loads × configurations, every result stored.
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// List stored runs, newest first; delete and tag them.
    Runs(RunsArgs),
    /// Show one stored run.
    Show(ShowArgs),
    /// Compare stored runs side by side: percentiles, ratios and significance.
    Compare(CompareArgs),
    /// Write a stored run as json, csv, histfile or markdown.
    Export(ExportArgs),
    /// Charts and tables of stored runs or a campaign: one self-contained HTML page, Markdown or the terminal.
    Report(Box<ReportArgs>),
    /// Store cyclictest results (histfile or --json output) so they compare with rtlab's.
    Import(ImportArgs),
    /// The result store itself: check its integrity.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run one load generator alone (cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd).
    Load(Box<LoadArgs>),
    /// End-to-end network response time: a robust server and an open-loop probe.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab net probe --netns                       # rtlab's server across a veth pair\n  rtlab net serve --listen 0.0.0.0:7700 --policy fifo --priority 80   # on the server host\n  rtlab net probe 10.0.0.2:7700 --count 10000  # from the client host: paper 000's measurement"
    )]
    Net(Net),
    /// Plan files of events at exact offsets: compile, check, show, generate.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab plan gen periodic --period 1ms --count 1000 -o tick.plan\n  rtlab plan check plan.txt\n  rtlab plan show tick.plan --events 5\n  rtlab plan compile plan.txt -o plan.bin\n\nFormats: docs/plan-format.md; commands: docs/plan.md."
    )]
    Plan(PlanCommand),
    /// The executive's periodic tasks, and paper 002's KURT table (executive vs SCHED_FIFO).
    #[command(subcommand)]
    Exec(ExecCommand),
    /// Promote the processes on the critical path and keep them promoted; audit the system.
    #[command(
        subcommand,
        after_help = "Examples:\n  rtlab tune check                                    # what stands between this machine and real time\n  rtlab tune show --rt                                # the real-time threads now\n  rtlab tune set 'alarmd|msgd' --policy fifo --priority 50\n  rtlab tune apply --rules /etc/rtlab/rules.toml      # once\n  rtlab tune watch                                    # and as processes restart\n  rtlab tune systemd alarmd --policy fifo --priority 50\n  rtlab tune undo                                     # take the last command back\n\nDocs: docs/tune.md, docs/tune-rules.md, docs/tune-systemd.md, docs/tune-check.md."
    )]
    Tune(crate::commands::tune::TuneCommand),
    /// Print the completion script of a shell (bash, zsh, fish, ...) on stdout.
    Completions(CompletionsArgs),
    /// Manual pages: rtlab(1) on stdout, or one page per command with --dir.
    Man(ManArgs),
    /// Internal: the process a load runs in.
    #[command(name = "__load-worker", hide = true)]
    LoadWorker(WorkerArgs),
}

#[derive(Subcommand)]
pub enum Measure {
    /// Timer wake-up latency per CPU, as cyclictest measures it.
    Timer(Box<TimerArgs>),
    /// Interrupt latency and the switch to a task released through a futex, semaphore, pipe, ...
    Switch(Box<SwitchArgs>),
    /// OS noise per CPU, attributed to interrupts, softirqs and preemption.
    Noise(Box<NoiseArgs>),
}

#[derive(Subcommand)]
pub enum Net {
    /// Answer requests (exchange, echo or sockperf), promoted, bounded and rate limited.
    Serve(Box<NetServeArgs>),
    /// Send messages on an exact schedule and measure each one's response time.
    Probe(Box<NetProbeArgs>),
}

/// UDP or TCP.
#[derive(Args, Clone, Copy)]
#[group(multiple = false)]
pub struct TransportArgs {
    /// Datagrams over UDP (the default).
    #[arg(long)]
    pub udp: bool,
    /// A stream of frames over TCP.
    #[arg(long)]
    pub tcp: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab net serve --listen 0.0.0.0:7700                      # exchange mode over UDP
  rtlab net serve --listen 10.0.0.2:7700 --policy fifo --priority 80 --cpu 1
  rtlab net serve --listen 127.0.0.1:11111 --mode sockperf   # for `sockperf ping-pong`
  rtlab net serve --listen 127.0.0.1:7700 --key-file key.hex --rate-limit 2000
  kill -USR1 $(pidof rtlab)                                  # print the counters

Answers every request with a reply of the same size, from one thread (promoted with
--policy/--priority, pinned with --cpu, memory locked). Requests that do not parse,
are cut short, exceed --max-size, fail authentication (--key-file) or exceed their
source's rate are dropped and counted. Over TCP a frame must be whole within
--frame-timeout of its first byte, one source holds at most --max-per-source
connections, and a full server gives a stalled connection's place to a newcomer.
The counters go to stderr on SIGUSR1 and at exit (as JSON on stdout with --json).
Stops on SIGINT/SIGTERM or after --duration.")]
pub struct NetServeArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "0.0.0.0:7700", value_name = "ADDR:PORT")]
    pub listen: String,

    #[command(flatten)]
    pub transport: TransportArgs,

    /// Wire format: exchange (rtlab's), echo (RFC 862) or sockperf.
    #[arg(long, default_value = "exchange", value_parser = parse_mode)]
    pub mode: rtlab_probe::net::Mode,

    /// Scheduling policy of the serving thread: fifo, rr or other.
    #[arg(long, default_value = "other", value_parser = parse_policy)]
    pub policy: Policy,

    /// Real-time priority 1-99 for fifo and rr [default: 80].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// Pin the serving thread to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Largest request answered, bytes; larger ones are dropped as oversized.
    #[arg(long, default_value = "1472", value_name = "BYTES", value_parser = clap::value_parser!(u32).range(14..=65507))]
    pub max_size: u32,

    /// Requests per second each source may send (0: no limit).
    #[arg(long, default_value = "100000", value_name = "N")]
    pub rate_limit: u64,

    /// Requests a source may send at once above its rate [default: a tenth of --rate-limit, at least 10].
    #[arg(long, value_name = "N")]
    pub burst: Option<u64>,

    /// Answer only exchange requests signed with this key (HMAC-SHA256): 32+ hex digits or 16+ raw bytes.
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<PathBuf>,

    /// Testing a probe: hold the reply to every --every-th message back this long.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,

    /// With --inject-delay: messages whose id is a multiple of N (exchange), or every N-th request.
    #[arg(long, default_value = "100", value_name = "N", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub every: u64,

    /// TCP clients served at once; when full, a stalled one (no whole frame yet, or none for 1 s) gives its place up.
    #[arg(long, default_value = "64", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_clients: u64,

    /// TCP connections one source (IPv4 address, IPv6 /64) may hold at once; more are closed.
    #[arg(long, default_value = "8", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_per_source: u64,

    /// Close a TCP connection whose frame is not whole this long after its first byte.
    #[arg(long, default_value = "2s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub frame_timeout: u64,

    /// Close a TCP connection with no frame in progress that sends nothing for this long.
    #[arg(long, default_value = "60s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub idle_timeout: u64,

    /// Stop after this long instead of at SIGINT/SIGTERM.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// Print the counters as JSON lines on stdout (on SIGUSR1 and at exit).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab net probe --netns                  # rtlab's server in a namespace pair
  rtlab net probe 10.0.0.2:7700 --count 10000  # paper 000: 4 round trips every 30 ms
  rtlab net probe --netns --tcp --interval 1ms --count 1000 --load vm
  rtlab net probe 127.0.0.1:11111 --mode sockperf --round-trips 1   # against `sockperf sr`

Open loop: message i leaves at start + i x --interval whether or not earlier ones were
answered, so a stalled server shows as the stall it is. A message is --round-trips
request/acknowledge steps; its response time runs to the last reply. Series: response
(from the scheduled send), response_from_send (from the actual send, a closed-loop
tool's figure, except that every message caught in a stall counts) and send_lag
(the probe wakes 100 µs early and spins to each send). Every message ends completed or lost (no reply within
--timeout); late, duplicate, reordered and bad replies are counted. --samples writes
the per-message timeline. Exit code: 0 done, 1 failure or --budget not kept (e.g.
--budget 'response:p99<5ms,lost=0'), 2 bad input, 130 signal.")]
pub struct NetProbeArgs {
    /// The server, ADDR:PORT (or HOST:PORT); omit it with --netns.
    #[arg(
        value_name = "ADDR:PORT",
        required_unless_present = "netns",
        conflicts_with = "netns"
    )]
    pub target: Option<String>,

    /// Start rtlab's own server in a private network namespace joined to the
    /// probe's by a veth pair (needs root); nothing on the host changes.
    #[arg(long)]
    pub netns: bool,

    #[command(flatten)]
    pub transport: TransportArgs,

    /// Wire format: exchange (rtlab's), echo (RFC 862) or sockperf.
    #[arg(long, default_value = "exchange", value_parser = parse_mode)]
    pub mode: rtlab_probe::net::Mode,

    /// Time between messages' scheduled sends.
    #[arg(long, default_value = "30ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub interval: u64,

    /// Messages to send [default: 1000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "duration")]
    pub count: Option<u64>,

    /// Send for this long instead of --count.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// Request/acknowledge steps per message (1-32).
    #[arg(long, default_value = "4", value_name = "K", value_parser = clap::value_parser!(u8).range(1..=32))]
    pub round_trips: u8,

    /// A message without its last reply this long after its first send is lost.
    #[arg(long, default_value = "100ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub timeout: u64,

    /// Bytes per request (UDP payload or TCP frame).
    #[arg(long, default_value = "64", value_name = "BYTES")]
    pub payload: usize,

    /// Sign requests and check replies with this key (exchange mode).
    #[arg(long, value_name = "PATH")]
    pub key_file: Option<PathBuf>,

    /// Pin the probe's thread to this CPU [with --netns: the first online CPU].
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Scheduling policy of the probe's thread: fifo, rr or other.
    #[arg(long, default_value = "fifo", value_parser = parse_policy)]
    pub policy: Policy,

    /// Real-time priority of the probe's thread [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// With --netns: the server's CPU [default: the last online CPU].
    #[arg(long, value_name = "N")]
    pub server_cpu: Option<usize>,

    /// With --netns: the server's policy, promoted or not [default: fifo].
    #[arg(long, value_parser = parse_policy)]
    pub server_policy: Option<Policy>,

    /// With --netns: the server's priority [default: 80].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub server_priority: Option<u32>,

    #[command(flatten)]
    pub run: RunArgs,
}

fn parse_mode(s: &str) -> Result<rtlab_probe::net::Mode, String> {
    s.parse()
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Print what was restored as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// clock_nanosleep to absolute deadlines on a fixed grid.
    Abs,
    /// clock_nanosleep relative to the time before sleeping (cyclictest -r).
    Rel,
    /// A periodic absolute timerfd; the kernel counts overruns.
    Timerfd,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure timer                                   # every CPU, FIFO 90, 1 ms, 10 s
  rtlab measure timer --cpus 1 --duration 1m --json run.json
  rtlab measure timer --priority 30 --loops 100000 --histfile hist.txt --hist-max 1000us
                                                        # paper 000's cyclictest -p 30 -l 100000 -H 1000
  rtlab measure timer --break-at 500us                  # stop at the first wake-up later than 500 µs
  rtlab measure timer --duration 1m --budget 'p99.9<100us,max<2ms,missed=0' --junit budget.xml
                                                        # exit code 1 when a limit is not kept (CI)

Defaults: SCHED_FIFO 90, one thread pinned per online CPU, absolute clock_nanosleep,
memory locked, /dev/cpu_dma_latency held at 0, timer slack 1 ns. Every setting in
effect is recorded in the JSON result. Exit code: 0 done, 1 failure or --break-at
crossed or --budget not kept, 2 bad input, 130 stopped by a signal (the partial result is
stored, and written to --json, unless --no-store). Budgets: docs/budgets.md.")]
pub struct TimerArgs {
    /// CPUs to measure on, one pinned thread each: `all` or a list like 0,2-3.
    #[arg(long, default_value = "all", value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: CpuSelection,

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

    /// Real-time priority 1-99 for fifo and rr [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// SCHED_DEADLINE runtime per period (deadline = period = interval).
    #[arg(long, default_value = "100us", value_parser = input::positive_duration, value_name = "DURATION")]
    pub dl_runtime: u64,

    /// How the threads wait for their deadline.
    #[arg(long, value_enum, default_value = "abs")]
    pub mode: ModeArg,

    /// Write a histogram in cyclictest's --histfile layout.
    #[arg(long, value_name = "PATH")]
    pub histfile: Option<PathBuf>,

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

/// What every measuring command shares: loads, system settings, outputs.
#[derive(Args)]
pub struct RunArgs {
    /// Run loads beside the measurement, e.g. `vm,io` or `cpu:workers=4` (see `rtlab load --help`).
    #[arg(long, value_name = "LOADS", value_parser = input::Label)]
    pub load: Option<String>,

    /// Do not hold /dev/cpu_dma_latency at 0 during the run.
    #[arg(long)]
    pub no_dma_latency: bool,

    /// Set a sysctl for the run and restore it afterwards (repeatable),
    /// e.g. kernel.sched_rt_runtime_us=-1.
    #[arg(long, value_name = "KEY=VALUE")]
    pub sysctl: Vec<String>,

    /// Write the result as JSON (schema rtlab.run/1) to PATH, or `-` for stdout.
    /// A file is rewritten every 2 s during the run, so an interrupted run still leaves a valid one.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,

    /// Write every sample as CSV (timer: cpu,t_ns,latency_ns; switch:
    /// series,t_ns,latency_ns; noise: cpu,start_ns,duration_ns,source; net:
    /// index,t_ns,send_lag_ns,response_ns,response_from_send_ns,lost).
    #[arg(long, value_name = "PATH")]
    pub samples: Option<PathBuf>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// Do not keep the result in the database.
    #[arg(long)]
    pub no_store: bool,

    /// No live status and no table (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,

    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Limits a run must keep, checked when it ends (docs/budgets.md).
#[derive(Args, Clone, Default)]
pub struct BudgetArgs {
    /// Limits every run must keep, e.g. `p99.9<100us,max<2ms,missed=0` or
    /// `cpu*:p99<50us`: exit code 1 when one is not kept (docs/budgets.md).
    #[arg(long, value_name = "SPEC", value_parser = parse_budget)]
    pub budget: Option<Budget>,

    /// Write the budget's checks as JUnit XML (one testsuite per run, one
    /// testcase per series and clause) for CI.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
}

fn parse_budget(s: &str) -> Result<Budget, String> {
    s.parse()
        .map_err(|e: rtlab_report::budget::BudgetError| e.to_string())
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab measure switch                       # futex, 4 kHz, 10 s, timer FIFO 90, task FIFO 89
  rtlab measure switch --all --events 20000  # every mechanism in turn: paper 001's Table 1
  rtlab measure switch --mechanism posix-sem --events 2000000 --rate 4khz
                                             # paper 001's run: 2 000 000 events at 4 kHz
  rtlab measure switch --mechanism pipe,mq --cross-cpu --process --load cpu

A timer thread (the \"interrupt\") wakes on absolute periodic deadlines and stamps its
wake-up latency, then releases a task blocked one priority below; the task stamps the
delay from the release to its running. Both series count every event: samples + missed
= events. Same CPU (default) measures a true context switch; --cross-cpu a wake-up on
another CPU. Exit code: 0 done, 1 failure or --budget not kept (e.g. --budget
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

    /// The timer thread's priority 2-99 (fifo, rr); the task runs one below [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=99))]
    pub priority: Option<u32>,

    /// Testing the probe: spin this long between the release stamp and the release,
    /// every --inject-every events; it must show in the switch series only.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,

    /// With --inject-delay: every N-th event.
    #[arg(long, value_name = "N", default_value = "100", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub inject_every: u64,

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

    /// Real-time priority 1-99 for fifo and rr [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// Do not run the kernel's osnoise tracer after rtlab's measurement, where it exists.
    #[arg(long)]
    pub no_osnoise: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// Where results are kept.
#[derive(Args)]
pub struct StoreArgs {
    /// The result database [default: $XDG_DATA_HOME/rtlab/results.db].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
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
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,
    /// No progress bar and no tables (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// --budget overrides the campaign file's `budget`.
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Subcommand)]
pub enum CampaignCommand {
    /// List the runs a campaign would make, with an ETA.
    #[command(after_help = "Examples:
  rtlab campaign plan quick
  rtlab campaign plan examples/hallberg2017.toml --json -

SOURCE is a campaign file (TOML, see docs/campaign.md) or a built-in preset:
quick, hallberg2017, hallberg2017-net, romero, straumann2001, srinivasan1998.")]
    Plan(CampaignPlanArgs),
    /// Run a campaign; every run is stored when it ends.
    #[command(after_help = "Examples:
  rtlab campaign run quick
  rtlab campaign run examples/romero.toml --db results.db --quiet
  rtlab campaign run quick --budget 'p99.9<200us,missed=0' --junit budget.xml

Ctrl-C ends the current run as `partial` (stored), starts no further run and
restores the system. --budget (or the file's `budget`) is checked on every run,
one JUnit testsuite per run (docs/budgets.md). Exit code: 0 all runs complete
(and within the budget), 1 a run failed or a run broke the budget, 2 bad input,
130 stopped by a signal.")]
    Run(CampaignRunArgs),
}

#[derive(Args)]
pub struct CampaignPlanArgs {
    /// A campaign file or a preset name.
    pub source: String,
    /// Print the plan as JSON to PATH, or `-` for stdout.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,
}

#[derive(Args)]
pub struct CampaignRunArgs {
    /// A campaign file or a preset name.
    pub source: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Write the campaign's results as JSON to PATH (rewritten after every run), or `-` for stdout.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,
    /// No progress bar and no tables (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// --budget overrides the campaign file's `budget`.
    #[command(flatten)]
    pub budget: BudgetArgs,
}

#[derive(Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  rtlab runs
  rtlab runs --campaign quick --limit 8
  rtlab runs --probe cyclictest --json   # the list as JSON on stdout
  rtlab runs --tag baseline
  rtlab runs tag last baseline
  rtlab runs delete 20261121T193012Z-4242

The store is opened read-only to list: a store one may read but not write is
listed too. See docs/runs.md."
)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: Option<RunsAction>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only runs with this tag (see `rtlab runs tag`).
    #[arg(long)]
    pub tag: Option<String>,
    /// Only runs of this campaign (name).
    #[arg(long)]
    pub campaign: Option<String>,
    /// Only runs of this campaign execution (id).
    #[arg(long)]
    pub execution: Option<String>,
    /// Only runs taken on this host.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs of this probe (timer, cyclictest, ...).
    #[arg(long)]
    pub probe: Option<String>,
    /// Only runs with this status (complete, partial, failed, break, running).
    #[arg(long, value_parser = ["complete", "partial", "failed", "break", "running"])]
    pub status: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print the list as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum RunsAction {
    /// Delete stored runs (no undo): by id, unique prefix or `last`, or a whole campaign execution.
    Delete(RunsDeleteArgs),
    /// Tag a stored run (or take a tag off it with --untag); `rtlab runs --tag T` lists them.
    Tag(RunsTagArgs),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab runs delete last
  rtlab runs delete 20261121T193012Z-4242 20261121T193102Z-4242-2 --yes
  rtlab runs delete --execution 20261121T193000Z-4242 --yes --json

Deleting more than one run, or some but not all runs of a campaign execution,
needs --yes: without it rtlab lists what would be deleted and exits 2. Nothing
is deleted unless every id names exactly one run. See docs/runs.md.")]
pub struct RunsDeleteArgs {
    /// Run ids, unique prefixes of one, or `last`.
    #[arg(value_name = "ID", required_unless_present = "execution")]
    pub runs: Vec<String>,
    /// Every run of this campaign execution (its id, as `rtlab runs` shows under --execution).
    #[arg(long, value_name = "ID")]
    pub execution: Option<String>,
    /// Delete more than one run, or part of a campaign execution.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the deleted ids as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab runs tag last baseline
  rtlab runs tag 20261121T193012Z-4242 kernel-6.18 --json
  rtlab runs tag last baseline --untag
  rtlab runs --tag baseline

A tag is 1 to 64 ASCII letters, digits, '-', '_' and '.', starting with a letter
or digit. See docs/runs.md.")]
pub struct RunsTagArgs {
    /// Run id, a unique prefix of one, or `last`.
    #[arg(value_name = "ID")]
    pub run: String,
    #[arg(value_name = "TAG")]
    pub tag: String,
    /// Take the tag off instead.
    #[arg(long)]
    pub untag: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the run's tags as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum StoreCommand {
    /// Check the store's integrity: SQLite's checks, its schema, every run readable.
    Check(StoreCheckArgs),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab store check
  rtlab store check --db /var/lib/rtlab/results.db --json

Exit code 0: the store is sound; 1: problems were found (listed); 2: no store
at that path. The store is opened read-only and never changed. See
docs/store.md.")]
pub struct StoreCheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab show last
  rtlab show 20261121T193012Z --json
  rtlab show last --pwcet           # with the worst-case estimate (docs/pwcet.md)")]
pub struct ShowArgs {
    /// Run id, a unique prefix of one, or `last`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the whole result (rtlab.run/1) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Add the worst-case estimate of each series (extreme-value fit,
    /// pWCET at 1e-3 ... 1e-9 per sample; see docs/pwcet.md). With --json,
    /// only the estimates (rtlab.pwcet/1).
    #[arg(long)]
    pub pwcet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CompareFormat {
    Table,
    Md,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab compare 20261121T193012Z-4242 20261121T194501Z-4311
  rtlab compare RUN_A RUN_B --format md --resamples 5000
  rtlab compare last old-cyclictest-hist.txt --match all

The first run is the baseline. Series are matched by name (cpu0, cpu1, ...).
The p99 difference comes with a bootstrap confidence interval; a difference
whose interval excludes 0 is marked significant. See docs/compare.md.")]
pub struct CompareArgs {
    /// Runs to compare, the baseline first: stored run ids (or unique prefixes, or `last`),
    /// or files `rtlab import` reads (rtlab JSON, cyclictest histfile or JSON).
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Bootstrap resamples for the p99 interval; 0 skips the test.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub resamples: u64,
    /// Confidence level of the interval.
    #[arg(long, default_value_t = 0.95, value_parser = input::probability)]
    pub confidence: f64,
    /// Seed of the bootstrap (the same seed gives the same interval).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Table for the terminal or Markdown.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// How series are paired: by name, all series of a run merged, or auto
    /// (by name, or merged when each run has one series under different names).
    #[arg(long = "match", default_value = "auto", value_parser = ["auto", "name", "all"])]
    pub matching: String,
    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained page: inline SVG charts and CSS, nothing fetched.
    Html,
    /// The tables as GitHub Markdown.
    Md,
    /// The tables for the terminal.
    Text,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab report last -o report.html                   # charts, tables, worst case of one run
  rtlab report --campaign quick -o quick.html        # the newest execution of a campaign
  rtlab report RUN_A RUN_B                           # tables in the terminal, runs compared
  rtlab report last --format md > report.md
  rtlab report last --samples samples.csv -o r.html  # every sample on the time chart
  rtlab report --campaign quick --png charts/ --budget 'p99.9<100us,max<2ms' --junit budget.xml

Per series: a histogram (1 µs bins, log counts), the exceedance plot with the
worst-case estimate, latency against time; per report: percentiles, the loads ×
configurations matrix, the pWCET table, paper 002's % within x µs, paper 001's
max / avg ± σ, and charts overlaying every series. See docs/report.md.")]
pub struct ReportArgs {
    /// Runs: stored run ids (or unique prefixes, or `last`), or files
    /// `rtlab import` reads (rtlab JSON, cyclictest histfile or JSON).
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,

    /// Every run of the newest execution of this campaign (before the RUNs given).
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,

    /// Every run of this campaign execution (an id `rtlab runs` shows).
    #[arg(long, value_name = "ID")]
    pub execution: Option<String>,

    /// Write the report to PATH instead of stdout (replaced whole when done).
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// html, md or text [default: from the extension of -o (.html, .md), else text].
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,

    /// Also write each chart as a PNG file into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,

    /// A run's samples file (what its --samples wrote): its time charts
    /// then draw every sample. `RUN=PATH`, or `PATH` when there is one run.
    /// Repeat for several runs.
    #[arg(long, value_name = "[RUN=]PATH")]
    pub samples: Vec<String>,

    /// The report's title [default: from the campaign or the run].
    #[arg(long, value_parser = input::Label)]
    pub title: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,

    /// Print the report's tables and worst-case estimates as JSON
    /// (rtlab.report/1) on stdout; -o and --png still write their files.
    #[arg(long)]
    pub json: bool,

    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Histfile,
    Markdown,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab export last --format histfile -o hist.txt
  rtlab export 20261121T193012Z-4242 --format markdown
  rtlab export last --format csv -o runs.csv
  rtlab export last --json > run.json")]
pub struct ExportArgs {
    /// Run id, a unique prefix of one, or `last`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Output format.
    #[arg(long, value_enum, required_unless_present = "json")]
    pub format: Option<ExportFormat>,
    /// The same as `--format json`: the whole result (schema rtlab.run/1).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Output file, or `-` for stdout.
    #[arg(long, short, default_value = "-", value_name = "PATH|-")]
    pub output: PathBuf,
    /// Range of a histfile: 1 µs bins up to this latency [default: the range the run
    /// was recorded with, else 1000us].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub hist_max: Option<u64>,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab import old-cyclictest-hist.txt
  cyclictest -m -p 90 -l 100000 -h 1000 --json=ct.json && rtlab import ct.json
  rtlab import run.json --new-id     # an rtlab result whose id is already stored

Accepts cyclictest --histfile/-h output, cyclictest --json output and rtlab's
own JSON (rtlab.run/1, which keeps its id); the format is detected from the
content. A run whose id is already stored is refused (exit 2): nothing is ever
replaced. See docs/import-export.md for what each keeps.")]
pub struct ImportArgs {
    /// Store every file under a new run id (its old one is noted in its warnings).
    #[arg(long)]
    pub new_id: bool,
    /// Files to import.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print the ids of the imported runs as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ExecCommand {
    /// Periodic tasks released by rtlab's executive (or self-timed SCHED_FIFO threads), with lateness and deadline statistics.
    Periodic(Box<ExecPeriodicArgs>),
    /// Paper 002's Tables 4.1/4.2: % of activations within 10-1000 µs, 1/10/20/30 tasks, SCHED_FIFO vs the executive, idle and loaded.
    KurtTable(Box<KurtTableArgs>),
}

/// The run compared with the executive's by `rtlab exec periodic --baseline`.
#[derive(Clone, Copy, ValueEnum)]
pub enum PeriodicBaseline {
    /// The same tasks as self-timed SCHED_FIFO threads (clock_nanosleep to each activation).
    Fifo,
}

/// Who releases the tasks.
#[derive(Clone, Copy, ValueEnum)]
pub enum PeriodicMode {
    /// rtlab's executive: sleep to the activation minus --guard, spin, release the task early.
    Executive,
    /// Each task sleeps to its own activations (SCHED_FIFO, clock_nanosleep).
    Fifo,
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

    /// How early the executive wakes before an activation and spins.
    #[arg(long, default_value = "100us", value_parser = input::duration, value_name = "DURATION")]
    pub guard: u64,

    /// How early the executive releases a task, which spins to its instant (at most --guard).
    #[arg(long, default_value = "50us", value_parser = input::duration, value_name = "DURATION")]
    pub release_early: u64,

    /// SCHED_FIFO priority of the executive.
    #[arg(long, default_value_t = rtlab_exec::periodic::EXECUTIVE_PRIORITY, value_parser = clap::value_parser!(u32).range(2..=99))]
    pub priority: u32,

    /// SCHED_FIFO priority of the tasks (both modes).
    #[arg(long, default_value = "80", value_parser = clap::value_parser!(u32).range(1..=98))]
    pub task_priority: u32,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec periodic                                  # 10 tasks every 10 ms, 100 µs work, 10 s, executive
  rtlab exec periodic --tasks 30 --period 10ms --work 200us --baseline fifo
  rtlab exec periodic --tasks 20 --mode fifo --load io --json fifo.json

Every task and the executive run on one CPU (--cpu, default the last online one), as
paper 002's uniprocessor. The executive (SCHED_FIFO 90) sleeps to each activation minus
--guard, spins, and releases the task (SCHED_FIFO 80, blocked on its futex) --release-early
before its instant; the task spins to the instant, stamps its lateness, works --work and
stamps its response. With --mode fifo each task sleeps to its own activations instead (the
paper's SCHED_FIFO). --baseline fifo runs the executive, then the same tasks self-timed, and
prints both with the % of activations within 10/50/100/500/1000 µs (two stored runs).
Missed activations and deadline misses are counted, never skipped. --budget checks every run,
e.g. --budget '*.response:missed=0,*.lateness:p99<100us' (deadline misses are the response
series' missed): exit code 1 when one is not kept (docs/budgets.md).")]
pub struct ExecPeriodicArgs {
    /// Number of periodic tasks.
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub tasks: u64,

    /// How long to run (activations = duration / period per task).
    #[arg(long, default_value = "10s", value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: u64,

    /// Who releases the tasks.
    #[arg(long, value_enum, default_value = "executive")]
    pub mode: PeriodicMode,

    /// Also run the same tasks this way and print both side by side.
    #[arg(long, value_enum)]
    pub baseline: Option<PeriodicBaseline>,

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

Runs each task count (--tasks, default 1,10,20,30) at --period 10 ms with --work 100 us,
as self-timed SCHED_FIFO threads and under rtlab's executive, idle (paper 002's Table 4.1)
and under --load (default io: Table 4.2), and prints the % of activations that started
within 10, 50, 100, 500 and 1000 µs of their instant. Every run is stored; --json writes
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

    #[command(flatten)]
    pub task: PeriodicTaskArgs,

    /// --load: the load of the loaded table [default: io]; --samples is refused (many runs).
    #[command(flatten)]
    pub run: RunArgs,
}

/// `rtlab plan ...`: plan files (docs/plan.md).
#[derive(Subcommand)]
pub enum PlanCommand {
    /// Convert a plan to the binary form (or to text with --text), checked first.
    Compile(crate::commands::plan::CompileArgs),
    /// Check a plan: offsets in order, modules known, spacing, repeat period.
    Check(crate::commands::plan::CheckArgs),
    /// Show a plan's header, modules, timing figures and first events.
    Show(crate::commands::plan::ShowArgs),
    /// Generate a periodic, jittered or Poisson plan, streamed to a file.
    Gen(crate::commands::plan::GenArgs),
    /// Fire a plan's events at their exact times and record each one's dispatch error.
    Run(Box<PlanRunArgs>),
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab load cpu                                  # one busy thread per CPU for 30 s
  rtlab load vm --workers 40 --bytes 256M         # stress --vm 40 --vm-bytes 256M, capped to fit
  rtlab load io --dir /mnt/disk --duration 5m     # write + fsync 64 MiB files on that disk
  rtlab load fswalk --no-stat                     # ls -RU / instead of ls -lR /
  rtlab load dohell --forever                     # all of dohell's parts until Ctrl-C
  rtlab load vm:workers=4,bytes=256M,io           # several loads, as --load takes them
  rtlab load 'cmd:\"stress-ng --cpu 2 --vm 1\"'     # any external command

Loads: cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd:\"COMMAND\" (docs/load.md).
Every load runs at SCHED_OTHER in its own process group (and cgroup where
cgroup v2 is writable), dies with rtlab even on SIGKILL and removes its
temporary files. Flags set the parameter on every load that takes it.
Exit code: 0 done, 1 a load failed or ended early, 2 bad input, 130 stopped by a signal.")]
pub struct LoadArgs {
    /// The load: cpu, vm, io, fswalk, net, timers, msg, procfs, dohell or
    /// cmd:"COMMAND", with parameters as --load takes them (vm:workers=4,bytes=256M);
    /// several separated by commas.
    #[arg(value_name = "LOAD", value_parser = input::Label)]
    pub name: String,

    /// How long to load [default: 30s].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// Load until stopped (Ctrl-C, SIGTERM) instead of for a duration.
    #[arg(long, conflicts_with = "duration")]
    pub forever: bool,

    /// Threads doing the work (cpu, vm, io, fswalk, timers, procfs; net: senders).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,

    /// vm: bytes per worker [default: 256M]; io: bytes per file [default: 64M] (4096, 64K, 1G).
    #[arg(long, value_name = "SIZE")]
    pub bytes: Option<String>,

    /// io: bytes per write [default: 1M].
    #[arg(long, value_name = "SIZE")]
    pub block: Option<String>,

    /// net: datagram payload; msg: message size.
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// msg: groups of senders and receivers [default: 1].
    #[arg(long, value_name = "N")]
    pub groups: Option<u32>,

    /// msg: senders (= receivers) per group [default: 20].
    #[arg(long, value_name = "N")]
    pub fds: Option<u32>,

    /// timers: timers per worker [default: 8].
    #[arg(long, value_name = "N")]
    pub timers: Option<u32>,

    /// timers: period of every timer [default: 100us].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,

    /// io, dohell: where the private temporary directory is made (a disk, not tmpfs).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// fswalk, dohell: where the walk starts [default: /].
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,

    /// fswalk, dohell: list names without lstat (the modified dohell).
    #[arg(long)]
    pub no_stat: bool,

    /// Nice value of the load's processes (-20 to 19) [default: 0].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub nice: Option<i32>,

    /// Write the loads' records as JSON (schema rtlab.load/1) to PATH, or `-` for stdout.
    /// A file is rewritten every 2 s (status "running"), so a killed run still leaves one.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,

    /// No progress and no table (errors and notes still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

/// The child side of a load: started by rtlab itself, never by a user.
#[derive(Args)]
pub struct WorkerArgs {
    /// The load to run, as JSON.
    pub spec: String,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab plan run ticks.plan                     # once, guard from a warm-up, FIFO 90
  rtlab plan run ticks.plan --cpu 1 --repeat 100 --guard 50us
  rtlab plan run traffic.txt --forever --load io --json run.json

A FIFO thread sleeps on an absolute clock_nanosleep programmed only for the next
event, until the event's time minus the guard, then spins on the clock to the exact
nanosecond and fires the event's module (mark, udp, wake, signal). Each event's
dispatch error (fire time - planned time) is a sample of the series `dispatch`; an
event reached more than --skip-after late is skipped and counted missed.
--budget 'dispatch:p99.9<20us,missed=0' checks the run (docs/budgets.md).
Exit code: 0 done, 1 failure or --budget not kept, 2 bad input, 130 signal.")]
pub struct PlanRunArgs {
    /// The plan, text or binary (see `rtlab plan compile`).
    pub file: PathBuf,

    /// Pin the dispatcher to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,

    /// Run the plan this many times (its `repeat` period apart, or back to back).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "forever")]
    pub repeat: Option<u64>,

    /// Repeat the plan until stopped (Ctrl-C, SIGTERM).
    #[arg(long)]
    pub forever: bool,

    /// How early to wake before each event and spin: `auto` (from a 0.2 s
    /// warm-up of this machine's wake-up latency) or a duration.
    #[arg(long, default_value = "auto", value_name = "auto|DURATION")]
    pub guard: String,

    /// Skip an event reached later than this (counted missed).
    #[arg(long, default_value = "1ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub skip_after: u64,

    /// The dispatcher's real-time priority (SCHED_FIFO).
    #[arg(long, default_value_t = rtlab_probe::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: u32,

    /// Testing the dispatcher: spin this long before firing every
    /// --inject-every-th event; it must show in the dispatch error there.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub inject_delay: Option<u64>,

    /// With --inject-delay: every N-th event.
    #[arg(long, default_value = "100", value_name = "N", value_parser = clap::value_parser!(u64).range(1..), requires = "inject_delay")]
    pub inject_every: u64,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab completions bash > /etc/bash_completion.d/rtlab
  rtlab completions zsh > \"${fpath[1]}/_rtlab\"
  rtlab completions fish > ~/.config/fish/completions/rtlab.fish

Every command, flag and fixed value (--format, --policy, ...) completes; the
script is made from this rtlab's command line, so regenerate it after an
upgrade. See docs/install.md.")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab man | man -l -                          # rtlab(1), now
  rtlab man --dir /usr/local/share/man/man1     # rtlab.1, rtlab-measure-timer.1, ...
  rtlab man --dir man/ && man -l man/rtlab-plan-gen.1

One page per command (rtlab-NOUN-VERB.1), made from this rtlab's --help: the
options, their defaults and the examples. See docs/install.md.")]
pub struct ManArgs {
    /// Write every page (rtlab.1 and one per command) into DIR, created if
    /// missing, instead of rtlab(1) on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
