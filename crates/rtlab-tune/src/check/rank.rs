//! Kernel threads ranked below a promoted application.
//!
//! Promoting the application to SCHED_FIFO is the step paper 000 found gave
//! most of the gain, but it also puts the application above the kernel
//! threads that do timer, softirq and RCU work on the same CPUs. On the RT
//! kernel the paper's system stalled until the timer softirq threads were
//! raised above the application. A kernel thread only competes with
//! application threads that may run on one of its CPUs, so the comparison
//! is made per kernel thread against the application threads whose
//! affinity overlaps its own.

use std::collections::BTreeMap;

use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;

use super::context::Ctx;
use super::finding::{Area, Finding, Severity};
use super::util::{intersection, list_some, ranges};
use crate::task::Task;

/// The kernel threads the check ranks, by the work they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Timer softirq threads of PREEMPT_RT (ktimers/N; ktimersoftd/N on
    /// older RT patches).
    Ktimers,
    Ksoftirqd,
    /// RCU callback, boost, offload and grace-period threads.
    Rcu,
    /// Threaded interrupt handlers.
    Irq,
}

const CLASSES: [Class; 4] = [Class::Ktimers, Class::Ksoftirqd, Class::Rcu, Class::Irq];

const RCU_PREFIXES: &[&str] = &["rcuc/", "rcub/", "rcuog/", "rcuop/", "rcuos/"];
const RCU_NAMES: &[&str] = &[
    "rcu_preempt",
    "rcu_sched",
    "rcu_exp_gp_kthread_worker",
    "rcu_exp_par_gp_kthread_worker",
];

impl Class {
    fn of(name: &str) -> Option<Class> {
        if name.starts_with("ktimers/") || name.starts_with("ktimersoftd/") {
            Some(Class::Ktimers)
        } else if name.starts_with("ksoftirqd/") {
            Some(Class::Ksoftirqd)
        } else if RCU_PREFIXES.iter().any(|p| name.starts_with(p))
            || RCU_NAMES.iter().any(|n| name.split('/').next() == Some(n))
        {
            Some(Class::Rcu)
        } else if name.starts_with("irq/") {
            Some(Class::Irq)
        } else {
            None
        }
    }

    fn id(self) -> &'static str {
        match self {
            Class::Ktimers => "kthread-rank-ktimers",
            Class::Ksoftirqd => "kthread-rank-ksoftirqd",
            Class::Rcu => "kthread-rank-rcu",
            Class::Irq => "kthread-rank-irq",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Class::Ktimers => "timer softirq threads",
            Class::Ksoftirqd => "softirq threads",
            Class::Rcu => "RCU threads",
            Class::Irq => "interrupt threads",
        }
    }

    /// How bad it is to leave these below the application. On a non-RT
    /// kernel softirqs mostly run on interrupt exit, not in these threads,
    /// so the risk is small there.
    fn severity(self, rt_kernel: bool) -> Severity {
        match (self, rt_kernel) {
            (_, false) | (Class::Irq, true) => Severity::Info,
            (Class::Ktimers | Class::Ksoftirqd, true) => Severity::Critical,
            (Class::Rcu, true) => Severity::Warning,
        }
    }

    fn why(self, rt_kernel: bool) -> &'static str {
        match (self, rt_kernel) {
            (Class::Ktimers, _) => {
                "On PREEMPT_RT the timer softirq (expiry of timers and of the hrtimers that \
                 wake sleeping threads) runs in ktimers/N. An application thread above it that \
                 does not block delays every timer on that CPU, its own wake-ups included. \
                 Paper 000's system stalled on the RT kernel until the timer softirq threads \
                 were raised above the application's priority."
            }
            (Class::Ksoftirqd, true) => {
                "On PREEMPT_RT ksoftirqd/N runs the softirq work the interrupt threads leave \
                 (network, block, tasklets, RCU callbacks). Starved by an application thread \
                 above it, that work piles up and the CPU can stall: paper 000's stalls on \
                 the RT kernel were cured by raising these threads above the application."
            }
            (Class::Ksoftirqd, false) => {
                "On this kernel softirqs mostly run on interrupt exit; ksoftirqd/N takes \
                 over under load, and then an application thread above it delays network \
                 and block completions on that CPU until it blocks."
            }
            (Class::Rcu, _) => {
                "Starved RCU threads stop grace periods: memory frees wait, 'rcu_preempt \
                 detected stalls' appears in dmesg, and eventually the system hangs \
                 (paper 000's stalls followed Red Hat's note on avoiding RCU stalls)."
            }
            (Class::Irq, _) => {
                "An application thread above an interrupt thread delays that device's \
                 interrupts on its CPUs. Often intended (the application outranks unrelated \
                 devices); raise only the interrupt threads the application waits on, such \
                 as its network card's."
            }
        }
    }
}

/// The scheduling of a thread as shown to the user: `fifo 50`, `other`.
fn sched(t: &Task) -> String {
    if t.policy.takes_priority() {
        format!("{} {}", t.policy, t.priority)
    } else {
        t.policy.to_string()
    }
}

/// The position of a kernel thread against FIFO/RR priorities: `None` is
/// below every real-time thread; SCHED_DEADLINE is above them all.
fn rank(t: &Task) -> Option<u32> {
    match t.policy {
        Policy::Fifo | Policy::Rr => Some(t.priority),
        Policy::Deadline => Some(100),
        _ => None,
    }
}

struct App<'a> {
    task: &'a Task,
    cpus: Option<CpuSet>,
}

fn cpus_of(t: &Task) -> Option<CpuSet> {
    CpuSet::parse(&t.affinity).ok().filter(|s| !s.is_empty())
}

/// Whether two threads may share a CPU (unknown affinity counts as yes).
fn overlap(a: &Option<CpuSet>, b: &Option<CpuSet>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => !intersection(a, b).is_empty(),
        _ => true,
    }
}

pub(super) fn checks(ctx: &Ctx) -> Vec<Finding> {
    let tasks = &ctx.input.tasks;
    if tasks.is_empty() {
        return vec![Finding::new(
            "kthread-rank",
            Area::Threads,
            Severity::Info,
            "kernel thread ranking: unknown (no thread list)",
        )];
    }
    let apps: Vec<App> = tasks
        .iter()
        .filter(|t| !t.kernel_thread && t.policy.takes_priority())
        .map(|t| App {
            task: t,
            cpus: cpus_of(t),
        })
        .collect();
    if apps.is_empty() {
        return vec![no_application(tasks)];
    }
    let rt_kernel = ctx.is_rt_kernel();
    let mut findings = Vec::new();
    for class in CLASSES {
        let members: Vec<&Task> = tasks
            .iter()
            .filter(|t| t.kernel_thread && Class::of(&t.name) == Some(class))
            .collect();
        if !members.is_empty() {
            findings.push(rank_class(
                class,
                &members,
                &apps,
                rt_kernel,
                &ctx.env.preempt_model,
            ));
        }
    }
    findings
}

fn no_application(tasks: &[Task]) -> Finding {
    let deadline: Vec<String> = tasks
        .iter()
        .filter(|t| !t.kernel_thread && t.policy == Policy::Deadline)
        .map(|t| format!("{} (pid {}, tid {})", t.name, t.pid, t.tid))
        .collect();
    let mut detail = String::from(
        "Promoting the application's threads to SCHED_FIFO is the step paper 000 found gave \
         most of the gain, more than the RT kernel itself. Once promoted, run this check again: \
         it then compares the timer, softirq and RCU kernel threads with the application.",
    );
    if !deadline.is_empty() {
        detail.push_str(&format!(
            " SCHED_DEADLINE threads ({}) run above every FIFO thread, kernel threads included: \
             keep their runtime budgets small.",
            list_some(&deadline, 4)
        ));
    }
    Finding::new(
        "kthread-rank",
        Area::Threads,
        Severity::Info,
        "no application thread is real-time (no user thread at SCHED_FIFO or SCHED_RR); nothing to rank kernel threads against",
    )
    .detail(detail)
    .fix(
        "promote the application: rtlab tune set '<process name>' --policy fifo --priority 50 \
         (or a [[rule]] in the rules file)",
    )
}

fn rank_class(
    class: Class,
    members: &[&Task],
    apps: &[App],
    rt_kernel: bool,
    preempt_model: &str,
) -> Finding {
    // For each kernel thread: the highest application priority on its CPUs.
    let mut below: Vec<(&Task, u32)> = Vec::new();
    let mut competing_apps: Vec<&App> = Vec::new();
    let mut highest_overall = None;
    for k in members {
        let kcpus = cpus_of(k);
        let rivals: Vec<&App> = apps.iter().filter(|a| overlap(&a.cpus, &kcpus)).collect();
        let Some(top) = rivals.iter().map(|a| a.task.priority).max() else {
            continue;
        };
        highest_overall = highest_overall.max(Some(top));
        if rank(k).is_some_and(|r| r > top) {
            continue;
        }
        below.push((k, top));
        // Name only the application threads that actually outrank (or tie
        // with) this kernel thread.
        let kernel_rank = rank(k);
        for a in rivals
            .into_iter()
            .filter(|a| kernel_rank.is_none_or(|r| a.task.priority >= r))
        {
            if !competing_apps.iter().any(|c| c.task.tid == a.task.tid) {
                competing_apps.push(a);
            }
        }
    }

    let all_groups = groups(members);
    let evidence: Vec<String> = all_groups
        .iter()
        .map(|g| format!("kernel threads: {g}"))
        .collect();
    if below.is_empty() {
        let summary = match highest_overall {
            Some(top) => format!(
                "{} {}: above the application threads on their CPUs (highest fifo/rr {top})",
                class.what(),
                all_groups.join(", ")
            ),
            None => format!(
                "{} {}: share no CPU with a real-time application thread",
                class.what(),
                all_groups.join(", ")
            ),
        };
        return Finding::new(class.id(), Area::Threads, Severity::Ok, summary).evidence(evidence);
    }

    let below_tasks: Vec<&Task> = below.iter().map(|(k, _)| *k).collect();
    let target = below.iter().map(|(_, p)| *p).max().unwrap_or(0) + 1;
    let app_text = describe_apps(&competing_apps);
    let summary = format!(
        "{} {} not above the application ({app_text})",
        class.what(),
        groups(&below_tasks).join(", "),
    );
    let mut detail = format!(
        "{} Kernel: preemption model {preempt_model}.",
        class.why(rt_kernel)
    );
    if class == Class::Irq {
        let names: Vec<String> = below_tasks.iter().map(|t| t.name.clone()).collect();
        detail.push_str(&format!(" Threads: {}.", list_some(&names, 10)));
    }
    Finding::new(
        class.id(),
        Area::Threads,
        class.severity(rt_kernel),
        summary,
    )
    .detail(detail)
    .fix(fix_for(class, &below_tasks, target, &competing_apps))
    .evidence(evidence)
}

/// A thread name as a regular expression matching only itself. `-` needs
/// no escape outside a character class, and leaving it bare keeps names
/// like `irq/24-eth0` readable.
fn literal(name: &str) -> String {
    regex::escape(name).replace("\\-", "-")
}

/// Application threads grouped by process, highest priority first:
/// `alarmd (pid 1200): 3 threads, highest fifo 50`.
fn describe_apps(apps: &[&App]) -> String {
    let mut by_process: BTreeMap<(i32, &str), Vec<&Task>> = BTreeMap::new();
    for a in apps {
        by_process
            .entry((a.task.pid, a.task.process_name.as_str()))
            .or_default()
            .push(a.task);
    }
    let mut entries: Vec<(u32, String)> = by_process
        .into_iter()
        .filter_map(|((pid, process), threads)| {
            let top = threads.iter().max_by_key(|t| t.priority)?;
            let text = if threads.len() == 1 && top.tid == pid && top.name == process {
                format!("{process} (pid {pid}) at {}", sched(top))
            } else if threads.len() == 1 {
                format!(
                    "{process} (pid {pid}) thread {} tid {} at {}",
                    top.name,
                    top.tid,
                    sched(top)
                )
            } else {
                format!(
                    "{process} (pid {pid}): {} threads, highest {} ({} tid {})",
                    threads.len(),
                    sched(top),
                    top.name,
                    top.tid
                )
            };
            Some((top.priority, text))
        })
        .collect();
    entries.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let texts: Vec<String> = entries.into_iter().map(|(_, t)| t).collect();
    list_some(&texts, 4)
}

/// Kernel threads grouped by name prefix and scheduling, with per-CPU (or
/// per-IRQ) numbers compressed: `ksoftirqd/0-1 at other`.
fn groups(threads: &[&Task]) -> Vec<String> {
    let mut by_key: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for t in threads {
        let (prefix, number) = match t.name.split_once('/') {
            Some((prefix, rest)) => {
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                match digits.parse::<u64>() {
                    Ok(n) => (prefix.to_string(), Some(n)),
                    Err(_) => (t.name.clone(), None),
                }
            }
            None => (t.name.clone(), None),
        };
        let entry = by_key.entry((prefix, sched(t))).or_default();
        entry.extend(number);
    }
    // In CPU (or IRQ) order within a prefix, not in the order of the
    // scheduling text.
    let mut entries: Vec<((String, String), Vec<u64>)> = by_key.into_iter().collect();
    entries.sort_by_key(|((prefix, _), numbers)| (prefix.clone(), numbers.iter().min().copied()));
    entries
        .into_iter()
        .map(|((prefix, sched), numbers)| {
            if numbers.is_empty() {
                format!("{prefix} at {sched}")
            } else {
                format!("{prefix}/{} at {sched}", ranges(numbers))
            }
        })
        .collect()
}

/// The name pattern for a set of kernel threads: `ktimers/.*`, or
/// alternatives such as `rcuc/.*|rcu_preempt`.
fn pattern(threads: &[&Task]) -> String {
    let mut parts: Vec<String> = threads
        .iter()
        .map(|t| match t.name.split_once('/') {
            Some((prefix, _)) => format!("{prefix}/.*"),
            None => t.name.clone(),
        })
        .collect();
    parts.sort();
    parts.dedup();
    parts.join("|")
}

fn fix_for(class: Class, threads: &[&Task], target: u32, apps: &[&App]) -> String {
    if target > 99 {
        let top = apps
            .iter()
            .max_by_key(|a| a.task.priority)
            .map(|a| a.task.process_name.clone())
            .unwrap_or_default();
        return format!(
            "the application runs at 99, where nothing can rank above it: lower it first \
             (rtlab tune set '{top}' --policy fifo --priority 90), then raise these kernel \
             threads above it"
        );
    }
    // Interrupt threads: only those the application depends on, so the
    // example names one thread rather than all of them.
    let (pattern, name) = match class {
        Class::Irq => (
            threads
                .first()
                .map(|t| literal(&t.name))
                .unwrap_or_default(),
            "the application's interrupt above it",
        ),
        Class::Ktimers => (pattern(threads), "timer softirq above the application"),
        Class::Ksoftirqd => (pattern(threads), "softirq threads above the application"),
        Class::Rcu => (pattern(threads), "RCU threads above the application"),
    };
    // 99 is the level of the kernel's migration and watchdog threads:
    // rtlab asks for an explicit opt-in to use it.
    let (flag, key) = if target == 99 {
        (" --allow-99", "\nallow_99 = true")
    } else {
        ("", "")
    };
    format!(
        "rtlab tune set '{pattern}' --kernel --policy fifo --priority {target}{flag}\n\
         or in the rules file:\n\
         [[rule]]\n\
         name = \"{name}\"\n\
         match = '{pattern}'\n\
         kernel = true\n\
         policy = \"fifo\"\n\
         priority = {target}{key}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kthread(name: &str, policy: Policy, priority: u32, affinity: &str) -> Task {
        Task {
            pid: 10,
            tid: 10,
            starttime: 1,
            name: name.into(),
            process_name: name.into(),
            cmdline: String::new(),
            kernel_thread: true,
            policy,
            priority,
            nice: 0,
            affinity: affinity.into(),
            cpu: None,
            voluntary_switches: None,
            involuntary_switches: None,
        }
    }

    #[test]
    fn classes() {
        assert_eq!(Class::of("ktimers/0"), Some(Class::Ktimers));
        assert_eq!(Class::of("ktimersoftd/3"), Some(Class::Ktimers));
        assert_eq!(Class::of("ksoftirqd/12"), Some(Class::Ksoftirqd));
        assert_eq!(Class::of("rcuc/1"), Some(Class::Rcu));
        assert_eq!(Class::of("rcu_preempt"), Some(Class::Rcu));
        assert_eq!(
            Class::of("rcu_exp_par_gp_kthread_worker/0"),
            Some(Class::Rcu)
        );
        assert_eq!(Class::of("rcu_tasks_kthread"), None);
        assert_eq!(Class::of("irq/24-ACPI:Ged"), Some(Class::Irq));
        assert_eq!(Class::of("kworker/0:1"), None);
        assert_eq!(Class::of("migration/0"), None);
    }

    #[test]
    fn grouping() {
        let a = kthread("ksoftirqd/0", Policy::Other, 0, "0");
        let b = kthread("ksoftirqd/1", Policy::Other, 0, "1");
        let c = kthread("ksoftirqd/3", Policy::Fifo, 2, "3");
        let d = kthread("irq/24-ACPI:Ged", Policy::Fifo, 50, "0");
        let e = kthread("irq/25-eth0", Policy::Fifo, 50, "1");
        let f = kthread("rcu_preempt", Policy::Fifo, 1, "0-1");
        assert_eq!(
            groups(&[&a, &b, &c]),
            vec!["ksoftirqd/0-1 at other", "ksoftirqd/3 at fifo 2"]
        );
        assert_eq!(groups(&[&d, &e]), vec!["irq/24-25 at fifo 50"]);
        assert_eq!(groups(&[&f]), vec!["rcu_preempt at fifo 1"]);
        assert_eq!(pattern(&[&a, &b, &f]), "ksoftirqd/.*|rcu_preempt");
    }

    #[test]
    fn literal_names_and_toml_snippet() {
        let name = "irq/24-ACPI:Ged";
        let re = regex::Regex::new(&format!("^(?:{})$", literal(name))).unwrap();
        assert!(re.is_match(name));
        assert!(!re.is_match("irq/24-ACPI:Gedx"));
        assert_eq!(literal("irq/24-eth0"), "irq/24-eth0");
        assert_eq!(literal("a.b"), "a\\.b");

        let irq = kthread(name, Policy::Fifo, 50, "0");
        let fix = fix_for(Class::Irq, &[&irq], 51, &[]);
        let snippet = &fix[fix.find("[[rule]]").unwrap()..];
        let parsed: toml::Value = toml::from_str(snippet).unwrap();
        let rule = &parsed["rule"][0];
        assert_eq!(rule["match"].as_str(), Some(literal(name).as_str()));
        assert_eq!(rule["priority"].as_integer(), Some(51));
        assert_eq!(rule["kernel"].as_bool(), Some(true));
    }

    #[test]
    fn ranks() {
        assert_eq!(rank(&kthread("x", Policy::Other, 0, "0")), None);
        assert_eq!(rank(&kthread("x", Policy::Fifo, 3, "0")), Some(3));
        assert_eq!(rank(&kthread("x", Policy::Deadline, 0, "0")), Some(100));
    }
}
