//! systemd drop-ins and the unit for `rtlab tune watch`: what
//! `rtlab tune systemd` writes, checks with `systemd-analyze verify` and
//! makes systemd reload.
//!
//! A drop-in makes systemd itself start a service at a real-time policy
//! (`CPUSchedulingPolicy=`, `CPUSchedulingPriority=`), so the promotion lasts
//! across restarts without a watcher, and gives it the `LimitRTPRIO=` it needs
//! to raise itself (paper 000, §3.5, footnote 5).
//!
//! This module renders and checks; writing the file (through the journal, so
//! `rtlab tune undo` can restore it) and parsing arguments belong to the CLI.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;
use serde::Serialize;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The name of the unit that runs `rtlab tune watch`.
pub const WATCH_UNIT_NAME: &str = "rtlab-tune-watch.service";

/// The file name of rtlab's drop-in inside `UNIT.d/`. The `50-` prefix
/// orders it after the usual vendor drop-ins and before an administrator's
/// `90-`/`override.conf` (drop-ins are applied in lexical order; later wins).
pub const DROPIN_FILE_NAME: &str = "50-rtlab-tune.conf";

/// Where `rtlab tune systemd` writes by default.
pub const DEFAULT_UNIT_DIR: &str = "/etc/systemd/system";

/// Exists only while systemd runs as PID 1 (what `sd_booted()` tests).
pub const SYSTEMD_BOOTED_MARKER: &str = "/run/systemd/system";

/// The longest a unit name may be (systemd's `UNIT_NAME_MAX` less the NUL).
const UNIT_NAME_MAX: usize = 255;

/// The unit types systemd knows: the suffix of every valid unit name.
const UNIT_SUFFIXES: [&str; 11] = [
    "service",
    "socket",
    "target",
    "device",
    "mount",
    "automount",
    "swap",
    "timer",
    "path",
    "slice",
    "scope",
];

/// How long `systemd-analyze verify` or `systemctl daemon-reload` may take
/// before it is given up (a wedged PID 1 must not hang the command).
const CHILD_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemdError {
    #[error("invalid unit name '{input}': {reason}")]
    UnitName { input: String, reason: String },
    #[error(
        "unit '{unit}': rtlab tune systemd writes [Service] settings, so it needs a .service unit"
    )]
    NotAService { unit: String },
    #[error(
        "policy deadline refused: systemd cannot start a service under SCHED_DEADLINE \
         (CPUSchedulingPolicy= takes only other, batch, idle, fifo or rr)"
    )]
    Deadline,
    #[error("--priority {priority} is out of range for policy {policy}: fifo and rr take 1-99")]
    RealtimePriority { policy: Policy, priority: u32 },
    #[error(
        "--priority {priority} is invalid for policy {policy}: other, batch and idle take priority 0"
    )]
    NonRealtimePriority { policy: Policy, priority: u32 },
    #[error(
        "--priority 99 refused: it ranks the service with the kernel's own highest-priority \
         threads (migration, watchdogs); pass --allow-99 if that is really meant"
    )]
    Priority99,
    #[error(
        "--limit-rtprio {limit} is below --priority {priority}: the service could not regain \
         its priority after lowering it (or in a child started with reset-on-fork); \
         use --limit-rtprio {priority} or more"
    )]
    LimitBelowPriority { limit: u32, priority: u32 },
    #[error("--limit-rtprio {limit} is out of range: real-time priorities end at 99")]
    LimitAbove99 { limit: u32 },
    #[error("--limit-rttime {value}: {reason}")]
    LimitRtTime { value: String, reason: String },
    #[error("--affinity is empty: give at least one CPU (e.g. 1-3)")]
    EmptyAffinity,
    #[error("{what} '{path}' cannot go into the unit's ExecStart=: {reason}")]
    ExecPath {
        what: &'static str,
        path: String,
        reason: String,
    },
}

/// The scheduling a service is started with: the contents of its drop-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIn {
    pub policy: Policy,
    /// 1-99 for fifo/rr, 0 for other/batch/idle.
    pub priority: u32,
    /// `CPUAffinity=`; `None` leaves the unit's affinity as it is.
    pub affinity: Option<CpuSet>,
    /// `CPUSchedulingResetOnFork=yes`: children start at SCHED_OTHER.
    pub reset_on_fork: bool,
    /// `LimitRTPRIO=`; `None` means the priority for fifo/rr (so the service
    /// may raise itself back to it) and no limit line for other policies.
    pub limit_rtprio: Option<u32>,
    /// `LimitRTTIME=`: CPU time a real-time process may use without blocking
    /// before the kernel kills it (whole microseconds).
    pub limit_rttime: Option<Duration>,
    /// `LimitMEMLOCK=infinity`, so the service may `mlockall()`.
    pub memlock_infinity: bool,
}

impl DropIn {
    /// A drop-in that sets only the policy and priority (and the default
    /// `LimitRTPRIO=` for fifo/rr).
    pub fn new(policy: Policy, priority: u32) -> DropIn {
        DropIn {
            policy,
            priority,
            affinity: None,
            reset_on_fork: false,
            limit_rtprio: None,
            limit_rttime: None,
            memlock_infinity: false,
        }
    }

    /// Refuses what systemd cannot do or what would not work: deadline,
    /// priorities outside the policy's range, 99 without `allow_99`, an
    /// `LimitRTPRIO=` below the priority or above 99, an empty affinity, an
    /// `LimitRTTIME=` that is zero or not whole microseconds.
    pub fn validate(&self, allow_99: bool) -> Result<(), SystemdError> {
        match self.policy {
            Policy::Deadline => return Err(SystemdError::Deadline),
            Policy::Fifo | Policy::Rr => {
                if !(1..=99).contains(&self.priority) {
                    return Err(SystemdError::RealtimePriority {
                        policy: self.policy,
                        priority: self.priority,
                    });
                }
                if self.priority == 99 && !allow_99 {
                    return Err(SystemdError::Priority99);
                }
            }
            Policy::Other | Policy::Batch | Policy::Idle => {
                if self.priority != 0 {
                    return Err(SystemdError::NonRealtimePriority {
                        policy: self.policy,
                        priority: self.priority,
                    });
                }
            }
        }
        if let Some(limit) = self.limit_rtprio {
            if limit > 99 {
                return Err(SystemdError::LimitAbove99 { limit });
            }
            if limit < self.priority {
                return Err(SystemdError::LimitBelowPriority {
                    limit,
                    priority: self.priority,
                });
            }
        }
        if self.affinity.as_ref().is_some_and(CpuSet::is_empty) {
            return Err(SystemdError::EmptyAffinity);
        }
        if let Some(rttime) = self.limit_rttime {
            rttime_micros(rttime)?;
        }
        Ok(())
    }

    /// The `LimitRTPRIO=` value written: the explicit limit, else the
    /// priority for fifo/rr, else none.
    pub fn effective_limit_rtprio(&self) -> Option<u32> {
        self.limit_rtprio
            .or(self.policy.takes_priority().then_some(self.priority))
    }
}

/// `LimitRTTIME=` in microseconds, systemd's unit for it.
fn rttime_micros(d: Duration) -> Result<u64, SystemdError> {
    let err = |reason: &str| SystemdError::LimitRtTime {
        value: humantime::format_duration(d).to_string(),
        reason: reason.to_string(),
    };
    if d.is_zero() {
        return Err(err(
            "zero would kill the service the moment it runs real-time; give a duration such as 200ms",
        ));
    }
    if !d.subsec_nanos().is_multiple_of(1_000) {
        return Err(err("the limit is counted in whole microseconds"));
    }
    u64::try_from(d.as_micros())
        .ok()
        .filter(|&us| us < u64::MAX)
        .ok_or_else(|| err("too long for the kernel's limit"))
}

/// A time span in systemd's notation, in the largest unit that keeps it exact.
fn format_timespan_us(us: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (3_600_000_000, "h"),
        (60_000_000, "min"),
        (1_000_000, "s"),
        (1_000, "ms"),
    ];
    for (size, unit) in UNITS {
        if us.is_multiple_of(size) {
            return format!("{}{unit}", us / size);
        }
    }
    format!("{us}us")
}

/// systemd's name for a policy (`CPUSchedulingPolicy=`).
fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Other => "other",
        Policy::Batch => "batch",
        Policy::Idle => "idle",
        Policy::Fifo => "fifo",
        Policy::Rr => "rr",
        // Refused by validate(); written as-is so systemd-analyze flags it.
        Policy::Deadline => "deadline",
    }
}

/// Validates a unit name by systemd's rules and completes a bare name to a
/// service: `foo` → `foo.service` (as `systemctl` does; `foo.bar` without a
/// known suffix becomes `foo.bar.service`). Template instances
/// (`getty@tty1.service`) and templates (`getty@.service`, whose drop-ins
/// apply to every instance) are accepted.
pub fn unit_name(input: &str) -> Result<String, SystemdError> {
    let err = |reason: String| SystemdError::UnitName {
        input: input.escape_debug().to_string(),
        reason,
    };
    if input.is_empty() {
        return Err(err("the name is empty".into()));
    }
    if let Some(bad) = input
        .chars()
        .find(|&c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(err(format!(
            "{} is not allowed in a unit name (a unit name is a file name inside the unit directory)",
            describe_char(bad)
        )));
    }
    let has_known_suffix = input
        .rsplit_once('.')
        .is_some_and(|(_, suffix)| UNIT_SUFFIXES.contains(&suffix));
    let name = if has_known_suffix {
        input.to_string()
    } else {
        format!("{input}.service")
    };
    if name.len() > UNIT_NAME_MAX {
        return Err(err(format!(
            "{} bytes long; systemd allows at most {UNIT_NAME_MAX}",
            name.len()
        )));
    }
    let (stem, suffix) = name.rsplit_once('.').expect("a suffix was ensured above");
    if stem.is_empty() {
        return Err(err(format!("nothing before '.{suffix}'")));
    }
    if let Some(bad) = stem
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || ":-_.\\@".contains(c)))
    {
        return Err(err(format!(
            "{} is not allowed (systemd allows letters, digits, ':', '-', '_', '.', '\\' and '@')",
            describe_char(bad)
        )));
    }
    if stem.starts_with('@') {
        return Err(err(
            "nothing before '@' (a template instance is NAME@INSTANCE.TYPE)".into(),
        ));
    }
    Ok(name)
}

/// [`unit_name`], limited to services: a drop-in with `[Service]` settings
/// only makes sense for a `.service` unit.
pub fn service_name(input: &str) -> Result<String, SystemdError> {
    let name = unit_name(input)?;
    if name.ends_with(".service") {
        Ok(name)
    } else {
        Err(SystemdError::NotAService { unit: name })
    }
}

fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        '/' => "'/'".into(),
        c if c.is_whitespace() || c.is_control() => {
            format!("the character {}", c.escape_default())
        }
        c => format!("'{c}'"),
    }
}

/// `unit_dir/UNIT.d/50-rtlab-tune.conf`. `unit` must have passed
/// [`unit_name`] (it is then a single path component).
pub fn dropin_path(unit_dir: &Path, unit: &str) -> PathBuf {
    unit_dir.join(format!("{unit}.d")).join(DROPIN_FILE_NAME)
}

/// The path of the watch unit in `unit_dir`.
pub fn watch_unit_path(unit_dir: &Path) -> PathBuf {
    unit_dir.join(WATCH_UNIT_NAME)
}

/// A command line made safe for a one-line comment: control characters are
/// escaped, so it cannot end the comment and start a directive.
fn comment_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The drop-in's text: a header (who wrote it, the command, how to undo)
/// and the `[Service]` directives. Call [`DropIn::validate`] first.
pub fn render_dropin(d: &DropIn, command_line: &str) -> String {
    let mut out = String::new();
    out.push_str("# Written by rtlab (`rtlab tune systemd`); rerun the command to change it.\n");
    out.push_str(&format!("# Command: {}\n", comment_safe(command_line)));
    out.push_str(
        "# Undo: `rtlab tune undo`, or delete this file and run `systemctl daemon-reload`.\n",
    );
    out.push_str("[Service]\n");
    out.push_str(&format!("CPUSchedulingPolicy={}\n", policy_name(d.policy)));
    // Written for every policy: a unit that sets a priority of its own must
    // not keep it under a policy that takes 0 (systemd would fail the start).
    out.push_str(&format!("CPUSchedulingPriority={}\n", d.priority));
    out.push_str(&format!(
        "CPUSchedulingResetOnFork={}\n",
        if d.reset_on_fork { "yes" } else { "no" }
    ));
    if let Some(cpus) = &d.affinity {
        // CPUAffinity= assignments accumulate; the empty one drops what the
        // unit or an earlier drop-in set, so the service runs on these only.
        out.push_str("CPUAffinity=\n");
        out.push_str(&format!("CPUAffinity={cpus}\n"));
    }
    if let Some(limit) = d.effective_limit_rtprio() {
        out.push_str(&format!("LimitRTPRIO={limit}\n"));
    }
    if let Some(rttime) = d.limit_rttime {
        match rttime_micros(rttime) {
            Ok(us) => out.push_str(&format!("LimitRTTIME={}\n", format_timespan_us(us))),
            // Refused by validate(); never write a wrong limit silently.
            Err(e) => out.push_str(&format!("# LimitRTTIME= not written: {e}\n")),
        }
    }
    if d.memlock_infinity {
        out.push_str("LimitMEMLOCK=infinity\n");
    }
    out
}

/// An absolute path as a UTF-8 string, or why it cannot be used.
fn exec_path_str<'a>(what: &'static str, path: &'a Path) -> Result<&'a str, SystemdError> {
    let shown = path.to_string_lossy().into_owned();
    let err = |reason: &str| SystemdError::ExecPath {
        what,
        path: shown.escape_debug().to_string(),
        reason: reason.to_string(),
    };
    let text = path
        .to_str()
        .ok_or_else(|| err("it is not valid UTF-8, which a unit file cannot hold"))?;
    if !path.is_absolute() {
        return Err(err(
            "it is relative; a service runs from / so give an absolute path",
        ));
    }
    Ok(text)
}

/// The executable of an `ExecStart=` line. systemd expands `%` specifiers in
/// it (so `%` is written `%%`) but neither unescapes nor expands `$` in it,
/// and refuses quotes, backslashes and control characters.
fn quote_exec_program(path: &Path) -> Result<String, SystemdError> {
    let text = exec_path_str("the rtlab executable", path)?;
    if let Some(bad) = text
        .chars()
        .find(|&c| matches!(c, '"' | '\'' | '\\') || c.is_control())
    {
        return Err(SystemdError::ExecPath {
            what: "the rtlab executable",
            path: text.escape_debug().to_string(),
            reason: format!(
                "systemd refuses {} in an executable's path; install rtlab elsewhere",
                describe_char(bad)
            ),
        });
    }
    let escaped = text.replace('%', "%%");
    Ok(if escaped.chars().any(char::is_whitespace) {
        format!("\"{escaped}\"")
    } else {
        escaped
    })
}

/// One argument of an `ExecStart=` line by systemd's rules: `%` → `%%`,
/// `$` → `$$` (specifiers and variables are expanded in arguments), and
/// double quotes with C escapes around anything with whitespace, quotes,
/// backslashes or control characters.
pub fn quote_exec_arg(arg: &str) -> String {
    let expanded_safe = arg.replace('%', "%%").replace('$', "$$");
    let needs_quotes = arg.is_empty()
        || arg
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '\\'));
    if !needs_quotes {
        return expanded_safe;
    }
    let mut out = String::from("\"");
    for c in expanded_safe.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Where the watch unit's `PrivateTmp=yes` puts an empty directory of the
/// unit's own (/tmp, /var/tmp: a binary under one would not exist for the
/// service), and /dev/shm: all open to every user.
const PRIVATE_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// How to put rtlab where a root service may run it.
const INSTALL_HINT: &str = "install rtlab where only root can write, e.g. \
    `cargo install --locked --path crates/rtlab --root /usr/local`, and run \
    `/usr/local/bin/rtlab tune systemd --watch-unit` from there";

/// Refuses a binary the watch unit must not run: the unit runs it as root
/// with real-time power over every process, so whoever can change the file
/// (or a directory on its path, or a symlink to it) would run code as root;
/// and with `PrivateTmp=yes` a path under /tmp, /var/tmp or /dev/shm names
/// an empty private directory inside the unit, so the service could not
/// start. The ownership is checked when root runs this (as for rules files).
pub fn check_watch_binary(rtlab_exe: &Path) -> Result<(), SystemdError> {
    let err = |reason: String| SystemdError::ExecPath {
        what: "the rtlab executable",
        path: rtlab_exe.to_string_lossy().escape_debug().to_string(),
        reason,
    };
    let resolved =
        std::fs::canonicalize(rtlab_exe).map_err(|e| err(format!("cannot resolve it ({e})")))?;
    if let Some(dir) = PRIVATE_DIRS
        .iter()
        .find(|d| rtlab_exe.starts_with(d) || resolved.starts_with(d))
    {
        let why = if *dir == "/dev/shm" {
            // PrivateTmp= covers /tmp and /var/tmp only.
            "shared memory that every user may write to and that is emptied at each boot"
        } else {
            "which the unit's PrivateTmp=yes replaces with an empty directory of its own (the \
             service would not find it), and which every user may write to"
        };
        return Err(err(format!("it lies under {dir}, {why}; {INSTALL_HINT}")));
    }
    // SAFETY: geteuid has no preconditions. Only root can install the
    // unit; a user writing one elsewhere (a test's unit directory) owns
    // their own build of rtlab.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    crate::trust::check_root_only(rtlab_exe, None).map_err(|reason| {
        err(format!(
            "it {reason}; the unit runs it as root, so whoever can change it would run code \
             as root; {INSTALL_HINT}"
        ))
    })
}

/// The unit that runs `rtlab tune watch` (with `--rules FILE` when given)
/// from `rtlab_exe`, the absolute path of the running rtlab. Both paths must
/// be absolute and UTF-8; systemd forbids quotes and backslashes in the
/// executable's path.
pub fn render_watch_unit(
    rtlab_exe: &Path,
    rules: Option<&Path>,
    command_line: &str,
) -> Result<String, SystemdError> {
    let mut exec = format!("{} tune watch", quote_exec_program(rtlab_exe)?);
    if let Some(rules) = rules {
        let rules = exec_path_str("the rules file", rules)?;
        exec.push_str(" --rules ");
        exec.push_str(&quote_exec_arg(rules));
    }
    Ok(format!(
        "\
# Written by rtlab (`rtlab tune systemd --watch-unit`); rerun the command to change it.
# Command: {command}
# Start it: `systemctl enable --now {WATCH_UNIT_NAME}`.
# Undo: `systemctl disable --now {WATCH_UNIT_NAME}`, then `rtlab tune undo`, or delete
# this file and run `systemctl daemon-reload`.
#
# The watcher's own scheduling is left at the default (SCHED_OTHER, nice 0) on
# purpose: it only works when a process starts, every real-time task preempts
# it anyway, and a positive nice would delay promotions exactly when the
# machine is busy.
[Unit]
Description=rtlab tune watch: keep processes at their real-time priorities
After=multi-user.target

[Service]
Type=exec
ExecStart={exec}
Restart=on-failure
RestartSec=1s
# Hardening that leaves it able to do its work: change other processes'
# scheduling and affinity (CAP_SYS_NICE), hear process starts from the kernel's
# process-event connector (CAP_NET_ADMIN, AF_NETLINK), read /proc (and each
# matched process's /proc/PID/exe, which the rules' identity checks need and
# the kernel shows only with CAP_SYS_PTRACE: rtlab reads it, never attaches),
# and journal its changes under /run/rtlab. Not set, on purpose: RestrictRealtime= (it
# would forbid the very sched_setattr() calls the watcher makes),
# ProtectProc=/ProcSubset= (they hide the processes it promotes),
# ProtectControlGroups=/ProtectKernelTunables=/PrivateDevices= (they would make
# cgroups, /proc/sys and devices such as /dev/cpu_dma_latency unreachable if a
# rule needs them).
CapabilityBoundingSet=CAP_SYS_NICE CAP_NET_ADMIN CAP_SYS_PTRACE
AmbientCapabilities=CAP_SYS_NICE CAP_NET_ADMIN CAP_SYS_PTRACE
NoNewPrivileges=yes
ProtectSystem=full
ProtectHome=read-only
PrivateTmp=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX AF_NETLINK
RestrictNamespaces=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native

[Install]
WantedBy=multi-user.target
",
        command = comment_safe(command_line),
    ))
}

/// What `systemd-analyze verify` said about a unit and its drop-ins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verification {
    /// No problem in what rtlab wrote, and the unit loads. `notes` holds
    /// what systemd-analyze said about files rtlab did not write (the
    /// vendor's unit, other drop-ins, dependencies), if anything.
    Passed { command: String, notes: Vec<String> },
    /// systemd-analyze found problems; its messages, line by line.
    Failed {
        command: String,
        messages: Vec<String>,
    },
    /// The check could not run (systemd-analyze missing, timed out, ...).
    Skipped { reason: String },
}

impl Verification {
    pub fn passed(&self) -> bool {
        matches!(self, Verification::Passed { .. })
    }
}

impl fmt::Display for Verification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verification::Passed { notes, .. } => {
                write!(f, "systemd-analyze verify: passed")?;
                if !notes.is_empty() {
                    write!(f, " (notes about files rtlab did not write follow)")?;
                }
                for note in notes {
                    write!(f, "\n  note: {note}")?;
                }
                Ok(())
            }
            Verification::Failed { command, messages } => {
                write!(f, "systemd-analyze verify: FAILED ({command})")?;
                for message in messages {
                    write!(f, "\n  {message}")?;
                }
                Ok(())
            }
            Verification::Skipped { reason } => {
                write!(f, "systemd-analyze verify: skipped: {reason}")
            }
        }
    }
}

/// Checks `unit` as systemd would load it with `unit_dir` first in its
/// search path: the unit file (from `unit_dir` or the system's unit
/// directories) and every drop-in, including the ones in `unit_dir/UNIT.d/`.
/// Runs `systemd-analyze verify` from `$PATH`.
pub fn verify(unit_dir: &Path, unit: &str) -> Result<Verification, SystemdError> {
    verify_with(Path::new("systemd-analyze"), unit_dir, unit)
}

/// [`verify`] with the given `systemd-analyze` program (a name looked up in
/// `$PATH`, or a path).
///
/// How the drop-in is found without systemd running: `SYSTEMD_UNIT_PATH` is
/// set to `unit_dir` followed by a `:` (the trailing colon keeps the
/// compiled-in directories after it), and the unit is verified by name, so
/// systemd-analyze resolves it, templates included, the way PID 1 would and
/// reads `unit_dir/UNIT.d/*.conf` beside it. `--recursive-errors=no` makes
/// its exit status report problems of this unit only (not of the units it
/// depends on); `--man=no` skips checking `Documentation=` man pages.
/// Problems in files rtlab did not write are notes, not failures (see
/// [`Verification`]).
pub fn verify_with(
    systemd_analyze: &Path,
    unit_dir: &Path,
    unit: &str,
) -> Result<Verification, SystemdError> {
    let unit = unit_name(unit)?;
    let unit_dir = match std::path::absolute(unit_dir) {
        Ok(dir) => dir,
        Err(e) => {
            return Ok(Verification::Skipped {
                reason: format!(
                    "cannot make unit directory {} absolute: {e}",
                    unit_dir.display()
                ),
            })
        }
    };
    let Some(dir_text) = unit_dir.to_str() else {
        return Ok(Verification::Skipped {
            reason: format!(
                "unit directory {} is not valid UTF-8; systemd cannot search it",
                unit_dir.display()
            ),
        });
    };
    if dir_text.contains(':') {
        return Ok(Verification::Skipped {
            reason: format!(
                "unit directory {dir_text} contains ':', which SYSTEMD_UNIT_PATH cannot express"
            ),
        });
    }
    let search_path = format!("{dir_text}:");
    let args = ["verify", "--man=no", "--recursive-errors=no", &unit];
    let command = format!(
        "SYSTEMD_UNIT_PATH={} {} {}",
        shell_quote(&search_path),
        shell_quote(&systemd_analyze.to_string_lossy()),
        args.map(shell_quote).join(" ")
    );
    let mut cmd = Command::new(systemd_analyze);
    cmd.args(args)
        .env("SYSTEMD_UNIT_PATH", &search_path)
        .env("SYSTEMD_COLORS", "0")
        .env("SYSTEMD_PAGER", "")
        .env("SYSTEMD_LOG_TARGET", "console")
        .env_remove("SYSTEMD_LOG_LEVEL");
    let output = match run_with_timeout(cmd, CHILD_TIMEOUT) {
        Ok(Some(output)) => output,
        Ok(None) => {
            return Ok(Verification::Skipped {
                reason: format!(
                    "{} did not finish within {}s and was stopped",
                    systemd_analyze.display(),
                    CHILD_TIMEOUT.as_secs()
                ),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Verification::Skipped {
                reason: format!(
                "{} is not installed (not found); check the unit by hand after installing systemd",
                systemd_analyze.display()
            ),
            })
        }
        Err(e) => {
            return Ok(Verification::Skipped {
                reason: format!("cannot run {}: {e}", systemd_analyze.display()),
            })
        }
    };
    let messages: Vec<String> = output
        .stderr
        .lines()
        .chain(output.stdout.lines())
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect();
    Ok(classify(
        command,
        &rtlab_files(&unit_dir, &unit),
        output.status,
        messages,
        systemd_analyze,
    ))
}

/// The files rtlab writes for `unit` in `unit_dir`: its drop-in, and for the
/// watch unit the unit file itself.
fn rtlab_files(unit_dir: &Path, unit: &str) -> Vec<String> {
    let mut files = vec![dropin_path(unit_dir, unit)];
    if unit == WATCH_UNIT_NAME {
        files.push(watch_unit_path(unit_dir));
    }
    files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// The file a `FILE:LINE: text` message is about, if it has that form.
fn message_file(message: &str) -> Option<&str> {
    static FILE_LINE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re =
        FILE_LINE.get_or_init(|| regex::Regex::new(r"^(/.+?):[0-9]+: ").expect("a valid pattern"));
    re.captures(message)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// Sorts systemd-analyze's messages. A problem in a file rtlab wrote fails
/// the check. A `FILE:LINE:` message about another file (the vendor's unit,
/// an administrator's drop-in) was there before rtlab and is only a note,
/// although it makes systemd-analyze exit non-zero: refusing a drop-in for
/// a unit that already uses a deprecated setting would help nobody. Any
/// other message with a non-zero exit (unit not found, its program not
/// executable, a fatal configuration error) fails the check: the unit would
/// not run as asked.
fn classify(
    command: String,
    ours: &[String],
    status: ExitStatus,
    messages: Vec<String>,
    systemd_analyze: &Path,
) -> Verification {
    let is_ours = |file: &str| ours.iter().any(|o| o == file);
    let problem = |m: &String| match message_file(m) {
        Some(file) => is_ours(file),
        None => !status.success(),
    };
    if !messages.iter().any(problem) {
        if status.success() || !messages.is_empty() {
            return Verification::Passed {
                command,
                notes: messages,
            };
        }
        return Verification::Failed {
            command,
            messages: vec![format!(
                "{} exited with {} and printed nothing",
                systemd_analyze.display(),
                describe_status(status)
            )],
        };
    }
    Verification::Failed { command, messages }
}

/// What became of `systemctl daemon-reload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// systemd read the changed files.
    Reloaded,
    /// systemd runs but the reload failed: the file is written, yet systemd
    /// uses it only after a reload (or reboot).
    Failed { message: String },
    /// systemd is not PID 1 here: nothing to reload.
    Skipped { reason: String },
}

impl fmt::Display for ReloadOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadOutcome::Reloaded => write!(f, "systemctl daemon-reload: done"),
            ReloadOutcome::Failed { message } => write!(
                f,
                "systemctl daemon-reload FAILED: {message}; the file is written, \
                 run `systemctl daemon-reload` once systemd can be reached"
            ),
            ReloadOutcome::Skipped { reason } => write!(f, "systemctl daemon-reload: {reason}"),
        }
    }
}

/// `systemctl daemon-reload` when systemd runs as PID 1, so it reads the
/// written file; otherwise skipped. Never an error: the file stays written
/// either way.
pub fn reload() -> ReloadOutcome {
    reload_with(Path::new(SYSTEMD_BOOTED_MARKER), Path::new("systemctl"))
}

/// [`reload`] with the directory that marks a running systemd and the
/// `systemctl` program given.
pub fn reload_with(booted_marker: &Path, systemctl: &Path) -> ReloadOutcome {
    if !booted_marker.is_dir() {
        return ReloadOutcome::Skipped {
            reason: format!(
                "systemd is not running as PID 1 ({} does not exist): reload skipped; \
                 systemd reads the file when it starts",
                booted_marker.display()
            ),
        };
    }
    let mut cmd = Command::new(systemctl);
    cmd.arg("daemon-reload");
    match run_with_timeout(cmd, CHILD_TIMEOUT) {
        Ok(Some(output)) if output.status.success() => ReloadOutcome::Reloaded,
        Ok(Some(output)) => {
            let said = output.stderr.trim();
            ReloadOutcome::Failed {
                message: format!(
                    "{} daemon-reload exited with {}{}{}",
                    systemctl.display(),
                    describe_status(output.status),
                    if said.is_empty() { "" } else { ": " },
                    said.replace('\n', "; ")
                ),
            }
        }
        Ok(None) => ReloadOutcome::Failed {
            message: format!(
                "{} daemon-reload did not finish within {}s and was stopped",
                systemctl.display(),
                CHILD_TIMEOUT.as_secs()
            ),
        },
        Err(e) => ReloadOutcome::Failed {
            message: format!("cannot run {} daemon-reload: {e}", systemctl.display()),
        },
    }
}

/// `text` as one shell word, for commands shown to be rerun by hand.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@%+,".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".into(),
    }
}

struct ChildOutput {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` (stdin closed) and collects its output; `Ok(None)` when it ran
/// longer than `timeout`, in which case it is killed and reaped.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> io::Result<Option<ChildOutput>> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(status.map(|status| ChildOutput {
        status,
        stdout,
        stderr,
    }))
}
