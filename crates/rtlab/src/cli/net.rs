//! `rtlab net serve|probe`.

use super::shared::{parse_policy, with_default_priority, RunArgs};
use crate::input;
use clap::{Args, Subcommand};
use rtlab_core::sched::Policy;
use rtlab_probe::net::{self, server::RateLimit};
use std::path::PathBuf;

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
    #[arg(long, default_value_t = RateLimit::DEFAULT.per_second, value_name = "N")]
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
    #[arg(long, default_value_t = net::DEFAULT_ROUND_TRIPS, value_name = "K", value_parser = clap::value_parser!(u8).range(1..=32))]
    pub round_trips: u8,

    /// A message without its last reply this long after its first send is lost.
    #[arg(long, default_value = "100ms", value_parser = input::positive_duration, value_name = "DURATION")]
    pub timeout: u64,

    /// Bytes per request (UDP payload or TCP frame).
    #[arg(long, default_value_t = net::DEFAULT_PAYLOAD, value_name = "BYTES")]
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

    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99), help = with_default_priority("Real-time priority of the probe's thread"))]
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

/// The command line writes its durations as text for `--help`; they must
/// be the probe's own defaults (the ones a campaign uses).
#[cfg(test)]
mod tests {
    use super::super::shared::parse_args as parse;
    use super::*;

    #[test]
    fn probe_defaults_are_the_probe_s() {
        let args: NetProbeArgs = parse(&["--netns"]);
        assert_eq!(args.interval, net::DEFAULT_INTERVAL_NS);
        assert_eq!(args.timeout, net::DEFAULT_TIMEOUT_NS);
    }
}
