//! `exec serve --focus CPUS`: the executive and its processes get the CPUs
//! alone (rtlab-focus's partition). The server focuses before it listens
//! and joins its own process, so its executive threads can be pinned
//! there (on cgroup v1 a thread cannot be pinned outside its cpuset); each
//! attaching process joins before its thread is promoted, for the same
//! reason, and leaves when its last attachment ends. Its runs say they
//! were focused.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::journal::{Journal, Restored};
use rtlab_core::result::RunResult;
use rtlab_core::settings::FieldError;
use rtlab_focus::{Focus, FocusError, FocusReport};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Checks `focus` (the `--focus` CPUs) against the online CPUs and the
/// CPUs its real-time work runs on (`cpus`, the setting `cpus_field`):
/// some CPU must be left for the rest of the system, and the work must
/// run inside the partition.
pub fn check(focus: &CpuSet, cpus: &[usize], cpus_field: &'static str) -> Result<(), FieldError> {
    let online = CpuSet::online();
    if focus.is_empty() {
        return Err(FieldError::new("focus", "no CPU given"));
    }
    if let Some(cpu) = focus.iter().find(|&cpu| !online.contains(cpu)) {
        return Err(FieldError::new(
            "focus",
            format!("{{focus}}: CPU {cpu} is not online (online: {online})"),
        ));
    }
    if online.iter().all(|cpu| focus.contains(cpu)) {
        return Err(FieldError::new(
            "focus",
            format!(
                "{{focus}} {focus} is every online CPU: none would be left for the rest of the system"
            ),
        ));
    }
    if let Some(cpu) = cpus.iter().find(|&&cpu| !focus.contains(cpu)) {
        return Err(FieldError::new(
            cpus_field,
            format!(
                "{{{cpus_field}}}: CPU {cpu} is not among the focused CPUs ({{focus}} {focus}): the executive and its processes run inside the partition"
            ),
        ));
    }
    Ok(())
}

/// The focused CPUs of a server, and the processes in them.
pub struct Partition {
    focus: Focus,
    /// Attached processes that joined: pid → attachments.
    members: HashMap<i32, usize>,
}

impl Partition {
    /// Focuses `cpus` (journaled in `journal`) and joins this process.
    pub fn start(cpus: &CpuSet, journal: Arc<Mutex<Journal>>) -> Result<Partition, FocusError> {
        let focus = Focus::start(cpus, journal)?;
        if let Err(e) = focus.join(std::process::id() as i32) {
            // Nothing is left changed on an error.
            focus.end();
            return Err(e);
        }
        Ok(Partition {
            focus,
            members: HashMap::new(),
        })
    }

    pub fn report(&self) -> &FocusReport {
        self.focus.report()
    }

    /// Process `pid` is attaching: it joins the partition unless one of
    /// its threads is attached already. Err: why not.
    pub fn enter(&mut self, pid: i32) -> Result<(), String> {
        let count = self.members.entry(pid).or_insert(0);
        if *count == 0 {
            if let Err(e) = self.focus.join(pid) {
                self.members.remove(&pid);
                return Err(format!(
                    "cannot move process {pid} into the focused CPUs {}: {e}",
                    self.focus.cpus()
                ));
            }
        }
        *count += 1;
        Ok(())
    }

    /// An attachment of `pid` ended: the process leaves with its last.
    /// Some: what went wrong, for the run's warnings.
    pub fn exit(&mut self, pid: i32) -> Option<String> {
        let count = self.members.get_mut(&pid)?;
        *count -= 1;
        if *count > 0 {
            return None;
        }
        self.members.remove(&pid);
        self.focus.leave(pid).err().map(|e| {
            format!(
                "process {pid} could not leave the focused CPUs {}: {e}",
                self.focus.cpus()
            )
        })
    }

    /// Says in `run` that it was focused: its config's `focus`.
    pub fn mark(&self, run: &mut RunResult) {
        run.config["focus"] = summary(self.report());
    }

    /// Gives the CPUs back; what could not be put back, a line each.
    pub fn end(self) -> Vec<String> {
        let restored: Vec<Restored> = self.focus.end();
        restored
            .iter()
            .filter(|r| !r.ok())
            .map(|r| format!("focus: {r}"))
            .collect()
    }
}

/// The focus as a run records it: where, how, and how much moved.
pub fn summary(report: &FocusReport) -> serde_json::Value {
    serde_json::json!({
        "cpus": report.cpus,
        "rest": report.rest,
        "backend": report.backend,
        "partition": report.partition,
        "moved": report.moved,
        "unmoved": report.unmoved.len(),
        "irqs_moved": report.irqs_moved.len(),
        "irqs_unmoved": report.irqs_unmoved.len(),
    })
}

/// What focusing did, a line each, for the server's terminal.
pub fn describe(report: &FocusReport) -> Vec<String> {
    let mut lines = vec![format!(
        "focused CPUs {} ({}, {}): {} processes and {} IRQs moved to CPUs {}",
        report.cpus,
        report.backend,
        report.partition.display(),
        report.moved,
        report.irqs_moved.len(),
        report.rest
    )];
    if !report.unmoved.is_empty() {
        // Kernel threads bound to a CPU, mostly: named, their reasons in
        // the --json document.
        let names: Vec<String> = report
            .unmoved
            .iter()
            .map(|note| format!("{} ({})", note.comm, note.pid))
            .collect();
        lines.push(format!(
            "{} tasks stay on the focused CPUs (the kernel would not move them; why: --json): {}",
            names.len(),
            names.join(", ")
        ));
    }
    for (irq, why) in &report.irqs_unmoved {
        lines.push(format!("IRQ {irq} stays: {why}"));
    }
    lines.extend(report.notes.iter().cloned());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    #[test]
    fn the_focus_must_leave_a_cpu_and_hold_the_work() {
        let online = CpuSet::online();
        let every = CpuSet::from_cpus(online.iter().collect());
        let e = check(&every, &[], "cpus").unwrap_err();
        assert_eq!(e.field, "focus");
        assert!(e.render(flag).contains("is every online CPU"), "{e:?}");
        assert_eq!(
            check(&CpuSet::from_cpus(vec![]), &[], "cpus")
                .unwrap_err()
                .render(flag),
            "--focus: no CPU given"
        );
        let offline = CpuSet::from_cpus(vec![100_000]);
        assert!(check(&offline, &[], "cpus")
            .unwrap_err()
            .render(flag)
            .starts_with("--focus: CPU 100000 is not online"));
        let Some(last) = online.iter().last().filter(|_| online.len() > 1) else {
            return; // one CPU: nothing can be focused
        };
        let focus = CpuSet::from_cpus(vec![last]);
        assert_eq!(check(&focus, &[last], "cpus"), Ok(()));
        let first = online.iter().next().unwrap();
        let e = check(&focus, &[first], "cpu").unwrap_err();
        assert_eq!(e.field, "cpu");
        assert_eq!(
            e.render(flag),
            format!("--cpu: CPU {first} is not among the focused CPUs (--focus {last}): the executive and its processes run inside the partition")
        );
    }
}
