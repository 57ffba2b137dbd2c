//! `rtlab tune systemd`: a drop-in that makes systemd start a service at
//! its real-time priority (and lets it keep it: LimitRTPRIO=), or the unit
//! that runs `rtlab tune watch`. Every write is recorded for `tune undo`.

use crate::cli::SystemdArgs;
use crate::input::bad_input;
use crate::invocation::{command_line, own_executable};
use crate::terminal::out;
use rtlab_core::cpuset::CpuSet;
use rtlab_tune::changes::{ChangeLog, UndoScope};
use rtlab_tune::systemd::{self, DropIn, Verification};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: &SystemdArgs) -> anyhow::Result<ExitCode> {
    let (unit, path, contents) = if args.watch_unit {
        let exe = own_executable()?;
        if let Err(e) = systemd::check_watch_binary(&exe) {
            bad_input!("{e}");
        }
        // The service runs from /, so a relative path would name another file.
        let rules = std::path::absolute(&args.rules)
            .map_err(|e| anyhow::anyhow!("--rules {}: {e}", args.rules.display()))?;
        let contents = match systemd::render_watch_unit(&exe, Some(&rules), &command_line()) {
            Ok(text) => text,
            Err(e) => bad_input!("{e}"),
        };
        (
            systemd::WATCH_UNIT_NAME.to_string(),
            systemd::watch_unit_path(&args.unit_dir),
            contents,
        )
    } else {
        let unit = match systemd::service_name(args.unit.as_deref().unwrap_or_default()) {
            Ok(unit) => unit,
            Err(e) => bad_input!("UNIT: {e}"),
        };
        let dropin = drop_in(args)?;
        let contents = systemd::render_dropin(&dropin, &command_line());
        let path = systemd::dropin_path(&args.unit_dir, &unit);
        (unit, path, contents)
    };

    if args.dry_run {
        if args.json {
            let doc = json!({ "schema": "rtlab.tune-systemd/1", "dry_run": true, "unit": unit, "path": path, "contents": contents });
            out!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            out!("# {} (dry run: not written)", path.display());
            std::io::Write::write_all(&mut std::io::stdout(), contents.as_bytes())?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    let log = ChangeLog::default_location();
    let txn = log.begin(&command_line())?;
    txn.write_file(&path, &contents)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let verification = if args.no_verify {
        Verification::Skipped {
            reason: "--no-verify".into(),
        }
    } else {
        match systemd::verify(&args.unit_dir, &unit) {
            Ok(v) => v,
            Err(e) => Verification::Skipped {
                reason: e.to_string(),
            },
        }
    };
    let failed = matches!(verification, Verification::Failed { .. });
    if failed {
        // A unit systemd would refuse is worse than none: take it back.
        log.undo(UndoScope::Txn(txn.id()), true, false)?;
    }
    let reload = (!failed).then(systemd::reload);
    if args.json {
        let doc = json!({
            "schema": "rtlab.tune-systemd/1",
            "dry_run": false,
            "unit": unit,
            "path": path,
            "written": !failed,
            "verification": verification,
            "reload": reload,
            "contents": contents,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_outcome(
            &path,
            &unit,
            &verification,
            reload.as_ref(),
            args.watch_unit,
        )?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_outcome(
    path: &Path,
    unit: &str,
    verification: &Verification,
    reload: Option<&systemd::ReloadOutcome>,
    watch_unit: bool,
) -> std::io::Result<()> {
    out!("{verification}");
    match reload {
        None => out!(
            "{} was NOT kept (taken back): fix the problem above, or --no-verify",
            path.display()
        ),
        Some(reload) => {
            out!("wrote {}", path.display());
            out!("{reload}");
            if watch_unit {
                out!("start it with: systemctl enable --now {unit}");
            } else {
                out!("takes effect at the next start: systemctl restart {unit}");
            }
            out!("take it back with: rtlab tune undo");
        }
    }
    Ok(())
}

fn drop_in(args: &SystemdArgs) -> anyhow::Result<DropIn> {
    let Some(policy) = args.policy else {
        bad_input!("--policy: required for a drop-in");
    };
    let priority = match (args.priority, policy.takes_priority()) {
        (Some(p), _) => p,
        (None, true) => bad_input!("--priority: {policy} needs a priority from 1 to 98"),
        (None, false) => 0,
    };
    let affinity = match &args.affinity {
        Some(list) => match CpuSet::parse(list) {
            Ok(cpus) => Some(cpus),
            Err(e) => bad_input!("--affinity: {e}"),
        },
        None => None,
    };
    let dropin = DropIn {
        policy,
        priority,
        affinity,
        reset_on_fork: args.reset_on_fork,
        limit_rtprio: args.limit_rtprio,
        limit_rttime: args.limit_rttime.map(Duration::from_nanos),
        memlock_infinity: args.memlock_infinity,
    };
    if let Err(e) = dropin.validate(args.allow_99) {
        bad_input!("{e}");
    }
    Ok(dropin)
}
