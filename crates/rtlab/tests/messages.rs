//! What rtlab says when input is odd: names far too long for a table, and
//! messages that must say what they mean. Nothing here needs root.

mod common;

use common::{rtlab, run};
use rtlab_core::result::{CampaignRef, LoadRecord};
use std::path::{Path, PathBuf};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cyclictest_json() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rtlab-report/tests/golden/cyclictest-2.40-H40.json")
}

/// Stores a run whose load, campaign, configuration and probe names are
/// `len` characters long, as an older rtlab (or a hand-edited import) may
/// have; returns its id.
fn store_run_with_long_names(db: &Path, len: usize) -> String {
    let mut run = rtlab_report::import::import_file(&cyclictest_json()).unwrap();
    let long = |c: char| c.to_string().repeat(len);
    run.loads.push(LoadRecord {
        name: long('l'),
        spec: long('s'),
        ..Default::default()
    });
    run.campaign = Some(CampaignRef {
        name: long('c'),
        execution: "exec-1".into(),
        index: 1,
        total: 1,
        configuration: long('f'),
        load: long('l'),
        repeat: 1,
    });
    run.probe = long('p');
    let mut store = rtlab_store::Store::open(db).unwrap();
    store.save(&run).unwrap();
    run.id
}

/// A table cell of 65,536 characters or more made the formatter panic
/// ("Formatting argument out of range"), and with it every `rtlab runs`
/// and `report` on the store holding such a run.
#[test]
fn a_stored_name_of_70000_characters_lists_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let id = store_run_with_long_names(&db, 70_000);

    let out = run(rtlab(dir.path()).arg("runs").arg("--db").arg(&db));
    assert!(out.status.success(), "runs: {}", text(&out.stderr));
    // The table cuts a long label to 80 characters and says so with '…'.
    let listed = text(&out.stdout);
    assert!(listed.contains(&format!("{}…", "l".repeat(80))), "{listed}");
    assert!(!listed.contains(&"l".repeat(81)), "{listed}");

    for format in ["text", "md", "html"] {
        let out = run(rtlab(dir.path())
            .args(["report", &id, "--quiet", "--format", format])
            .arg("--db")
            .arg(&db));
        assert!(
            out.status.success(),
            "report --format {format}: {}",
            text(&out.stderr)
        );
    }

    for args in [
        vec!["show", id.as_str()],
        vec!["show", id.as_str(), "--pwcet"],
        vec!["export", id.as_str(), "--format", "markdown"],
        vec!["export", id.as_str(), "--format", "csv"],
    ] {
        let out = run(rtlab(dir.path()).args(&args).arg("--db").arg(&db));
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }

    let out = run(rtlab(dir.path())
        .args(["compare", &id, &id, "--resamples", "0"])
        .arg("--db")
        .arg(&db));
    assert!(out.status.success(), "compare: {}", text(&out.stderr));
}

/// Names that long are refused where they come in, naming the flag.
#[test]
fn names_of_70000_characters_are_refused_at_input() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(70_000);
    let load = format!("cmd:{long}");
    for args in [
        vec!["measure", "timer", "--load", load.as_str()],
        vec!["net", "probe", "--netns", "--load", load.as_str()],
        vec!["load", load.as_str(), "--duration", "1s"],
        vec!["report", "last", "--title", long.as_str()],
    ] {
        let out = run(rtlab(dir.path()).args(&args));
        assert_eq!(out.status.code(), Some(2), "{:?} not refused", &args[..2]);
        let err = text(&out.stderr);
        assert!(
            err.contains("70004 characters long") || err.contains("70000 characters long"),
            "{:?}: {err}",
            &args[..2]
        );
    }
}

/// A campaign file whose names are too long is refused as bad input,
/// naming the file and the field.
#[test]
fn a_campaign_with_a_name_of_70000_characters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(70_000);
    let campaign = |name: &str, load: &str| {
        format!(
            "name = \"{name}\"\nduration = \"1s\"\n[[probe]]\nkind = \"timer\"\n\
             [[load]]\nname = \"{load}\"\nrun = []\n\
             [[configuration]]\nname = \"promoted\"\npolicy = \"fifo\"\npriority = 80\n"
        )
    };
    for (field, toml) in [
        ("name", campaign(&long, "idle")),
        ("load[1].name", campaign("c", &long)),
    ] {
        let file = dir.path().join("c.toml");
        std::fs::write(&file, toml).unwrap();
        let out = run(rtlab(dir.path()).args(["campaign", "plan"]).arg(&file));
        assert_eq!(out.status.code(), Some(2), "{field}");
        let err = text(&out.stderr);
        assert!(
            err.contains(field) && err.contains("70000 characters long"),
            "{err}"
        );
    }
}

/// `--duration -1s` got clap's "unexpected argument '-1'"; `.ms` and `.s`
/// were zero durations. Each is refused by the duration parser, naming
/// the flag, with exit code 2.
#[test]
fn odd_durations_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (args, reason) in [
        (
            vec!["measure", "timer", "--duration", "-1s"],
            "negative durations are not allowed",
        ),
        (
            vec!["measure", "timer", "--interval=-1ms"],
            "negative durations are not allowed",
        ),
        (
            vec![
                "plan", "gen", "periodic", "--period", "-1ms", "--count", "1", "-o", "x",
            ],
            "negative durations are not allowed",
        ),
        (
            vec!["measure", "timer", "--duration", ".ms"],
            "it must start with a number",
        ),
        (
            vec!["exec", "periodic", "--work", ".s"],
            "it must start with a number",
        ),
    ] {
        let out = run(rtlab(dir.path()).args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(reason), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
}

/// `plan gen --start 5124095h` wrote a plan that `plan check` rejected;
/// gen now refuses what check would, and what it writes at the very edge
/// checks clean.
#[test]
fn plan_gen_writes_only_plans_that_check() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    let gen = |start: &str, extra: &[&str]| {
        run(rtlab(dir.path())
            .args(["plan", "gen", "periodic", "--period", "1ms", "--count", "1"])
            .args(["--start", start])
            .args(extra)
            .arg("-o")
            .arg(&plan))
    };
    let out = gen("5124095h", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("beyond 2^62 ns"),
        "{}",
        text(&out.stderr)
    );
    assert!(!plan.exists(), "a refused plan was written");

    let out = gen("4611686018427387905ns", &[]);
    assert_eq!(out.status.code(), Some(2));

    let out = gen("4611686018427387904ns", &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(rtlab(dir.path()).args(["plan", "check"]).arg(&plan));
    assert!(out.status.success(), "{}", text(&out.stdout));

    let out = gen("0ns", &["--repeat", "4611686018427387905ns"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--repeat"),
        "{}",
        text(&out.stderr)
    );
}

/// rtlab.run/1 errors said only `$: …`: they name the JSON path of the
/// value at fault and its line and column.
#[test]
fn a_bad_rtlab_result_is_refused_at_its_path_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run0 = rtlab_report::import::import_file(&cyclictest_json()).unwrap();
    let good = serde_json::to_value(&run0).unwrap();
    // (path, corruption, the line holding the value: the first line that
    // contains this, plus an offset).
    type Corrupt = fn(&mut serde_json::Value);
    let cases: [(&str, Corrupt, &str, usize); 4] = [
        // A series' statistics are flattened into it.
        (
            "$.series[1].samples",
            |v| v["series"][1]["samples"] = "many".into(),
            "\"samples\": \"many\"",
            0,
        ),
        (
            "$.series[0].thread.tid",
            |v| v["series"][0]["thread"]["tid"] = "x".into(),
            "\"tid\": \"x\"",
            0,
        ),
        (
            "$.status",
            |v| v["status"] = "done".into(),
            "\"status\": \"done\"",
            0,
        ),
        // A missing field: the object it is missing from.
        (
            "$.series[0]",
            |v| {
                v["series"][0].as_object_mut().unwrap().remove("metric");
            },
            "\"series\": [",
            1,
        ),
    ];
    for (path, corrupt, needle, below) in cases {
        let mut doc = good.clone();
        corrupt(&mut doc);
        let json = serde_json::to_string_pretty(&doc).unwrap();
        let line = json.lines().position(|l| l.contains(needle)).unwrap() + 1 + below;
        let file = dir.path().join("bad.json");
        std::fs::write(&file, &json).unwrap();
        let out = run(rtlab(dir.path())
            .arg("import")
            .arg(&file)
            .arg("--db")
            .arg(dir.path().join("r.db")));
        assert_eq!(out.status.code(), Some(2), "{path}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("{path} (line {line} column")),
            "{path}, expected line {line}: {err}"
        );
    }
}

/// A campaign or rules file that is not UTF-8 is refused with where its
/// first bad byte is (it said only "stream did not contain valid UTF-8").
#[test]
fn a_toml_file_that_is_not_utf8_is_refused_at_its_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.toml");
    std::fs::write(&file, b"# caf\xe9\nname = \"x\"\n").unwrap();
    for args in [vec!["campaign", "plan"], vec!["tune", "apply", "--rules"]] {
        let out = run(rtlab(dir.path()).args(&args).arg(&file));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("byte 0xe9 at byte offset 5 (line 1, byte 6 of the line)"),
            "{args:?}: {err}"
        );
    }
}

/// `plan run --no-store` stopped by SIGINT said "the partial result was
/// kept": it was not stored; it says where it went (here, --json's file).
#[test]
fn a_stopped_run_that_is_not_stored_does_not_say_it_was_kept() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("long.plan");
    let out = run(rtlab(dir.path())
        .args([
            "plan", "gen", "periodic", "--period", "1ms", "--count", "60000", "-o",
        ])
        .arg(&plan));
    assert!(out.status.success());
    let json = dir.path().join("run.json");
    let mut child = rtlab(dir.path())
        .args(["plan", "run"])
        .arg(&plan)
        .args(["--no-store", "--quiet", "--json"])
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until_running(&json, &mut child);
    common::signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!(
            "stopped by a signal: the partial result was written to {}; it was not stored",
            json.display()
        )),
        "{err}"
    );
    assert!(!err.contains("was kept"), "{err}");
    assert_eq!(common::read_json(&json).unwrap()["status"], "partial");
}

/// A repeat period not longer than the last offset was a read error (exit
/// 2) in a text plan and a check error (exit 1) in a binary one, while
/// docs/plan.md called it a check error: it is one in both forms now, at
/// the last offset's line.
#[test]
fn a_too_short_repeat_is_a_check_error_in_a_text_plan() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.txt");
    std::fs::write(
        &plan,
        "rtlab-plan 1\nmodule a mark\nrepeat 1ms\nevents\n0us a\n2ms a\n",
    )
    .unwrap();
    let out = run(rtlab(dir.path()).args(["plan", "check"]).arg(&plan));
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout) + &text(&out.stderr);
    assert!(
        report.contains(&format!(
            "{}:6: error: repeat period 1ms is not longer than the last offset 2ms",
            plan.display()
        )),
        "{report}"
    );
    let out = run(rtlab(dir.path())
        .args(["plan", "check", "--json"])
        .arg(&plan));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["counts"]["repeat-too-short"], 1, "{doc}");
    let out = run(rtlab(dir.path())
        .args(["plan", "compile"])
        .arg(&plan)
        .arg("-o")
        .arg(dir.path().join("p.bin")));
    assert_ne!(out.status.code(), Some(0), "compile refuses it");
}

/// Bad values and unwritable outputs are bad input: exit 2, not 1
/// (`runs --status done` exited 1).
#[test]
fn invalid_values_and_unwritable_outputs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/out");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["runs", "--status", "done"],
        vec!["campaign", "plan", "quick", "--json", missing],
        vec![
            "plan", "gen", "periodic", "--period", "1ms", "--count", "2", "-o", missing,
        ],
    ] {
        let out = run(rtlab(dir.path()).args(&args));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("done") || err.contains(missing),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.path().join("no").exists());
}

/// `format!("{x:<w$}")` panics when `w` reaches 65,536, and names of that
/// length reach the tables from stored runs: every computed width goes
/// through `rtlab_core::text::pad`. This finds a new `{…:<w$}` in the
/// sources; the two left are widths rtlab fixes itself.
#[test]
fn no_table_pads_with_a_computed_format_width() {
    // Widths that do not come from input: histfile trailer digits (a
    // format constant) and `tune check`'s finding ids (names in the code).
    const FIXED: [&str; 2] = ["{value:0width$}", "{:<id_width$}"];
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut stack = vec![crates];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("target") && !path.ends_with("tests") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for (n, line) in source.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                // `{…$}` inside a format string: a width or precision
                // taken from an argument.
                let dynamic = line.match_indices("$}").any(|(at, _)| {
                    let open = line[..at].rfind('{').unwrap_or(0);
                    let spec = &line[open..at + 2];
                    spec.contains(':') && !FIXED.contains(&spec)
                });
                if dynamic {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "pad with rtlab_core::text::pad instead:\n{}",
        found.join("\n")
    );
}
