//! `rtlab tune watch`: apply the rules to every matching thread as it
//! starts, renames itself or runs a new program, for as long as it runs.
//! Promotion then survives restarts, which `chrt` and tuna cannot do.

use crate::changes::{ChangeLog, Txn};
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
    /// Demote a thread this watch promoted once it has run this long
    /// without sleeping (see [`Canary`]); None leaves that to the kernel's
    /// RT throttling.
    pub runaway_limit: Option<Duration>,
}

impl Default for WatchOptions {
    fn default() -> WatchOptions {
        WatchOptions {
            poll_interval: Duration::from_millis(500),
            rescan_interval: Duration::from_secs(10),
            poll_only: false,
            runaway_limit: None,
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
    /// A thread this watch promoted ran `cpu_ms` of the last `wall_ms`
    /// without once sleeping, and was demoted to SCHED_OTHER (or tried).
    Runaway {
        cpu_ms: u64,
        wall_ms: u64,
        #[serde(flatten)]
        applied: Applied,
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
    let (mut events, reason) = open_events(options);
    report(WatchEvent::Started {
        mode: if events.is_some() {
            "process events".into()
        } else {
            "polling".into()
        },
        reason,
        rules: rules.len(),
    });

    let mut state = State::default();
    let mut canary = options.runaway_limit.map(Canary::new);

    let full_scan_every = match events {
        Some(_) => options.rescan_interval,
        None => options.poll_interval,
    };
    let mut next_scan = Instant::now();
    let mut pending: Vec<ThreadEvent> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if reload.swap(false, Ordering::Relaxed)
            && reload_rules(source, &mut rules, &mut state, report)
        {
            // The next scan finds again which threads the rules hold.
            next_scan = Instant::now();
        }
        if Instant::now() >= next_scan {
            let tasks = task::scan_with(crate::rule::detail_for(&rules))
                .map_err(|e| format!("cannot read /proc: {e}"))?;
            step(&mut state, &rules, Input::Scan(tasks), &txn, report);
            next_scan = Instant::now() + full_scan_every;
        }
        if let Some(canary) = &mut canary {
            if Instant::now() >= canary.next {
                for event in canary.sample(&mut state, &txn) {
                    report(event);
                }
            }
        }
        // Wake at the next scan or sample, or every 200 ms at least to see
        // `stop`.
        let wake = canary.as_ref().map_or(next_scan, |c| c.next.min(next_scan));
        let wait = wake
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(200));
        match &mut events {
            Some(ev) => {
                if wait_readable(ev.as_raw_fd(), wait) {
                    pending.clear();
                    match ev.drain(&mut pending) {
                        Ok(true) => {
                            step(&mut state, &rules, Input::Events(&pending), &txn, report);
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
    report(WatchEvent::Stopped {
        changed: state.changed,
        failed: state.failed,
    });
    Ok(())
}

/// The kernel's process events, or none and why the watch polls instead.
fn open_events(options: &WatchOptions) -> (Option<ProcEvents>, Option<String>) {
    if options.poll_only {
        return (None, Some("--poll was given".to_string()));
    }
    match ProcEvents::open() {
        Ok(events) => (Some(events), None),
        Err(e) => (
            None,
            Some(format!(
                "the kernel's process events need CAP_NET_ADMIN (root): {e}"
            )),
        ),
    }
}

/// Re-reads the rules (on SIGHUP); a bad file keeps those in force and is
/// reported. Whether the rules changed.
fn reload_rules(
    source: &dyn RuleSource,
    rules: &mut Vec<Rule>,
    state: &mut State,
    report: &mut dyn FnMut(WatchEvent),
) -> bool {
    match source.load() {
        Ok(new_rules) => {
            *rules = new_rules;
            // Which threads the new rules hold is found again.
            state.held.clear();
            state.foreign.clear();
            report(WatchEvent::Reloaded { rules: rules.len() });
            true
        }
        Err(error) => {
            report(WatchEvent::ReloadFailed { error });
            false
        }
    }
}

/// One step of the watch: applies the rules to the threads of a scan (or
/// of process events), takes back the changes of threads it may no longer
/// promote, and reports what is news.
fn step(
    state: &mut State,
    rules: &[Rule],
    input: Input,
    txn: &Txn,
    report: &mut dyn FnMut(WatchEvent),
) {
    let tasks = match input {
        Input::Scan(tasks) => {
            state.forget_ended(&tasks);
            tasks
        }
        Input::Events(events) => fresh_threads(events, rules, &state.promoted),
    };
    // A runaway this watch demoted stays demoted: promoting it again
    // at the next scan would hand the CPU back to it.
    let tasks: Vec<task::Task> = tasks
        .into_iter()
        .filter(|t| !state.runaways.contains(&t.id()))
        .collect();
    let tasks = &tasks[..];
    let unmatched: Vec<task::Task> = tasks
        .iter()
        .filter(|t| {
            state.promoted.contains_key(&t.id()) && crate::rule::first_match(rules, t).is_none()
        })
        .cloned()
        .collect();
    let mut results = promote::apply(rules, tasks, txn);
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
        .filter(|t| state.promoted.contains_key(&t.id()))
        .cloned()
        .collect();
    results.extend(promote::revert(&unmatched, txn));
    results.extend(promote::revert(&unvouched, txn));
    for a in results {
        if state.is_news(&a, txn) {
            report(WatchEvent::Applied(a));
        }
    }
}

/// What the watch keeps between steps.
#[derive(Default)]
struct State {
    changed: u64,
    failed: u64,
    /// The threads this watch changed, so one that stops matching (it ran
    /// another program, or renamed itself) gets its old settings back
    /// (with the process each belongs to).
    promoted: HashMap<ThreadId, i32>,
    /// The threads already reported as skipped.
    skipped: HashSet<ThreadId>,
    /// Threads a rule matched that already had its settings, given by
    /// rtlab (an earlier command's change in the record).
    held: HashMap<ThreadId, i32>,
    /// Threads a rule matched that already had its settings from elsewhere:
    /// not watched for runaways.
    foreign: HashSet<ThreadId>,
    /// The runaways demoted: never promoted again by this watch.
    runaways: HashSet<ThreadId>,
}

impl State {
    /// Forgets the threads that have ended (`tasks` is every thread).
    fn forget_ended(&mut self, tasks: &[task::Task]) {
        let alive: HashSet<ThreadId> = tasks.iter().map(task::Task::id).collect();
        self.promoted.retain(|id, _| alive.contains(id));
        self.skipped.retain(|id| alive.contains(id));
        self.held.retain(|id, _| alive.contains(id));
        self.foreign.retain(|id| alive.contains(id));
        self.runaways.retain(|id| alive.contains(id));
    }

    /// Takes in what became of one thread; whether that is news to report.
    fn is_news(&mut self, a: &Applied, txn: &Txn) -> bool {
        let id = ThreadId {
            tid: a.tid,
            starttime: a.starttime,
        };
        match a.outcome {
            // A thread that already holds is not news (but the runaway
            // limit watches it: a restarted watch finds its threads so).
            // Only a thread rtlab gave those settings (a restarted
            // watch, an earlier `set` or `apply`): one that had them
            // from elsewhere is not rtlab's to demote.
            promote::Outcome::Held { ref settings } => {
                if a.rule.is_some() && !self.held.contains_key(&id) && !self.foreign.contains(&id) {
                    if txn.gave(a.tid, a.starttime, settings).unwrap_or(false) {
                        self.held.insert(id, a.pid);
                    } else {
                        self.foreign.insert(id);
                    }
                }
                return false;
            }
            promote::Outcome::Vanished => return false,
            // Said once per thread, not at every rescan.
            promote::Outcome::Skipped { .. } if !self.skipped.insert(id) => return false,
            promote::Outcome::Skipped { .. } => {}
            promote::Outcome::Changed { .. } if a.rule.is_some() => {
                self.promoted.insert(id, a.pid);
                self.changed += 1;
            }
            promote::Outcome::Changed { .. } => {
                self.promoted.remove(&id);
                self.changed += 1;
            }
            promote::Outcome::Failed { .. } => self.failed += 1,
        }
        true
    }
}

/// A thread that runs on without sleeping: `tune watch --runaway-limit`.
/// The threads watched are the FIFO and RR ones a rule matched that rtlab
/// promoted: this watch, or an earlier rtlab command whose change is still
/// in the record (a restarted watch finds those already holding their
/// rule's settings). A thread that had them from elsewhere (another
/// service's own real-time thread) is left alone.
///
/// rtkit's canary is a thread of rtkit's own at a low real-time priority
/// that should get to run every so often: when it starves, some real-time
/// thread is hogging the CPU, and rtkit demotes them all. That needs rtkit
/// to own the promotions and an idle slot on each CPU. What is measured
/// here is each promoted thread itself, every limit/4: the CPU time the
/// kernel accounts it (/proc/PID/task/TID/schedstat) and its voluntary
/// context switches (status). A thread that has not once blocked for a
/// whole limit and ran at least 3/4 of that time (the kernel's throttling
/// leaves real-time threads 95% by default; a thread that is merely
/// preempted runs less) is a runaway, and is demoted to SCHED_OTHER. A
/// deliberate busy-poller looks the same: do not use the limit for one.
struct Canary {
    limit: Duration,
    every: Duration,
    next: Instant,
    windows: HashMap<ThreadId, Window>,
}

/// Since when a thread has not slept, with its counters then.
struct Window {
    since: Instant,
    cpu_ns: u64,
    voluntary: u64,
}

impl Canary {
    fn new(limit: Duration) -> Canary {
        Canary {
            limit,
            every: (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1)),
            next: Instant::now(),
            windows: HashMap::new(),
        }
    }

    /// Samples every promoted thread; demotes the runaways.
    fn sample(&mut self, state: &mut State, txn: &crate::changes::Txn) -> Vec<WatchEvent> {
        let now = Instant::now();
        self.next = now + self.every;
        self.windows
            .retain(|id, _| state.promoted.contains_key(id) || state.held.contains_key(id));
        let mut events = Vec::new();
        let threads: Vec<(ThreadId, i32)> = state
            .promoted
            .iter()
            .chain(state.held.iter())
            .map(|(id, pid)| (*id, *pid))
            .collect();
        for (id, pid) in threads {
            let Some((cpu_ns, voluntary)) = run_counters(pid, id) else {
                self.windows.remove(&id);
                continue;
            };
            let window = self.windows.entry(id).or_insert(Window {
                since: now,
                cpu_ns,
                voluntary,
            });
            let wall = now.duration_since(window.since);
            if voluntary != window.voluntary {
                *window = Window {
                    since: now,
                    cpu_ns,
                    voluntary,
                };
                continue;
            }
            if wall < self.limit {
                continue;
            }
            let ran = cpu_ns.saturating_sub(window.cpu_ns);
            // Only a FIFO or RR thread can hog a CPU (a rule may give
            // SCHED_OTHER or SCHED_BATCH too). A deadline thread cannot:
            // the kernel stops it once it has used the runtime it was
            // given, each period, and running that much without sleeping
            // is what a deadline busy-poller is meant to do.
            let realtime = rtlab_core::sched::thread_sched(id.tid)
                .is_ok_and(|s| s.params.policy.takes_priority());
            if !realtime || (ran as u128) * 4 < wall.as_nanos() * 3 {
                // Not sleeping, but not running either (preempted): start over.
                *window = Window {
                    since: now,
                    cpu_ns,
                    voluntary,
                };
                continue;
            }
            self.windows.remove(&id);
            if let Some(event) = demote(state, txn, pid, id, ran, wall) {
                events.push(event);
            }
        }
        events
    }
}

/// A thread's CPU time (ns) and voluntary context switches, if it is still
/// the thread `id` (start time checked before and after the reads).
fn run_counters(pid: i32, id: ThreadId) -> Option<(u64, u64)> {
    let dir = format!("/proc/{pid}/task/{}", id.tid);
    let same = || task::starttime_of(id.tid) == Some(id.starttime);
    if !same() {
        return None;
    }
    let schedstat = std::fs::read_to_string(format!("{dir}/schedstat")).ok()?;
    let cpu_ns: u64 = schedstat.split_whitespace().next()?.parse().ok()?;
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let voluntary: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()?;
    same().then_some((cpu_ns, voluntary))
}

/// Demotes runaway `id` to SCHED_OTHER, recorded like every change so undo
/// stays consistent; the event says so (or why it could not).
fn demote(
    state: &mut State,
    txn: &crate::changes::Txn,
    pid: i32,
    id: ThreadId,
    ran_ns: u64,
    wall: Duration,
) -> Option<WatchEvent> {
    let thread = task::thread(pid, id.tid, task::Detail::Matching { cmdline: false })
        .filter(|t| t.starttime == id.starttime)?;
    let result = txn.change_thread(&thread, |current| crate::task::Settings {
        policy: rtlab_core::sched::Policy::Other,
        priority: 0,
        deadline: None,
        ..current.clone()
    });
    state.promoted.remove(&id);
    state.held.remove(&id);
    state.runaways.insert(id);
    let outcome = match result {
        Ok(crate::changes::ThreadOutcome::Changed { old, new }) => {
            state.changed += 1;
            promote::Outcome::Changed { old, new }
        }
        Ok(crate::changes::ThreadOutcome::Held { settings }) => promote::Outcome::Held { settings },
        Err(crate::changes::ChangeError::Vanished) => return None,
        Err(e) => {
            state.failed += 1;
            promote::Outcome::Failed {
                error: e.to_string(),
                hint: None,
            }
        }
    };
    Some(WatchEvent::Runaway {
        cpu_ms: ran_ns / 1_000_000,
        wall_ms: wall.as_millis() as u64,
        applied: Applied {
            rule: None,
            label: RUNAWAY.into(),
            pid,
            tid: id.tid,
            starttime: id.starttime,
            name: thread.name,
            process_name: thread.process_name,
            outcome,
        },
    })
}

/// The label of a runaway's demotion.
pub const RUNAWAY: &str = "(runaway: ran without sleeping past --runaway-limit)";

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
    // As bytes: a name that is not UTF-8 is matched as the full read
    // (procfs's lossy stat) sees it.
    match std::fs::read(format!("/proc/{pid}/comm")) {
        Ok(name) => {
            let name = String::from_utf8_lossy(&name);
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
