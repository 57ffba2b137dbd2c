//! The change record's tests (some need root: they skip without it).

use super::error::*;
use super::record::*;
use super::thread::*;
use super::undo::*;
use crate::task::Settings;
use std::fs;

#[test]
fn files_are_recorded_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path().join("state"));
    let unit_dir = dir.path().join("units/app.service.d");
    let created = unit_dir.join("50-rtlab-tune.conf");
    let existing = dir.path().join("units/other.conf");
    fs::create_dir_all(existing.parent().unwrap()).unwrap();
    fs::write(&existing, "before\n").unwrap();

    let txn = log.begin("test").unwrap();
    txn.write_file(&created, "[Service]\n").unwrap();
    txn.write_file(&existing, "after\n").unwrap();
    assert_eq!(log.entries().unwrap().len(), 2);

    let dry = log.undo(UndoScope::Last, false, true).unwrap();
    assert_eq!(dry.len(), 2);
    assert!(created.exists(), "a dry run changes nothing");

    let undone = log.undo(UndoScope::Last, false, false).unwrap();
    assert!(undone.iter().all(|u| u.outcome == UndoOutcome::Restored));
    assert!(!created.exists() && !unit_dir.exists());
    assert_eq!(fs::read_to_string(&existing).unwrap(), "before\n");
    assert!(log.entries().unwrap().is_empty());
}

#[test]
fn an_edited_file_is_left_alone_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let file = dir.path().join("x.conf");
    log.begin("a").unwrap().write_file(&file, "ours\n").unwrap();
    fs::write(&file, "theirs\n").unwrap();
    let undone = log.undo(UndoScope::All, false, false).unwrap();
    assert!(matches!(
        undone[0].outcome,
        UndoOutcome::ChangedSince { .. }
    ));
    assert_eq!(fs::read_to_string(&file).unwrap(), "theirs\n");
    assert_eq!(log.entries().unwrap().len(), 1, "kept for a later try");
    let forced = log.undo(UndoScope::All, true, false).unwrap();
    assert_eq!(forced[0].outcome, UndoOutcome::Restored);
    assert!(!file.exists());
}

#[test]
fn a_change_recorded_but_never_made_leaves_the_record() {
    // `tune apply` killed between recording a change and making it left
    // an entry whose thread still had its old settings: every later
    // undo said 'left alone: changed since' and exited 1, for good.
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path().join("state"));
    let file = dir.path().join("x.conf");
    fs::write(&file, "before\n").unwrap();
    log.begin("a").unwrap().write_file(&file, "ours\n").unwrap();
    // As if the write had not happened.
    fs::write(&file, "before\n").unwrap();
    let log2 = log.clone();
    std::thread::spawn(move || {
        let me = crate::task::thread(
            std::process::id() as i32,
            rtlab_core::sched::gettid(),
            crate::task::Detail::Full,
        )
        .unwrap();
        let txn = log2.begin("batch").unwrap();
        txn.change_thread(&me, |current| Settings {
            policy: rtlab_core::sched::Policy::Batch,
            ..current.clone()
        })
        .unwrap();
        // As if the kill had come before the system call.
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: this thread, a valid parameter.
        assert_eq!(
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) },
            0
        );
        let undone = log2.undo(UndoScope::All, false, false).unwrap();
        assert_eq!(undone.len(), 2);
        for u in &undone {
            assert_eq!(u.outcome, UndoOutcome::Restored, "{}", u.entry);
        }
    })
    .join()
    .unwrap();
    assert!(log.entries().unwrap().is_empty());
    assert_eq!(fs::read_to_string(&file).unwrap(), "before\n");
}

#[test]
fn a_temporary_record_a_killed_rtlab_left_is_removed_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let stale = dir.path().join(format!("{TEMP_PREFIX}Xxp3FS"));
    fs::write(&stale, "{\"schema\": \"half").unwrap();
    let other = dir.path().join(".tmpNotOurs");
    fs::write(&other, "").unwrap();
    log.begin("a")
        .unwrap()
        .write_file(&dir.path().join("x.conf"), "1")
        .unwrap();
    assert!(!stale.exists(), "left by a killed rtlab: removed");
    assert!(other.exists(), "another program's file is not ours");
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| is_temporary(std::ffi::OsStr::new(n)))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn undo_last_takes_only_the_newest_command() {
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    log.begin("first").unwrap().write_file(&a, "1").unwrap();
    log.begin("second").unwrap().write_file(&b, "2").unwrap();
    let undone = log.undo(UndoScope::Last, false, false).unwrap();
    assert_eq!(undone.len(), 1);
    assert_eq!(undone[0].entry.command, "second");
    assert!(a.exists() && !b.exists());
}

#[test]
fn a_corrupt_record_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(FILE_NAME), "{ not json").unwrap();
    let log = ChangeLog::at(dir.path());
    let e = log.begin("x").err().unwrap().to_string();
    assert!(e.contains(FILE_NAME) && e.contains("move it aside"), "{e}");
}

/// A child killed when dropped: a failing test leaves nothing behind.
struct Kid(std::process::Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Kid {
    Kid(std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap())
}

/// A promotion, then the runaway's demotion (as `watch --runaway-limit`
/// records it): undo puts the thread back to where it started in one
/// write, never through the real-time settings in between.
#[test]
fn undo_of_a_demoted_runaway_never_promotes_it_again() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: making another process real-time needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let kid = sleeper();
    let pid = kid.0.id() as i32;
    let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
    let txn = log.begin("watch").unwrap();
    let to = |policy, priority| {
        move |current: &Settings| Settings {
            policy,
            priority,
            ..current.clone()
        }
    };
    txn.change_thread(&task, to(rtlab_core::sched::Policy::Fifo, 3))
        .unwrap();
    txn.change_thread(&task, to(rtlab_core::sched::Policy::Other, 0))
        .unwrap();
    assert_eq!(log.entries().unwrap().len(), 2);

    // What the thread has as undo is about to write to it.
    let seen: std::rc::Rc<std::cell::RefCell<Vec<rtlab_core::sched::Policy>>> = Default::default();
    let seen_in = std::rc::Rc::clone(&seen);
    HOOK.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |at, tid| {
            if at == Stage::Checked && tid == pid {
                seen_in.borrow_mut().push(policy_of(pid));
            }
        }))
    });
    let undone = log.undo(UndoScope::All, false, false).unwrap();
    HOOK.with(|h| h.borrow_mut().take());
    assert_eq!(undone.len(), 2);
    assert!(
        undone.iter().all(|u| u.outcome == UndoOutcome::Restored),
        "{undone:?}"
    );
    assert!(
        seen.borrow().iter().all(|p| !p.is_realtime()),
        "undo made it real-time on the way: {:?}",
        seen.borrow()
    );
    assert_eq!(policy_of(pid), rtlab_core::sched::Policy::Other);
    assert!(log.entries().unwrap().is_empty());
}

/// `sleep 300` at pid `pid` (free now), by setting the kernel's last
/// pid just below it; others may take it first, so it tries again.
/// It starts after clock tick `after` (the start time of the thread
/// that had the pid): start times count ticks (10 ms), and a newcomer
/// started in the same tick would be, to the kernel's record, the same
/// thread (a reuse that quick needs a chosen pid, as here; the kernel
/// hands pids out in turn).
fn sleeper_at(pid: i32, after: u64) -> Option<Kid> {
    // One test at a time chooses a pid: two writing ns_last_pid at once
    // would hand each other's pid out.
    static CHOOSING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = CHOOSING.lock().unwrap_or_else(|e| e.into_inner());
    while boot_ticks() <= after {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for _ in 0..500 {
        fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let kid = sleeper();
        if kid.0.id() as i32 == pid {
            return Some(kid);
        }
    }
    None
}

fn policy_of(pid: i32) -> rtlab_core::sched::Policy {
    Settings::read(pid).unwrap().policy
}

/// Issue 16 item 2: the thread a change was recorded for ends and its
/// id is reused by another process at `stage`; the newcomer must not
/// keep real-time priority, and the outcome must say what happened.
fn swap_at(stage: Stage) -> Option<(Result<ThreadOutcome, ChangeError>, i32, Kid)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: making another process real-time and choosing pids need root");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let target = std::cell::RefCell::new(Some(sleeper()));
    let pid = target.borrow().as_ref().unwrap().0.id() as i32;
    let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
    let newcomer: std::rc::Rc<std::cell::RefCell<Option<Kid>>> = Default::default();
    let slot = std::rc::Rc::clone(&newcomer);
    let target_slot = std::rc::Rc::new(target);
    let killer = std::rc::Rc::clone(&target_slot);
    let started = task.starttime;
    HOOK.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |at, tid| {
            if at == stage && tid == pid {
                drop(killer.borrow_mut().take()); // killed and reaped
                *slot.borrow_mut() = sleeper_at(pid, started);
            }
        }))
    });
    let txn = log.begin("test").unwrap();
    let outcome = txn.change_thread(&task, |current| Settings {
        policy: rtlab_core::sched::Policy::Fifo,
        priority: 3,
        ..current.clone()
    });
    HOOK.with(|h| h.borrow_mut().take());
    let Some(kid) = newcomer.borrow_mut().take() else {
        eprintln!("skipped: cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
        return None;
    };
    assert!(
        log.entries().unwrap().is_empty(),
        "nothing to undo is left in the record"
    );
    Some((outcome, pid, kid))
}

#[test]
fn a_thread_that_ends_while_its_change_is_recorded_is_not_changed() {
    let Some((outcome, pid, kid)) = swap_at(Stage::Recorded) else {
        return;
    };
    assert_eq!(
        policy_of(pid),
        rtlab_core::sched::Policy::Other,
        "the newcomer at the reused pid was promoted"
    );
    assert!(matches!(outcome, Err(ChangeError::Vanished)), "{outcome:?}");
    drop(kid);
}

#[test]
fn a_change_that_lands_on_a_newcomer_is_taken_back_and_reported() {
    let Some((outcome, pid, kid)) = swap_at(Stage::Checked) else {
        return;
    };
    assert_eq!(
        policy_of(pid),
        rtlab_core::sched::Policy::Other,
        "the newcomer at the reused pid kept the promotion"
    );
    match outcome {
        Err(
            e @ ChangeError::EndedDuring {
                taken_back: true, ..
            },
        ) => {
            let text = e.to_string();
            assert!(text.contains("taken back to SCHED_OTHER"), "{text}");
        }
        other => panic!("not reported as reaching another thread: {other:?}"),
    }
    drop(kid);
}

/// Undo writes too: a thread demoted from FIFO (as `watch
/// --runaway-limit` does) ends between undo's check and its write, and
/// a newcomer takes its pid: the newcomer must not be left FIFO.
#[test]
fn an_undo_that_lands_on_a_newcomer_is_taken_back_and_reported() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: making another process real-time and choosing pids need root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    let target = std::rc::Rc::new(std::cell::RefCell::new(Some(sleeper())));
    let pid = target.borrow().as_ref().unwrap().0.id() as i32;
    let fifo = |current: &Settings| Settings {
        policy: rtlab_core::sched::Policy::Fifo,
        priority: 3,
        ..current.clone()
    };
    fifo(&Settings::read(pid).unwrap()).write(pid).unwrap();
    let task = crate::task::thread(pid, pid, crate::task::Detail::Full).unwrap();
    let txn = log.begin("demote").unwrap();
    let demoted = txn
        .change_thread(&task, |current| Settings {
            policy: rtlab_core::sched::Policy::Other,
            priority: 0,
            ..current.clone()
        })
        .unwrap();
    assert!(matches!(demoted, ThreadOutcome::Changed { .. }));

    let newcomer: std::rc::Rc<std::cell::RefCell<Option<Kid>>> = Default::default();
    let (slot, killer) = (std::rc::Rc::clone(&newcomer), std::rc::Rc::clone(&target));
    let started = task.starttime;
    HOOK.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |at, tid| {
            if at == Stage::Checked && tid == pid {
                drop(killer.borrow_mut().take());
                *slot.borrow_mut() = sleeper_at(pid, started);
            }
        }))
    });
    let undone = log.undo(UndoScope::All, false, false).unwrap();
    HOOK.with(|h| h.borrow_mut().take());
    let Some(kid) = newcomer.borrow_mut().take() else {
        eprintln!("skipped: cannot choose a pid here (/proc/sys/kernel/ns_last_pid)");
        return;
    };
    assert_eq!(
        policy_of(pid),
        rtlab_core::sched::Policy::Other,
        "undo left the newcomer at the reused pid real-time"
    );
    match &undone[0].outcome {
        UndoOutcome::Failed { error } => {
            assert!(error.contains("taken back to SCHED_OTHER"), "{error}")
        }
        other => panic!("not reported: {other:?}"),
    }
    drop(kid);
}

#[test]
fn this_threads_change_is_recorded_and_undone() {
    let dir = tempfile::tempdir().unwrap();
    let log = ChangeLog::at(dir.path());
    std::thread::spawn(move || {
        let me = crate::task::thread(
            std::process::id() as i32,
            rtlab_core::sched::gettid(),
            crate::task::Detail::Full,
        )
        .unwrap();
        let txn = log.begin("batch").unwrap();
        // SCHED_BATCH needs no privilege, so this runs as any user.
        let outcome = txn
            .change_thread(&me, |current| Settings {
                policy: rtlab_core::sched::Policy::Batch,
                ..current.clone()
            })
            .unwrap();
        assert!(matches!(outcome, ThreadOutcome::Changed { .. }));
        assert_eq!(
            Settings::read(0).unwrap().policy,
            rtlab_core::sched::Policy::Batch
        );
        let again = txn.change_thread(&me, |current| current.clone()).unwrap();
        assert!(matches!(again, ThreadOutcome::Held { .. }));
        let undone = log.undo(UndoScope::Last, false, false).unwrap();
        assert_eq!(undone.len(), 1);
        assert_eq!(undone[0].outcome, UndoOutcome::Restored);
        assert_eq!(
            Settings::read(0).unwrap().policy,
            rtlab_core::sched::Policy::Other
        );
    })
    .join()
    .unwrap();
}
