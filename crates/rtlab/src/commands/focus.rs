//! `rtlab focus CPUS [-- COMMAND]`: the CPUs to the command alone, and
//! everything put back when it exits (or on SIGINT/SIGTERM; after a
//! SIGKILL, `rtlab restore`).

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::{self, Journal, Restored};
use rtlab_core::result::terminal_text;
use rtlab_focus::{Focus, FocusError, FocusReport};

use crate::cli::FocusArgs;
use crate::input::InputError;
use crate::terminal::{out, put};

/// The signals passed on to the command; SIGINT and SIGTERM also end a
/// focus held without one.
const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

pub fn run(args: &FocusArgs) -> anyhow::Result<ExitCode> {
    let cpus = CpuSet::parse(&args.cpus).map_err(|e| InputError(format!("CPUS: {e}")))?;
    let user = args.user.as_deref().map(user_and_group).transpose()?;
    if let Some(program) = args.command.first() {
        check_runnable(program)?;
    }
    if args.dry_run {
        return dry_run(args, &cpus);
    }
    for r in journal::recover_stale_in_state_dir().1 {
        eprintln!("rtlab: {}", terminal_text(&r.to_string()));
    }
    // Registered before anything changes: a signal during the start is
    // seen once the focus holds, and then ends it in order.
    let received = Arc::new(AtomicUsize::new(0));
    for signal in FORWARDED {
        let received = Arc::clone(&received);
        // SAFETY: the handler only stores a number.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                received.store(signal as usize, Ordering::SeqCst)
            })
        }
        .with_context(|| format!("cannot handle signal {signal}"))?;
    }
    let journal = Arc::new(Mutex::new(Journal::for_this_process()));
    journal::install_panic_restore(Arc::clone(&journal));
    let focus = Focus::start(&cpus, journal).map_err(|e| match e {
        FocusError::Invalid(m) => {
            anyhow::Error::new(InputError(format!("CPUS {}: {m}", args.cpus)))
        }
        other => anyhow::Error::new(other),
    })?;
    if !args.json {
        eprint!("{}", terminal_text(&report_text(focus.report(), "")));
    }
    let outcome = if args.command.is_empty() {
        hold(&received);
        Ok(None)
    } else {
        run_command(&focus, &args.command, user, &received).map(Some)
    };
    let report = focus.report().clone();
    let restored = focus.end();
    let failed = restored.iter().any(|r| !r.ok());
    let status = outcome?;
    if args.json {
        print_json(args, &report, &restored, status)?;
    } else {
        for r in restored.iter().filter(|r| !r.ok()) {
            eprintln!("rtlab: {}", terminal_text(&r.to_string()));
        }
        if !failed {
            eprintln!("rtlab: focus ended, {} changes put back", restored.len());
        }
    }
    Ok(match status {
        _ if failed => ExitCode::from(1),
        Some(status) => ExitCode::from(exit_code(status)),
        None => ExitCode::SUCCESS,
    })
}

/// Bad CPUs are bad input (exit 2); the rest is an error (exit 1).
fn focus_error(args: &FocusArgs, e: FocusError) -> anyhow::Error {
    match e {
        FocusError::Invalid(m) => {
            anyhow::Error::new(InputError(format!("CPUS {}: {m}", args.cpus)))
        }
        other => anyhow::Error::new(other),
    }
}

/// `--dry-run`: the report a focus would give now, nothing changed.
fn dry_run(args: &FocusArgs, cpus: &CpuSet) -> anyhow::Result<ExitCode> {
    let report = rtlab_focus::preview(cpus).map_err(|e| focus_error(args, e))?;
    if args.json {
        let doc = serde_json::json!({
            "schema": "rtlab.focus/1",
            "dry_run": true,
            "report": report,
            "command": args.command,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        put!("{}", report_text(&report, "would be "));
    }
    Ok(ExitCode::SUCCESS)
}

/// Waits for SIGINT or SIGTERM.
fn hold(received: &AtomicUsize) {
    eprintln!("rtlab: holding the focus until SIGINT or SIGTERM");
    loop {
        let signal = received.swap(0, Ordering::SeqCst) as i32;
        if signal == libc::SIGINT || signal == libc::SIGTERM {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the command in the partition, passing the signals rtlab gets on
/// to it, until it exits.
fn run_command(
    focus: &Focus,
    argv: &[String],
    user: Option<(u32, u32)>,
    received: &AtomicUsize,
) -> anyhow::Result<ExitStatus> {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some((uid, gid)) = user {
        // std drops the supplementary groups too (setgroups(0)). The
        // partition's cgroup.procs, opened by root before the fork,
        // still takes the write after the switch: the kernel checks the
        // opener's credentials.
        command.uid(uid).gid(gid);
    }
    focus.prepare_command(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| InputError(format!("cannot run {}: {e}", terminal_text(&argv[0]))))?;
    let pid = child.id() as libc::pid_t;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let signal = received.swap(0, Ordering::SeqCst) as i32;
        if signal != 0 {
            // SAFETY: kill has no memory effects; the child is not reaped
            // yet, so its pid is still its own.
            unsafe { libc::kill(pid, signal) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A command that cannot run is refused before anything changes (as
/// execvp would look for it: a path, or a name on $PATH).
fn check_runnable(program: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        runnable(std::path::Path::new(program))
    } else {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| runnable(&dir.join(program)))
        })
    };
    if !found {
        return Err(InputError(format!(
            "COMMAND {}: no such program, or not executable; nothing was changed",
            terminal_text(program)
        ))
        .into());
    }
    Ok(())
}

/// `--user`: the uid, and the primary group of its passwd entry.
fn user_and_group(user: &str) -> anyhow::Result<(u32, u32)> {
    let uid =
        rtlab_tune::identity::resolve_user(user).map_err(|e| InputError(format!("--user: {e}")))?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all-zero is a valid passwd (pointers null, numbers 0).
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid pointers to a passwd, a buffer of the length given and
    // the result pointer, as getpwuid_r requires.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return Err(InputError(format!(
            "--user {user}: uid {uid} has no passwd entry (its group is unknown)"
        ))
        .into());
    }
    Ok((uid, pwd.pw_gid))
}

/// The shell's convention: the code, or 128 + the signal that killed it.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        _ => 1,
    }
}

fn print_json(
    args: &FocusArgs,
    report: &FocusReport,
    restored: &[Restored],
    status: Option<ExitStatus>,
) -> anyhow::Result<()> {
    let doc = serde_json::json!({
        "schema": "rtlab.focus/1",
        "report": report,
        "command": args.command,
        "exit_code": status.map(exit_code),
        "restored": restored,
    });
    out!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// The report as lines for a person; `would` is "" for what was done,
/// "would be " for a dry run.
fn report_text(r: &FocusReport, would: &str) -> String {
    let mut out = format!(
        "rtlab: CPUs {} {would}focused ({}, partition {}); everything else on CPUs {}: {} processes {would}moved\n",
        r.cpus,
        r.backend,
        r.partition.display(),
        r.rest,
        r.moved
    );
    let irqs: Vec<String> = r.irqs_moved.iter().map(u32::to_string).collect();
    if !irqs.is_empty() {
        out += &format!("  IRQs {would}moved off: {}\n", irqs.join(" "));
    }
    for (irq, why) in &r.irqs_unmoved {
        out += &format!("  IRQ {irq} stayed: {why}\n");
    }
    for note in &r.pinned {
        out += &format!(
            "  pinned: process {} ({}): {}\n",
            note.pid, note.comm, note.reason
        );
    }
    for note in &r.unmoved {
        out += &format!(
            "  stayed: process {} ({}): {}\n",
            note.pid, note.comm, note.reason
        );
    }
    for note in &r.notes {
        out += &format!("  {note}\n");
    }
    out
}
