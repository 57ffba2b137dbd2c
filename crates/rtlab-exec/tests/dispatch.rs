//! The dispatcher: every event fires, in order, never early, each with its
//! dispatch error; an injected stall shows at its events; late events are
//! skipped and counted.

mod common;

use common::{fifo_allowed, run, skip};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_exec::dispatch::{DispatchConfig, Guard, Inject, Repeat};
use rtlab_probe::{Probe, Start};
use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

fn config(plan: &Path) -> DispatchConfig {
    DispatchConfig {
        plan: plan.to_path_buf(),
        cpu: None,
        sched: SchedParams {
            policy: Policy::Fifo,
            priority: 80,
            deadline: None,
        },
        repeat: Repeat::Times(1),
        guard: Guard::Fixed(200_000),
        spin_budget_percent: rtlab_exec::guard::DEFAULT_SPIN_BUDGET_PERCENT,
        // The tests count: nothing is skipped unless a test asks for it.
        skip_after_ns: 10_000_000_000,
        inject: None,
    }
}

/// A text plan of `n` events `spacing_us` apart for module `module`, whose
/// data is the event's number.
fn write_plan(path: &Path, header: &str, n: usize, spacing_us: u64, module: &str) {
    let mut text = format!("rtlab-plan 1\n{header}events\n");
    for i in 0..n {
        text += &format!(
            "{}us {module} hex:{:08x}\n",
            i as u64 * spacing_us,
            (i as u32).swap_bytes()
        );
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn events_fire_in_order_never_early_and_all_of_them() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let dest = receiver.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    write_plan(
        &plan,
        &format!("module tx udp dest={dest} size=32\n"),
        200,
        2_000,
        "tx",
    );
    // Read as they come: 400 datagrams overflow a default socket buffer.
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        while got.len() < 400 {
            let n = receiver.recv(&mut buf).unwrap();
            assert_eq!(n, 32);
            let seq = u32::from_le_bytes(buf[0..4].try_into().unwrap());
            let fire = u64::from_le_bytes(buf[12..20].try_into().unwrap());
            got.push((seq, fire));
        }
        got
    });
    let mut cfg = config(&plan);
    cfg.repeat = Repeat::Times(2);
    let outcome = run(&cfg, None);
    let dispatch = &outcome.series[0];
    assert_eq!(dispatch.name, "dispatch");
    assert_eq!((dispatch.stats.samples, dispatch.stats.missed), (400, 0));
    // Every datagram arrived, in plan order, with fire times in order.
    let got = reader.join().unwrap();
    for (i, &(seq, _)) in got.iter().enumerate() {
        assert_eq!(seq, i as u32 % 200, "event order");
    }
    assert!(
        got.windows(2).all(|w| w[1].1 > w[0].1),
        "fire times increase"
    );
    // Never early: the dispatcher spins to each planned time, so two
    // events' fire times are at least their offsets apart, less the
    // first one's own lateness.
    let lateness_0 = dispatch.stats.max_ns;
    for w in got[..200].windows(2) {
        assert!(
            w[1].1 + lateness_0 >= w[0].1 + 2_000_000,
            "event fired early"
        );
    }
}

#[test]
fn an_injected_stall_shows_in_the_dispatch_error_at_its_events() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    write_plan(&plan, "module m mark\n", 300, 5_000, "m");
    let mut cfg = config(&plan);
    cfg.inject = Some(Inject {
        delay_ns: 2_000_000,
        every: 25,
    });
    let samples = dir.path().join("samples.csv");
    let outcome = run(&cfg, Some(&samples));
    let stats = &outcome.series[0].stats;
    assert_eq!(stats.samples + stats.missed, 300);
    let text = std::fs::read_to_string(&samples).unwrap();
    let rows: Vec<(u64, u64)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 300);
    // Events 25, 50, ... (1-based) are the stalled ones: index 24, 49, ...
    for (index, &(_, error)) in rows.iter().enumerate() {
        if (index + 1) % 25 == 0 {
            assert!(
                error >= 2_000_000,
                "event {index} was stalled 2 ms: {error}"
            );
        }
    }
    let stalled = rows.iter().filter(|r| r.1 >= 2_000_000).count();
    assert!((12..=42).contains(&stalled), "{stalled} events ≥ 2 ms");
}

#[test]
fn events_reached_too_late_are_skipped_and_counted() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    // 100 µs apart; a 3 ms stall every 50 events puts the next ~29 events
    // more than 1 ms late.
    write_plan(&plan, "module m mark\n", 500, 100, "m");
    let mut cfg = config(&plan);
    cfg.skip_after_ns = 1_000_000;
    cfg.inject = Some(Inject {
        delay_ns: 3_000_000,
        every: 50,
    });
    let outcome = run(&cfg, None);
    let stats = &outcome.series[0].stats;
    assert_eq!(stats.samples + stats.missed, 500, "{stats:?}");
    assert!(stats.missed >= 10 * 15, "{} skipped", stats.missed);
    assert!(outcome.warnings.iter().any(|w| w.contains("skipped")));
}

#[test]
fn a_plan_that_cannot_run_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    std::fs::write(
        &plan,
        "rtlab-plan 1\nmodule s signal pid=999999999\nevents\n0us s\n",
    )
    .unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let err = config(&plan)
        .start(Start {
            stop: Arc::new(AtomicBool::new(false)),
            samples_csv: None,
            journal: &journal,
        })
        .err()
        .expect("no such process");
    assert!(
        err.to_string().contains("cannot signal process 999999999"),
        "{err}"
    );
}

#[test]
fn a_stop_is_seen_while_the_dispatcher_sleeps_toward_a_far_event() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    std::fs::write(&plan, "rtlab-plan 1\nmodule m mark\nevents\n0us m\n60s m\n").unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let stop = Arc::new(AtomicBool::new(false));
    let run = config(&plan)
        .start(Start {
            stop: Arc::clone(&stop),
            samples_csv: None,
            journal: &journal,
        })
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    // A hang guard, not a timing claim: the next event is a minute away.
    let since = std::time::Instant::now();
    while !run.is_finished() && since.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(run.is_finished(), "the dispatcher did not see the stop");
    let outcome = run.finish().unwrap();
    assert!(outcome.stopped_early);
    let stats = &outcome.series[0].stats;
    assert_eq!(
        (stats.samples, stats.missed),
        (1, 0),
        "the far event never fired"
    );
}

/// `--guard auto` learns from every sleep and records it: one dispatcher,
/// its wake-ups (at most one per event), the guard of each idle length
/// within its bounds, the spin; a fixed guard is used as it is.
#[test]
fn the_dispatcher_reports_its_learned_guard_and_spin() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    write_plan(&plan, "module m mark\n", 300, 2_000, "m");
    let mut cfg = config(&plan);
    cfg.guard = Guard::Auto;
    let outcome = run(&cfg, None);
    let stats = &outcome.series[0].stats;
    assert_eq!(stats.samples + stats.missed, 300);
    let report = outcome.executive.expect("the dispatcher's guards");
    let t = &report.threads[0];
    assert_eq!(
        (t.role.as_str(), t.guard_mode.as_str()),
        ("dispatcher", "auto")
    );
    assert_eq!(t.release_early_mode, "none");
    assert!(t.release_early.is_none());
    let sleeps: u64 = t.guards.iter().map(|b| b.observations).sum();
    assert!(sleeps > 0 && sleeps <= 300, "{sleeps} sleeps");
    assert!(t.spin_ns > 0 && t.elapsed_ns > 0);
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.starts_with("guard auto:")));

    cfg.guard = Guard::Fixed(200_000);
    let outcome = run(&cfg, None);
    let t = &outcome.executive.expect("the dispatcher's guards").threads[0];
    assert_eq!(t.guard_mode, "fixed");
    assert!(
        t.guards.iter().all(|b| b.guard_ns == 200_000),
        "{:?}",
        t.guards
    );
}
