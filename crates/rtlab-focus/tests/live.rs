//! The API `exec serve --focus` builds on, live (root, a cpuset controller
//! and two CPUs; else skipped with the reason): a process joins and
//! leaves, a command starts inside, and ending puts the host back as it
//! was, leaving the journal's other entries alone. Changes the whole host:
//! run under /tmp/rtlab-host.lock.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::Journal;
use rtlab_focus::{Focus, FocusError, Snapshot};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn cpus_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn join_leave_command_and_end() {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 || CpuSet::online().len() < 2 {
        eprintln!("\nskipped: needs root and two CPUs\n");
        return;
    }
    let cpu = CpuSet::online().iter().last().unwrap();
    let cpus = CpuSet::from_cpus(vec![cpu]);
    let state = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(Journal::new(state.path().to_path_buf())));
    let knob = state.path().join("knob");
    std::fs::write(&knob, "1\n").unwrap();
    // Another part of the program's change, in the same journal.
    journal.lock().unwrap().set_file(&knob, "2").unwrap();

    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let before = Snapshot::capture();
    let focus = match Focus::start(&cpus, Arc::clone(&journal)) {
        Ok(focus) => focus,
        Err(FocusError::Unavailable(why)) => {
            eprintln!("\nskipped: {why}\n");
            sleeper.kill().unwrap();
            sleeper.wait().unwrap();
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(focus.cpus(), &cpus);
    assert!(focus.report().partition.is_dir());
    assert!(!cpus_of(sleeper.id()).contains(&cpu.to_string()));

    focus.join(sleeper.id() as i32).unwrap();
    assert_eq!(cpus_of(sleeper.id()), cpu.to_string(), "joined");
    focus.leave(sleeper.id() as i32).unwrap();
    assert!(!cpus_of(sleeper.id()).contains(&cpu.to_string()), "left");
    focus.leave(sleeper.id() as i32).unwrap();

    let mut command = Command::new("sh");
    command.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
    focus.prepare_command(&mut command);
    let out = command.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.split_whitespace().nth(1),
        Some(cpu.to_string().as_str()),
        "{text}"
    );

    // A second focus in the same process is refused, the first unharmed.
    let second = Focus::start(&cpus, Arc::clone(&journal));
    assert!(matches!(second, Err(FocusError::Unavailable(_))));
    assert!(focus.report().partition.is_dir());

    let partition = focus.report().partition.clone();
    let restored = focus.end();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert!(!partition.exists());
    let lines = Snapshot::capture().differences(&before);
    assert!(lines.is_empty(), "not as before:\n{}", lines.join("\n"));
    // The other part's change is still there, and still its own to end.
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "2\n");
    assert_eq!(journal.lock().unwrap().entries().len(), 1);
    journal.lock().unwrap().restore();
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "1\n");

    // Dropped without end(): put back too.
    let dropped = Focus::start(&cpus, Arc::clone(&journal)).unwrap();
    let partition = dropped.report().partition.clone();
    drop(dropped);
    assert!(!partition.exists());
    assert!(journal.lock().unwrap().entries().is_empty());
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}
