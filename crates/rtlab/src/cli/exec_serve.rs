//! `rtlab exec serve|status`.

use super::shared::StoreArgs;
use crate::input;
use crate::outputs::OutputTarget;
use clap::Args;
use rtlab_core::cpuset::CpuSelection;
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec serve --duration 2s --no-store        # the executive on the last CPU, /run/rtlab/exec.sock
  rtlab exec serve --cpus 1 --allow-group rtusers --json serve.json
  RTLAB_SOCKET=/run/rtlab/exec.sock my-periodic-program &   # attaches with librtlab
  rtlab exec serve --taskset examples/taskset.toml --max-priority 85 --cpus all --duration 2s --no-store
  rtlab exec status                                # the attached processes and their figures
  rtlab exec serve --admission off --duration 2s --no-store   # grant every valid request, fitting or not
  rtlab exec serve --focus 1 --cpus 1 --duration 2s --no-store   # CPU 1 for the executive and its processes alone

Processes attach over the Unix socket (librtlab's rtlab_attach, or rtlab_client::Periodic
in Rust) with their period, offset, deadline, budget, CPU and priority. Root may attach;
other users only when --allow-user or --allow-group names them (the kernel's peer
credentials decide, supplementary groups count). Each attached thread is journaled, then
pinned and made SCHED_FIFO (at most --max-priority, below the executive's --priority);
one executive thread per CPU of --cpus releases it at every activation through a futex
in a page they share, waking early and letting it spin to the instant. A process that
asks more than its CPU can honour beside the others is refused (--admission, default on:
response-time analysis with the release jitter and cost measured at start; the reply names
the failed test, by how much and what would fit). A process that dies is dropped at once,
one busy on one activation past --hang-timeout or never yielding is dropped and demoted;
the others go on. Each attachment is stored as a run (series NAME.lateness and
NAME.response) when it ends. With --focus CPUS the executive and its processes get those
CPUs alone (rtlab focus: a cpuset partition, every other task and IRQ moved to the other
CPUs, journaled): each attaching process joins the partition before it is promoted and
leaves when it detaches; --cpus must be among the focused CPUs. Runs until SIGINT/SIGTERM
or --duration; the socket is removed, every thread and the focus put back (after SIGKILL:
by rtlab restore). docs/exec-serve.md.")]
pub struct ExecServeArgs {
    /// The socket processes attach at.
    #[arg(long, default_value = rtlab_client::DEFAULT_SOCKET, value_name = "PATH")]
    pub socket: PathBuf,

    /// A task set (docs/taskset.md): a process attaches to one of its tasks by name and gets that task's period, offset, deadline, budget, priority and CPU; other names are refused.
    #[arg(long, value_name = "FILE")]
    pub taskset: Option<PathBuf>,

    /// CPUs processes run on, one executive thread each: `all` or a list like 1,3 [default: the last online CPU].
    #[arg(long, value_parser = input::cpus, value_name = "all|LIST")]
    pub cpus: Option<CpuSelection>,

    /// A user besides root who may attach (name or uid; repeatable).
    #[arg(long, value_name = "NAME|UID")]
    pub allow_user: Vec<String>,

    /// A group whose members may attach, supplementary groups included (name or gid; repeatable).
    #[arg(long, value_name = "NAME|GID")]
    pub allow_group: Vec<String>,

    /// Give these CPUs to the executive and its processes alone (a list like 1 or 2-3; some CPU must stay for the rest), for as long as it serves.
    #[arg(long, value_parser = input::cpus, value_name = "LIST")]
    pub focus: Option<CpuSelection>,

    /// Highest SCHED_FIFO priority a process may ask (and what it gets when it asks none).
    #[arg(long, default_value_t = rtlab_exec::serve::DEFAULT_MAX_PRIORITY, value_parser = clap::value_parser!(u32).range(1..=98))]
    pub max_priority: u32,

    /// SCHED_FIFO priority of the executive threads (above every process's).
    #[arg(long, default_value_t = rtlab_exec::serve::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u32).range(2..=99))]
    pub priority: u32,

    /// Most processes attached at once.
    #[arg(long, default_value_t = rtlab_exec::serve::DEFAULT_MAX_TASKS as u64, value_parser = clap::value_parser!(u64).range(1..=rtlab_exec::serve::MAX_SERVE_TASKS as u64))]
    pub max_tasks: u64,

    /// Admit each attach request by response-time analysis beside the processes attached (WCET = budget), with the overheads measured at start; off: every valid request is granted.
    #[arg(long, default_value = "on", value_parser = on_off, action = clap::ArgAction::Set, value_name = "on|off")]
    pub admission: bool,

    /// Drop a process busy on one activation this long [default: max(1s, 10 periods)].
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub hang_timeout: Option<u64>,

    /// Stop after this long instead of at SIGINT/SIGTERM.
    #[arg(long, value_parser = input::positive_duration, value_name = "DURATION")]
    pub duration: Option<u64>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// Keep no runs (neither in the store nor as files).
    #[arg(long)]
    pub no_store: bool,

    /// Write every ended attachment's run as JSON (schema rtlab.serve/1) to PATH, rewritten after each.
    #[arg(long, value_name = "PATH|-", value_parser = OutputTarget::parser(), value_hint = clap::ValueHint::AnyPath)]
    pub json: Option<OutputTarget>,
}

/// `--admission on|off`.
fn on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("'{other}': expected on or off")),
    }
}

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab exec status
  rtlab exec status --socket /tmp/rtlab-test/exec.sock --json

Asks the executive at --socket (default $RTLAB_SOCKET, else /run/rtlab/exec.sock) for its
attached processes: pid, name, CPU, priority, period, activations, missed activations,
deadline misses, budget overruns and lateness p50/p99/max. Exit code 2 when no executive
answers there.")]
pub struct ExecStatusArgs {
    /// The executive's socket [default: $RTLAB_SOCKET, else /run/rtlab/exec.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Print the answer as JSON (schema rtlab.exec-status/1).
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::super::shared::parse_args as parse;
    use super::*;

    #[test]
    fn admission_is_on_by_default_as_the_server_s_own_default() {
        let args: ExecServeArgs = parse(&[]);
        assert_eq!(args.admission, rtlab_exec::serve::config::DEFAULT_ADMISSION);
        let off: ExecServeArgs = parse(&["--admission", "off"]);
        assert!(!off.admission);
        let on: ExecServeArgs = parse(&["--admission", "on"]);
        assert!(on.admission);
    }
}
