//! Task-set files (TOML) read into a [`TaskSet`], and written from one.
//!
//! Read with serde and toml's spans: an unknown key or a wrong type is
//! toml's own error at its place (with the known keys), and every value
//! keeps its span, so that a refusal of [`TaskSet::validate`] names the
//! line of the key at fault, or of the `[defaults]` key it came from.

use super::check::Refusal;
use super::error::{read_text, TaskSetError};
use super::model::{TaskSet, TaskSpec, Work};
use crate::periodic::config::TASK_PRIORITY;
use rtlab_core::json_position::line_column;
use rtlab_core::units::{exact_duration, parse_duration_ns};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    defaults: Option<Spanned<RawTask>>,
    #[serde(default)]
    task: Vec<Spanned<RawTask>>,
}

/// A `[[task]]`, or the `[defaults]` of every task (any key but `name`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<Spanned<String>>,
    period: Option<Spanned<Ns>>,
    offset: Option<Spanned<Ns>>,
    work: Option<Spanned<RawWork>>,
    deadline: Option<Spanned<Ns>>,
    budget: Option<Spanned<Ns>>,
    priority: Option<Spanned<u32>>,
    cpu: Option<Spanned<usize>>,
}

/// A duration as rtlab reads them everywhere: a string with its unit.
#[derive(Clone, Copy)]
struct Ns(u64);

impl<'de> Deserialize<'de> for Ns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ns, D::Error> {
        d.deserialize_any(NsVisitor)
    }
}

struct NsVisitor;

impl Visitor<'_> for NsVisitor {
    type Value = Ns;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration with its unit, such as \"10ms\" or \"250us\"")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Ns, E> {
        parse_duration_ns(s).map(Ns).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Ns, E> {
        Err(E::custom(format!(
            "{n} has no unit, expected a duration as a string with its unit, such as \"{n}us\""
        )))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Ns, E> {
        self.visit_i64(n as i64)
    }
}

/// `work = "300us"` or `work = { uniform = ["100us", "500us"] }`.
struct RawWork(Work);

impl<'de> Deserialize<'de> for RawWork {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawWork, D::Error> {
        d.deserialize_any(WorkVisitor)
    }
}

struct WorkVisitor;

const DISTRIBUTIONS: &[&str] = &["uniform"];

impl<'de> Visitor<'de> for WorkVisitor {
    type Value = RawWork;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"300us\", or { uniform = [\"100us\", \"500us\"] }")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<RawWork, E> {
        NsVisitor
            .visit_str(s)
            .map(|Ns(ns)| RawWork(Work::Fixed { ns }))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<RawWork, E> {
        NsVisitor
            .visit_i64(n)
            .map(|_| unreachable!("a bare number is refused"))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<RawWork, E> {
        self.visit_i64(n as i64)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawWork, A::Error> {
        let mut work = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "uniform" {
                return Err(de::Error::unknown_field(&key, DISTRIBUTIONS));
            }
            if work.is_some() {
                return Err(de::Error::duplicate_field("uniform"));
            }
            let [Ns(min_ns), Ns(max_ns)] = map.next_value::<[Ns; 2]>()?;
            work = Some(Work::Uniform { min_ns, max_ns });
        }
        work.map(RawWork).ok_or_else(|| {
            de::Error::custom("an empty table, expected { uniform = [\"100us\", \"500us\"] }")
        })
    }
}

/// Where each key of one task was found: its own table, else `[defaults]`.
struct TaskPlaces<'a> {
    task: &'a RawTask,
    table: Range<usize>,
    defaults: Option<&'a RawTask>,
}

/// The span of a key of a raw task, if it is given there.
fn span_of(raw: &RawTask, key: &str) -> Option<Range<usize>> {
    match key {
        "name" => raw.name.as_ref().map(Spanned::span),
        "period" => raw.period.as_ref().map(Spanned::span),
        "offset" => raw.offset.as_ref().map(Spanned::span),
        "work" => raw.work.as_ref().map(Spanned::span),
        "deadline" => raw.deadline.as_ref().map(Spanned::span),
        "budget" => raw.budget.as_ref().map(Spanned::span),
        "priority" => raw.priority.as_ref().map(Spanned::span),
        "cpu" => raw.cpu.as_ref().map(Spanned::span),
        _ => None,
    }
}

impl TaskPlaces<'_> {
    /// Where `key` of this task comes from: the task's own key, else the
    /// default's, else the task's table.
    fn of(&self, key: &str) -> Range<usize> {
        span_of(self.task, key)
            .or_else(|| self.defaults.and_then(|d| span_of(d, key)))
            .unwrap_or_else(|| self.table.clone())
    }
}

/// A value of the task, else of the defaults.
fn pick<T: Clone>(task: &Option<Spanned<T>>, defaults: Option<&Option<Spanned<T>>>) -> Option<T> {
    task.as_ref()
        .or(defaults.and_then(Option::as_ref))
        .map(|v| v.get_ref().clone())
}

impl Clone for RawWork {
    fn clone(&self) -> RawWork {
        RawWork(self.0)
    }
}

impl TaskSet {
    /// Reads and checks a task-set file.
    pub fn load(path: &Path) -> Result<TaskSet, TaskSetError> {
        let text = read_text(path)?;
        TaskSet::parse(&text, path)
    }

    /// Reads and checks the text of a task-set file; `source` names it in
    /// errors and in the set.
    pub fn parse(text: &str, source: &Path) -> Result<TaskSet, TaskSetError> {
        let file = source.display().to_string();
        let at = |span: Range<usize>, message: String| {
            TaskSetError::at_line(&file, line_column(text, span.start).0, message)
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            match e.span() {
                Some(span) => at(span, message),
                None => TaskSetError::file(&file, message),
            }
        })?;
        let defaults = raw.defaults.as_ref().map(Spanned::get_ref);
        if let Some(name) = defaults.and_then(|d| d.name.as_ref()) {
            return Err(at(
                name.span(),
                "a name in [defaults], expected each task's own name in its [[task]]".into(),
            ));
        }
        let mut tasks = Vec::with_capacity(raw.task.len());
        let mut places = Vec::with_capacity(raw.task.len());
        for (i, spanned) in raw.task.iter().enumerate() {
            let t = spanned.get_ref();
            let place = TaskPlaces {
                task: t,
                table: spanned.span(),
                defaults,
            };
            let missing = |key: &str, example: &str| {
                at(
                    spanned.span(),
                    format!(
                        "task {} has no `{key}`, expected {key} = {example}{}",
                        i + 1,
                        if key == "name" {
                            ""
                        } else {
                            " (here or in [defaults])"
                        }
                    ),
                )
            };
            let name = t
                .name
                .as_ref()
                .ok_or_else(|| missing("name", "\"video\""))?;
            let Ns(period_ns) = pick(&t.period, defaults.map(|d| &d.period))
                .ok_or_else(|| missing("period", "\"10ms\""))?;
            tasks.push(TaskSpec {
                name: name.get_ref().clone(),
                period_ns,
                offset_ns: pick(&t.offset, defaults.map(|d| &d.offset)).map_or(0, |Ns(ns)| ns),
                work: pick(&t.work, defaults.map(|d| &d.work))
                    .map_or(Work::Fixed { ns: 0 }, |RawWork(w)| w),
                deadline_ns: pick(&t.deadline, defaults.map(|d| &d.deadline))
                    .map_or(period_ns, |Ns(ns)| ns),
                budget_ns: pick(&t.budget, defaults.map(|d| &d.budget)).map(|Ns(ns)| ns),
                priority: pick(&t.priority, defaults.map(|d| &d.priority)).unwrap_or(TASK_PRIORITY),
                cpu: pick(&t.cpu, defaults.map(|d| &d.cpu)),
            });
            places.push(place);
        }
        let set = TaskSet {
            tasks,
            source: Some(source.to_path_buf()),
        };
        set.validate().map_err(|Refusal { task, key, message }| {
            match task.and_then(|i| places.get(i)) {
                Some(place) => at(place.of(key), message),
                None => TaskSetError::file(&file, message),
            }
        })?;
        Ok(set)
    }

    /// The set as a task-set file that [`TaskSet::parse`] reads back to the
    /// same tasks: every key written, durations exact.
    pub fn to_toml(&self) -> String {
        let mut out =
            String::from("# A task set (docs/taskset.md): rtlab exec periodic --taskset FILE\n");
        let quoted = |text: &str| toml::Value::String(text.to_string()).to_string();
        let duration = |ns: u64| quoted(&exact_duration(ns));
        for task in &self.tasks {
            let work = match task.work {
                Work::Fixed { ns } => duration(ns),
                Work::Uniform { min_ns, max_ns } => {
                    format!(
                        "{{ uniform = [{}, {}] }}",
                        duration(min_ns),
                        duration(max_ns)
                    )
                }
            };
            // Writing to a String cannot fail.
            let _ = write!(
                out,
                "\n[[task]]\nname = {}\nperiod = {}\noffset = {}\nwork = {work}\ndeadline = {}\n",
                quoted(&task.name),
                duration(task.period_ns),
                duration(task.offset_ns),
                duration(task.deadline_ns),
            );
            if let Some(budget) = task.budget_ns {
                let _ = writeln!(out, "budget = {}", duration(budget));
            }
            let _ = writeln!(out, "priority = {}", task.priority);
            if let Some(cpu) = task.cpu {
                let _ = writeln!(out, "cpu = {cpu}");
            }
        }
        out
    }
}
