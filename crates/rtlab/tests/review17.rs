//! Regressions found reviewing issue 17's restructure (behaviour unchanged,
//! safe as root): each test failed before its fix.

mod common;

use std::path::Path;
use std::process::Output;

/// A short timer run on CPU 0, stored nowhere, with `extra` flags.
fn short_timer(state: &Path, extra: &[&str]) -> Output {
    common::run(
        common::rtlab(state)
            .args(["measure", "timer", "--cpus", "0", "--duration", "100ms"])
            .arg("--no-store")
            .args(extra),
    )
}

/// `--samples -` and `--histfile -` write their document on stdout; the
/// tables then go to stderr, as with `--json -`, so `> file` keeps a clean
/// CSV or histogram (they were appended to it).
#[test]
fn an_output_on_stdout_sends_the_tables_to_stderr() {
    require_realtime!();
    let state = tempfile::tempdir().unwrap();
    let out = short_timer(state.path(), &["--samples", "-"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("cpu,t_ns,latency_ns"));
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert!(
            fields.len() == 3 && fields.iter().all(|f| f.parse::<u64>().is_ok()),
            "not a CSV row on stdout: {line:?}"
        );
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("status complete"));

    let out = short_timer(state.path(), &["--histfile", "-"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        !stdout.contains("status complete") && !stdout.contains("series "),
        "the table is not in the histogram: {stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("status complete"));
}

/// `export -o` naming the result store itself (or its WAL) is refused:
/// the export replaced the database with one run's JSON, losing the rest.
#[test]
fn export_refuses_to_replace_the_store() {
    require_realtime!();
    let state = tempfile::tempdir().unwrap();
    let db = state.path().join("r.db");
    let db = db.to_str().unwrap();
    let out = common::run(
        common::rtlab(state.path())
            .args(["measure", "timer", "--cpus", "0", "--duration", "100ms"])
            .args(["-q", "--db", db]),
    );
    assert!(out.status.success());
    let before = std::fs::read(db).unwrap();
    for target in [db.to_string(), format!("{db}-wal")] {
        let out = common::run(
            common::rtlab(state.path())
                .args(["export", "last", "--json", "--db", db, "-o", &target]),
        );
        assert_eq!(out.status.code(), Some(2), "-o {target}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("result store (--db)"), "{stderr}");
    }
    assert_eq!(std::fs::read(db).unwrap(), before, "the store is untouched");
    let out = common::run(common::rtlab(state.path()).args(["store", "check", "--db", db]));
    assert!(out.status.success());
}

/// A period, delay or run too long for a probe's clock arithmetic (u64
/// nanoseconds) is bad input naming its flag; it wrapped (a release build
/// measured nonsense, a debug build panicked mid-run).
#[test]
fn a_span_that_overflows_is_bad_input() {
    let state = tempfile::tempdir().unwrap();
    let huge = "18446744073709551615ns";
    let interval = ["--interval", huge];
    let mut cases: Vec<(&[&str], &str)> = vec![
        (&interval, "--interval 213503d23h34m33s is too long"),
        (
            &["--loops", "18446744073709551615"],
            "--loops 18446744073709551615 of 1ms is too long",
        ),
    ];
    // A distance adds up over the threads: two CPUs at least.
    // SAFETY: sysconf has no preconditions.
    if unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } >= 2 {
        cases.push((
            &["--cpus", "0,1", "--distance", "9223372036854775807ns"],
            "--distance 106751d23h47m16s is too long",
        ));
    }
    let mut cases: Vec<(&str, &[&str], &str)> =
        cases.into_iter().map(|(f, e)| ("timer", f, e)).collect();
    let noise = ["--period", huge, "--runtime", "1s", "--window", "10ms"];
    let inject = ["--inject-delay", huge];
    cases.extend([
        (
            "switch",
            &interval[..],
            "--interval 213503d23h34m33s is too long",
        ),
        (
            "switch",
            &inject[..],
            "--inject-delay 213503d23h34m33s is too long",
        ),
        ("noise", &noise[..], "--period 213503d23h34m33s is too long"),
    ]);
    for (probe, flags, expected) in cases {
        let out = common::run(
            common::rtlab(state.path())
                .args(["measure", probe, "--no-store"])
                .args(flags),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
    let campaign = state.path().join("c.toml");
    std::fs::write(
        &campaign,
        "name = \"c\"\nduration = \"18446744073709551615ns\"\n[[probe]]\nkind = \"timer\"\n\
         interval = \"18446744073709551615ns\"\n[[load]]\nname = \"idle\"\nrun = []\n\
         [[configuration]]\nname = \"p\"\n",
    )
    .unwrap();
    let out = common::run(
        common::rtlab(state.path())
            .args(["campaign", "plan"])
            .arg(&campaign),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("c.toml:5:"), "{stderr}");
}

/// An output path ending in `/` names a directory: refused as one (exit
/// 2, nothing written), where a file named without the slash was written.
#[test]
fn an_output_ending_in_a_slash_is_a_directory() {
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--json", "--samples", "--histfile"] {
        let out = common::run(
            common::rtlab(state.path())
                .current_dir(dir.path())
                .args(["measure", "timer", "--no-store", "--duration", "100ms"])
                .args([flag, "out/"]),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} out/: cannot create: Is a directory")),
            "{stderr}"
        );
        assert!(!dir.path().join("out").exists(), "{flag}: nothing written");
    }
}
