//! The unit that runs `rtlab tune watch`: the binary it may run and its
//! `ExecStart=` quoted as systemd reads it.

use super::error::SystemdError;
use super::names::{comment_safe, describe_char, WATCH_UNIT_NAME};
use std::path::Path;

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
