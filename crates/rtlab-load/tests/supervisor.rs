//! RunningLoads with real worker processes. This test binary is also the
//! worker (`supervisor __load-worker SPEC`), so it has its own main
//! (harness = false) and runs its cases one after another.

use rtlab_load::{parse_list, worker_main, Launcher, RunningLoads};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__load-worker") {
        std::process::exit(worker_main(&args[2]));
    }
    // `cargo test NAME` passes a filter; flags such as --quiet are ignored.
    let filter = args[1..].iter().find(|a| !a.starts_with('-')).cloned();
    let cases: [(&str, fn()); 7] = [
        (
            "start_check_stop_collects_records",
            start_check_stop_collects_records,
        ),
        ("drop_kills_every_group", drop_kills_every_group),
        (
            "a_failed_start_names_the_load_and_leaves_nothing",
            a_failed_start_names_the_load_and_leaves_nothing,
        ),
        (
            "check_reports_a_load_that_ended_early",
            check_reports_a_load_that_ended_early,
        ),
        (
            "a_spawning_thread_may_exit_and_be_fifo",
            a_spawning_thread_may_exit_and_be_fifo,
        ),
        (
            "commands_end_on_sigterm_or_are_killed",
            commands_end_on_sigterm_or_are_killed,
        ),
        (
            "leftovers_of_a_killed_worker_are_killed",
            leftovers_of_a_killed_worker_are_killed,
        ),
    ];
    let mut passed = 0;
    let mut failed = 0;
    let mut filtered = 0;
    for (name, case) in cases {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            filtered += 1;
            continue;
        }
        let result = std::panic::catch_unwind(case);
        println!(
            "test {name} ... {}",
            if result.is_ok() { "ok" } else { "FAILED" }
        );
        match result {
            Ok(()) => passed += 1,
            Err(_) => failed += 1,
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; {filtered} filtered out\n",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    std::process::exit(if failed == 0 { 0 } else { 101 });
}

fn launcher() -> Launcher {
    Launcher::this_executable(&["__load-worker"]).unwrap()
}

fn stat(pid: i32) -> Option<rtlab_load::sys::ProcStat> {
    rtlab_load::sys::proc_stat(pid)
}

/// Our own children (workers not reaped would show here).
fn my_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    rtlab_load::sys::all_processes()
        .into_iter()
        .filter(|p| p.ppid == me)
        .map(|p| p.pid)
        .collect()
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn start_check_stop_collects_records() {
    let specs = parse_list("cpu:workers=1,procfs").unwrap();
    let mut loads = RunningLoads::start(&specs, &launcher()).unwrap();
    let groups = loads.process_groups();
    assert_eq!(groups.len(), 2);
    assert_ne!(groups[0], groups[1]);
    for &g in &groups {
        assert_eq!(
            stat(g).map(|s| s.pgrp),
            Some(g),
            "worker {g} leads its group"
        );
    }
    assert_eq!(loads.specs()[0], "cpu:workers=1");
    std::thread::sleep(Duration::from_millis(1300));
    loads.check().unwrap();
    let live = loads.live();
    assert!(
        live[0].work.get("ops").copied().unwrap_or(0) > 0,
        "{live:?}"
    );
    let cgroups = loads.cgroups();
    let records = loads.stop();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].name, "cpu");
    assert_eq!(records[1].name, "procfs");
    assert!(records[0].work["ops"] >= live[0].work["ops"]);
    assert!(records[1].work["processes_listed"] > 0);
    for g in groups {
        assert!(rtlab_load::sys::group_members(g).is_empty());
    }
    for c in cgroups {
        assert!(!c.exists(), "{} left behind", c.display());
    }
    assert!(my_children().is_empty(), "unreaped: {:?}", my_children());
}

fn drop_kills_every_group() {
    let specs = parse_list("cmd:\"sleep 300 & sleep 300 & wait\",cpu:workers=1").unwrap();
    let loads = RunningLoads::start(&specs, &launcher()).unwrap();
    let groups = loads.process_groups();
    let cgroups = loads.cgroups();
    wait_until("the command's children run", Duration::from_secs(5), || {
        rtlab_load::sys::group_members(groups[0]).len() >= 4
    });
    drop(loads);
    for g in groups {
        assert!(
            rtlab_load::sys::group_members(g).is_empty(),
            "group {g} survived"
        );
    }
    for c in cgroups {
        assert!(!c.exists(), "{} left behind", c.display());
    }
    assert!(my_children().is_empty());
}

fn a_failed_start_names_the_load_and_leaves_nothing() {
    let specs = parse_list("cpu:workers=1,io:dir=/nonexistent/rtlab-test").unwrap();
    let err = RunningLoads::start(&specs, &launcher())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("load io:dir=/nonexistent/rtlab-test could not start"),
        "{err}"
    );
    assert!(err.contains("No such file"), "{err}");
    assert!(
        my_children().is_empty(),
        "the cpu worker was left: {:?}",
        my_children()
    );
    let specs = parse_list("cmd:\"exec /nonexistent/program\"").unwrap();
    let err = RunningLoads::start(&specs, &launcher())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exited with status 127") && err.contains("nonexistent"),
        "{err}"
    );
    assert!(my_children().is_empty());
}

fn check_reports_a_load_that_ended_early() {
    let specs = parse_list("cmd:\"sleep 0.3\"").unwrap();
    let mut loads = RunningLoads::start(&specs, &launcher()).unwrap();
    loads.check().unwrap();
    wait_until("the early end is seen", Duration::from_secs(5), || {
        loads.check().is_err()
    });
    let err = loads.check().unwrap_err().to_string();
    assert!(
        err.contains("load cmd:\"sleep 0.3\" stopped early"),
        "{err}"
    );
    assert!(err.contains("exited with status 0"), "{err}");
    let records = loads.stop();
    assert!(
        records[0].notes.iter().any(|n| n.contains("stopped early")),
        "{records:?}"
    );
    assert!(my_children().is_empty());
}

/// The parent-death signal fires when the spawning thread exits; the
/// worker checks its parent process is really gone before ending.
fn a_spawning_thread_may_exit_and_be_fifo() {
    let fifo = std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 5 };
        // SAFETY: this thread only.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap();
    if !fifo {
        eprintln!("\nskipped: the SCHED_OTHER check of a FIFO spawner (SCHED_FIFO not allowed; run as root)");
    }
    let handle = std::thread::spawn(move || {
        if fifo {
            let param = libc::sched_param { sched_priority: 5 };
            // SAFETY: this thread only.
            assert_eq!(
                unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) },
                0
            );
        }
        RunningLoads::start(&parse_list("cpu:workers=1").unwrap(), &launcher()).unwrap()
    });
    let mut loads = handle.join().unwrap();
    let worker = loads.process_groups()[0];
    // SAFETY: plain syscall on our child.
    assert_eq!(
        unsafe { libc::sched_getscheduler(worker) },
        libc::SCHED_OTHER
    );
    std::thread::sleep(Duration::from_millis(700));
    loads.check().unwrap();
    let records = loads.stop();
    assert!(records[0].work["ops"] > 0);
    assert!(records[0].notes.is_empty(), "{records:?}");
}

/// A worker killed outright (as by the OOM killer) cannot clean up: the
/// supervisor kills what it left in its process group and cgroup.
fn leftovers_of_a_killed_worker_are_killed() {
    let specs = parse_list("cmd:\"sleep 300 & sleep 300 & wait\"").unwrap();
    let mut loads = RunningLoads::start(&specs, &launcher()).unwrap();
    let group = loads.process_groups()[0];
    wait_until("the command's children run", Duration::from_secs(5), || {
        rtlab_load::sys::group_members(group).len() >= 4
    });
    // SAFETY: SIGKILL to our own child.
    unsafe { libc::kill(group, libc::SIGKILL) };
    wait_until("the death is seen", Duration::from_secs(5), || {
        loads.check().is_err()
    });
    let records = loads.stop();
    assert!(
        records[0].notes.iter().any(|n| n.contains("were killed")),
        "{records:?}"
    );
    assert!(rtlab_load::sys::group_members(group).is_empty());
    assert!(my_children().is_empty());
}

/// A command ends on SIGTERM, even one that left the process group (it is
/// still in the command's cgroup); one that ignores SIGTERM is killed, and
/// the record says so.
fn commands_end_on_sigterm_or_are_killed() {
    let specs = parse_list("cmd:\"setsid sleep 300 & sleep 300 & wait\"").unwrap();
    let loads = RunningLoads::start(&specs, &launcher()).unwrap();
    let group = loads.process_groups()[0];
    wait_until("the command's children run", Duration::from_secs(5), || {
        rtlab_load::sys::group_members(group).len() >= 3
    });
    let cgroup = loads.cgroups().first().cloned();
    let records = loads.stop();
    if cgroup.is_some() {
        assert!(records[0].notes.is_empty(), "{records:?}");
    }
    let specs = parse_list("cmd:\"trap '' TERM; sleep 300 & wait\"").unwrap();
    let loads = RunningLoads::start(&specs, &launcher()).unwrap();
    let group = loads.process_groups()[0];
    wait_until("the command's children run", Duration::from_secs(5), || {
        rtlab_load::sys::group_members(group).len() >= 3
    });
    let records = loads.stop();
    assert!(
        records[0]
            .notes
            .iter()
            .any(|n| n.contains("did not end") && n.contains("killed")),
        "{records:?}"
    );
    assert!(rtlab_load::sys::group_members(group).is_empty());
    assert!(my_children().is_empty());
}
