//! Rules applied to threads: `set`, `apply` and each step of `watch`, and
//! the read-only `status`.

use crate::changes::{ChangeError, ThreadOutcome, Txn};
use crate::rule::{first_match, Rule};
use crate::task::{Settings, Task};
use serde::Serialize;
use std::fmt;

/// What became of one thread a rule matched.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// Index of the rule in its list.
    pub rule: usize,
    pub label: String,
    pub pid: i32,
    pub tid: i32,
    pub name: String,
    pub process_name: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    Changed {
        old: Settings,
        new: Settings,
    },
    Held {
        settings: Settings,
    },
    /// The thread ended before it could be changed.
    Vanished,
    Failed {
        error: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

impl Applied {
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed { .. })
    }
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = if self.pid == self.tid {
            format!("{} {}", self.pid, self.name)
        } else {
            format!(
                "{}/{} {}/{}",
                self.pid, self.tid, self.process_name, self.name
            )
        };
        match &self.outcome {
            Outcome::Changed { old, new } => {
                write!(f, "changed  {who}: {old} -> {new} (rule '{}')", self.label)
            }
            Outcome::Held { settings } => write!(f, "held     {who}: {settings}"),
            Outcome::Vanished => write!(f, "gone     {who}: ended before it could be changed"),
            Outcome::Failed { error, hint } => {
                write!(f, "FAILED   {who}: {error}")?;
                if let Some(hint) = hint {
                    write!(f, "\n         fix: {hint}")?;
                }
                Ok(())
            }
        }
    }
}

/// Applies the first matching rule to each of `tasks`, except the threads
/// of this process (a watcher promoting itself would compete with what it
/// promotes).
pub fn apply(rules: &[Rule], tasks: &[Task], txn: &Txn) -> Vec<Applied> {
    let own_pid = std::process::id() as i32;
    tasks
        .iter()
        .filter(|task| task.pid != own_pid)
        .filter_map(|task| {
            let (index, rule) = first_match(rules, task)?;
            Some(apply_one(index, rule, task, txn))
        })
        .collect()
}

fn apply_one(index: usize, rule: &Rule, task: &Task, txn: &Txn) -> Applied {
    let outcome = match txn.change_thread(task, |current| rule.promotion.target(current)) {
        Ok(ThreadOutcome::Changed { old, new }) => Outcome::Changed { old, new },
        Ok(ThreadOutcome::Held { settings }) => Outcome::Held { settings },
        Err(ChangeError::Vanished) => Outcome::Vanished,
        Err(ChangeError::Refused(e)) => Outcome::Failed {
            hint: hint_for(&e, rule),
            error: e.to_string(),
        },
        Err(e @ ChangeError::Record { .. }) => Outcome::Failed {
            error: e.to_string(),
            hint: Some("nothing was changed: rtlab changes nothing it cannot record".into()),
        },
    };
    Applied {
        rule: index,
        label: rule.label.clone(),
        pid: task.pid,
        tid: task.tid,
        name: task.name.clone(),
        process_name: task.process_name.clone(),
        outcome,
    }
}

fn hint_for(e: &std::io::Error, rule: &Rule) -> Option<String> {
    let deadline = rule.promotion.policy == rtlab_core::sched::Policy::Deadline;
    match e.raw_os_error() {
        Some(libc::EPERM) if deadline => Some(
            "SCHED_DEADLINE needs root (CAP_SYS_NICE) and a thread allowed on every CPU of its \
             root domain: drop `affinity` for deadline rules"
                .into(),
        ),
        Some(libc::EPERM) => Some(rtlab_core::sched::RT_PRIVILEGE_HINT.into()),
        Some(libc::EBUSY) if deadline => Some(
            "admission control refused it: the deadline tasks would need more than the \
             RT bandwidth (kernel.sched_rt_runtime_us / sched_rt_period_us)"
                .into(),
        ),
        Some(libc::EINVAL) if rule.promotion.affinity.is_some() => Some(
            "the CPU list may lie outside the thread's cpuset; check /proc/PID/status \
             Cpus_allowed_list"
                .into(),
        ),
        _ => None,
    }
}

/// Whether a rule's promotion holds on the threads it matches now.
#[derive(Debug, Clone, Serialize)]
pub struct RuleStatus {
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    pub promotion: crate::rule::Promotion,
    pub threads: Vec<ThreadStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadStatus {
    pub pid: i32,
    pub tid: i32,
    pub name: String,
    pub process_name: String,
    pub settings: Settings,
    pub holds: bool,
}

impl RuleStatus {
    /// Every thread it matches has its promotion (true for none matched).
    pub fn holds(&self) -> bool {
        self.threads.iter().all(|t| t.holds)
    }
}

/// For each rule, the threads it is the first match for and whether each
/// has its promotion. Changes nothing.
pub fn status(rules: &[Rule], tasks: &[Task]) -> Vec<RuleStatus> {
    let mut statuses: Vec<RuleStatus> = rules
        .iter()
        .map(|rule| RuleStatus {
            label: rule.label.clone(),
            origin: rule.origin.clone(),
            promotion: rule.promotion.clone(),
            threads: Vec::new(),
        })
        .collect();
    let own_pid = std::process::id() as i32;
    for task in tasks.iter().filter(|t| t.pid != own_pid) {
        let Some((index, rule)) = first_match(rules, task) else {
            continue;
        };
        let Ok(settings) = Settings::read(task.tid) else {
            continue; // ended since the scan
        };
        statuses[index].threads.push(ThreadStatus {
            pid: task.pid,
            tid: task.tid,
            name: task.name.clone(),
            process_name: task.process_name.clone(),
            holds: rule.promotion.holds(&settings),
            settings,
        });
    }
    statuses
}
