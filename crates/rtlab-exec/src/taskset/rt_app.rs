//! The periodic subset of rt-app's JSON task sets, imported into a
//! [`TaskSet`] (docs/taskset.md, "Importing rt-app files", lists every key
//! and what becomes of it).
//!
//! A task (or its single phase, or several phases of the same timing) is
//! periodic when its events are `run`/`runtime` (their sum is the work per
//! activation) and exactly one `timer` (the period), or a SCHED_DEADLINE
//! task's `dl-period`. rt-app matches an event by the start of its key
//! (`run0`, `timer1`), as rtlab does. Everything that makes a task more
//! than periodic work (locks, barriers, sleeps, memory and I/O events...)
//! is refused, naming the task and the key; keys that change nothing in
//! what rtlab runs are dropped with a warning.

use super::check::MAX_NAME_CHARS;
use super::error::{read_text, TaskSetError};
use super::json::{clean, Json, Unterminated};
use super::model::{TaskSet, TaskSpec, Work};
use crate::periodic::config::{MAX_TASKS, TASK_PRIORITY};
use rtlab_core::json_position::{line_column, locate, Step};
use std::path::Path;

/// A task set imported from rt-app, and what was dropped on the way.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Imported {
    pub set: TaskSet,
    pub warnings: Vec<String>,
}

/// rt-app's event keys, in the order rt-app matches them (by prefix:
/// `runtime` before `run`, `memrun` before `mem`).
const EVENTS: &[&str] = &[
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "memrun", "mem", "iorun", "yield", "barrier", "fork", "sem_post",
    "sem_wait",
];

/// The event a key is, as rt-app matches it.
fn event_of(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

/// Global keys that change nothing in what rtlab runs.
const HARMLESS_GLOBAL: &[&str] = &[
    "calibration",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "lock_pages",
    "pi_enabled",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

/// Task (or phase) keys rtlab has no counterpart for, dropped.
const DROPPED_TASK_KEYS: &[&str] = &["util_min", "util_max", "nodes_membind", "taskgroup"];

/// Reads an rt-app file and imports its periodic tasks.
pub fn import_rt_app(path: &Path) -> Result<Imported, TaskSetError> {
    let text = read_text(path)?;
    parse_rt_app(&text, path)
}

/// Imports the text of an rt-app file; `source` names it in errors.
pub fn parse_rt_app(text: &str, source: &Path) -> Result<Imported, TaskSetError> {
    let file = source.display().to_string();
    let cleaned = clean(text).map_err(|Unterminated(at)| {
        let (line, column) = line_column(text, at);
        TaskSetError {
            line: Some(line),
            column: Some(column),
            ..TaskSetError::file(&file, "a /* comment that never ends, expected */")
        }
    })?;
    let root: Json = serde_json::from_str(&cleaned).map_err(|e| {
        let message = e.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.as_str(), |at| &message[..at]);
        TaskSetError {
            line: Some(e.line()),
            column: Some(e.column()),
            ..TaskSetError::file(&file, format!("JSON syntax: {message}"))
        }
    })?;
    let mut importer = Importer {
        text: &cleaned,
        file: &file,
        warnings: Vec::new(),
        default_policy: "SCHED_OTHER".into(),
    };
    let set = importer.root(&root, source)?;
    Ok(Imported {
        set,
        warnings: importer.warnings,
    })
}

struct Importer<'a> {
    text: &'a str,
    file: &'a str,
    warnings: Vec<String>,
    default_policy: String,
}

/// A path in the file, to point at: `tasks`, `thread0`, `lock`.
type KeyPath<'p> = &'p [&'p str];

/// What one task's (or phase's) keys ask for.
#[derive(Debug, Clone, Default, PartialEq)]
struct Timing {
    /// Sum of run/runtime, µs.
    work_us: u64,
    runs: usize,
    /// The timer's period, µs, and where it is.
    timer_us: Option<u64>,
    policy: Option<String>,
    priority: Option<i64>,
    dl_runtime_us: Option<u64>,
    dl_period_us: Option<u64>,
    dl_deadline_us: Option<u64>,
    cpus: Option<Vec<i64>>,
}

impl Importer<'_> {
    fn error(&self, path: KeyPath, message: String) -> TaskSetError {
        let steps: Vec<Step> = path.iter().map(|k| Step::Key(k.to_string())).collect();
        let (line, column) = line_column(self.text, locate(self.text, &steps));
        TaskSetError {
            line: Some(line),
            column: Some(column),
            ..TaskSetError::file(self.file, message)
        }
    }

    fn object<'j>(
        &self,
        value: &'j Json,
        path: KeyPath,
        what: &str,
    ) -> Result<&'j [(String, Json)], TaskSetError> {
        match value {
            Json::Object(entries) => Ok(entries),
            other => Err(self.error(
                path,
                format!("{what} is {}, expected an object", other.kind()),
            )),
        }
    }

    /// A whole number ≥ 0 (`-1` is refused here: the callers that allow
    /// it look first).
    fn count(&self, value: &Json, path: KeyPath, what: &str) -> Result<u64, TaskSetError> {
        match value {
            Json::Int(n) if *n >= 0 => Ok(*n as u64),
            other => Err(self.error(
                path,
                format!(
                    "{what} is {}, expected a whole number of 0 or more",
                    describe(other)
                ),
            )),
        }
    }

    fn string(&self, value: &Json, path: KeyPath, what: &str) -> Result<String, TaskSetError> {
        match value {
            Json::Str(s) => Ok(s.clone()),
            other => Err(self.error(
                path,
                format!("{what} is {}, expected a string", other.kind()),
            )),
        }
    }

    fn root(&mut self, root: &Json, source: &Path) -> Result<TaskSet, TaskSetError> {
        let entries = self.object(root, &[], "the file")?;
        let mut tasks_value = None;
        for (key, value) in entries {
            match key.as_str() {
                "tasks" => tasks_value = Some(value),
                "global" => self.global(value)?,
                "resources" => self.warnings.push(
                    "resources: dropped (they serve locks and conditions, which are not imported)"
                        .into(),
                ),
                other => {
                    return Err(self.error(
                        &[other],
                        format!("unknown key `{other}`, expected tasks, global or resources"),
                    ))
                }
            }
        }
        let tasks_value = tasks_value
            .ok_or_else(|| self.error(&[], "no `tasks`, expected \"tasks\": { ... }".into()))?;
        let mut tasks = Vec::new();
        let mut origins = Vec::new();
        for (name, value) in self.object(tasks_value, &["tasks"], "tasks")? {
            for task in self.task(name, value)? {
                if tasks.len() == MAX_TASKS {
                    return Err(self.error(
                        &["tasks", name],
                        format!("more than {MAX_TASKS} tasks, expected at most {MAX_TASKS}"),
                    ));
                }
                tasks.push(task);
                origins.push(name.as_str());
            }
        }
        let set = TaskSet {
            tasks,
            source: Some(source.to_path_buf()),
        };
        if let Err(refusal) = set.validate() {
            let path: Vec<&str> = match refusal.task.and_then(|i| origins.get(i)) {
                Some(origin) => vec!["tasks", origin],
                None => vec!["tasks"],
            };
            return Err(self.error(&path, refusal.describe(&set)));
        }
        Ok(set)
    }

    fn global(&mut self, value: &Json) -> Result<(), TaskSetError> {
        let mut dropped = Vec::new();
        for (key, v) in self.object(value, &["global"], "global")? {
            let path = ["global", key.as_str()];
            match key.as_str() {
                "default_policy" => self.default_policy = self.string(v, &path, "default_policy")?,
                "duration" => match v {
                    Json::Int(s) if *s > 0 => self.warnings.push(format!(
                        "global.duration {s} s: dropped, give it to exec periodic as --duration {s}s"
                    )),
                    _ => self
                        .warnings
                        .push("global.duration: dropped, exec periodic runs for --duration".into()),
                },
                k if HARMLESS_GLOBAL.contains(&k) => dropped.push(k.to_string()),
                other => {
                    return Err(self.error(
                        &path,
                        format!(
                            "unknown global key `{other}`, expected default_policy, duration or one of {}",
                            HARMLESS_GLOBAL.join(", ")
                        ),
                    ))
                }
            }
        }
        if !dropped.is_empty() {
            self.warnings.push(format!(
                "global.{}: dropped (rtlab's work spins on the clock, locks memory always and keeps its results in its store)",
                dropped.join(", global.")
            ));
        }
        Ok(())
    }

    /// One rt-app task: its instances as rtlab tasks (none for instance 0).
    fn task(&mut self, name: &str, value: &Json) -> Result<Vec<TaskSpec>, TaskSetError> {
        let base = ["tasks", name];
        let entries = self.object(value, &base, &format!("task `{name}`"))?;
        let mut timing = Timing::default();
        let (mut instances, mut delay_us) = (1u64, 0u64);
        let mut phases = None;
        for (key, v) in entries {
            let path = ["tasks", name, key.as_str()];
            match key.as_str() {
                "instance" => instances = self.count(v, &path, "instance")?,
                "delay" => delay_us = self.count(v, &path, "delay")?,
                "phases" => phases = Some(v),
                "loop" => self.loop_key(name, v, &path)?,
                "period" | "deadline" => {
                    return Err(self.error(
                        &path,
                        format!(
                            "task `{name}`: `{key}` is rt-app's legacy SCHED_DEADLINE key, expected dl-{key} (or a timer for the period)"
                        ),
                    ))
                }
                _ => self.property_or_event(name, key, v, &path, &mut timing)?,
            }
        }
        if let Some(phases) = phases {
            timing = self.phases(name, phases, timing)?;
        }
        let spec = self.spec(name, &timing, delay_us)?;
        Ok(self.instances(name, spec, instances))
    }

    fn loop_key(&mut self, name: &str, v: &Json, path: KeyPath) -> Result<(), TaskSetError> {
        match v {
            Json::Int(-1) => Ok(()),
            Json::Int(n) if *n > 0 => {
                self.warnings.push(format!(
                    "task `{name}`: loop {n}: dropped, every task runs for exec periodic's --duration"
                ));
                Ok(())
            }
            other => Err(self.error(
                path,
                format!(
                    "task `{name}`: loop is {}, expected -1 or a count",
                    describe(other)
                ),
            )),
        }
    }

    /// A key that is a scheduling property or an event, of a task or phase.
    fn property_or_event(
        &mut self,
        name: &str,
        key: &str,
        v: &Json,
        path: KeyPath,
        timing: &mut Timing,
    ) -> Result<(), TaskSetError> {
        let int = |this: &Self, what: &str| match v {
            Json::Int(n) => Ok(*n),
            other => Err(this.error(
                path,
                format!(
                    "task `{name}`: {what} is {}, expected an integer",
                    other.kind()
                ),
            )),
        };
        match key {
            "policy" => timing.policy = Some(self.string(v, path, "policy")?),
            "priority" => timing.priority = Some(int(self, "priority")?),
            "dl-runtime" => timing.dl_runtime_us = Some(self.count(v, path, "dl-runtime")?),
            "dl-period" => timing.dl_period_us = Some(self.count(v, path, "dl-period")?),
            "dl-deadline" => timing.dl_deadline_us = Some(self.count(v, path, "dl-deadline")?),
            "cpus" => timing.cpus = Some(self.cpus(name, v, path)?),
            k if DROPPED_TASK_KEYS.contains(&k) => self.warnings.push(format!(
                "task `{name}`: {k}: dropped (no counterpart in rtlab's executive)"
            )),
            _ => match event_of(key) {
                Some("run" | "runtime") => {
                    let us = self.count(v, path, key)?;
                    timing.work_us = timing.work_us.saturating_add(us);
                    timing.runs += 1;
                }
                Some("timer") => {
                    if timing.timer_us.is_some() {
                        return Err(self.error(
                            path,
                            format!("task `{name}`: a second timer `{key}`, expected one timer per period"),
                        ));
                    }
                    timing.timer_us = Some(self.timer(name, key, v, path)?);
                }
                Some("sleep") if matches!(v, Json::Int(0)) => self
                    .warnings
                    .push(format!("task `{name}`: {key} 0: dropped (sleeps no time)")),
                Some(event) => {
                    return Err(self.error(
                        path,
                        format!(
                            "task `{name}`: `{key}` (a {event} event) is outside the periodic subset rtlab imports, expected only run/runtime events and one timer (docs/taskset.md)"
                        ),
                    ))
                }
                None => {
                    return Err(self.error(
                        path,
                        format!(
                            "task `{name}`: unknown key `{key}`, expected instance, delay, loop, phases, policy, priority, dl-runtime, dl-period, dl-deadline, cpus or run/runtime/timer events"
                        ),
                    ))
                }
            },
        }
        Ok(())
    }

    /// A timer's period, µs; `ref` is each instance's own grid in rtlab,
    /// and `mode` matters only after an overrun (docs/taskset.md).
    fn timer(&self, name: &str, key: &str, v: &Json, path: KeyPath) -> Result<u64, TaskSetError> {
        let entries = self.object(v, path, &format!("task `{name}`: {key}"))?;
        let mut period = None;
        for (k, value) in entries {
            let inner: Vec<&str> = path.iter().copied().chain([k.as_str()]).collect();
            match k.as_str() {
                "period" => period = Some(self.count(value, &inner, "the timer's period")?),
                "ref" => drop(self.string(value, &inner, "the timer's ref")?),
                "mode" => {
                    let mode = self.string(value, &inner, "the timer's mode")?;
                    if mode != "relative" && mode != "absolute" {
                        return Err(self.error(
                            &inner,
                            format!(
                                "task `{name}`: timer mode `{mode}`, expected relative or absolute"
                            ),
                        ));
                    }
                }
                other => {
                    return Err(self.error(
                        &inner,
                        format!(
                        "task `{name}`: unknown timer key `{other}`, expected ref, period or mode"
                    ),
                    ))
                }
            }
        }
        match period {
            Some(us) if us > 0 => Ok(us),
            _ => Err(self.error(
                path,
                format!("task `{name}`: {key} has no period, expected \"period\" : µs above 0"),
            )),
        }
    }

    fn cpus(&mut self, name: &str, v: &Json, path: KeyPath) -> Result<Vec<i64>, TaskSetError> {
        let Json::Array(items) = v else {
            return Err(self.error(
                path,
                format!(
                    "task `{name}`: cpus is {}, expected an array of CPU numbers",
                    v.kind()
                ),
            ));
        };
        items
            .iter()
            .map(|item| match item {
                Json::Int(n) if *n >= 0 => Ok(*n),
                other => Err(self.error(
                    path,
                    format!(
                        "task `{name}`: cpus holds {}, expected CPU numbers",
                        describe(other)
                    ),
                )),
            })
            .collect()
    }

    /// The task's timing with its phases: one, or several of the same
    /// timing (their loops are dropped).
    fn phases(&mut self, name: &str, v: &Json, task: Timing) -> Result<Timing, TaskSetError> {
        let entries = self.object(v, &["tasks", name, "phases"], "phases")?;
        let mut found: Option<(String, Timing)> = None;
        for (phase, value) in entries {
            let base = ["tasks", name, "phases", phase.as_str()];
            let mut timing = task.clone();
            for (key, v) in self.object(value, &base, &format!("phase `{phase}`"))? {
                let path = ["tasks", name, "phases", phase.as_str(), key.as_str()];
                match key.as_str() {
                    "loop" => drop(self.count(v, &path, "a phase's loop")?),
                    _ => self.property_or_event(name, key, v, &path, &mut timing)?,
                }
            }
            match &found {
                Some((first, timing_first)) if *timing_first != timing => {
                    return Err(self.error(
                        &base,
                        format!(
                            "task `{name}`: phase `{phase}` differs from phase `{first}` (work, timer or scheduling), expected phases of one timing: one periodic task"
                        ),
                    ))
                }
                Some(_) => {}
                None => found = Some((phase.clone(), timing)),
            }
        }
        if entries.len() > 1 {
            self.warnings.push(format!(
                "task `{name}`: {} phases of the same timing imported as one",
                entries.len()
            ));
        }
        found.map(|(_, timing)| timing).ok_or_else(|| {
            self.error(
                &["tasks", name, "phases"],
                format!("task `{name}`: no phase, expected one"),
            )
        })
    }

    /// The rtlab task of an rt-app task's timing.
    fn spec(&mut self, name: &str, t: &Timing, delay_us: u64) -> Result<TaskSpec, TaskSetError> {
        let at = ["tasks", name];
        let us = |us: u64| us.saturating_mul(1000);
        let policy = t
            .policy
            .clone()
            .unwrap_or_else(|| self.default_policy.clone());
        let deadline_policy = policy == "SCHED_DEADLINE";
        let period_us = match (t.timer_us, deadline_policy.then_some(t.dl_period_us).flatten()) {
            (Some(timer), Some(dl)) if timer != dl => {
                return Err(self.error(
                    &at,
                    format!(
                        "task `{name}`: timer period {timer} µs and dl-period {dl} µs differ, expected one period"
                    ),
                ))
            }
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => {
                return Err(self.error(
                    &at,
                    format!(
                        "task `{name}`: no timer, expected a periodic task (run/runtime events and a timer with its period)"
                    ),
                ))
            }
        };
        if t.runs == 0 {
            self.warnings.push(format!(
                "task `{name}`: no run or runtime event: imported with no work"
            ));
        }
        let (priority, deadline_us, budget_us) = match policy.as_str() {
            "SCHED_FIFO" | "SCHED_RR" => {
                if policy == "SCHED_RR" {
                    self.warnings.push(format!(
                        "task `{name}`: SCHED_RR runs as SCHED_FIFO (one activation's work is far below a round-robin slice)"
                    ));
                }
                let p = t.priority.unwrap_or(10);
                let priority = u32::try_from(p).unwrap_or(0);
                (priority, period_us, None)
            }
            "SCHED_OTHER" | "SCHED_BATCH" | "SCHED_IDLE" => {
                self.warnings.push(format!(
                    "task `{name}`: {policy} has no real-time priority: imported at SCHED_FIFO priority 1, the lowest"
                ));
                (1, period_us, None)
            }
            "SCHED_DEADLINE" => {
                self.warnings.push(format!(
                    "task `{name}`: SCHED_DEADLINE runs as SCHED_FIFO {TASK_PRIORITY} under the executive: its budget and deadline are counted, not enforced"
                ));
                let deadline = t.dl_deadline_us.filter(|&d| d > 0).unwrap_or(period_us);
                (TASK_PRIORITY, deadline, t.dl_runtime_us.filter(|&r| r > 0))
            }
            other => {
                return Err(self.error(
                    &at,
                    format!(
                        "task `{name}`: policy `{other}`, expected SCHED_FIFO, SCHED_RR, SCHED_OTHER, SCHED_BATCH, SCHED_IDLE or SCHED_DEADLINE"
                    ),
                ))
            }
        };
        if !deadline_policy
            && (t.dl_runtime_us.is_some() || t.dl_period_us.is_some() || t.dl_deadline_us.is_some())
        {
            self.warnings.push(format!(
                "task `{name}`: dl-* keys of a {policy} task: dropped (they apply to SCHED_DEADLINE)"
            ));
        }
        let cpu = match t.cpus.as_deref() {
            None | Some([]) => None,
            Some([cpu]) => Some(*cpu as usize),
            Some(cpus) => {
                self.warnings.push(format!(
                    "task `{name}`: cpus {cpus:?}: rtlab pins a task to one CPU, imported on CPU {}",
                    cpus[0]
                ));
                Some(cpus[0] as usize)
            }
        };
        let mut offset_us = delay_us;
        if delay_us >= period_us {
            offset_us = delay_us % period_us;
            self.warnings.push(format!(
                "task `{name}`: delay {delay_us} µs is a period or more: imported as the offset {offset_us} µs (the same grid; the first activations are not skipped)"
            ));
        }
        Ok(TaskSpec {
            name: safe_name(name),
            period_ns: us(period_us),
            offset_ns: us(offset_us),
            work: Work::Fixed { ns: us(t.work_us) },
            deadline_ns: us(deadline_us),
            budget_ns: budget_us.map(us),
            priority,
            cpu,
        })
    }

    /// `instance` copies of a task, named `name-0`.. when more than one.
    fn instances(&mut self, name: &str, spec: TaskSpec, instances: u64) -> Vec<TaskSpec> {
        if spec.name != name {
            self.warnings.push(format!(
                "task `{name}`: renamed `{}` (a name holds letters, digits, - and _)",
                spec.name
            ));
        }
        match instances {
            0 => {
                self.warnings.push(format!(
                    "task `{name}`: instance 0: no thread, not imported"
                ));
                Vec::new()
            }
            1 => vec![spec],
            n => (0..n.min(MAX_TASKS as u64 + 1))
                .map(|i| TaskSpec {
                    name: format!("{}-{i}", spec.name),
                    ..spec.clone()
                })
                .collect(),
        }
    }
}

/// `name` with every character a task name may not hold replaced by `_`,
/// short enough for an instance suffix.
fn safe_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS - 5)
        .collect();
    if safe.is_empty() {
        "task".into()
    } else {
        safe
    }
}

/// A value for a message: the integer itself, else its kind.
fn describe(value: &Json) -> String {
    match value {
        Json::Int(n) => n.to_string(),
        other => other.kind().to_string(),
    }
}
