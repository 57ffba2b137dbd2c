//! `rtlab focus CPUS [-- COMMAND ARGS...]`.

use clap::Args;

#[derive(Args)]
#[command(after_help = "Examples:
  rtlab focus 1 -- true                          # run `true` on CPU 1 alone, then put everything back
  rtlab focus 1 -- sh -c 'grep Cpus_allowed_list /proc/self/status'
  rtlab focus 1 --json -- true                   # the report and what was put back, as JSON
  rtlab focus 1                                  # hold CPU 1 for real-time work until Ctrl-C
  rtlab focus 1 --dry-run                        # what would move, nothing changed
  rtlab focus 1 --user nobody -- sh -c 'id -u'   # the command without root

The CPUs become a cpuset partition (cgroup v2 cpuset.cpus.partition=isolated
where the cpuset controller is on v2; on v1 an exclusive cpuset with load
balancing off beside one for the rest), every other movable process and every
IRQ's affinity move to the remaining CPUs, and the command starts inside the
partition. Everything is journaled and put back when the command exits, on
SIGINT/SIGTERM (forwarded to the command), and after a SIGKILL by
`rtlab restore`. Exit code: the command's; 2 for a bad CPU list. Needs root.
Details: docs/focus.md.")]
pub struct FocusArgs {
    /// The CPUs given to the command alone, in the kernel's list notation
    /// (1, 2-3); at least one online CPU must stay for everything else.
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    /// Print the report and what was put back as JSON on stdout (schema rtlab.focus/1).
    #[arg(long)]
    pub json: bool,
    /// Say what would move (processes, IRQs, masks) and what would stay, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run the command as this user (name or uid) with its primary group
    /// and no other groups, not as root.
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// The command to run in the partition, after `--`; without one, hold
    /// the CPUs until SIGINT or SIGTERM.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
