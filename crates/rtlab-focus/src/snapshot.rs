//! Where every task and IRQ may run, and the cpuset tree: what a focus
//! changes, so that the state before and after it can be compared.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::cgroups::{v1_cpuset_root, v2_root};
use crate::irqs::{irq_numbers, DEFAULT_AFFINITY, IRQ_DIR, WORKQUEUE_MASK};
use crate::tasks;

/// The files of a cgroup that say where its tasks may run.
const CPUSET_FILES: [&str; 7] = [
    "cpuset.cpus",
    "cpuset.mems",
    "cpuset.cpu_exclusive",
    "cpuset.sched_load_balance",
    "cpuset.cpus.partition",
    "cpuset.cpus.exclusive",
    "cgroup.subtree_control",
];

/// Bounds of the walk of a cgroup tree (a tree is not a place for more).
const MAX_DEPTH: usize = 16;
const MAX_CGROUPS: usize = 10_000;

/// Where every task and IRQ may run, and the cpuset tree: taken before
/// and after focusing, the two must be equal (the tests compare them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    threads: Vec<ThreadPlace>,
    irqs: Vec<(u32, String)>,
    /// Settings files (default IRQ affinity, workqueue mask) and every
    /// cpuset file of the tree, by path.
    files: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct ThreadPlace {
    pid: i32,
    tid: i32,
    starttime: u64,
    comm: String,
    affinity: String,
    /// Its cpuset cgroup (v1) and its v2 cgroup, as /proc says them.
    cgroups: String,
}

impl Snapshot {
    pub fn capture() -> Snapshot {
        // A thread that ends while it is read is left out, as one that
        // ended before.
        let threads = tasks::threads()
            .into_iter()
            .filter_map(|t| {
                Some(ThreadPlace {
                    cgroups: cgroups_of(t.pid, t.tid)?,
                    pid: t.pid,
                    tid: t.tid,
                    starttime: t.starttime,
                    comm: t.comm,
                    affinity: t.affinity.to_string(),
                })
            })
            .collect();
        let irqs = irq_numbers()
            .into_iter()
            .filter_map(|irq| {
                let path = Path::new(IRQ_DIR)
                    .join(irq.to_string())
                    .join("smp_affinity_list");
                Some((irq, fs::read_to_string(path).ok()?.trim().to_string()))
            })
            .collect();
        let mut files = Vec::new();
        for file in [DEFAULT_AFFINITY, WORKQUEUE_MASK] {
            if let Ok(value) = fs::read_to_string(file) {
                files.push((file.to_string(), value.trim().to_string()));
            }
        }
        let mut budget = MAX_CGROUPS;
        for root in [v1_cpuset_root(), v2_root()].into_iter().flatten() {
            walk(&root, 0, &mut budget, &mut files);
        }
        Snapshot {
            threads,
            irqs,
            files,
        }
    }

    /// What differs from `before`, a line each (empty: the same), tasks
    /// that started or ended in between left out.
    pub fn differences(&self, before: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        let was: BTreeMap<(i32, i32, u64), &ThreadPlace> = before
            .threads
            .iter()
            .map(|t| ((t.pid, t.tid, t.starttime), t))
            .collect();
        for now in &self.threads {
            let Some(then) = was.get(&(now.pid, now.tid, now.starttime)) else {
                continue;
            };
            let who = format!("thread {} of process {} ({})", now.tid, now.pid, now.comm);
            if now.affinity != then.affinity {
                out.push(format!(
                    "{who}: CPUs {}, was {}",
                    now.affinity, then.affinity
                ));
            }
            if now.cgroups != then.cgroups {
                out.push(format!(
                    "{who}: cgroups {}, was {}",
                    now.cgroups, then.cgroups
                ));
            }
        }
        let irqs = |s: &Snapshot| -> Vec<(String, String)> {
            s.irqs
                .iter()
                .map(|(irq, cpus)| (format!("IRQ {irq}"), cpus.clone()))
                .collect()
        };
        compare(&irqs(before), &irqs(self), &mut out);
        compare(&before.files, &self.files, &mut out);
        out
    }
}

/// Lines for the keys whose values differ, appeared or went.
fn compare(before: &[(String, String)], after: &[(String, String)], out: &mut Vec<String>) {
    let then: BTreeMap<&String, &String> = before.iter().map(|(k, v)| (k, v)).collect();
    let now: BTreeMap<&String, &String> = after.iter().map(|(k, v)| (k, v)).collect();
    for (key, value) in &now {
        match then.get(key) {
            Some(old) if old != value => out.push(format!("{key}: {value}, was {old}")),
            Some(_) => {}
            None => out.push(format!("{key}: {value}, did not exist")),
        }
    }
    for (key, old) in &then {
        if !now.contains_key(key) {
            out.push(format!("{key}: gone, was {old}"));
        }
    }
}

/// The cpuset (v1) and v2 lines of a thread's /proc cgroup file.
fn cgroups_of(pid: i32, tid: i32) -> Option<String> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/cgroup")).ok()?;
    if text.is_empty() {
        return None;
    }
    let lines = text
        .lines()
        .filter(|l| {
            l.starts_with("0::")
                || l.split(':')
                    .nth(1)
                    .is_some_and(|c| c.split(',').any(|c| c == "cpuset"))
        })
        .collect::<Vec<_>>()
        .join(" ");
    Some(lines)
}

/// Adds the cpuset files of `dir` and its descendants.
fn walk(dir: &Path, depth: usize, budget: &mut usize, files: &mut Vec<(String, String)>) {
    if *budget == 0 || depth > MAX_DEPTH {
        return;
    }
    *budget -= 1;
    for name in CPUSET_FILES {
        let path = dir.join(name);
        if let Ok(value) = fs::read_to_string(&path) {
            files.push((path.display().to_string(), value.trim().to_string()));
        }
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<_> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        walk(&child, depth + 1, budget, files);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_equals_itself_and_a_change_is_named() {
        let first = Snapshot::capture();
        assert!(first
            .threads
            .iter()
            .any(|t| t.pid == std::process::id() as i32));
        assert!(first.differences(&first).is_empty());
        let mut changed = first.clone();
        changed.threads[0].affinity = "7".into();
        changed.files.push(("/x/cpuset.cpus".into(), "1".into()));
        if let Some(irq) = changed.irqs.first_mut() {
            irq.1 = "9".into();
        }
        let lines = changed.differences(&first);
        assert!(
            lines.iter().any(|l| l.contains(": CPUs 7, was ")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l == "/x/cpuset.cpus: 1, did not exist"),
            "{lines:?}"
        );
        // Threads born or gone in between are not differences.
        let mut born = first.clone();
        born.threads[0].starttime += 1;
        assert!(born.differences(&first).is_empty());
    }
}
