//! `rtlab monitor`: continuous latency monitoring, served to Prometheus.

use crate::input;
use clap::Args;
use rtlab_core::cpuset::CpuSelection;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab monitor                                        # every CPU, 10 % duty, on 127.0.0.1:9477
  rtlab monitor --listen 0.0.0.0:9477 --duty 5         # open to a Prometheus on another host
  rtlab monitor --cpus 2-3 --interval 500us --duty 100 # two CPUs, continuously (cyclictest -i 500)
  rtlab monitor --listen 127.0.0.1:0 --json --duration 10s
  curl -s http://127.0.0.1:9477/metrics | promtool check metrics

One SCHED_FIFO thread pinned per CPU wakes on an absolute grid of --interval for
--duty of every second (one burst per second), counting a wake-up late by k periods
as k-1 missed deadlines. /metrics serves Prometheus text 0.0.4, or protobuf with
native histograms when the scrape's Accept header asks for it (Prometheus with
--enable-feature=native-histograms). The monitor changes nothing on the host: it
does not hold /dev/cpu_dma_latency. Runs until SIGINT/SIGTERM (or --duration);
--json prints one line once serving and a summary at the end. Exit code: 0 done,
2 bad input (a --listen address that cannot be bound). Docs: docs/monitor.md.")]
pub struct MonitorArgs {
    /// Address and port of the /metrics endpoint (port 0: a free one, printed).
    #[arg(long, default_value = rtlab_monitor::config::DEFAULT_LISTEN, value_name = "ADDR:PORT")]
    pub listen: String,

    /// CPUs to measure on, one pinned thread each: `all` or a list like 0,2-3.
    #[arg(long, default_value = "all", value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: CpuSelection,

    /// The wake-up period within a burst [default: 1ms].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub interval: Option<u64>,

    /// Share of every second each CPU measures, in percent, as one burst (100: continuously) [default: 10].
    #[arg(long, value_name = "PERCENT", value_parser = percent)]
    pub duty: Option<f64>,

    /// The window of rtlab_wakeup_latency_window_max_seconds (OSADL's 5-minute maxima) [default: 5m].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub window: Option<u64>,

    /// SCHED_FIFO priority of the measuring threads, 1-99 [default: 90].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: Option<u32>,

    /// Stop after this long (for tests and benches; default: until SIGINT/SIGTERM).
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    /// Print one JSON line once serving (with the address) and a JSON summary at the end.
    #[arg(long)]
    pub json: bool,
}

/// `--duty`: a number of percent, `%` allowed (`10`, `2.5%`); its range is
/// the config's to check.
fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    number
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
        .ok_or_else(|| format!("'{text}' is not a percentage (e.g. 10 or 2.5%)"))
}
