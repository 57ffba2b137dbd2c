//! `rtlab tune watch`: apply the rules to every matching thread as it
//! starts, renames itself or runs a new program, for as long as it runs.
//! Promotion then survives restarts, which `chrt` and tuna cannot do.

use crate::changes::ChangeLog;
use crate::connector::{ProcEvents, ThreadEvent};
use crate::promote::{self, Applied};
use crate::rule::Rule;
use crate::task::{self, ThreadId};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How often /proc is rescanned when the kernel's process events are
    /// not available (or `poll_only`).
    pub poll_interval: Duration,
    /// How often everything is rescanned even with process events: picks
    /// up a thread someone demoted, and anything an overrun lost.
    pub rescan_interval: Duration,
    /// Do not use process events (for tests and odd kernels).
    pub poll_only: bool,
}

impl Default for WatchOptions {
    fn default() -> WatchOptions {
        WatchOptions {
            poll_interval: Duration::from_millis(500),
            rescan_interval: Duration::from_secs(10),
            poll_only: false,
        }
    }
}

/// What `watch` reports as it goes.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchEvent {
    Started {
        /// "process events" or "polling".
        mode: String,
        /// Why process events are not used, when polling.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        rules: usize,
    },
    Applied(Applied),
    Reloaded {
        rules: usize,
    },
    ReloadFailed {
        error: String,
    },
    Stopped {
        changed: u64,
        failed: u64,
    },
}

/// Where the rules come from, so SIGHUP can re-read them.
pub trait RuleSource {
    fn load(&self) -> Result<Vec<Rule>, String>;
}

/// Runs until `stop` is set. `reload` (set by SIGHUP) re-reads the rules;
/// a bad file keeps the rules in force and reports why.
pub fn watch(
    source: &dyn RuleSource,
    log: &ChangeLog,
    options: &WatchOptions,
    stop: &AtomicBool,
    reload: &AtomicBool,
    report: &mut dyn FnMut(WatchEvent),
) -> Result<(), String> {
    let mut rules = source.load()?;
    let txn = log
        .begin(&command_line())
        .map_err(|e| format!("cannot start: {e}"))?;
    let (mut events, reason) = if options.poll_only {
        (None, Some("--poll was given".to_string()))
    } else {
        match ProcEvents::open() {
            Ok(events) => (Some(events), None),
            Err(e) => (
                None,
                Some(format!(
                    "the kernel's process events need CAP_NET_ADMIN (root): {e}"
                )),
            ),
        }
    };
    report(WatchEvent::Started {
        mode: if events.is_some() {
            "process events".into()
        } else {
            "polling".into()
        },
        reason,
        rules: rules.len(),
    });

    let (mut changed, mut failed) = (0u64, 0u64);
    // The threads this watch changed, so one that stops matching (it ran
    // another program, or renamed itself) gets its old settings back.
    // (with the process each belongs to)
    let mut promoted: HashMap<ThreadId, i32> = HashMap::new();
    // The threads already reported as skipped.
    let mut skipped: HashSet<ThreadId> = HashSet::new();
    let mut step = |rules: &[Rule], input: Input, report: &mut dyn FnMut(WatchEvent)| {
        let tasks = match input {
            Input::Scan(tasks) => {
                // Forget threads that have ended.
                let alive: HashSet<ThreadId> = tasks.iter().map(task::Task::id).collect();
                promoted.retain(|id, _| alive.contains(id));
                skipped.retain(|id| alive.contains(id));
                tasks
            }
            Input::Events(events) => fresh_threads(events, rules, &promoted),
        };
        let tasks = &tasks[..];
        let unmatched: Vec<task::Task> = tasks
            .iter()
            .filter(|t| {
                promoted.contains_key(&t.id()) && crate::rule::first_match(rules, t).is_none()
            })
            .cloned()
            .collect();
        let mut results = promote::apply(rules, tasks, &txn);
        // A thread this watch promoted whose process it can no longer vouch
        // for (it ran a file another user could write) gets its old
        // settings back, as one no rule matches does.
        let unvouched: Vec<task::Task> = results
            .iter()
            .filter(|a| matches!(a.outcome, promote::Outcome::Skipped { .. }))
            .filter_map(|a| {
                tasks
                    .iter()
                    .find(|t| t.tid == a.tid && t.starttime == a.starttime)
            })
            .filter(|t| promoted.contains_key(&t.id()))
            .cloned()
            .collect();
        results.extend(promote::revert(&unmatched, &txn));
        results.extend(promote::revert(&unvouched, &txn));
        for a in results {
            let id = ThreadId {
                tid: a.tid,
                starttime: a.starttime,
            };
            match a.outcome {
                // A thread that already holds is not news.
                promote::Outcome::Held { .. } | promote::Outcome::Vanished => continue,
                // Said once per thread, not at every rescan.
                promote::Outcome::Skipped { .. } if !skipped.insert(id) => continue,
                promote::Outcome::Skipped { .. } => {}
                promote::Outcome::Changed { .. } if a.rule.is_some() => {
                    promoted.insert(id, a.pid);
                    changed += 1;
                }
                promote::Outcome::Changed { .. } => {
                    promoted.remove(&id);
                    changed += 1;
                }
                promote::Outcome::Failed { .. } => failed += 1,
            }
            report(WatchEvent::Applied(a));
        }
    };

    let full_scan_every = match events {
        Some(_) => options.rescan_interval,
        None => options.poll_interval,
    };
    let mut next_scan = Instant::now();
    let mut pending: Vec<ThreadEvent> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if reload.swap(false, Ordering::Relaxed) {
            match source.load() {
                Ok(new_rules) => {
                    rules = new_rules;
                    report(WatchEvent::Reloaded { rules: rules.len() });
                    next_scan = Instant::now();
                }
                Err(error) => report(WatchEvent::ReloadFailed { error }),
            }
        }
        if Instant::now() >= next_scan {
            let tasks = task::scan_with(crate::rule::detail_for(&rules))
                .map_err(|e| format!("cannot read /proc: {e}"))?;
            step(&rules, Input::Scan(tasks), report);
            next_scan = Instant::now() + full_scan_every;
        }
        // Wake at the next scan, or every 200 ms at least to see `stop`.
        let wait = next_scan
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(200));
        match &mut events {
            Some(ev) => {
                if wait_readable(ev.as_raw_fd(), wait) {
                    pending.clear();
                    match ev.drain(&mut pending) {
                        Ok(true) => {
                            step(&rules, Input::Events(&pending), report);
                        }
                        // Lost events: only a full scan is sure to find all.
                        Ok(false) => next_scan = Instant::now(),
                        Err(e) => return Err(format!("process events failed: {e}")),
                    }
                }
            }
            None => std::thread::sleep(wait),
        }
    }
    report(WatchEvent::Stopped { changed, failed });
    Ok(())
}

/// What one step of the watch looks at.
enum Input<'e> {
    /// Every thread of the machine.
    Scan(Vec<task::Task>),
    /// The threads the kernel reported.
    Events(&'e [ThreadEvent]),
}

/// The threads named by events, read now; ones already gone are skipped.
/// A process that runs a new program or renames its main thread changes
/// what all its threads match (rules select by process name), so then
/// every thread of it is read. Most events on a busy machine are for
/// processes no rule names: a look at their names (two small reads) rules
/// them out before anything else is read.
fn fresh_threads(
    events: &[ThreadEvent],
    rules: &[Rule],
    promoted: &HashMap<ThreadId, i32>,
) -> Vec<task::Task> {
    let detail = crate::rule::detail_for(rules);
    let by_name_only = detail == (task::Detail::Matching { cmdline: false });
    // Processes with a thread this watch changed: those are always read,
    // since a thread that stops matching gets its old settings back.
    let ours: HashSet<i32> = promoted.values().copied().collect();
    let mut seen = HashSet::new();
    let mut tasks = Vec::new();
    for event in events {
        if by_name_only && !ours.contains(&event.pid) && !any_rule_names(rules, event.pid) {
            continue;
        }
        if event.tid == event.pid {
            for thread in task::threads_of(event.pid, detail) {
                if seen.insert(thread.tid) {
                    tasks.push(thread);
                }
            }
        } else if seen.insert(event.tid) {
            tasks.extend(task::thread(event.pid, event.tid, detail));
        }
    }
    tasks
}

/// Whether some rule's process pattern matches process `pid`'s name now
/// (true when it cannot be read: then the full read decides).
fn any_rule_names(rules: &[Rule], pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(name) => {
            let name = name.trim_end_matches('\n');
            rules.iter().any(|r| r.selector.process.is_match(name))
        }
        Err(_) => true,
    }
}

fn wait_readable(fd: i32, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0 && pfd.revents & libc::POLLIN != 0
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
