//! The load generators. Each runs as threads of the worker process; every
//! counter is incremented where the work is really done.

mod cpu;
mod fswalk;
mod io;
mod msg;
mod net;
mod procfs;
mod started;
mod timers;
mod vm;

use super::ctx::Ctx;
use super::plan::{plan_vm, MemFigures};
use super::spec::{defaults, human_bytes, LoadKind, LoadSpec};
use cpu::start_cpu;
use fswalk::start_fswalk;
use io::start_io;
use msg::start_msg;
use net::start_net;
use procfs::{procfs_loop, zero_copy};
use std::path::PathBuf;
use timers::start_timers;
use vm::start_vm;

pub use started::Started;

/// Starts `spec` (resolved: every parameter set) as threads of this
/// process. Returns once every thread runs; Err names what failed.
pub fn start(spec: &LoadSpec, ctx: &Ctx, started: &mut Started) -> Result<(), String> {
    let p = &spec.params;
    let workers = p.workers.unwrap_or(1);
    match spec.kind {
        LoadKind::Cpu => start_cpu(ctx, started, workers),
        LoadKind::Vm => {
            let mem = MemFigures::read().map_err(|e| format!("vm: reading /proc/meminfo: {e}"))?;
            let plan = plan_vm(workers, p.bytes.unwrap_or(defaults::VM_DEFAULT_BYTES), mem)?;
            if let Some(note) = plan.note {
                started.notes.push(note);
            }
            start_vm(ctx, started, plan.workers, plan.bytes_per_worker)
        }
        LoadKind::Io => {
            let dir = p.dir.clone().unwrap_or_else(super::spec::default_temp_base);
            start_io(
                ctx,
                started,
                &dir,
                workers,
                p.bytes.unwrap_or(defaults::IO_DEFAULT_FILE),
                p.block.unwrap_or(defaults::IO_DEFAULT_BLOCK),
            )
        }
        LoadKind::Fswalk => {
            let root = p.root.clone().unwrap_or_else(|| PathBuf::from("/"));
            start_fswalk(ctx, started, &root, workers, !p.no_stat)
        }
        LoadKind::Net => start_net(
            ctx,
            started,
            workers,
            p.size.unwrap_or(defaults::NET_DEFAULT_SIZE) as usize,
        ),
        LoadKind::Timers => start_timers(
            ctx,
            started,
            workers,
            p.timers.unwrap_or(defaults::TIMERS_DEFAULT_COUNT),
            p.interval_ns
                .unwrap_or(defaults::TIMERS_DEFAULT_INTERVAL_NS),
        ),
        LoadKind::Msg => start_msg(
            ctx,
            started,
            p.groups.unwrap_or(defaults::MSG_DEFAULT_GROUPS),
            p.fds.unwrap_or(defaults::MSG_DEFAULT_FDS),
            p.size.unwrap_or(defaults::MSG_DEFAULT_SIZE) as usize,
        ),
        LoadKind::Procfs => {
            for i in 0..workers {
                let c = ctx.clone();
                started.spawn(ctx, format!("procfs-{i}"), move || {
                    procfs_loop(&c, true, true)
                })?;
            }
            Ok(())
        }
        LoadKind::Dohell => start_dohell(spec, ctx, started),
        LoadKind::Cmd => {
            let command = p.command.clone().unwrap_or_default();
            let cgroup = started.cgroup.clone();
            let mut spawn = |name, body| started.spawn(ctx, name, body);
            let load = super::cmd::CommandLoad::start(&command, ctx, &mut spawn, cgroup.as_ref())?;
            started.command = Some(load);
            Ok(())
        }
    }
}

/// dohell's parts, at its intensities, in this one process:
/// `hackbench 1` (one group of 20 × 20), `dd if=/dev/zero of=FILE
/// bs=1024000 count=100; sync`, `nc` flood (here UDP over loopback),
/// `cat /proc/interrupts`, `ps w`, `dd if=/dev/zero of=/dev/null` and
/// `ls -lR /` (`ls -RU /` with no-stat).
fn start_dohell(spec: &LoadSpec, ctx: &Ctx, started: &mut Started) -> Result<(), String> {
    let p = &spec.params;
    start_msg(&ctx.prefixed("msg_"), started, 1, 20, 100)?;
    let dir = p.dir.clone().unwrap_or_else(super::spec::default_temp_base);
    start_io(
        &ctx.prefixed("io_"),
        started,
        &dir,
        1,
        100 * 1_024_000,
        1_024_000,
    )?;
    start_net(&ctx.prefixed("net_"), started, 1, 1024)?;
    let c = ctx.prefixed("procfs_");
    started.spawn(ctx, "procfs-irq".into(), move || {
        procfs_loop(&c, true, false)
    })?;
    let c = ctx.prefixed("procfs_");
    started.spawn(ctx, "procfs-ps".into(), move || {
        procfs_loop(&c, false, true)
    })?;
    let c = ctx.prefixed("zero_");
    started.spawn(ctx, "dd-zero".into(), move || zero_copy(&c))?;
    let root = p.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    start_fswalk(&ctx.prefixed("fswalk_"), started, &root, 1, !p.no_stat)
}

/// Human text for a counter value: bytes for `bytes*` counters.
pub fn counter_text(name: &str, value: u64) -> String {
    if name.contains("bytes") {
        human_bytes(value)
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    /// Runs a resolved spec in this process for `ms` and returns its counters.
    fn run_for(spec: &str, ms: u64) -> (BTreeMap<String, u64>, Vec<String>) {
        let spec: LoadSpec = spec.parse().unwrap();
        let spec = spec.resolved();
        let ctx = Ctx::default();
        let mut started = Started::default();
        start(&spec, &ctx, &mut started).unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        ctx.stop.store(true, Ordering::SeqCst);
        started.join(Duration::from_secs(5));
        started.remove_temp_dirs();
        assert!(ctx.fatal().is_none(), "{:?}", ctx.fatal());
        (ctx.counters.snapshot(), started.notes)
    }

    #[test]
    fn cpu_counts_operations() {
        let (work, _) = run_for("cpu:workers=2", 200);
        assert!(work["ops"] > 0, "{work:?}");
    }

    #[test]
    fn vm_touches_verifies_and_frees() {
        let (work, _) = run_for("vm:workers=1,bytes=8M", 300);
        assert!(work["allocations"] >= 1, "{work:?}");
        assert!(work["bytes_touched"] >= 8 << 20, "{work:?}");
        assert!(work["bytes_freed"] >= 8 << 20, "{work:?}");
        assert_eq!(work["verify_errors"], 0);
    }

    #[test]
    fn io_writes_and_syncs_then_leaves_nothing() {
        let base = tempfile::tempdir().unwrap();
        let spec = format!("io:bytes=1M,block=64K,dir={}", base.path().display());
        let (work, _) = run_for(&spec, 500);
        assert!(work["bytes_written"] >= 1 << 20, "{work:?}");
        assert!(work["fsyncs"] >= 1, "{work:?}");
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn fswalk_stats_every_entry_or_none() {
        let root = tempfile::tempdir().unwrap();
        for d in ["a", "a/b", "c"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        std::fs::write(root.path().join("a/b/file"), "x").unwrap();
        std::os::unix::fs::symlink("/", root.path().join("loop")).unwrap();
        let spec = format!("fswalk:root={}", root.path().display());
        let (work, _) = run_for(&spec, 200);
        assert!(work["walks"] >= 1, "{work:?}");
        // 5 entries per walk (a, a/b, a/b/file, c, loop): the symlink to /
        // is not followed.
        assert!(work["entries"] >= 5 * work["walks"], "{work:?}");
        assert!(work["entries"] <= 5 * (work["walks"] + 1), "{work:?}");
        assert!(work["lstats"] > 0);
        let (work, _) = run_for(&format!("{spec},no-stat"), 200);
        assert_eq!(work["lstats"], 0);
        assert!(work["entries"] > 0);
    }

    #[test]
    fn net_packets_flow() {
        let (work, _) = run_for("net", 200);
        assert!(
            work["packets_sent"] > 0 && work["packets_received"] > 0,
            "{work:?}"
        );
        assert!(work["packets_received"] <= work["packets_sent"]);
    }

    #[test]
    fn timers_expire() {
        let (work, _) = run_for("timers:workers=1,timers=4,interval=1ms", 200);
        assert!(work["expirations"] > 0 && work["wakeups"] > 0, "{work:?}");
    }

    #[test]
    fn msg_groups_exchange_messages() {
        let (work, _) = run_for("msg:fds=4", 200);
        assert!(work["messages_received"] > 0, "{work:?}");
        assert!(work["messages_received"] <= work["messages_sent"] + 4);
    }

    #[test]
    fn procfs_reads() {
        let (work, _) = run_for("procfs", 200);
        assert!(
            work["processes_listed"] > 0 && work["files_read"] > 0,
            "{work:?}"
        );
    }

    #[test]
    fn dohell_runs_every_part() {
        let base = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        let spec = format!(
            "dohell:dir={},root={}",
            base.path().display(),
            root.path().display()
        );
        let (work, _) = run_for(&spec, 500);
        for key in [
            "msg_messages_received",
            "io_bytes_written",
            "net_packets_received",
            "procfs_interrupts_reads",
            "procfs_processes_listed",
            "zero_bytes_copied",
            "fswalk_lstats",
        ] {
            assert!(work.get(key).copied().unwrap_or(0) > 0, "{key}: {work:?}");
        }
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn unusable_directories_fail_before_running() {
        let ctx = Ctx::default();
        let mut started = Started::default();
        let spec: LoadSpec = "io:dir=/nonexistent/rtlab".parse().unwrap();
        let err = start(&spec.resolved(), &ctx, &mut started).unwrap_err();
        assert!(err.contains("/nonexistent/rtlab"), "{err}");
        let spec: LoadSpec = "fswalk:root=/nonexistent/rtlab".parse().unwrap();
        let err = start(&spec.resolved(), &ctx, &mut started).unwrap_err();
        assert!(err.contains("cannot walk"), "{err}");
    }
}
