//! `rtlab tune systemd`: unit names, drop-in validation and rendering, the
//! watch unit, `systemd-analyze verify` on real files in a temporary unit
//! directory, and `systemctl daemon-reload` handling.

use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::Policy;
use rtlab_tune::systemd::{
    check_watch_binary, dropin_path, quote_exec_arg, reload, reload_with, render_dropin,
    render_watch_unit, service_name, unit_name, verify, verify_with, watch_unit_path, DropIn,
    ReloadOutcome, SystemdError, Verification, SYSTEMD_BOOTED_MARKER, WATCH_UNIT_NAME,
};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

// ---------------------------------------------------------------- unit names

#[test]
fn unit_names_that_systemd_accepts() {
    let cases = [
        ("foo", "foo.service"),
        ("foo.service", "foo.service"),
        ("getty@tty1.service", "getty@tty1.service"),
        ("getty@.service", "getty@.service"),
        ("dev-sda1.mount", "dev-sda1.mount"),
        ("system-getty.slice", "system-getty.slice"),
        ("my_app:1\\x2dx.socket", "my_app:1\\x2dx.socket"),
        // No known suffix: completed to a service, as systemctl does.
        ("foo.bar", "foo.bar.service"),
        ("-.mount", "-.mount"),
    ];
    for (input, expected) in cases {
        assert_eq!(
            unit_name(input).unwrap_or_else(|e| panic!("{input}: {e}")),
            expected,
            "{input}"
        );
    }
    let longest = format!("{}.service", "a".repeat(255 - ".service".len()));
    assert_eq!(unit_name(&longest).unwrap(), longest);
}

#[test]
fn unit_names_that_systemd_refuses_are_named_in_the_error() {
    let cases = [
        ("", "empty"),
        ("../x", "'/'"),
        ("a/b.service", "'/'"),
        ("foo bar", "a space"),
        ("foo\tbar.service", "\\t"),
        ("foo\n", "\\n"),
        (".service", "nothing before"),
        ("@tty1.service", "nothing before '@'"),
        ("foo$.service", "'$'"),
        ("caf\u{e9}.service", "'\u{e9}'"),
    ];
    for (input, reason) in cases {
        let err = unit_name(input).expect_err(input);
        let SystemdError::UnitName { input: named, .. } = &err else {
            panic!("{input:?}: unexpected error {err:?}");
        };
        assert_eq!(named, &input.escape_debug().to_string());
        let text = err.to_string();
        assert!(
            text.contains(&format!("'{}'", input.escape_debug())),
            "error does not name the input {input:?}: {text}"
        );
        assert!(text.contains(reason), "{input:?}: {text}");
    }
    let too_long = format!("{}.service", "a".repeat(256 - ".service".len()));
    let text = unit_name(&too_long).unwrap_err().to_string();
    assert!(text.contains("256 bytes") && text.contains("255"), "{text}");
}

#[test]
fn drop_ins_are_for_services_only() {
    assert_eq!(service_name("nginx").unwrap(), "nginx.service");
    let err = service_name("nginx.socket").unwrap_err();
    assert_eq!(
        err,
        SystemdError::NotAService {
            unit: "nginx.socket".into()
        }
    );
    assert!(err.to_string().contains("nginx.socket"));
    assert!(matches!(
        service_name("../x"),
        Err(SystemdError::UnitName { .. })
    ));
}

#[test]
fn the_drop_in_goes_beside_the_unit() {
    assert_eq!(
        dropin_path(Path::new("/etc/systemd/system"), "alarm.service"),
        PathBuf::from("/etc/systemd/system/alarm.service.d/50-rtlab-tune.conf")
    );
    assert_eq!(
        watch_unit_path(Path::new("/etc/systemd/system")),
        PathBuf::from("/etc/systemd/system/rtlab-tune-watch.service")
    );
}

// ---------------------------------------------------------------- validation

fn fifo(priority: u32) -> DropIn {
    DropIn::new(Policy::Fifo, priority)
}

#[test]
fn priority_99_needs_allow_99() {
    let err = fifo(99).validate(false).unwrap_err();
    assert_eq!(err, SystemdError::Priority99);
    assert!(err.to_string().contains("--allow-99"), "{err}");
    fifo(99).validate(true).unwrap();
    DropIn::new(Policy::Rr, 99).validate(true).unwrap();
    fifo(98).validate(false).unwrap();
}

#[test]
fn rtprio_limit_below_the_priority_is_refused() {
    let mut d = fifo(50);
    d.limit_rtprio = Some(40);
    let err = d.validate(false).unwrap_err();
    assert_eq!(
        err,
        SystemdError::LimitBelowPriority {
            limit: 40,
            priority: 50
        }
    );
    let text = err.to_string();
    assert!(text.contains("40") && text.contains("50") && text.contains("regain"));
    d.limit_rtprio = Some(50);
    d.validate(false).unwrap();
    d.limit_rtprio = Some(100);
    assert_eq!(
        d.validate(true).unwrap_err(),
        SystemdError::LimitAbove99 { limit: 100 }
    );
}

#[test]
fn deadline_is_refused_because_systemd_cannot_set_it() {
    let err = DropIn::new(Policy::Deadline, 0).validate(true).unwrap_err();
    assert_eq!(err, SystemdError::Deadline);
    let text = err.to_string();
    assert!(
        text.contains("SCHED_DEADLINE") && text.contains("systemd cannot"),
        "{text}"
    );
}

#[test]
fn priorities_must_fit_the_policy() {
    for policy in [Policy::Fifo, Policy::Rr] {
        for priority in [0, 100] {
            let err = DropIn::new(policy, priority).validate(true).unwrap_err();
            assert_eq!(
                err,
                SystemdError::RealtimePriority { policy, priority },
                "{policy} {priority}"
            );
            assert!(err.to_string().contains("1-99"), "{err}");
        }
        DropIn::new(policy, 1).validate(false).unwrap();
    }
    for policy in [Policy::Other, Policy::Batch, Policy::Idle] {
        let err = DropIn::new(policy, 5).validate(false).unwrap_err();
        assert_eq!(
            err,
            SystemdError::NonRealtimePriority {
                policy,
                priority: 5
            }
        );
        DropIn::new(policy, 0).validate(false).unwrap();
    }
}

#[test]
fn empty_affinity_and_unusable_rttime_are_refused() {
    let mut d = fifo(50);
    d.affinity = Some(CpuSet::default());
    assert_eq!(d.validate(false).unwrap_err(), SystemdError::EmptyAffinity);

    let mut d = fifo(50);
    d.limit_rttime = Some(Duration::ZERO);
    assert!(matches!(
        d.validate(false),
        Err(SystemdError::LimitRtTime { .. })
    ));
    d.limit_rttime = Some(Duration::from_nanos(1_500));
    let text = d.validate(false).unwrap_err().to_string();
    assert!(text.contains("whole microseconds"), "{text}");
    d.limit_rttime = Some(Duration::from_micros(1_500));
    d.validate(false).unwrap();
}

// ---------------------------------------------------------------- rendering

#[test]
fn full_drop_in_renders_exactly() {
    let d = DropIn {
        policy: Policy::Fifo,
        priority: 80,
        affinity: Some(CpuSet::parse("1-3").unwrap()),
        reset_on_fork: true,
        limit_rtprio: Some(85),
        limit_rttime: Some(Duration::from_millis(200)),
        memlock_infinity: true,
    };
    d.validate(false).unwrap();
    let command = "rtlab tune systemd alarm.service --policy fifo --priority 80 --affinity 1-3 \
                   --reset-on-fork --limit-rtprio 85 --limit-rttime 200ms --memlock-infinity";
    assert_eq!(
        render_dropin(&d, command),
        "\
# Written by rtlab (`rtlab tune systemd`); rerun the command to change it.
# Command: rtlab tune systemd alarm.service --policy fifo --priority 80 --affinity 1-3 --reset-on-fork --limit-rtprio 85 --limit-rttime 200ms --memlock-infinity
# Undo: `rtlab tune undo`, or delete this file and run `systemctl daemon-reload`.
[Service]
CPUSchedulingPolicy=fifo
CPUSchedulingPriority=80
CPUSchedulingResetOnFork=yes
CPUAffinity=
CPUAffinity=1-3
LimitRTPRIO=85
LimitRTTIME=200ms
LimitMEMLOCK=infinity
"
    );
}

#[test]
fn minimal_drop_in_renders_exactly_with_the_priority_as_rtprio_limit() {
    let d = DropIn::new(Policy::Rr, 50);
    d.validate(false).unwrap();
    assert_eq!(
        render_dropin(&d, "rtlab tune systemd alarm --policy rr --priority 50"),
        "\
# Written by rtlab (`rtlab tune systemd`); rerun the command to change it.
# Command: rtlab tune systemd alarm --policy rr --priority 50
# Undo: `rtlab tune undo`, or delete this file and run `systemctl daemon-reload`.
[Service]
CPUSchedulingPolicy=rr
CPUSchedulingPriority=50
CPUSchedulingResetOnFork=no
LimitRTPRIO=50
"
    );
}

#[test]
fn a_service_that_promotes_itself_gets_only_the_limit() {
    // Paper 000, footnote 5: the service starts as usual and raises itself,
    // which LimitRTPRIO= allows.
    let mut d = DropIn::new(Policy::Other, 0);
    d.limit_rtprio = Some(50);
    d.validate(false).unwrap();
    let text = render_dropin(&d, "x");
    assert!(text.contains("\nCPUSchedulingPolicy=other\nCPUSchedulingPriority=0\n"));
    assert!(text.contains("\nLimitRTPRIO=50\n"), "{text}");
    // Without a limit, a non-real-time policy writes none.
    assert!(!render_dropin(&DropIn::new(Policy::Batch, 0), "x").contains("LimitRTPRIO"));
}

#[test]
fn rttime_is_written_in_the_largest_exact_unit() {
    let cases = [
        (Duration::from_micros(1_500), "1500us"),
        (Duration::from_millis(200), "200ms"),
        (Duration::from_secs(90), "90s"),
        (Duration::from_secs(120), "2min"),
        (Duration::from_secs(7_200), "2h"),
    ];
    for (limit, expected) in cases {
        let mut d = fifo(10);
        d.limit_rttime = Some(limit);
        let text = render_dropin(&d, "x");
        assert!(
            text.contains(&format!("\nLimitRTTIME={expected}\n")),
            "{limit:?}: {text}"
        );
    }
}

#[test]
fn a_command_line_cannot_break_out_of_the_header_comment() {
    let text = render_dropin(&fifo(10), "rtlab tune systemd x\n[Service]\nUser=evil");
    assert!(!text.contains("\nUser=evil"), "{text}");
    assert_eq!(text.lines().filter(|l| *l == "[Service]").count(), 1);
}

#[test]
fn exec_arguments_are_quoted_by_systemds_rules() {
    let cases = [
        ("/etc/rtlab/rules.toml", "/etc/rtlab/rules.toml"),
        ("/srv/my rules.toml", "\"/srv/my rules.toml\""),
        ("/srv/100%.toml", "/srv/100%%.toml"),
        ("/srv/$HOME.toml", "/srv/$$HOME.toml"),
        ("/srv/a\"b", "\"/srv/a\\\"b\""),
        ("/srv/a\\b", "\"/srv/a\\\\b\""),
        ("/srv/it's", "\"/srv/it's\""),
        ("/srv/a\nb", "\"/srv/a\\nb\""),
        ("", "\"\""),
    ];
    for (arg, expected) in cases {
        assert_eq!(quote_exec_arg(arg), expected, "{arg:?}");
    }
}

#[test]
fn watch_unit_runs_rtlab_tune_watch_with_the_rules() {
    let text = render_watch_unit(
        Path::new("/usr/local/bin/rtlab"),
        Some(Path::new("/etc/rtlab/my rules.toml")),
        "rtlab tune systemd --watch-unit --rules /etc/rtlab/my rules.toml",
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "ExecStart=/usr/local/bin/rtlab tune watch --rules \"/etc/rtlab/my rules.toml\"",
        "Restart=on-failure",
        "After=multi-user.target",
        "WantedBy=multi-user.target",
        "CapabilityBoundingSet=CAP_SYS_NICE CAP_NET_ADMIN CAP_SYS_PTRACE",
        "AmbientCapabilities=CAP_SYS_NICE CAP_NET_ADMIN CAP_SYS_PTRACE",
        "RestrictAddressFamilies=AF_UNIX AF_NETLINK",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in\n{text}");
    }
    // Its own scheduling stays at the default, and nothing forbids it to
    // set real-time policies on others.
    for absent in [
        "CPUSchedulingPolicy=",
        "Nice=",
        "RestrictRealtime=",
        "ProtectProc=",
    ] {
        assert!(
            !lines.iter().any(|l| l.starts_with(absent)),
            "{absent} set in\n{text}"
        );
    }
    let no_rules = render_watch_unit(Path::new("/opt/rt lab/rtlab"), None, "x").unwrap();
    assert!(
        no_rules
            .lines()
            .any(|l| l == "ExecStart=\"/opt/rt lab/rtlab\" tune watch"),
        "{no_rules}"
    );
}

#[test]
fn watch_unit_refuses_paths_systemd_cannot_run() {
    let rules = Path::new("/etc/rtlab/rules.toml");
    let cases: [(&Path, Option<&Path>, &str); 4] = [
        (Path::new("rtlab"), Some(rules), "relative"),
        (
            Path::new("/usr/bin/rtlab"),
            Some(Path::new("rules.toml")),
            "relative",
        ),
        (Path::new("/opt/a\"b/rtlab"), Some(rules), "'\"'"),
        (Path::new("/opt/a\\b/rtlab"), Some(rules), "'\\'"),
    ];
    for (exe, rules, reason) in cases {
        let err = render_watch_unit(exe, rules, "x").unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, SystemdError::ExecPath { .. }) && text.contains(reason),
            "{exe:?} {rules:?}: {text}"
        );
    }
}

// ---------------------------------------------------------------- systemd-analyze verify

/// Whether systemd-analyze can run here; prints why a test skips if not.
fn have_systemd_analyze(test: &str) -> bool {
    match Command::new("systemd-analyze").arg("--version").output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "SKIP {test}: systemd-analyze --version failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            false
        }
        Err(e) => {
            eprintln!("SKIP {test}: systemd-analyze is not available: {e}");
            false
        }
    }
}

fn write_service(unit_dir: &Path, name: &str) {
    fs::write(
        unit_dir.join(name),
        "[Unit]\nDescription=rtlab test service\n\n[Service]\nExecStart=/bin/sleep 1000\n",
    )
    .unwrap();
}

fn write_dropin(unit_dir: &Path, unit: &str, text: &str) -> PathBuf {
    let path = dropin_path(unit_dir, unit);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn full_dropin() -> DropIn {
    DropIn {
        policy: Policy::Fifo,
        priority: 80,
        affinity: Some(CpuSet::parse("1-3").unwrap()),
        reset_on_fork: true,
        limit_rtprio: Some(85),
        limit_rttime: Some(Duration::from_millis(200)),
        memlock_infinity: true,
    }
}

fn messages(v: &Verification) -> Vec<String> {
    match v {
        Verification::Failed { messages, .. } => messages.clone(),
        other => panic!("expected a failed verification, got {other:?}"),
    }
}

#[test]
fn verify_passes_a_good_drop_in_and_reports_a_broken_one() {
    if !have_systemd_analyze("verify_passes_a_good_drop_in_and_reports_a_broken_one") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit_dir = dir.path();
    let unit = unit_name("rtlab-test-alarm").unwrap();
    write_service(unit_dir, &unit);

    for d in [full_dropin(), DropIn::new(Policy::Rr, 1)] {
        write_dropin(
            unit_dir,
            &unit,
            &render_dropin(&d, "rtlab tune systemd ..."),
        );
        let v = verify(unit_dir, &unit).unwrap();
        assert!(v.passed(), "{d:?}: {v}");
    }
    // The command shown for rerunning by hand names the search path used.
    let Verification::Passed { command, .. } = verify(unit_dir, &unit).unwrap() else {
        unreachable!("passed above")
    };
    assert!(
        command.contains(&format!("SYSTEMD_UNIT_PATH={}:", unit_dir.display()))
            && command.ends_with(&format!("verify --man=no --recursive-errors=no {unit}")),
        "{command}"
    );

    // The same unit with a broken drop-in beside it: the verifier must have
    // read the drop-in to fail.
    let broken = render_dropin(&full_dropin(), "x")
        .replace("CPUSchedulingPriority=80", "CPUSchedulingPriority=abc");
    let path = write_dropin(unit_dir, &unit, &broken);
    let v = verify(unit_dir, &unit).unwrap();
    let msgs = messages(&v);
    let path = path.to_string_lossy();
    assert!(
        msgs.iter()
            .any(|m| m.contains(path.as_ref()) && m.contains("abc")),
        "{msgs:?}"
    );

    let path = write_dropin(
        unit_dir,
        &unit,
        "[Service]\nCPUSchedulingPolicy=fifo\nCPUSchedulingPriorityy=80\n",
    );
    let msgs = messages(&verify(unit_dir, &unit).unwrap());
    assert!(
        msgs.iter()
            .any(|m| m.contains(path.to_string_lossy().as_ref())
                && m.contains("CPUSchedulingPriorityy")),
        "{msgs:?}"
    );
}

#[test]
fn problems_in_files_rtlab_did_not_write_are_notes() {
    if !have_systemd_analyze("problems_in_files_rtlab_did_not_write_are_notes") {
        return;
    }
    // An administrator's unit with a deprecated and an unknown setting:
    // systemd-analyze exits non-zero for it, but that is not the drop-in's
    // fault and must not refuse it.
    let dir = tempfile::tempdir().unwrap();
    let unit_dir = dir.path();
    let unit = "rtlab-test-old.service";
    let unit_file = unit_dir.join(unit);
    fs::write(
        &unit_file,
        "[Service]\nExecStart=/bin/sleep 1000\nMemoryLimit=1G\nFooBar=1\n",
    )
    .unwrap();
    write_dropin(unit_dir, unit, &render_dropin(&fifo(20), "x"));
    match verify(unit_dir, unit).unwrap() {
        Verification::Passed { notes, .. } => {
            let file = unit_file.to_string_lossy();
            assert!(
                notes
                    .iter()
                    .any(|n| n.contains(file.as_ref()) && n.contains("FooBar")),
                "{notes:?}"
            );
        }
        other => panic!("expected passed with notes, got {other}"),
    }
    // The same unit with a broken drop-in: failed, and the messages keep
    // both the drop-in's problem and the notes.
    let path = write_dropin(unit_dir, unit, "[Service]\nCPUSchedulingPolicy=fast\n");
    let msgs = messages(&verify(unit_dir, unit).unwrap());
    assert!(
        msgs.iter()
            .any(|m| m.starts_with(path.to_string_lossy().as_ref()) && m.contains("fast")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("FooBar")), "{msgs:?}");
}

#[test]
fn verify_finds_a_drop_in_for_a_unit_that_lives_elsewhere() {
    // The usual case: the vendor's unit is in /lib/systemd/system and the
    // drop-in in the unit directory. A template instance needs systemd's own
    // lookup (there is no getty@tty1.service file).
    if !have_systemd_analyze("verify_finds_a_drop_in_for_a_unit_that_lives_elsewhere") {
        return;
    }
    let template = ["/lib/systemd/system", "/usr/lib/systemd/system"]
        .iter()
        .map(|d| Path::new(d).join("getty@.service"))
        .find(|p| p.exists());
    if template.is_none() {
        eprintln!("SKIP verify_finds_a_drop_in_for_a_unit_that_lives_elsewhere: no getty@.service installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_name("getty@tty1.service").unwrap();
    write_dropin(dir.path(), &unit, &render_dropin(&fifo(20), "x"));
    let v = verify(dir.path(), &unit).unwrap();
    assert!(v.passed(), "{v}");

    let path = write_dropin(
        dir.path(),
        &unit,
        "[Service]\nCPUSchedulingPolicy=sometimes\n",
    );
    let msgs = messages(&verify(dir.path(), &unit).unwrap());
    assert!(
        msgs.iter()
            .any(|m| m.contains(path.to_string_lossy().as_ref()) && m.contains("sometimes")),
        "{msgs:?}"
    );
}

#[test]
fn verify_reports_a_unit_that_does_not_exist() {
    if !have_systemd_analyze("verify_reports_a_unit_that_does_not_exist") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = "rtlab-test-no-such-unit-7f3a.service";
    write_dropin(dir.path(), unit, &render_dropin(&fifo(20), "x"));
    let msgs = messages(&verify(dir.path(), unit).unwrap());
    assert!(msgs.iter().any(|m| m.contains(unit)), "{msgs:?}");
}

#[test]
fn verify_is_skipped_without_systemd_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("no-systemd-analyze");
    match verify_with(&program, dir.path(), "foo.service").unwrap() {
        Verification::Skipped { reason } => {
            assert!(
                reason.contains(program.to_string_lossy().as_ref()) && reason.contains("not"),
                "{reason}"
            );
        }
        other => panic!("expected skipped, got {other:?}"),
    }
    // A bad unit name is bad input, not a skipped check.
    assert!(matches!(
        verify_with(&program, dir.path(), "../x"),
        Err(SystemdError::UnitName { .. })
    ));
}

/// An executable copy of /bin/true at `path`.
fn fake_rtlab(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::copy("/bin/true", path).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn watch_unit_verifies_and_its_quoting_reaches_the_executable() {
    if !have_systemd_analyze("watch_unit_verifies_and_its_quoting_reaches_the_executable") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit_dir = dir.path().join("units");
    fs::create_dir(&unit_dir).unwrap();
    let rules = dir.path().join("rules dir/100% $HOME.toml");

    // A plain path, then one that needs quoting and %-escaping: systemd-analyze
    // checks that ExecStart's program exists, so a wrong quote would fail.
    for exe in [
        PathBuf::from("/bin/true"),
        dir.path().join("bin with space/rt%lab$x"),
    ] {
        if !exe.exists() {
            fake_rtlab(&exe);
        }
        let text = render_watch_unit(&exe, Some(&rules), "x").unwrap();
        fs::write(watch_unit_path(&unit_dir), text).unwrap();
        let v = verify(&unit_dir, WATCH_UNIT_NAME).unwrap();
        assert!(v.passed(), "{exe:?}: {v}");
    }

    // The program gone: the verifier reports it.
    let missing = dir.path().join("gone/rtlab");
    let text = render_watch_unit(&missing, Some(&rules), "x").unwrap();
    fs::write(watch_unit_path(&unit_dir), text).unwrap();
    let msgs = messages(&verify(&unit_dir, WATCH_UNIT_NAME).unwrap());
    assert!(
        msgs.iter()
            .any(|m| m.contains(missing.to_string_lossy().as_ref())),
        "{msgs:?}"
    );
}

// ---------------------------------------------------------------- daemon-reload

#[test]
fn reload_is_skipped_when_systemd_is_not_pid_1() {
    if Path::new(SYSTEMD_BOOTED_MARKER).exists() {
        eprintln!("SKIP reload() on this host: systemd runs as PID 1 here (tested below with a marker that does not exist)");
    } else {
        match reload() {
            ReloadOutcome::Skipped { reason } => {
                assert!(reason.contains("not running"), "{reason}")
            }
            other => panic!("expected skipped, got {other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("run/systemd/system");
    // systemctl would fail if it were run: proves it is not.
    match reload_with(&marker, Path::new("/bin/false")) {
        ReloadOutcome::Skipped { reason } => {
            assert!(
                reason.contains(marker.to_string_lossy().as_ref()),
                "{reason}"
            )
        }
        other => panic!("expected skipped, got {other:?}"),
    }
}

#[test]
fn reload_runs_systemctl_when_systemd_runs_and_reports_its_failure() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path();
    assert_eq!(
        reload_with(marker, Path::new("/bin/true")),
        ReloadOutcome::Reloaded
    );
    match reload_with(marker, Path::new("/bin/false")) {
        ReloadOutcome::Failed { message } => {
            assert!(
                message.contains("/bin/false") && message.contains("status 1"),
                "{message}"
            )
        }
        other => panic!("expected failed, got {other:?}"),
    }
    let missing = dir.path().join("no-systemctl");
    match reload_with(marker, &missing) {
        ReloadOutcome::Failed { message } => assert!(
            message.contains(missing.to_string_lossy().as_ref()),
            "{message}"
        ),
        other => panic!("expected failed, got {other:?}"),
    }
}

// ------------------------------------------------------ the watch binary

/// Issue 16 item 16: the watch unit runs its binary as root with
/// PrivateTmp=yes, so one under /tmp, or one another user may change, is
/// refused with how to install rtlab.
#[test]
fn watch_unit_refuses_a_binary_under_tmp_or_that_others_can_change() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to own and chown the test binaries");
        return;
    }
    let make = |dir: &Path| -> PathBuf {
        let exe = dir.join("rtlab");
        fs::write(&exe, "#!/bin/true\n").unwrap();
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        exe
    };
    // Root's, mode 0700 dir, but under /tmp.
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    let e = check_watch_binary(&make(tmp.path()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("under /tmp") && e.contains("PrivateTmp") && e.contains("cargo install"),
        "{e}"
    );
    // /dev/shm is open to all too, but PrivateTmp= leaves it shared: the
    // reason says what is true of it.
    if Path::new("/dev/shm").is_dir() {
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let e = check_watch_binary(&make(shm.path()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("under /dev/shm")
                && !e.contains("PrivateTmp")
                && e.contains("cargo install"),
            "{e}"
        );
    }
    // Outside /tmp, but in a directory another user owns. The base is
    // root's alone: /run, since the checkout itself may lie under /tmp.
    let base = tempfile::Builder::new()
        .prefix("rtlab-test-")
        .tempdir_in("/run")
        .unwrap();
    fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = base.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    let exe = make(&theirs);
    check_watch_binary(&exe).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
    let e = check_watch_binary(&exe).unwrap_err().to_string();
    assert!(
        e.contains("owner uid 65534") && e.contains("cargo install"),
        "{e}"
    );
    // A file others may write.
    std::os::unix::fs::chown(&theirs, Some(0), None).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o777)).unwrap();
    let e = check_watch_binary(&exe).unwrap_err().to_string();
    assert!(e.contains("writable by everyone"), "{e}");
    // This test's own binary is where cargo builds it: root's alone,
    // unless the checkout lies under a shared temporary directory.
    let own = std::env::current_exe().unwrap();
    if ["/tmp/", "/var/tmp/", "/dev/shm/"]
        .iter()
        .any(|d| own.starts_with(d))
    {
        assert!(check_watch_binary(&own).is_err());
    } else {
        check_watch_binary(&own).unwrap();
    }
}
