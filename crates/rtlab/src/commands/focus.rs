//! `rtlab focus CPUS [-- COMMAND]`: the CPUs to the command alone, and
//! everything put back when it exits (or on SIGINT/SIGTERM; after a
//! SIGKILL, `rtlab restore`).

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

/// The signals passed on to the command; SIGINT and SIGTERM also end a
/// focus held without one.
const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

pub fn run(args: &FocusArgs) -> anyhow::Result<ExitCode> {
    let cpus = CpuSet::parse(&args.cpus).map_err(|e| InputError(format!("CPUS: {e}")))?;
    for r in journal::recover_stale_in_state_dir().1 {
        eprintln!("rtlab: {r}");
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
        eprint!("{}", terminal_text(&report_text(focus.report())));
    }
    let outcome = if args.command.is_empty() {
        hold(&received);
        Ok(None)
    } else {
        run_command(&focus, &args.command, &received).map(Some)
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
    received: &AtomicUsize,
) -> anyhow::Result<ExitStatus> {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
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
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// The report as lines for a person.
fn report_text(r: &FocusReport) -> String {
    let mut out = format!(
        "rtlab: CPUs {} focused ({}, partition {}); everything else on CPUs {}: {} processes moved\n",
        r.cpus,
        r.backend,
        r.partition.display(),
        r.rest,
        r.moved
    );
    let irqs: Vec<String> = r.irqs_moved.iter().map(u32::to_string).collect();
    if !irqs.is_empty() {
        out += &format!("  IRQs moved off: {}\n", irqs.join(" "));
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
