//! Task-set files: every check refused once at its file:line and accepted
//! once, unknown keys, defaults, the round trip through `to_toml`.

use rtlab_exec::taskset::{TaskSet, TaskSpec, Work};
use std::path::Path;

const FILE: &str = "set.toml";

fn parse(text: &str) -> Result<TaskSet, String> {
    TaskSet::parse(text, Path::new(FILE)).map_err(|e| e.to_string())
}

/// The 1-based line of the first line holding `marker`.
fn line_of(text: &str, marker: &str) -> usize {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} in the text"))
        + 1
}

/// `text` is refused at the line of `marker`, with `what` in the message.
fn refused_at(text: &str, marker: &str, what: &str) {
    let error = parse(text).expect_err("refused");
    let prefix = format!("{FILE}:{}: ", line_of(text, marker));
    assert!(
        error.starts_with(&prefix),
        "{error:?} does not start with {prefix:?}"
    );
    assert!(error.contains(what), "{error:?} does not say {what:?}");
}

const VALID: &str = r#"
[defaults]
priority = 70
cpu = 0

[[task]]
name = "video"
period = "10ms"
offset = "2ms"
work = "300us"
deadline = "5ms"
budget = "400us"

[[task]]
name = "audio-1"
period = "5ms"
work = { uniform = ["100us", "1ms"] }
priority = 85
"#;

#[test]
fn a_valid_file_is_read_with_its_defaults() {
    let set = parse(VALID).unwrap();
    assert_eq!(set.source.as_deref(), Some(Path::new(FILE)));
    assert_eq!(
        set.tasks,
        vec![
            TaskSpec {
                name: "video".into(),
                period_ns: 10_000_000,
                offset_ns: 2_000_000,
                work: Work::Fixed { ns: 300_000 },
                deadline_ns: 5_000_000,
                budget_ns: Some(400_000),
                priority: 70,
                cpu: Some(0),
            },
            TaskSpec {
                name: "audio-1".into(),
                period_ns: 5_000_000,
                offset_ns: 0,
                work: Work::Uniform {
                    min_ns: 100_000,
                    max_ns: 1_000_000
                },
                // The deadline defaults to the period; no budget.
                deadline_ns: 5_000_000,
                budget_ns: None,
                priority: 85,
                cpu: Some(0),
            },
        ]
    );
}

#[test]
fn the_example_file_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/taskset.toml");
    let set = TaskSet::load(&path).unwrap();
    assert_eq!(set.tasks.len(), 3);
}

#[test]
fn without_defaults_a_task_gets_priority_80_work_0_and_no_cpu() {
    let set = parse("[[task]]\nname = \"a\"\nperiod = \"1ms\"\n").unwrap();
    let task = &set.tasks[0];
    assert_eq!(task.priority, rtlab_exec::periodic::TASK_PRIORITY);
    assert_eq!(task.work, Work::Fixed { ns: 0 });
    assert_eq!((task.offset_ns, task.deadline_ns), (0, 1_000_000));
    assert_eq!((task.budget_ns, task.cpu), (None, None));
}

#[test]
fn the_round_trip_through_to_toml_gives_the_same_set() {
    let set = parse(VALID).unwrap();
    let text = set.to_toml();
    let again = parse(&text).unwrap();
    assert_eq!(again.tasks, set.tasks, "{text}");
    // Durations are written exactly, not rounded.
    let odd = TaskSet {
        tasks: vec![TaskSpec {
            name: "odd".into(),
            period_ns: 1_234_567,
            offset_ns: 1,
            work: Work::Fixed { ns: 999_999 },
            deadline_ns: 1_234_567,
            budget_ns: Some(1_000_001),
            priority: 1,
            cpu: None,
        }],
        source: None,
    };
    assert_eq!(parse(&odd.to_toml()).unwrap().tasks, odd.tasks);
}

#[test]
fn unknown_keys_are_refused_at_their_line_with_the_known_keys() {
    let text = VALID.replace("budget = \"400us\"", "budjet = \"400us\"");
    refused_at(&text, "budjet", "unknown field `budjet`");
    let error = parse(&text).unwrap_err();
    assert!(
        error.contains("`budget`") && error.contains("`priority`"),
        "{error}"
    );
    let text = format!("{VALID}\n[global]\nx = 1\n");
    refused_at(&text, "[global]", "unknown field `global`");
    let text = VALID.replace("uniform", "normal");
    refused_at(
        &text,
        "normal",
        "unknown field `normal`, expected `uniform`",
    );
}

#[test]
fn durations_need_their_unit() {
    refused_at(
        &VALID.replace("period = \"10ms\"", "period = 10"),
        "period = 10",
        "10 has no unit",
    );
    refused_at(
        &VALID.replace("offset = \"2ms\"", "offset = \"2 fortnights\""),
        "offset",
        "invalid duration",
    );
}

#[test]
fn a_task_needs_a_name_and_a_period() {
    // Named at its [[task]] line.
    refused_at(
        &VALID.replace("name = \"video\"\n", ""),
        "[[task]]",
        "task 1 has no `name`",
    );
    let text = "[[task]]\nname = \"a\"\nwork = \"1us\"\n";
    let error = parse(text).unwrap_err();
    assert!(error.starts_with("set.toml:"), "{error}");
    assert!(error.contains("task 1 has no `period`"), "{error}");
    refused_at(
        "[defaults]\nname = \"x\"\n[[task]]\nname = \"a\"\nperiod = \"1ms\"\n",
        "name = \"x\"",
        "a name in [defaults]",
    );
    let error = parse("# nothing\n").unwrap_err();
    assert_eq!(error, "set.toml: no task, expected at least one [[task]]");
}

#[test]
fn names_are_unique_and_safe_for_series_names() {
    // The duplicate is named at its own name line.
    let text = VALID.replace("audio-1", "video");
    let error = parse(&text).unwrap_err();
    assert!(
        error.contains("`video` is already the name of task 1"),
        "{error}"
    );
    let second = text.rfind("name = \"video\"").unwrap();
    let line = text[..second].matches('\n').count() + 1;
    assert!(error.starts_with(&format!("set.toml:{line}:")), "{error}");
    refused_at(&VALID.replace("audio-1", "audio.1"), "audio.1", "holds '.'");
    refused_at(
        &VALID.replace("audio-1", ""),
        "name = \"\"",
        "an empty name",
    );
    let long = "x".repeat(65);
    refused_at(&VALID.replace("audio-1", &long), &long, "65 characters");
}

#[test]
fn the_period_is_at_least_the_minimum() {
    refused_at(
        &VALID.replace("period = \"5ms\"", "period = \"50us\""),
        "50us",
        "shorter than the release path allows, expected at least 100us",
    );
    assert!(parse("[[task]]\nname = \"fast\"\nperiod = \"100us\"\nwork = \"10us\"\n").is_ok());
}

#[test]
fn the_offset_is_within_the_period() {
    refused_at(
        &VALID.replace("offset = \"2ms\"", "offset = \"10ms\""),
        "offset = \"10ms\"",
        "offset 10ms is not shorter than the period 10ms",
    );
    assert!(parse(&VALID.replace("offset = \"2ms\"", "offset = \"9.999ms\"")).is_ok());
}

#[test]
fn the_work_is_shorter_than_the_period() {
    refused_at(
        &VALID.replace("\"1ms\"] }", "\"5ms\"] }"),
        "uniform",
        "work up to 5ms is not shorter than the period 5ms",
    );
    refused_at(
        &VALID.replace("[\"100us\", \"1ms\"]", "[\"1ms\", \"100us\"]"),
        "uniform",
        "expected the shorter first",
    );
    assert!(parse(&VALID.replace("\"1ms\"] }", "\"4.999ms\"] }")).is_ok());
}

#[test]
fn the_deadline_is_within_the_period() {
    refused_at(
        &VALID.replace("deadline = \"5ms\"", "deadline = \"11ms\""),
        "deadline",
        "deadline 11ms is not within the period 10ms",
    );
    refused_at(
        &VALID.replace("deadline = \"5ms\"", "deadline = \"0ns\""),
        "deadline",
        "expected more than 0",
    );
    assert!(parse(&VALID.replace("deadline = \"5ms\"", "deadline = \"10ms\"")).is_ok());
}

#[test]
fn the_budget_is_within_the_deadline() {
    refused_at(
        &VALID.replace("budget = \"400us\"", "budget = \"6ms\""),
        "budget",
        "budget 6ms is not within the deadline 5ms",
    );
    assert!(parse(&VALID.replace("budget = \"400us\"", "budget = \"5ms\"")).is_ok());
}

#[test]
fn the_priority_is_below_the_executive_s_highest() {
    refused_at(
        &VALID.replace("priority = 85", "priority = 99"),
        "priority = 85".replace("85", "99").as_str(),
        "priority 99 is out of range, expected 1-98",
    );
    // A default at fault is named at the [defaults] line.
    refused_at(
        &VALID.replace("priority = 70", "priority = 0"),
        "priority = 0",
        "priority 0 is out of range",
    );
    assert!(parse(&VALID.replace("priority = 85", "priority = 98")).is_ok());
}

#[test]
fn the_cpu_is_online() {
    refused_at(
        &VALID.replace("cpu = 0", "cpu = 4096"),
        "cpu = 4096",
        "cpu 4096 is not online",
    );
}

#[test]
fn at_most_max_tasks() {
    let task = |i: usize| format!("[[task]]\nname = \"t{i}\"\nperiod = \"1s\"\n");
    let max = rtlab_exec::periodic::MAX_TASKS;
    let text: String = (0..=max).map(task).collect();
    let error = parse(&text).unwrap_err();
    assert!(
        error.contains("1001 tasks, expected at most 1000"),
        "{error}"
    );
    let text: String = (0..max).map(task).collect();
    assert_eq!(parse(&text).unwrap().tasks.len(), max);
}

#[test]
fn syntax_errors_name_their_line() {
    let text = VALID.replace("work = \"300us\"", "work = \"300us");
    refused_at(&text, "work = \"300us", "");
}

#[test]
fn a_missing_file_is_named() {
    let error = TaskSet::load(Path::new("/nonexistent/set.toml")).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/set.toml: cannot read it"),
        "{error}"
    );
}

#[test]
fn a_fifo_nobody_writes_to_is_refused_not_waited_for() {
    let dir = tempfile::TempDir::new().unwrap();
    let fifo = dir.path().join("set.toml");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path for mkfifo.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(TaskSet::load(&path).map(|_| ())));
    let result = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("reading a FIFO without a writer hung");
    let error = result.unwrap_err().to_string();
    assert!(error.starts_with(&fifo.display().to_string()), "{error}");
}
