//! `rtlab plan compile|check|show|gen` end to end.

mod common;

use common::{assert_refused, rtlab, run};
use std::path::Path;

const PLAN: &str = "rtlab-plan 1\n\
module tick mark\n\
module tx udp dest=127.0.0.1:7700 size=64\n\
repeat 10ms\n\
events\n\
0us tick\n\
150us tx hex:0102030405 # a comment\n\
1.5ms tick \"hi\"\n";

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn plan(dir: &Path, args: &[&str]) -> std::process::Output {
    run(rtlab(&dir.join("state"))
        .current_dir(dir)
        .arg("plan")
        .args(args))
}

#[test]
fn compile_show_and_back_to_text() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.txt"), PLAN).unwrap();
    let out = plan(d, &["compile", "p.txt", "-o", "p.plan", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = json_of(&out);
    assert_eq!(doc["events"], 3);
    let size = std::fs::metadata(d.join("p.plan")).unwrap().len();
    assert_eq!(doc["bytes"], size);
    assert_eq!(&std::fs::read(d.join("p.plan")).unwrap()[..8], b"RTLPLAN\0");

    let out = plan(d, &["show", "p.plan", "--json", "--events", "2"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = json_of(&out);
    assert_eq!(doc["form"], "binary");
    assert_eq!(doc["events"], 3);
    assert_eq!(doc["repeat_ns"], 10_000_000);
    assert_eq!(doc["span_ns"], 1_500_000);
    assert_eq!(doc["min_spacing_ns"], 150_000);
    assert_eq!(doc["modules"][1]["name"], "tx");
    assert_eq!(doc["first_events"].as_array().unwrap().len(), 2);
    assert_eq!(
        doc["first_events"][1]["data_hex"],
        "010203040500000000000000"
    );

    let out = plan(d, &["show", "p.txt"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("text plan") && text.contains("dest=127.0.0.1:7700"),
        "{text}"
    );

    let out = plan(d, &["compile", "p.plan", "--text", "-o", "back.txt"]);
    assert_eq!(out.status.code(), Some(0));
    let out = plan(d, &["compile", "back.txt", "-o", "again.plan"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read(d.join("p.plan")).unwrap(),
        std::fs::read(d.join("again.plan")).unwrap()
    );
}

#[test]
fn check_exit_codes_and_findings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ok.txt"), PLAN).unwrap();
    assert_eq!(plan(d, &["check", "ok.txt"]).status.code(), Some(0));

    std::fs::write(
        d.join("bad.txt"),
        "rtlab-plan 1\nmodule a mark\nmodule b mark\nevents\n2ms a\n1ms a\n",
    )
    .unwrap();
    let out = plan(d, &["check", "bad.txt"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bad.txt:6: error"), "{text}");
    let out = plan(d, &["check", "bad.txt", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    assert_eq!(doc["errors"], 1);
    assert_eq!(doc["warnings"], 1);
    assert_eq!(doc["findings"][0]["code"], "unsorted");
    assert_eq!(doc["findings"][0]["line"], 6);
    assert_eq!(doc["findings"][1]["code"], "unused-module");

    // Compile refuses a plan with check errors.
    let out = plan(d, &["compile", "bad.txt", "-o", "bad.plan"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!d.join("bad.plan").exists());
}

#[test]
fn bad_input_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "rtlab-plan 1\nmodule a mark\nevents\n1us nosuch\n").unwrap();
    let bad = bad.to_str().unwrap();
    assert_refused(
        &["plan", "check", bad],
        &["bad.txt:4:", "unknown module 'nosuch'"],
    );
    assert_refused(&["plan", "show", bad], &["bad.txt:4:"]);
    assert_refused(
        &["plan", "compile", bad, "-o", "/nonexistent/x"],
        &["bad.txt:4:"],
    );
    assert_refused(&["plan", "check", "/nonexistent/plan"], &["cannot open"]);
    let junk = dir.path().join("junk.plan");
    std::fs::write(&junk, b"RTLPLAN\0\x07\0\0\0").unwrap();
    assert_refused(
        &["plan", "show", junk.to_str().unwrap()],
        &["junk.plan", "truncated"],
    );
    let out = dir.path().join("o.plan");
    let out = out.to_str().unwrap();
    assert_refused(
        &["plan", "gen", "periodic", "--count", "3", "-o", out],
        &["--period"],
    );
    assert_refused(
        &["plan", "gen", "periodic", "--period", "1ms", "-o", out],
        &["--count", "--duration"],
    );
    assert_refused(
        &[
            "plan", "gen", "jittered", "--period", "1ms", "--jitter", "600us", "--count", "3",
            "-o", out,
        ],
        &["jitter", "half"],
    );
    assert_refused(
        &[
            "plan", "gen", "periodic", "--period", "1ms", "--count", "3", "--module", "x:blink",
            "-o", out,
        ],
        &["unknown kind"],
    );
    assert_refused(
        &[
            "plan", "gen", "poisson", "--rate", "10/day", "--count", "3", "-o", out,
        ],
        &["--rate"],
    );
    assert_refused(
        &[
            "plan", "gen", "periodic", "--period", "1ms", "--count", "3", "--data", "hex:123",
            "-o", out,
        ],
        &["--data"],
    );
    assert_refused(
        &[
            "plan", "gen", "periodic", "--period", "1ms", "--count", "3", "--repeat", "2ms", "-o",
            out,
        ],
        &["--repeat"],
    );
    assert!(!Path::new(out).exists());
}

#[test]
fn gen_is_deterministic_and_exactly_sized() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = |o: &str| {
        vec![
            "gen".to_string(),
            "poisson".into(),
            "--rate".into(),
            "1000/s".into(),
            "--duration".into(),
            "2s".into(),
            "--seed".into(),
            "9".into(),
            "--data".into(),
            "seq".into(),
            "--module".into(),
            "tx:udp:dest=127.0.0.1:7700,size=32".into(),
            "-o".into(),
            o.into(),
            "--json".into(),
        ]
    };
    let a = plan(
        d,
        &args("a.plan")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let b = plan(
        d,
        &args("b.plan")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(a.status.code(), Some(0));
    let n = json_of(&a)["events"].as_u64().unwrap();
    assert!((1_000..4_000).contains(&n), "{n} events at 1000/s for 2 s");
    let bytes_a = std::fs::read(d.join("a.plan")).unwrap();
    assert_eq!(bytes_a, std::fs::read(d.join("b.plan")).unwrap());
    assert_eq!(json_of(&b)["events"], n);
    assert_eq!(plan(d, &["check", "a.plan"]).status.code(), Some(0));

    let out = plan(
        d,
        &[
            "gen", "periodic", "--period", "1us", "--count", "100000", "-o", "p.plan", "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    // 64-byte header, "tick"/"mark" table entry of 14 bytes padded to 16.
    let size = std::fs::metadata(d.join("p.plan")).unwrap().len();
    assert_eq!(size, 64 + 16 + 24 * 100_000);

    let out = plan(
        d,
        &[
            "gen", "jittered", "--period", "1ms", "--jitter", "100us", "--count", "5", "--text",
            "-o", "j.txt",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(d.join("j.txt")).unwrap();
    assert!(text.starts_with("rtlab-plan 1\n"), "{text}");
    assert_eq!(plan(d, &["check", "j.txt"]).status.code(), Some(0));
}

#[test]
fn every_plan_command_has_help_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["compile", "check", "show", "gen"] {
        let out = plan(dir.path(), &[cmd, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("rtlab plan {cmd}")), "{cmd}: {text}");
    }
}

#[test]
fn plan_run_fires_every_event_and_records_each_dispatch_error() {
    require_realtime!();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let plan = dir.path().join("ticks.plan");
    let out = common::run(
        common::rtlab(&state)
            .args([
                "plan",
                "gen",
                "periodic",
                "--module",
                "tick:mark",
                "--period",
                "1ms",
                "--count",
                "300",
                "-o",
            ])
            .arg(&plan),
    );
    assert!(out.status.success());
    let out = common::run(
        common::rtlab(&state)
            .args(["plan", "run"])
            .arg(&plan)
            .args([
                "--repeat",
                "2",
                "--skip-after",
                "10s",
                "--json",
                "-",
                "--no-store",
            ]),
    );
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["probe"], "plan");
    let dispatch = &json["series"][0];
    assert_eq!(dispatch["name"], "dispatch");
    assert_eq!(dispatch["metric"], "dispatch_error");
    assert_eq!(dispatch["samples"], 600);
    assert_eq!(dispatch["missed"], 0);
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("guard auto"), "{warnings}");
    // What the dispatcher learned: at most one wake-up per event.
    let thread = &json["executive"]["threads"][0];
    assert_eq!(thread["role"], "dispatcher");
    assert_eq!(thread["guard_mode"], "auto");
    let wakeups: u64 = thread["guards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["observations"].as_u64().unwrap())
        .sum();
    assert!(wakeups > 0 && wakeups <= 600, "{thread}");
}

#[test]
fn plan_run_refuses_a_bad_plan_before_running_it() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("bad.txt");
    std::fs::write(&plan, "rtlab-plan 1\nmodule m mark\nevents\n2ms m\n1ms m\n").unwrap();
    let path = plan.to_str().unwrap();
    common::assert_refused(&["plan", "run", path], &["bad.txt:5", "offset"]);
    common::assert_refused(&["plan", "run", path, "--guard", "soon"], &["--guard soon"]);
    common::assert_refused(
        &["plan", "run", path, "--spin-budget", "101%"],
        &["--spin-budget", "expected 1-100"],
    );
    common::assert_refused(
        &["plan", "run", "/nonexistent.plan"],
        &["/nonexistent.plan"],
    );
}
