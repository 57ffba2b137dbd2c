//! What a rule selects (processes by name or command line, optionally some
//! of their threads) and what it gives them (a promotion).

use crate::task::{Settings, Task};
use regex::Regex;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{DeadlineParams, Policy};
use serde::Serialize;
use std::fmt;

/// What a pattern is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    /// The process name (`comm`), matched whole, like `pgrep -x`.
    Name,
    /// The command line, matched anywhere in it, like `pgrep -f`.
    Cmdline,
}

/// A regular expression (or, with `exact`, a literal) for a name or a
/// command line.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    field: Field,
    exact: bool,
    regex: Regex,
}

impl Pattern {
    pub fn new(source: &str, field: Field, exact: bool) -> Result<Pattern, String> {
        if source.is_empty() {
            return Err("an empty pattern would match everything".into());
        }
        let body = if exact {
            regex::escape(source)
        } else {
            source.to_string()
        };
        let anchored = match field {
            Field::Name => format!("^(?:{body})$"),
            Field::Cmdline => body,
        };
        let regex = Regex::new(&anchored).map_err(|e| match e {
            regex::Error::Syntax(text) => format!("'{source}' is not a valid regex:\n{text}"),
            other => format!("'{source}': {other}"),
        })?;
        Ok(Pattern {
            source: source.to_string(),
            field,
            exact,
            regex,
        })
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn field(&self) -> Field {
        self.field
    }

    pub fn exact(&self) -> bool {
        self.exact
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Field::Name => write!(f, "name '{}'", self.source),
            Field::Cmdline => write!(f, "command line '{}'", self.source),
        }
    }
}

/// Which threads a rule applies to.
#[derive(Debug, Clone)]
pub struct Selector {
    /// Matched against the process (its name or command line).
    pub process: Pattern,
    /// Matched against each thread's own name; `None` = every thread.
    pub threads: Option<Pattern>,
    /// Kernel threads are only ever touched by a selector that says so.
    pub kernel: bool,
    /// What the process must be besides its name (see [`crate::identity`]);
    /// checked by [`Selector::vouches_for`] once the name matched.
    pub vouch: crate::identity::Vouch,
}

impl Selector {
    pub fn matches(&self, task: &Task) -> bool {
        if task.kernel_thread && !self.kernel {
            return false;
        }
        let process_matches = match self.process.field {
            Field::Name => self.process.is_match(&task.process_name),
            // Kernel threads have no command line; their name stands in, as
            // ps shows it in brackets.
            Field::Cmdline if task.cmdline.is_empty() => self.process.is_match(&task.process_name),
            Field::Cmdline => self.process.is_match(&task.cmdline),
        };
        process_matches && self.threads.as_ref().is_none_or(|t| t.is_match(&task.name))
    }

    /// Whether the process of `task` (which [`Selector::matches`]) is one
    /// the rule may promote; else why not. Reads /proc.
    pub fn vouches_for(&self, task: &Task) -> Result<(), String> {
        self.vouch.judge(task)
    }
}

/// The scheduling a rule gives. Affinity is left alone when not given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Promotion {
    pub policy: Policy,
    pub priority: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineParams>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "cpus_as_list"
    )]
    pub affinity: Option<CpuSet>,
    /// None leaves the thread's own flag as it is (deadline: always set,
    /// since the kernel refuses a deadline thread's fork without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset_on_fork: Option<bool>,
}

fn cpus_as_list<S: serde::Serializer>(cpus: &Option<CpuSet>, s: S) -> Result<S::Ok, S::Error> {
    match cpus {
        Some(cpus) => s.serialize_str(&cpus.to_string()),
        None => s.serialize_none(),
    }
}

/// The kernel's smallest SCHED_DEADLINE runtime (1 << DL_SCALE ns).
const MIN_DEADLINE_RUNTIME_NS: u64 = 1024;

impl Promotion {
    /// Checks the promotion against the kernel's rules and rtlab's safety
    /// rules; the error names the field at fault.
    pub fn validate(&self, allow_99: bool) -> Result<(), (&'static str, String)> {
        if self.policy.takes_priority() {
            if !(1..=99).contains(&self.priority) {
                return Err((
                    "priority",
                    format!(
                        "{} needs a priority from 1 to 99, not {}",
                        self.policy, self.priority
                    ),
                ));
            }
            if self.priority == 99 && !allow_99 {
                return Err((
                    "priority",
                    "priority 99 is refused: it ranks the thread with the kernel's own \
                     watchdog and migration threads, so a spinning thread can stall the machine; \
                     use 98 or below, or allow it explicitly (--allow-99, allow_99 = true)"
                        .into(),
                ));
            }
        } else if self.priority != 0 {
            return Err((
                "priority",
                format!(
                    "{} takes no priority (only fifo and rr do); leave it out",
                    self.policy
                ),
            ));
        }
        match (self.policy, self.deadline) {
            (Policy::Deadline, None) => {
                return Err((
                    "runtime",
                    "deadline needs runtime, deadline and period".into(),
                ))
            }
            (Policy::Deadline, Some(dl)) => {
                if self.reset_on_fork == Some(false) {
                    return Err((
                        "reset_on_fork",
                        "a deadline thread cannot fork or start threads unless its children \
                         start at SCHED_OTHER; leave reset_on_fork out (it is set for deadline)"
                            .into(),
                    ));
                }
                if self.affinity.is_some() {
                    return Err((
                        "affinity",
                        "the kernel admits a deadline thread only if it may run on every CPU \
                         of its root domain; leave affinity out (confine it with an exclusive cpuset)"
                            .into(),
                    ));
                }
                if let Some((min_us, max_us)) = deadline_period_limits_us() {
                    let period_us = dl.period_ns / 1000;
                    if period_us < min_us || period_us > max_us {
                        return Err((
                            "period",
                            format!(
                                "{period_us} us is outside the kernel's limits for deadline \
                                 periods ({min_us} to {max_us} us: \
                                 kernel.sched_deadline_period_min_us / _max_us)"
                            ),
                        ));
                    }
                }
                if dl.runtime_ns < MIN_DEADLINE_RUNTIME_NS {
                    return Err(("runtime", "runtime must be at least 1024 ns".into()));
                }
                if !(dl.runtime_ns <= dl.deadline_ns && dl.deadline_ns <= dl.period_ns) {
                    return Err((
                        "deadline",
                        format!(
                            "needs runtime <= deadline <= period (got {} ns, {} ns, {} ns)",
                            dl.runtime_ns, dl.deadline_ns, dl.period_ns
                        ),
                    ));
                }
            }
            (p, Some(_)) => {
                return Err((
                    "runtime",
                    format!("runtime, deadline and period are for the deadline policy, not {p}"),
                ))
            }
            (_, None) => {}
        }
        if let Some(cpus) = &self.affinity {
            if cpus.is_empty() {
                return Err(("affinity", "the CPU list is empty".into()));
            }
            let online = CpuSet::online();
            if !online.is_empty() && !cpus.iter().any(|c| online.contains(c)) {
                return Err((
                    "affinity",
                    format!("CPUs {cpus} are not online (online: {online})"),
                ));
            }
        }
        Ok(())
    }

    /// What a thread with settings `current`, whose cpuset allows
    /// `allowed`, should have under this promotion: what the promotion does
    /// not set (nice, an absent affinity or reset-on-fork) stays, and the
    /// affinity is what the kernel will really give (the request within the
    /// cpuset), so a promotion that holds is seen to hold.
    pub fn target(&self, current: &Settings, allowed: &CpuSet) -> Settings {
        Settings {
            policy: self.policy,
            priority: if self.policy.takes_priority() {
                self.priority
            } else {
                0
            },
            deadline: self.deadline,
            nice: current.nice,
            reset_on_fork: match self.policy {
                Policy::Deadline => true,
                _ => self.reset_on_fork.unwrap_or(current.reset_on_fork),
            },
            affinity: self
                .affinity
                .as_ref()
                .map(|cpus| effective_cpus(cpus, allowed).to_string())
                .unwrap_or_else(|| current.affinity.clone()),
        }
    }

    /// Whether `current` already has everything this promotion gives.
    pub fn holds(&self, current: &Settings, allowed: &CpuSet) -> bool {
        self.target(current, allowed) == *current
    }
}

impl fmt::Display for Promotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params = rtlab_core::sched::SchedParams {
            policy: self.policy,
            priority: self.priority,
            deadline: self.deadline,
        };
        write!(f, "{params}")?;
        if let Some(cpus) = &self.affinity {
            write!(f, ", cpus {cpus}")?;
        }
        match self.reset_on_fork {
            Some(true) => write!(f, ", reset-on-fork")?,
            Some(false) => write!(f, ", no reset-on-fork")?,
            None => {}
        }
        Ok(())
    }
}

/// The CPUs of `cpus` a thread can really be given: the kernel narrows an
/// affinity to the online CPUs of the thread's cpuset, so comparing against
/// others would never find the promotion held.
fn effective_cpus(cpus: &CpuSet, allowed: &CpuSet) -> CpuSet {
    let online = CpuSet::online();
    CpuSet::from_cpus(
        cpus.iter()
            .filter(|&c| online.contains(c) && allowed.contains(c))
            .collect(),
    )
}

/// kernel.sched_deadline_period_min_us and _max_us, where the kernel has them.
fn deadline_period_limits_us() -> Option<(u64, u64)> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((
        read("sched_deadline_period_min_us")?,
        read("sched_deadline_period_max_us")?,
    ))
}

/// A selector and the promotion it gives, from a rules file or the
/// command line.
#[derive(Debug, Clone)]
pub struct Rule {
    /// How the rule is named in output (the `name` in a rules file, else
    /// its pattern).
    pub label: String,
    pub selector: Selector,
    pub promotion: Promotion,
    /// `file:line` of the rule, when it came from a file.
    pub origin: Option<String>,
}

/// How much of each thread must be read to match `rules`.
pub fn detail_for(rules: &[Rule]) -> crate::task::Detail {
    crate::task::Detail::Matching {
        cmdline: rules
            .iter()
            .any(|r| r.selector.process.field() == Field::Cmdline),
    }
}

/// The first rule that matches `task` (rules are ordered: put the specific
/// ones first), or None.
pub fn first_match<'r>(rules: &'r [Rule], task: &Task) -> Option<(usize, &'r Rule)> {
    rules
        .iter()
        .enumerate()
        .find(|(_, rule)| rule.selector.matches(task))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(process: &str, thread: &str, cmdline: &str, kernel: bool) -> Task {
        Task {
            pid: 10,
            tid: 11,
            starttime: 1,
            name: thread.into(),
            process_name: process.into(),
            cmdline: cmdline.into(),
            kernel_thread: kernel,
            policy: Policy::Other,
            priority: 0,
            nice: 0,
            affinity: "0-1".into(),
            cpu: Some(0),
            voluntary_switches: None,
            involuntary_switches: None,
        }
    }

    fn selector(process: Pattern, threads: Option<&str>, kernel: bool) -> Selector {
        Selector {
            process,
            threads: threads.map(|t| Pattern::new(t, Field::Name, false).unwrap()),
            kernel,
            vouch: Default::default(),
        }
    }

    #[test]
    fn names_match_whole_and_command_lines_anywhere() {
        let name = Pattern::new("alarm", Field::Name, false).unwrap();
        assert!(name.is_match("alarm"));
        assert!(!name.is_match("alarmd"));
        let alternatives = Pattern::new("alarmd|msgd", Field::Name, false).unwrap();
        assert!(alternatives.is_match("msgd") && !alternatives.is_match("xmsgd"));
        let cmd = Pattern::new("Alarm.*--port", Field::Cmdline, false).unwrap();
        assert!(cmd.is_match("java -cp x.jar AlarmServer --port 7"));
        let exact = Pattern::new("a.b", Field::Name, true).unwrap();
        assert!(exact.is_match("a.b") && !exact.is_match("axb"));
        let err = Pattern::new("(open", Field::Name, false).unwrap_err();
        assert!(err.contains("'(open'"), "{err}");
        assert!(Pattern::new("", Field::Name, false).is_err());
    }

    #[test]
    fn kernel_threads_need_a_selector_that_says_so() {
        let t = task("ksoftirqd/0", "ksoftirqd/0", "", true);
        let pattern = Pattern::new("ksoftirqd/.*", Field::Name, false).unwrap();
        assert!(!selector(pattern.clone(), None, false).matches(&t));
        assert!(selector(pattern, None, true).matches(&t));
        let by_cmdline = Pattern::new("ksoftirqd", Field::Cmdline, false).unwrap();
        assert!(selector(by_cmdline, None, true).matches(&t));
    }

    #[test]
    fn thread_patterns_narrow_a_process_match() {
        let process = Pattern::new("server", Field::Name, false).unwrap();
        let s = selector(process, Some("io-.*"), false);
        assert!(s.matches(&task("server", "io-3", "server", false)));
        assert!(!s.matches(&task("server", "gc", "server", false)));
        assert!(!s.matches(&task("other", "io-3", "other", false)));
    }

    fn promotion(policy: Policy, priority: u32) -> Promotion {
        Promotion {
            policy,
            priority,
            deadline: None,
            affinity: None,
            reset_on_fork: None,
        }
    }

    #[test]
    fn validation_names_the_field() {
        assert!(promotion(Policy::Fifo, 50).validate(false).is_ok());
        assert_eq!(
            promotion(Policy::Fifo, 0).validate(false).unwrap_err().0,
            "priority"
        );
        assert_eq!(
            promotion(Policy::Fifo, 100).validate(true).unwrap_err().0,
            "priority"
        );
        let refused = promotion(Policy::Rr, 99).validate(false).unwrap_err();
        assert!(refused.1.contains("--allow-99"), "{}", refused.1);
        assert!(promotion(Policy::Rr, 99).validate(true).is_ok());
        assert_eq!(
            promotion(Policy::Other, 5).validate(false).unwrap_err().0,
            "priority"
        );
        assert_eq!(
            promotion(Policy::Deadline, 0)
                .validate(false)
                .unwrap_err()
                .0,
            "runtime"
        );
        let mut dl = promotion(Policy::Deadline, 0);
        dl.deadline = Some(DeadlineParams {
            runtime_ns: 2_000_000,
            deadline_ns: 1_000_000,
            period_ns: 10_000_000,
        });
        assert_eq!(dl.validate(false).unwrap_err().0, "deadline");
        let mut far = promotion(Policy::Fifo, 10);
        far.affinity = Some(CpuSet::parse("4000").unwrap());
        assert_eq!(far.validate(false).unwrap_err().0, "affinity");
    }

    #[test]
    fn target_keeps_what_is_not_promoted() {
        let current = Settings {
            policy: Policy::Other,
            priority: 0,
            deadline: None,
            nice: 5,
            reset_on_fork: false,
            affinity: "0-1".into(),
        };
        let all = CpuSet::parse("0-1").unwrap();
        let p = promotion(Policy::Fifo, 40);
        let target = p.target(&current, &all);
        assert_eq!(
            (target.policy, target.priority, target.nice),
            (Policy::Fifo, 40, 5)
        );
        assert_eq!(target.affinity, "0-1");
        assert!(
            !target.reset_on_fork,
            "an absent reset_on_fork keeps the thread's"
        );
        assert!(!p.holds(&current, &all));
        assert!(p.holds(&target, &all));
        let mut pinned = p.clone();
        pinned.affinity = Some(CpuSet::parse("0-1").unwrap());
        // A cpuset that allows only CPU 0 narrows the request to it.
        let only_0 = CpuSet::parse("0").unwrap();
        assert_eq!(pinned.target(&current, &only_0).affinity, "0");
        pinned.affinity = Some(CpuSet::parse("1").unwrap());
        assert_eq!(pinned.target(&current, &all).affinity, "1");
        let mut forking = p.clone();
        forking.reset_on_fork = Some(true);
        assert!(forking.target(&current, &all).reset_on_fork);
        assert!(!pinned.holds(&target, &all));
    }

    #[test]
    fn deadline_refuses_affinity_and_keeping_forks_at_deadline() {
        let mut dl = promotion(Policy::Deadline, 0);
        dl.deadline = Some(DeadlineParams {
            runtime_ns: 1_000_000,
            deadline_ns: 10_000_000,
            period_ns: 10_000_000,
        });
        assert!(dl.validate(false).is_ok());
        let current = Settings {
            policy: Policy::Other,
            priority: 0,
            deadline: None,
            nice: 0,
            reset_on_fork: false,
            affinity: "0-1".into(),
        };
        assert!(dl.target(&current, &CpuSet::online()).reset_on_fork);
        let mut pinned = dl.clone();
        pinned.affinity = Some(CpuSet::parse("0").unwrap());
        assert_eq!(pinned.validate(false).unwrap_err().0, "affinity");
        let mut forks = dl.clone();
        forks.reset_on_fork = Some(false);
        assert_eq!(forks.validate(false).unwrap_err().0, "reset_on_fork");
    }
}
