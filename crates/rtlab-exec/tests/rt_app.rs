//! The rt-app importer: the periodic subset (a plain task, instances,
//! SCHED_DEADLINE, phases, comments and trailing commas), and everything
//! else refused at its file:line:column, naming the task and the key.

use rtlab_exec::taskset::{parse_rt_app, Imported, TaskSet, TaskSpec, Work};
use std::path::Path;

const FILE: &str = "set.json";

fn import(text: &str) -> Result<Imported, String> {
    parse_rt_app(text, Path::new(FILE)).map_err(|e| e.to_string())
}

/// `text` is refused at the line of `marker`, with `what` in the message.
fn refused_at(text: &str, marker: &str, what: &str) {
    let error = import(text).expect_err("refused");
    let line = text
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?}"))
        + 1;
    let prefix = format!("{FILE}:{line}:");
    assert!(
        error.starts_with(&prefix),
        "{error:?} does not start with {prefix:?}"
    );
    assert!(error.contains(what), "{error:?} does not say {what:?}");
}

fn one_task(body: &str) -> String {
    format!("{{\n\"tasks\" : {{\n\"t\" : {{\n{body}\n}}\n}}\n}}\n")
}

#[test]
fn a_plain_periodic_task_is_imported() {
    let text = one_task(
        "\"policy\" : \"SCHED_FIFO\",\n\"priority\" : 50,\n\"run\" : 300,\n\"timer\" : { \"ref\" : \"unique\", \"period\" : 10000 }",
    );
    let imported = import(&text).unwrap();
    assert_eq!(
        imported.set.tasks,
        vec![TaskSpec {
            name: "t".into(),
            period_ns: 10_000_000,
            offset_ns: 0,
            work: Work::Fixed { ns: 300_000 },
            deadline_ns: 10_000_000,
            budget_ns: None,
            priority: 50,
            cpu: None,
        }]
    );
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
}

#[test]
fn the_example_imports_with_instances_deadline_and_comments() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app-periodic.json");
    let imported = rtlab_exec::taskset::import_rt_app(&path).unwrap();
    let names: Vec<&str> = imported.set.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["control", "video-0", "video-1", "encoder"]);
    let video = &imported.set.tasks[1];
    // run0 + runtime1 add up; delay is the offset; CPU from cpus.
    assert_eq!(video.work, Work::Fixed { ns: 300_000 });
    assert_eq!((video.period_ns, video.offset_ns), (10_000_000, 2_000_000));
    assert_eq!(video.priority, 70);
    assert_eq!(imported.set.tasks[0].cpu, Some(1));
    let encoder = &imported.set.tasks[3];
    assert_eq!(encoder.period_ns, 20_000_000);
    assert_eq!(encoder.deadline_ns, 15_000_000);
    assert_eq!(encoder.budget_ns, Some(2_000_000));
    assert_eq!(encoder.work, Work::Fixed { ns: 1_500_000 });
    let warnings = imported.warnings.join("\n");
    for said in [
        "global.duration 2 s: dropped, give it to exec periodic as --duration 2s",
        "global.calibration, global.logdir, global.log_basename, global.gnuplot: dropped",
        "task `encoder`: SCHED_DEADLINE runs as SCHED_FIFO 80",
    ] {
        assert!(warnings.contains(said), "{warnings}");
    }
    // The imported set writes a task-set file that reads back the same.
    let again = TaskSet::parse(&imported.set.to_toml(), Path::new("x.toml")).unwrap();
    assert_eq!(again.tasks, imported.set.tasks);
}

#[test]
fn several_runs_in_a_period_add_up_repeated_keys_too() {
    let text = one_task(
        "\"priority\" : 10, \"policy\" : \"SCHED_RR\",\n\"run\" : 100, \"sleep\" : 0, \"run\" : 50, \"runtime7\" : 25,\n\"timer\" : { \"period\" : 1000 }",
    );
    let imported = import(&text).unwrap();
    assert_eq!(imported.set.tasks[0].work, Work::Fixed { ns: 175_000 });
    assert!(imported
        .warnings
        .iter()
        .any(|w| w.contains("SCHED_RR runs as SCHED_FIFO")));
    assert!(imported
        .warnings
        .iter()
        .any(|w| w.contains("sleep 0: dropped")));
}

#[test]
fn a_sched_other_task_gets_the_lowest_priority_with_a_warning() {
    let text = one_task("\"run\" : 100,\n\"timer\" : { \"period\" : 1000 }");
    let imported = import(&text).unwrap();
    assert_eq!(imported.set.tasks[0].priority, 1);
    assert!(imported.warnings[0].contains("SCHED_OTHER has no real-time priority"));
}

#[test]
fn several_cpus_keep_the_first_with_a_warning() {
    let text = one_task(
        "\"policy\" : \"SCHED_FIFO\", \"cpus\" : [1, 0],\n\"run\" : 100,\n\"timer\" : { \"period\" : 1000 }",
    );
    let imported = import(&text).unwrap();
    assert_eq!(imported.set.tasks[0].cpu, Some(1));
    assert!(imported.warnings[0].contains("rtlab pins a task to one CPU"));
}

#[test]
fn locks_barriers_and_sleeps_are_refused_naming_task_and_key() {
    let periodic = "\"run\" : 100,\n\"timer\" : { \"period\" : 1000 }";
    for (event, value) in [
        ("lock", "\"m\""),
        ("barrier", "\"b\""),
        ("sleep", "500"),
        ("mem", "4096"),
        ("resume", "\"t\""),
    ] {
        let key = format!("{event}2");
        let text = one_task(&format!("{periodic},\n\"{key}\" : {value}"));
        refused_at(
            &text,
            &key,
            &format!("task `t`: `{key}` (a {event} event) is outside the periodic subset"),
        );
    }
}

#[test]
fn what_is_not_periodic_is_refused() {
    refused_at(
        &one_task("\"run\" : 100,\n\"sleep\" : 900"),
        "\"sleep\"",
        "`sleep`",
    );
    refused_at(&one_task("\"run\" : 100"), "\"t\"", "task `t`: no timer");
    refused_at(
        &one_task("\"run\" : 100,\n\"timer\" : { \"period\" : 1000 },\n\"timer1\" : { \"period\" : 2000 }"),
        "timer1",
        "a second timer",
    );
    let phases = one_task(
        "\"phases\" : {\n\"a\" : { \"run\" : 100, \"timer\" : { \"period\" : 1000 } },\n\"b\" : { \"run\" : 900, \"timer\" : { \"period\" : 1000 } }\n}",
    );
    refused_at(&phases, "\"b\"", "phase `b` differs from phase `a`");
    let same = phases.replace("900", "100");
    let imported = import(&same).unwrap();
    assert_eq!(imported.set.tasks.len(), 1);
    refused_at(
        &one_task("\"prioirty\" : 5,\n\"run\" : 100,\n\"timer\" : { \"period\" : 1000 }"),
        "prioirty",
        "unknown key `prioirty`",
    );
}

#[test]
fn rtlab_s_own_checks_name_the_rt_app_task() {
    // 99 is above every task priority rtlab runs.
    let text = one_task(
        "\"policy\" : \"SCHED_FIFO\", \"priority\" : 99,\n\"run\" : 100,\n\"timer\" : { \"period\" : 1000 }",
    );
    refused_at(&text, "\"t\"", "task `t`: priority 99 is out of range");
    let text = one_task("\"run\" : 2000,\n\"timer\" : { \"period\" : 1000 }");
    refused_at(&text, "\"t\"", "is not shorter than the period");
}

#[test]
fn malformed_json_names_line_and_column() {
    let text = "{\n  \"tasks\" : {\n    \"t\" : { \"run\" : 100 \"timer\" : 1 }\n  }\n}\n";
    let error = import(text).unwrap_err();
    assert!(
        error.starts_with("set.json:3:25: JSON syntax: expected `,` or `}`"),
        "{error}"
    );
    let error = import("{\n \"tasks\" : {} /* never closed\n}").unwrap_err();
    assert!(
        error.starts_with("set.json:2:15: a /* comment that never ends"),
        "{error}"
    );
}

#[test]
fn instances_and_harmless_keys() {
    let text = one_task(
        "\"instance\" : 3, \"loop\" : 5, \"util_min\" : 10, \"policy\" : \"SCHED_FIFO\",\n\"delay\" : 2500, \"run\" : 100,\n\"timer\" : { \"period\" : 1000 }",
    );
    let imported = import(&text).unwrap();
    let names: Vec<&str> = imported.set.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t-0", "t-1", "t-2"]);
    // A delay beyond the period keeps its place on the grid.
    assert!(imported.set.tasks.iter().all(|t| t.offset_ns == 500_000));
    let warnings = imported.warnings.join("\n");
    for said in [
        "loop 5: dropped",
        "util_min: dropped",
        "delay 2500 µs is a period or more",
    ] {
        assert!(warnings.contains(said), "{warnings}");
    }
    let none = one_task("\"instance\" : 0, \"run\" : 1, \"timer\" : { \"period\" : 1000 }");
    let error = import(&none).unwrap_err();
    assert!(error.contains("no task, expected at least one"), "{error}");
}
