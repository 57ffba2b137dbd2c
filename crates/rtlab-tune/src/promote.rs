//! Rules applied to threads: `set`, `apply` and each step of `watch`, and
//! the read-only `status`.

use crate::changes::{ChangeError, ThreadOutcome, Txn};
use crate::rule::{first_match, Rule};
use crate::task::{Settings, Task, WriteError};
use serde::Serialize;
use std::fmt;

/// What became of one thread a rule matched.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// Index of the rule in its list; None for a change taken back
    /// because no rule matches the thread any more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<usize>,
    pub label: String,
    pub pid: i32,
    pub tid: i32,
    pub starttime: u64,
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
    /// Its name matched but the rule cannot vouch for the process (another
    /// user's, or running a file another user could have written): left
    /// alone, with why.
    Skipped {
        reason: String,
    },
    Failed {
        error: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

impl Applied {
    /// What became of `task`, under rule `rule` (None: taken back because
    /// no rule matches it any more) labelled `label`.
    fn of(task: &Task, rule: Option<usize>, label: String, outcome: Outcome) -> Applied {
        Applied {
            rule,
            label,
            pid: task.pid,
            tid: task.tid,
            starttime: task.starttime,
            name: task.name.clone(),
            process_name: task.process_name.clone(),
            outcome,
        }
    }

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
            Outcome::Changed { old, new } if self.rule.is_none() => {
                write!(f, "restored {who}: {old} -> {new} {}", self.label)
            }
            Outcome::Changed { old, new } => {
                write!(f, "changed  {who}: {old} -> {new} (rule '{}')", self.label)
            }
            Outcome::Held { settings } => write!(f, "held     {who}: {settings}"),
            Outcome::Vanished => write!(f, "gone     {who}: ended before it could be changed"),
            Outcome::Skipped { reason } => write!(f, "skipped  {who}: {reason}"),
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

/// Applies the first matching rule to each of `tasks`, except rtlab's own
/// (a watcher promoting itself would compete with what it promotes). All
/// changes go into the record together (see [`Txn::change_threads`]).
pub fn apply(rules: &[Rule], tasks: &[Task], txn: &Txn) -> Vec<Applied> {
    let (matched, mut skipped) = vet(rules, tasks);
    if matched.is_empty() {
        return skipped;
    }
    let threads: Vec<&Task> = matched.iter().map(|&(_, _, task)| task).collect();
    let outcomes = txn.change_threads(&threads, |task, current| {
        let rule = first_match(rules, task).map(|(_, rule)| rule);
        match rule {
            Some(rule) => rule.promotion.target(current, &allowed_for(rule, task)),
            None => current.clone(),
        }
    });
    let mut results: Vec<Applied> = match outcomes {
        Ok(outcomes) => matched
            .iter()
            .zip(outcomes)
            .map(|(&(index, rule, task), result)| applied(index, rule, task, result))
            .collect(),
        Err(e) => matched
            .iter()
            .map(|&(index, rule, task)| Applied {
                outcome: Outcome::Failed {
                    error: e.to_string(),
                    hint: Some(
                        "nothing was changed: rtlab changes nothing it cannot record".into(),
                    ),
                },
                ..applied(index, rule, task, Err(ChangeError::Vanished))
            })
            .collect(),
    };
    results.append(&mut skipped);
    results
}

/// The threads of `tasks` (rtlab's own aside) the first matching rule may
/// promote, with that rule; and those it matched by name but cannot vouch
/// for, as `Skipped` outcomes. The identity of a process is read once for
/// all its threads.
pub fn vet<'a>(
    rules: &'a [Rule],
    tasks: &'a [Task],
) -> (Vec<(usize, &'a Rule, &'a Task)>, Vec<Applied>) {
    let mut verdicts: std::collections::HashMap<(i32, usize), Result<(), String>> =
        std::collections::HashMap::new();
    let mut matched = Vec::new();
    let mut skipped = Vec::new();
    for task in tasks.iter().filter(|task| !is_rtlab(task)) {
        let Some((index, rule)) = first_match(rules, task) else {
            continue;
        };
        let verdict = verdicts
            .entry((task.pid, index))
            .or_insert_with(|| rule.selector.vouches_for(task));
        match verdict {
            Ok(()) => matched.push((index, rule, task)),
            Err(reason) if reason == crate::identity::GONE => {}
            Err(reason) => skipped.push(Applied {
                outcome: Outcome::Skipped {
                    reason: reason.clone(),
                },
                ..applied(index, rule, task, Err(ChangeError::Vanished))
            }),
        }
    }
    (matched, skipped)
}

/// The CPUs a thread may be given; read only when the rule sets affinity.
fn allowed_for(rule: &Rule, task: &Task) -> rtlab_core::cpuset::CpuSet {
    match rule.promotion.affinity {
        Some(_) => crate::task::allowed_cpus(task.tid),
        None => rtlab_core::cpuset::CpuSet::default(),
    }
}

/// rtlab's own processes (this one, and any other rtlab: a measurement's
/// FIFO 90 probe must not be demoted by a broad pattern) are never changed.
pub fn is_rtlab(task: &Task) -> bool {
    task.pid == std::process::id() as i32 || task.process_name == "rtlab"
}

fn applied(
    index: usize,
    rule: &Rule,
    task: &Task,
    result: Result<ThreadOutcome, ChangeError>,
) -> Applied {
    let outcome = match result {
        Ok(ThreadOutcome::Changed { old, new }) => Outcome::Changed { old, new },
        Ok(ThreadOutcome::Held { settings }) => Outcome::Held { settings },
        Err(ChangeError::Vanished) => Outcome::Vanished,
        Err(e @ ChangeError::Refused { .. }) => Outcome::Failed {
            hint: match &e {
                ChangeError::Refused { error, .. } => hint_for(error, rule, task),
                _ => None,
            },
            error: e.to_string(),
        },
        Err(e) => Outcome::Failed {
            error: e.to_string(),
            hint: None,
        },
    };
    Applied::of(task, Some(index), rule.label.clone(), outcome)
}

/// The rule label of a change taken back because no rule matches any more.
pub const NO_LONGER_MATCHED: &str = "(no rule matches it now)";

/// Takes back this command's changes of `tasks` (threads no rule matches
/// any more), where they still hold.
pub fn revert(tasks: &[Task], txn: &Txn) -> Vec<Applied> {
    tasks
        .iter()
        .filter_map(|task| {
            let outcome = match txn.revert_thread(task) {
                Ok(None) => return None,
                Ok(Some(ThreadOutcome::Changed { old, new })) => Outcome::Changed { old, new },
                Ok(Some(ThreadOutcome::Held { .. })) | Err(ChangeError::Vanished) => return None,
                Err(e) => Outcome::Failed {
                    error: e.to_string(),
                    hint: None,
                },
            };
            Some(Applied::of(task, None, NO_LONGER_MATCHED.into(), outcome))
        })
        .collect()
}

fn hint_for(e: &WriteError, rule: &Rule, task: &Task) -> Option<String> {
    let deadline = rule.promotion.policy == rtlab_core::sched::Policy::Deadline;
    match (e.call, e.errno()) {
        ("sched_setattr", Some(libc::EPERM)) if deadline => Some(
            "SCHED_DEADLINE needs CAP_SYS_NICE and a thread allowed on every CPU of its root \
             domain (check its affinity with `rtlab tune show`)"
                .into(),
        ),
        ("sched_setattr", Some(libc::EPERM)) if is_root() => Some(format!(
            "root was refused: with RT group scheduling (CONFIG_RT_GROUP_SCHED) a thread in a \
             cpu cgroup without real-time time cannot be real-time; see /proc/{}/cgroup and give \
             that group cpu.rt_runtime_us (`rtlab tune check` reports rt-group-sched)",
            task.pid
        )),
        ("sched_setattr", Some(libc::EPERM)) => Some(rtlab_core::sched::RT_PRIVILEGE_HINT.into()),
        ("sched_setattr", Some(libc::EBUSY)) if deadline => Some(
            "admission control refused it: the deadline reservations would need more than the \
             real-time bandwidth (kernel.sched_rt_runtime_us / sched_rt_period_us)"
                .into(),
        ),
        ("sched_setaffinity", Some(libc::EINVAL)) => Some(format!(
            "none of the CPUs asked for is allowed by the thread's cpuset (/proc/{}/cgroup)",
            task.pid
        )),
        ("sched_setaffinity", Some(libc::EBUSY)) => {
            Some("a deadline thread's affinity cannot be narrowed while it is deadline".into())
        }
        _ => None,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a rule's promotion holds on the threads it matches now.
#[derive(Debug, Clone, Serialize)]
pub struct RuleStatus {
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    pub promotion: crate::rule::Promotion,
    pub threads: Vec<ThreadStatus>,
    /// Threads its pattern matches whose process it cannot vouch for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Applied>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadStatus {
    pub pid: i32,
    pub tid: i32,
    pub starttime: u64,
    pub name: String,
    pub process_name: String,
    pub settings: Settings,
    /// What the rule would give it.
    pub target: Settings,
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
            skipped: Vec::new(),
        })
        .collect();
    let (matched, skipped) = vet(rules, tasks);
    for a in skipped {
        if let Some(index) = a.rule {
            statuses[index].skipped.push(a);
        }
    }
    for (index, rule, task) in matched {
        let Ok(settings) = Settings::read(task.tid) else {
            continue; // ended since the scan
        };
        let target = rule.promotion.target(&settings, &allowed_for(rule, task));
        statuses[index].threads.push(ThreadStatus {
            pid: task.pid,
            tid: task.tid,
            starttime: task.starttime,
            name: task.name.clone(),
            process_name: task.process_name.clone(),
            holds: target == settings,
            settings,
            target,
        });
    }
    statuses
}
