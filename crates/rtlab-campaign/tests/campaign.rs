//! Campaign files: the presets, every class of error (each must name the
//! line and the field), excludes, the order of the plan and its table.

use rtlab_campaign::*;
use rtlab_core::cpuset::{CpuSelection, CpuSet};
use rtlab_core::sched::Policy;

/// Stands in for rtlab-load's spec check: the load's name (before `:`)
/// must be one of rtlab-load's.
fn check_load(spec: &str) -> Result<(), String> {
    const LOADS: &[&str] = &[
        "cpu", "vm", "io", "fswalk", "net", "timers", "msg", "procfs", "dohell", "cmd",
    ];
    let name = spec.split_once(':').map_or(spec, |(name, _)| name);
    if LOADS.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "unknown load '{name}' (loads: {})",
            LOADS.join(", ")
        ))
    }
}

fn parse_ok(text: &str) -> Campaign {
    parse(text, "c.toml", &check_load).unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(text: &str) -> CampaignError {
    match parse(text, "c.toml", &check_load) {
        Ok(c) => panic!("parsed: {c:?}"),
        Err(e) => e,
    }
}

/// 1-based line of the first line containing `marker`.
fn line_of(text: &str, marker: &str) -> usize {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker:?}"))
        + 1
}

/// The error is at the line holding `marker`, names `field` and says `says`.
fn assert_error(text: &str, marker: &str, field: &str, says: &str) {
    let err = parse_err(text);
    let line = line_of(text, marker);
    let shown = err.to_string();
    assert_eq!(err.line(), Some(line), "wrong line in: {shown}");
    assert_eq!(err.field.as_deref(), Some(field), "wrong field in: {shown}");
    assert!(
        shown.starts_with(&format!("c.toml:{line}:")),
        "no file:line in: {shown}"
    );
    assert!(
        shown.contains(&format!("field `{field}`")),
        "field not shown in: {shown}"
    );
    assert!(shown.contains(says), "{says:?} not in: {shown}");
}

const HEAD: &str = r#"name = "t"
duration = "2s"
"#;

const PROBE: &str = r#"
[[probe]]
kind = "timer"
"#;

const LOADS: &str = r#"
[[load]]
name = "idle"
run = []

[[load]]
name = "vm"
run = ["vm:workers=2,bytes=64M"]
"#;

const CONFIGURATIONS: &str = r#"
[[configuration]]
name = "promoted"
policy = "fifo"
priority = 80

[[configuration]]
name = "not-promoted"
policy = "other"
"#;

fn file(parts: &[&str]) -> String {
    parts.concat()
}

fn valid() -> String {
    file(&[HEAD, PROBE, LOADS, CONFIGURATIONS])
}

// ---------------------------------------------------------------- presets

#[test]
fn every_preset_parses_and_plans() {
    let expected_runs = [
        ("quick", 8),
        ("hallberg2017", 9),
        ("hallberg2017-net", 8),
        ("romero", 5),
        ("straumann2001", 2),
        ("srinivasan1998", 16),
    ];
    assert_eq!(PRESETS.len(), expected_runs.len());
    for (name, runs) in expected_runs {
        let campaign = read(name, &check_load).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(campaign.name, name);
        assert_eq!(campaign.origin, format!("preset {name}"));
        let plan = plan(campaign).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.runs.len(), runs, "{name}");
        assert!(plan.warnings.is_empty(), "{name}: {:?}", plan.warnings);
    }
}

#[test]
fn preset_files_under_examples_are_the_built_in_ones() {
    for (name, text) in PRESETS {
        let path = format!("{}/../../examples/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), *text, "{path}");
        let from_file = read(&path, &check_load).unwrap();
        let built_in = read(name, &check_load).unwrap();
        assert_eq!(from_file.origin, path);
        assert_eq!(
            Campaign {
                origin: String::new(),
                ..from_file
            },
            Campaign {
                origin: String::new(),
                ..built_in
            }
        );
    }
}

#[test]
fn quick_takes_about_a_minute_and_compares_promotion() {
    let plan = plan(read("quick", &check_load).unwrap()).unwrap();
    let eta_s = plan.eta_ns() as f64 / 1e9;
    assert!((50.0..=75.0).contains(&eta_s), "quick ETA {eta_s} s");
    let loads: Vec<&str> = plan
        .campaign
        .loads
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(loads, ["idle", "cpu", "vm", "io"]);
    // `rtlab quick` compares a promoted and a not-promoted configuration
    // under every load.
    for load in &loads {
        let policies: Vec<Policy> = plan
            .runs
            .iter()
            .filter(|r| r.load.name == *load)
            .map(|r| r.configuration.policy)
            .collect();
        assert_eq!(policies, [Policy::Fifo, Policy::Other], "{load}");
    }
    assert!(plan.runs.iter().all(
        |r| r.probe.settings_as::<TimerSettings>().unwrap().interval_ns == 1_000_000
            && r.probe.settings_as::<TimerSettings>().unwrap().cpus == CpuSelection::All
    ));
}

#[test]
fn hallberg2017_mirrors_the_papers_cyclictest_and_loads() {
    let plan = plan(read("hallberg2017", &check_load).unwrap()).unwrap();
    let c = &plan.campaign;
    // cyclictest -p 30 -t -n -l 100000 -H 1000: 100 000 loops of 1 ms.
    assert_eq!(c.duration_ns, 100_000 * 1_000_000);
    let timer = &c.probes[0].settings_as::<TimerSettings>().unwrap();
    assert_eq!(timer.interval_ns, 1_000_000);
    assert_eq!(timer.hist_max_ns, 1_000_000);
    assert_eq!(timer.mode, WaitMode::Abs);
    let promoted = &c.configurations[0];
    assert_eq!(
        (promoted.policy, promoted.priority),
        (Policy::Fifo, Some(30))
    );
    assert_eq!(c.configurations[1].policy, Policy::Other);
    let specs: Vec<String> = c.loads.iter().map(|l| l.describe()).collect();
    assert_eq!(
        specs,
        [
            "-",
            "dohell",
            "vm:workers=40,bytes=256M",
            "cpu:workers=100",
            "dohell:no-stat"
        ]
    );
    // The modified dohell (§5.1) was measured promoted only.
    let no_stat: Vec<&str> = plan
        .runs
        .iter()
        .filter(|r| r.load.name == "dohell-no-stat")
        .map(|r| r.configuration.name.as_str())
        .collect();
    assert_eq!(no_stat, ["promoted"]);
}

#[test]
fn romero_has_the_papers_five_conditions() {
    let c = read("romero", &check_load).unwrap();
    let loads: Vec<(&str, String)> = c
        .loads
        .iter()
        .map(|l| (l.name.as_str(), l.describe()))
        .collect();
    assert_eq!(
        loads,
        [
            ("idle", "-".to_string()),
            ("cpu", "cpu".to_string()),
            ("interrupt", "timers".to_string()),
            ("disk", "io".to_string()),
            ("network", "net".to_string()),
        ]
    );
    assert!(c.configurations.iter().all(|c| c.policy.is_realtime()));
}

#[test]
fn read_names_the_presets_when_the_source_is_neither() {
    let err = read("no-such-campaign.toml", &check_load).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no-such-campaign.toml: no such file, and not a preset (presets: quick, hallberg2017, hallberg2017-net, romero, straumann2001, srinivasan1998)"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = read(dir.path().to_str().unwrap(), &check_load).unwrap_err();
    assert!(err.to_string().contains("cannot read it"), "{err}");
}

#[test]
fn read_reads_a_file_and_reports_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, valid().replace("priority = 80", "priority = 800")).unwrap();
    let source = path.to_str().unwrap();
    let err = read(source, &check_load).unwrap_err();
    let line = line_of(&valid(), "priority = 80");
    assert_eq!(
        err.to_string(),
        format!(
            "{source}:{line}:12: field `configuration[0].priority`: priority 800 is out of range 1-99"
        )
    );
    std::fs::write(&path, valid()).unwrap();
    assert_eq!(read(source, &check_load).unwrap().origin, source);
}

// ---------------------------------------------------------------- defaults

#[test]
fn defaults_are_filled_in() {
    let text = file(&[
        HEAD,
        PROBE,
        LOADS,
        "\n[[configuration]]\nname = \"default\"\n",
        "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\n",
    ]);
    let c = parse_ok(&text);
    assert_eq!(c.repeat, 1);
    assert_eq!(c.cooldown_ns, 0);
    assert_eq!(c.description, None);
    let p = &c.probes[0];
    assert_eq!(p.name, "timer");
    assert_eq!(p.kind.as_str(), "timer");
    assert_eq!(
        p.settings_as::<TimerSettings>(),
        Some(&TimerSettings::default())
    );
    assert_eq!(
        p.settings_as::<TimerSettings>().unwrap().cpus,
        CpuSelection::All
    );
    assert_eq!(
        p.settings_as::<TimerSettings>().unwrap().interval_ns,
        1_000_000
    );
    assert_eq!(p.settings_as::<TimerSettings>().unwrap().distance_ns, 0);
    assert_eq!(
        p.settings_as::<TimerSettings>().unwrap().hist_max_ns,
        1_000_000
    );
    // As `rtlab measure timer`: fifo 90 with /dev/cpu_dma_latency held.
    assert_eq!(
        c.configurations[0],
        Configuration::new("default", Policy::Fifo)
    );
    assert_eq!(c.configurations[0].priority, Some(90));
    assert!(c.configurations[0].dma_latency);
    assert_eq!(c.configurations[1].priority, None);
    assert_eq!(c.configurations[1].dl_runtime_ns, Some(100_000));
}

#[test]
fn every_key_is_read() {
    let text = r#"
name = "all-keys"
description = "every key"
duration = "1.5s"
repeat = 3
cooldown = "250ms"

[[probe]]
kind = "timer"
name = "fast"
cpus = "0,2-3"
interval = "200us"
distance = "50us"
mode = "timerfd"
hist_max = "500us"

[[load]]
name = "both"
run = ["vm:workers=2,bytes=64M", "io"]

[[configuration]]
name = "rr"
policy = "rr"
priority = 42
dma_latency = false
sysctl = ["kernel.timer_migration=0", "kernel.sched_rt_runtime_us=-1"]

[[configuration]]
name = "dl"
policy = "deadline"
dl_runtime = "50us"

[[exclude]]
probe = "fast"
load = "both"
configuration = "dl"
"#;
    let c = parse_ok(text);
    assert_eq!(c.name, "all-keys");
    assert_eq!(c.description.as_deref(), Some("every key"));
    assert_eq!(c.duration_ns, 1_500_000_000);
    assert_eq!(c.repeat, 3);
    assert_eq!(c.cooldown_ns, 250_000_000);
    assert_eq!(
        c.probes[0],
        ProbeSpec {
            name: "fast".into(),
            kind: "timer".parse().unwrap(),
            settings: Box::new(TimerSettings {
                cpus: CpuSelection::List(CpuSet::parse("0,2,3").unwrap()),
                interval_ns: 200_000,
                distance_ns: 50_000,
                mode: WaitMode::Timerfd,
                hist_max_ns: 500_000,
                ..TimerSettings::default()
            }),
        }
    );
    assert_eq!(c.loads[0].run, ["vm:workers=2,bytes=64M", "io"]);
    assert_eq!(
        c.configurations[0],
        Configuration {
            name: "rr".into(),
            policy: Policy::Rr,
            priority: Some(42),
            dl_runtime_ns: None,
            dma_latency: false,
            sysctl: vec![
                "kernel.timer_migration=0".into(),
                "kernel.sched_rt_runtime_us=-1".into()
            ],
        }
    );
    assert_eq!(c.configurations[1].dl_runtime_ns, Some(50_000));
    assert_eq!(c.excludes.len(), 1);
    assert_eq!(c.excludes[0].configuration.as_deref(), Some("dl"));
    assert_eq!(
        c.excludes[0].position.map(|p| p.line),
        Some(line_of(text, "[[exclude]]"))
    );
    // 1 probe × 1 load × 2 configurations × 3 repeats, minus the dl cell.
    let plan = plan(c).unwrap();
    assert_eq!(plan.runs.len(), 3);
    assert!(plan.runs.iter().all(|r| r.configuration.name == "rr"));
    let sched = plan.runs[0].sched_params();
    assert_eq!((sched.policy, sched.priority), (Policy::Rr, 42));
}

#[test]
fn a_deadline_configuration_takes_the_probes_interval_as_period() {
    let text = file(&[
        HEAD,
        PROBE,
        LOADS,
        "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\ndl_runtime = \"200us\"\n",
    ]);
    let plan = plan(parse_ok(&text)).unwrap();
    let sched = plan.runs[0].sched_params();
    assert_eq!(sched.policy, Policy::Deadline);
    let dl = sched.deadline.unwrap();
    assert_eq!(
        (dl.runtime_ns, dl.deadline_ns, dl.period_ns),
        (200_000, 1_000_000, 1_000_000)
    );
}

// ---------------------------------------------------------------- errors

#[test]
fn toml_syntax_errors_keep_tomls_line() {
    let text = "name = \"t\"\nduration = \"2s\nrepeat = 1\n";
    let err = parse_err(text);
    assert_eq!(err.line(), Some(2), "{err}");
    assert_eq!(err.field, None);
    assert!(err.to_string().starts_with("c.toml:2:"), "{err}");
    assert!(err.to_string().contains("TOML syntax"), "{err}");

    let text = "name = \"t\"\n\nname = \"u\"\n";
    let err = parse_err(text);
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(err.to_string().contains("duplicate key"), "{err}");
}

#[test]
fn unknown_keys_are_rejected_with_their_line() {
    let text = file(&[HEAD, "repeats = 2\n", PROBE, LOADS, CONFIGURATIONS]);
    assert_error(&text, "repeats", "repeats", "unknown key `repeats`");
    assert_error(
        &text,
        "repeats",
        "repeats",
        "known keys here: name, description",
    );

    let text = file(&[HEAD, PROBE, "priority = 99\n", LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "priority = 99",
        "probe[0].priority",
        "unknown key `priority`",
    );

    let text = file(&[HEAD, PROBE, LOADS, "spec = \"cpu\"\n", CONFIGURATIONS]);
    assert_error(&text, "spec =", "load[1].spec", "unknown key `spec`");

    let text = file(&[HEAD, PROBE, LOADS, CONFIGURATIONS, "dma = false\n"]);
    assert_error(
        &text,
        "dma = false",
        "configuration[1].dma",
        "unknown key `dma`",
    );

    let text = file(&[
        &valid(),
        "\n[[exclude]]\nload = \"idle\"\nconfig = \"promoted\"\n",
    ]);
    assert_error(
        &text,
        "config = ",
        "exclude[0].config",
        "unknown key `config`",
    );

    // A misspelt section is an unknown key too.
    let text = file(&[&valid(), "\n[[loads]]\nname = \"x\"\n"]);
    assert_error(&text, "[[loads]]", "loads", "unknown key `loads`");

    // Keys inside an inline table are checked the same way.
    let text = file(&[
        HEAD,
        "load = [{ name = \"idle\", run = [], x = 1 }]\n",
        PROBE,
        CONFIGURATIONS,
    ]);
    assert_error(&text, "load = [", "load[0].x", "unknown key `x`");
}

#[test]
fn durations_need_a_unit_and_a_valid_number() {
    let text = valid().replace("duration = \"2s\"", "duration = 2");
    assert_error(
        &text,
        "duration = 2",
        "duration",
        "a duration is a string with its unit",
    );

    let text = valid().replace("duration = \"2s\"", "duration = \"2 parsecs\"");
    assert_error(
        &text,
        "duration =",
        "duration",
        "invalid duration '2 parsecs'",
    );

    let text = valid().replace("duration = \"2s\"", "duration = \"0s\"");
    assert_error(&text, "duration =", "duration", "must be longer than 0");

    let text = file(&[HEAD, "cooldown = true\n", PROBE, LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "cooldown",
        "cooldown",
        "expected a duration such as \"6s\", found boolean",
    );

    let text = file(&[HEAD, PROBE, "interval = \"1\"\n", LOADS, CONFIGURATIONS]);
    assert_error(&text, "interval", "probe[0].interval", "a unit is required");

    let text = file(&[HEAD, PROBE, "hist_max = \"500ns\"\n", LOADS, CONFIGURATIONS]);
    assert_error(&text, "hist_max", "probe[0].hist_max", "1 µs bins");

    // A run shorter than the probe's period measures nothing.
    let text = file(&[HEAD, PROBE, "interval = \"3s\"\n", LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "duration =",
        "duration",
        "shorter than the interval of probe `timer`",
    );
}

#[test]
fn wrong_types_name_what_was_expected() {
    let text = file(&[HEAD, "repeat = \"2\"\n", PROBE, LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "repeat",
        "repeat",
        "expected an integer, found string",
    );

    let text = file(&[HEAD, "repeat = 0\n", PROBE, LOADS, CONFIGURATIONS]);
    assert_error(&text, "repeat", "repeat", "0 is not a count of runs");

    let text = valid().replace("name = \"t\"", "name = 7");
    assert_error(
        &text,
        "name = 7",
        "name",
        "expected a string, found integer",
    );

    let text = valid().replace("run = []", "run = \"cpu\"");
    assert_error(
        &text,
        "run = \"cpu\"",
        "load[0].run",
        "expected an array of strings",
    );

    let text = valid().replace("run = []", "run = [\"cpu\", 3]");
    assert_error(
        &text,
        "run = [\"cpu\", 3]",
        "load[0].run[1]",
        "expected a string, found integer",
    );

    let text = file(&[&valid(), "dma_latency = \"yes\"\n"]);
    assert_error(
        &text,
        "dma_latency",
        "configuration[1].dma_latency",
        "expected true or false",
    );

    let text = valid().replace("priority = 80", "priority = \"80\"");
    assert_error(
        &text,
        "priority = \"80\"",
        "configuration[0].priority",
        "expected an integer",
    );
}

#[test]
fn policies_and_priorities_are_checked() {
    let text = valid().replace("policy = \"other\"", "policy = \"realtime\"");
    assert_error(
        &text,
        "realtime",
        "configuration[1].policy",
        "unknown policy 'realtime'",
    );

    let text = file(&[&valid(), "priority = 3\n"]);
    assert_error(
        &text,
        "priority = 3",
        "configuration[1].priority",
        "priority applies only to fifo or rr (policy other)",
    );

    for bad in ["0", "100", "-5"] {
        let text = valid().replace("priority = 80", &format!("priority = {bad}"));
        assert_error(
            &text,
            &format!("priority = {bad}"),
            "configuration[0].priority",
            &format!("priority {bad} is out of range 1-99"),
        );
    }

    let text = valid().replace("priority = 80", "dl_runtime = \"100us\"");
    assert_error(
        &text,
        "dl_runtime",
        "configuration[0].dl_runtime",
        "dl_runtime applies only to deadline (policy fifo)",
    );

    let text = file(&[
        HEAD,
        PROBE,
        LOADS,
        "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\ndl_runtime = \"2ms\"\n",
    ]);
    assert_error(
        &text,
        "dl_runtime",
        "configuration[0].dl_runtime",
        "deadline runtime 2ms is longer than the period 1ms of probe `timer`",
    );
}

#[test]
fn sysctls_must_be_key_value() {
    for bad in [
        "kernel.timer_migration",
        "=0",
        "kernel timer=0",
        "kernel.x=",
    ] {
        let text = file(&[&valid(), &format!("sysctl = [\"kernel.a=1\", \"{bad}\"]\n")]);
        assert_error(
            &text,
            "sysctl =",
            "configuration[1].sysctl[1]",
            bad.split('=').next().unwrap(),
        );
    }
}

#[test]
fn a_sysctl_given_twice_with_two_values_is_refused() {
    // It was accepted, and the run had one of the two.
    let text = file(&[
        &valid(),
        "sysctl = [\"kernel.timer_migration=0\", \"kernel/timer_migration=1\"]\n",
    ]);
    assert_error(
        &text,
        "sysctl =",
        "configuration[1].sysctl[1]",
        "kernel.timer_migration is given twice, as `kernel.timer_migration=0` and as \
         `kernel/timer_migration=1`: give it once",
    );
    // The same value twice is only redundant.
    let text = file(&[
        &valid(),
        "sysctl = [\"kernel.timer_migration=0\", \"kernel.timer_migration=0\"]\n",
    ]);
    parse(&text, "c.toml", &check_load).unwrap();
}

#[test]
fn probes_are_checked() {
    let text = valid().replace("kind = \"timer\"", "kind = \"disk\"");
    assert_error(
        &text,
        "kind = \"disk\"",
        "probe[0].kind",
        "unknown probe kind `disk` (known kinds: timer, switch, noise, net, periodic)",
    );

    let text = file(&[HEAD, PROBE, "cpus = \"0-\"\n", LOADS, CONFIGURATIONS]);
    assert_error(&text, "cpus", "probe[0].cpus", "invalid CPU list '0-'");

    let text = file(&[HEAD, PROBE, "mode = \"busy\"\n", LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "mode",
        "probe[0].mode",
        "unknown mode `busy` (expected abs, rel, timerfd or posix)",
    );

    let text = file(&[HEAD, "\n[[probe]]\nname = \"x\"\n", LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "[[probe]]",
        "probe[0].kind",
        "missing: `probe[0]` needs `kind`",
    );
}

#[test]
fn load_specs_are_checked_by_the_callers_check() {
    let text = valid().replace(
        "run = [\"vm:workers=2,bytes=64M\"]",
        "run = [\"io\", \"stress:vm=40\"]",
    );
    assert_error(
        &text,
        "stress:vm=40",
        "load[1].run[1]",
        "unknown load 'stress' (loads: cpu, vm",
    );

    let text = valid().replace("run = []", "run = [\" \"]");
    assert_error(&text, "run = [\" \"]", "load[0].run[0]", "empty load spec");
}

#[test]
fn names_are_checked_and_unique() {
    let text = file(&[
        HEAD,
        PROBE,
        LOADS,
        "\n[[load]]\nname = \"vm\" # again\nrun = [\"vm\"]\n",
        CONFIGURATIONS,
    ]);
    // The second [[load]] header: the first named `vm`.
    let first = line_of(&text, "name = \"vm\"") - 1;
    assert_error(
        &text,
        "# again",
        "load[2].name",
        &format!("two loads are named `vm` (load[1] at line {first})"),
    );
}

#[test]
fn duplicate_names_are_errors_in_every_section() {
    let text = file(&[&valid(), "\n[[configuration]]\nname = \"promoted\"\n"]);
    let err = parse_err(&text);
    assert_eq!(err.field.as_deref(), Some("configuration[2].name"));
    assert_eq!(err.line(), Some(text.lines().count()), "{err}");
    assert!(
        err.to_string()
            .contains("two configurations are named `promoted`"),
        "{err}"
    );

    // Two probes of one kind need names.
    let text = file(&[
        HEAD,
        PROBE,
        PROBE,
        "interval = \"100us\"\n",
        LOADS,
        CONFIGURATIONS,
    ]);
    let err = parse_err(&text);
    assert_eq!(err.field.as_deref(), Some("probe[1].name"), "{err}");
    let second = text.rfind("[[probe]]").unwrap();
    let line = text[..second].lines().count() + 1;
    assert_eq!(err.line(), Some(line), "{err}"); // the second [[probe]] header
    assert!(
        err.to_string().contains("give each probe its own `name`"),
        "{err}"
    );

    let text = valid().replace("name = \"idle\"", "name = \"no load\"");
    assert_error(&text, "no load", "load[0].name", "a name may hold letters");
    let text = valid().replace("name = \"idle\"", "name = \"\"");
    assert_error(
        &text,
        "name = \"\"",
        "load[0].name",
        "a name cannot be empty",
    );
}

#[test]
fn sections_are_required_and_must_be_arrays_of_tables() {
    let text = file(&[HEAD, PROBE, CONFIGURATIONS]);
    let err = parse_err(&text);
    assert_eq!(err.line(), Some(1));
    assert_eq!(err.field.as_deref(), Some("load"));
    assert!(err.to_string().contains("at least one [[load]]"), "{err}");

    let text = file(&[HEAD, PROBE, LOADS, CONFIGURATIONS]).replace("name = \"t\"\n", "");
    let err = parse_err(&text);
    assert_eq!((err.line(), err.field.as_deref()), (Some(1), Some("name")));

    let text = file(&[
        HEAD,
        PROBE,
        "\n[load]\nname = \"idle\"\nrun = []\n",
        CONFIGURATIONS,
    ]);
    assert_error(
        &text,
        "[load]",
        "load",
        "expected [[load]] (an array of tables), found table",
    );

    let text = file(&[HEAD, "load = []\n", PROBE, CONFIGURATIONS]);
    assert_error(&text, "load = []", "load", "at least one [[load]]");

    let text = file(&[HEAD, "probe = [\"timer\"]\n", LOADS, CONFIGURATIONS]);
    assert_error(
        &text,
        "probe = ",
        "probe[0]",
        "expected a table, found string",
    );
}

// ---------------------------------------------------------------- excludes

#[test]
fn an_exclude_removes_the_cells_matching_all_its_keys() {
    let text = file(&[
        &valid(),
        "\n[[exclude]]\nload = \"idle\"\nconfiguration = \"not-promoted\"\n",
    ]);
    let plan = plan(parse_ok(&text)).unwrap();
    let cells: Vec<(&str, &str)> = plan
        .runs
        .iter()
        .map(|r| (r.load.name.as_str(), r.configuration.name.as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("idle", "promoted"),
            ("vm", "promoted"),
            ("vm", "not-promoted")
        ]
    );
    assert!(plan.warnings.is_empty());

    // One key removes a whole row of the matrix.
    let text = file(&[&valid(), "\n[[exclude]]\nconfiguration = \"promoted\"\n"]);
    let plan = rtlab_campaign::plan(parse_ok(&text)).unwrap();
    assert!(plan
        .runs
        .iter()
        .all(|r| r.configuration.name == "not-promoted"));
    assert_eq!(plan.runs.len(), 2);

    let text = file(&[
        &valid(),
        "\n[[exclude]]\nprobe = \"timer\"\nload = \"vm\"\n",
    ]);
    let plan = rtlab_campaign::plan(parse_ok(&text)).unwrap();
    assert!(plan.runs.iter().all(|r| r.load.name == "idle"));
}

#[test]
fn excludes_must_name_existing_entries() {
    let text = file(&[&valid(), "\n[[exclude]]\nload = \"cpu\"\n"]);
    assert_error(
        &text,
        "load = \"cpu\"",
        "exclude[0].load",
        "there is no load named `cpu` (the loads are: idle, vm)",
    );
    let text = file(&[&valid(), "\n[[exclude]]\nprobe = \"noise\"\n"]);
    assert_error(
        &text,
        "probe = \"noise\"",
        "exclude[0].probe",
        "no probe named `noise`",
    );
    let text = file(&[&valid(), "\n[[exclude]]\nconfiguration = \"rt\"\n"]);
    assert_error(
        &text,
        "configuration = \"rt\"",
        "exclude[0].configuration",
        "the configurations are: promoted, not-promoted",
    );
    let text = file(&[&valid(), "\n[[exclude]]\n"]);
    assert_error(
        &text,
        "[[exclude]]",
        "exclude[0]",
        "at least one of probe, load or configuration",
    );
}

#[test]
fn an_exclude_that_removes_nothing_is_a_warning() {
    let text = file(&[
        &valid(),
        "\n[[exclude]]\nload = \"idle\"\n",
        "\n[[exclude]]\nload = \"idle\"\nconfiguration = \"promoted\"\n",
    ]);
    let plan = plan(parse_ok(&text)).unwrap();
    assert_eq!(plan.runs.len(), 2);
    let second = text.rfind("[[exclude]]").unwrap();
    let line = text[..second].lines().count() + 1;
    assert_eq!(
        plan.warnings,
        [format!(
            "c.toml:{line}: exclude[1] (load = \"idle\", configuration = \"promoted\") removes no run that an earlier exclude does not already remove"
        )]
    );
}

#[test]
fn a_plan_without_runs_is_an_error_at_the_excludes() {
    let text = file(&[
        &valid(),
        "\n[[exclude]]\nload = \"idle\"\n\n[[exclude]]\nload = \"vm\"\n",
    ]);
    let err = plan(parse_ok(&text)).unwrap_err();
    assert_eq!(err.line(), Some(line_of(&text, "[[exclude]]")));
    assert_eq!(err.field.as_deref(), Some("exclude"));
    assert!(
        err.to_string()
            .contains("the excludes remove every run (4 of 4)"),
        "{err}"
    );
}

#[test]
fn an_absurd_number_of_runs_is_refused() {
    let text = file(&[HEAD, "repeat = 4000000000\n", PROBE, LOADS, CONFIGURATIONS]);
    assert_error(&text, "repeat", "repeat", "more than 100000 runs");
}

// ---------------------------------------------------------------- order

#[test]
fn runs_go_repeat_then_probe_then_load_then_configuration() {
    let text = file(&[
        HEAD,
        "repeat = 2\n",
        PROBE,
        "name = \"slow\"\n",
        PROBE,
        "name = \"fast\"\ninterval = \"100us\"\n",
        LOADS,
        CONFIGURATIONS,
    ]);
    let plan = plan(parse_ok(&text)).unwrap();
    let order: Vec<String> = plan
        .runs
        .iter()
        .map(|r| {
            format!(
                "{}:{}/{}/{}/{}",
                r.index, r.repeat, r.probe.name, r.load.name, r.configuration.name
            )
        })
        .collect();
    let mut expected = Vec::new();
    for repeat in 1..=2 {
        for probe in ["slow", "fast"] {
            for load in ["idle", "vm"] {
                for configuration in ["promoted", "not-promoted"] {
                    expected.push(format!(
                        "{}:{repeat}/{probe}/{load}/{configuration}",
                        expected.len() + 1
                    ));
                }
            }
        }
    }
    assert_eq!(order, expected);
    assert!(plan.runs.iter().all(|r| r.duration_ns == 2_000_000_000));
}

// ---------------------------------------------------------------- ETA and table

#[test]
fn the_eta_counts_duration_overhead_and_cooldowns() {
    let text = file(&[HEAD, "cooldown = \"3s\"\n", PROBE, LOADS, CONFIGURATIONS]);
    let plan = plan(parse_ok(&text)).unwrap();
    // 4 runs × (2 s + 1 s) + 3 cooldowns × 3 s.
    assert_eq!(plan.eta_ns(), 21_000_000_000);
    // After the first run: 3 runs, each after a cooldown.
    assert_eq!(plan.remaining_ns(1), 18_000_000_000);
    assert_eq!(plan.remaining_ns(4), 0);
    assert_eq!(plan.remaining_ns(99), 0);
    // The shares of the runs add up to the ETA; the last has no cooldown.
    let shares: Vec<u64> = plan.runs.iter().map(|r| plan.eta_of(r)).collect();
    assert_eq!(
        shares,
        [6_000_000_000, 6_000_000_000, 6_000_000_000, 3_000_000_000]
    );
    assert_eq!(shares.iter().sum::<u64>(), plan.eta_ns());
    assert_eq!(format_eta(59_500_000_000), "59.5s");
    assert_eq!(format_eta(917_000_000_000), "15m 17s");
    assert_eq!(format_eta(3_723_400_000_000), "1h 2m 3s");
}

#[test]
fn the_plan_table_lists_every_run_and_the_eta() {
    let text = r#"name = "demo"
description = "A small campaign"
duration = "10s"
repeat = 2
cooldown = "2s"

[[probe]]
kind = "timer"
cpus = "1"

[[load]]
name = "idle"
run = []

[[load]]
name = "vm+io"
run = ["vm:workers=2,bytes=64M", "io"]

[[configuration]]
name = "promoted"
priority = 95
sysctl = ["kernel.timer_migration=0"]

[[configuration]]
name = "not-promoted"
policy = "other"
dma_latency = false

[[exclude]]
load = "idle"
configuration = "not-promoted"
"#;
    let plan = plan(parse(text, "demo.toml", &check_load).unwrap()).unwrap();
    let expected = "\
campaign demo (demo.toml)
  A small campaign
probe timer: every 1ms on CPU 1, mode abs

#  repeat  probe  load   specs                        configuration  scheduling                                duration
1       1  timer  idle   -                            promoted       fifo 95, sysctl kernel.timer_migration=0  10s
2       1  timer  vm+io  vm:workers=2,bytes=64M + io  promoted       fifo 95, sysctl kernel.timer_migration=0  10s
3       1  timer  vm+io  vm:workers=2,bytes=64M + io  not-promoted   other, no dma_latency hold                10s
4       2  timer  idle   -                            promoted       fifo 95, sysctl kernel.timer_migration=0  10s
5       2  timer  vm+io  vm:workers=2,bytes=64M + io  promoted       fifo 95, sysctl kernel.timer_migration=0  10s
6       2  timer  vm+io  vm:workers=2,bytes=64M + io  not-promoted   other, no dma_latency hold                10s

6 runs, ETA 1m 16s (10s measuring + 1s setup per run, 2s cooldown between runs)
";
    assert_eq!(plan.table(), expected, "\n{}", plan.table());
}

#[test]
fn the_table_of_quick_ends_with_its_eta() {
    let plan = plan(read("quick", &check_load).unwrap()).unwrap();
    let table = plan.table();
    assert!(
        table.starts_with("campaign quick (preset quick)\n"),
        "{table}"
    );
    assert!(
        table.ends_with(
            "8 runs, ETA 59.5s (6s measuring + 1s setup per run, 500ms cooldown between runs)\n"
        ),
        "{table}"
    );
    assert_eq!(table.lines().filter(|l| l.contains("  timer  ")).count(), 8);
}

#[test]
fn the_plan_serializes_for_json_output() {
    let text = file(&[HEAD, PROBE, "cpus = \"0-1\"\n", LOADS, CONFIGURATIONS]);
    let plan = plan(parse_ok(&text)).unwrap();
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["schema"], "rtlab.plan/1");
    assert_eq!(json["eta_ns"], 4 * 3_000_000_000u64);
    assert_eq!(json["run_overhead_ns"], 1_000_000_000u64);
    assert_eq!(json["campaign"]["name"], "t");
    assert_eq!(json["campaign"]["probes"][0]["cpus"], "0-1");
    assert_eq!(json["runs"].as_array().unwrap().len(), 4);
    let run = &json["runs"][0];
    assert_eq!(run["index"], 1);
    assert_eq!(run["repeat"], 1);
    assert_eq!(run["load"]["run"], serde_json::json!([]));
    assert_eq!(run["configuration"]["policy"], "fifo");
    assert_eq!(run["configuration"]["priority"], 80);
    assert_eq!(run["duration_ns"], 2_000_000_000u64);
    assert_eq!(json["warnings"], serde_json::json!([]));
}

#[test]
fn a_run_knows_its_place_in_the_campaign() {
    let plan = plan(parse_ok(&valid())).unwrap();
    let run = &plan.runs[2];
    assert_eq!(run.label(1), "timer / vm / promoted");
    assert_eq!(run.label(3), "timer / vm / promoted (repeat 1)");
    let place = run.campaign_ref("t", "exec-1", plan.runs.len());
    assert_eq!(
        (
            place.index,
            place.total,
            place.load.as_str(),
            place.configuration.as_str()
        ),
        (3, 4, "vm", "promoted")
    );
}

#[test]
fn switch_and_noise_probes_take_their_own_settings() {
    let text = file(&[
        HEAD,
        r#"
[[probe]]
kind = "switch"
mechanisms = ["pipe", "mq"]
rate = "2khz"
cpu = 0
cross_cpu = true
process = true

[[probe]]
kind = "noise"
name = "os-noise"
cpus = "1"
threshold = "2us"
runtime = "400ms"
period = "500ms"
window = "5ms"
osnoise = false
"#,
        LOADS,
        CONFIGURATIONS,
    ]);
    let c = parse_ok(&text);
    assert_eq!(c.probes[0].kind.as_str(), "switch");
    assert_eq!(c.probes[0].name, "switch");
    assert_eq!(
        c.probes[0].settings_as::<SwitchSettings>(),
        Some(&SwitchSettings {
            mechanisms: vec![Mechanism::Pipe, Mechanism::Mq],
            interval_ns: 500_000,
            cpu: Some(0),
            cross_cpu: true,
            process: true,
            pacing: rtlab_probe::switch::Pacing::Grid,
        })
    );
    assert_eq!(c.probes[0].interval_ns(), Some(500_000));
    assert_eq!(
        c.probes[1].settings_as::<NoiseSettings>(),
        Some(&NoiseSettings {
            cpus: CpuSelection::List(CpuSet::parse("1").unwrap()),
            threshold_ns: 2_000,
            runtime_ns: 400_000_000,
            period_ns: 500_000_000,
            window_ns: 5_000_000,
            osnoise: false,
        })
    );
    assert_eq!(c.probes[1].interval_ns(), None);
    let plan = plan(c).unwrap();
    assert_eq!(plan.runs.len(), 8);
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(
        json["campaign"]["probes"][0]["mechanisms"],
        serde_json::json!(["pipe", "mq"])
    );
    assert_eq!(json["campaign"]["probes"][1]["cpus"], "1");

    let all = file(&[
        HEAD,
        "\n[[probe]]\nkind = \"switch\"\nmechanisms = \"all\"\n",
        LOADS,
        CONFIGURATIONS,
    ]);
    let c = parse_ok(&all);
    match c.probes[0].settings_as::<SwitchSettings>() {
        Some(s) => assert_eq!(s.mechanisms, Mechanism::ALL),
        None => panic!("{:?}", c.probes[0]),
    }
    let defaults = file(&[
        HEAD,
        "\n[[probe]]\nkind = \"noise\"\n",
        LOADS,
        CONFIGURATIONS,
    ]);
    assert_eq!(
        parse_ok(&defaults).probes[0].settings_as::<NoiseSettings>(),
        Some(&NoiseSettings::default())
    );
}

#[test]
fn switch_and_noise_settings_are_checked() {
    let switch = |body: &str| {
        file(&[
            HEAD,
            "\n[[probe]]\nkind = \"switch\"\n",
            body,
            LOADS,
            CONFIGURATIONS,
        ])
    };
    assert_error(
        &switch("mechanisms = [\"futex\", \"smoke\"]\n"),
        "mechanisms",
        "probe[0].mechanisms[1]",
        "unknown mechanism `smoke`",
    );
    assert_error(
        &switch("mechanisms = [\"pipe\", \"pipe\"]\n"),
        "mechanisms",
        "probe[0].mechanisms[1]",
        "`pipe` is listed twice",
    );
    assert_error(
        &switch("mechanisms = \"most\"\n"),
        "mechanisms",
        "probe[0].mechanisms",
        "give \"all\" or a list",
    );
    assert_error(
        &switch("rate = \"4000\"\n"),
        "rate",
        "probe[0].rate",
        "a unit is required",
    );
    assert_error(
        &switch("rate = \"4khz\"\ninterval = \"1ms\"\n"),
        "rate",
        "probe[0].rate",
        "not both",
    );
    assert_error(
        &switch("cpus = \"1\"\n"),
        "cpus",
        "probe[0].cpus",
        "unknown key",
    );
    assert_error(
        &switch("cpu = -1\n"),
        "cpu",
        "probe[0].cpu",
        "-1 is not a CPU number",
    );
    assert_error(
        &switch("pacing = \"cyclic\"\n"),
        "pacing",
        "probe[0].pacing",
        "unknown pacing `cyclic` (known: grid, rt-tests)",
    );
    // rt-tests pacing copies a tool: only the four tools' mechanisms, as threads.
    assert_error(
        &switch("mechanisms = [\"mq\", \"futex\"]\npacing = \"rt-tests\"\n"),
        "pacing",
        "probe[0].pacing",
        "`futex` has no rt-tests counterpart",
    );
    assert_error(
        &switch("mechanisms = [\"mq\"]\npacing = \"rt-tests\"\nprocess = true\n"),
        "process",
        "probe[0].process",
        "as threads",
    );
    let paced = parse_ok(&switch(
        "mechanisms = [\"sysv-sem\", \"signal\"]\npacing = \"rt-tests\"\n",
    ));
    assert_eq!(
        paced.probes[0]
            .settings_as::<SwitchSettings>()
            .map(|s| s.pacing),
        Some(rtlab_probe::switch::Pacing::RtTests)
    );

    let noise = |body: &str| {
        file(&[
            HEAD,
            "\n[[probe]]\nkind = \"noise\"\n",
            body,
            LOADS,
            CONFIGURATIONS,
        ])
    };
    assert_error(
        &noise("runtime = \"2s\"\n"),
        "runtime",
        "probe[0].runtime",
        "longer than the period",
    );
    assert_error(
        &noise("window = \"950ms\"\n"),
        "window",
        "probe[0].window",
        "longer than the runtime",
    );
    assert_error(
        &noise("window = \"10us\"\n"),
        "window",
        "probe[0].window",
        "shorter than 100us",
    );
    assert_error(
        &noise("interval = \"1ms\"\n"),
        "interval",
        "probe[0].interval",
        "unknown key",
    );

    // Deadline scheduling only makes sense for the timer probe.
    let text = file(&[
        HEAD,
        "\n[[probe]]\nkind = \"noise\"\n",
        LOADS,
        "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\n",
    ]);
    assert_error(
        &text,
        "policy = \"deadline\"",
        "configuration[0].policy",
        "policy deadline is for timer probes only",
    );
}

// ---------------------------------------------------------------- net probe

use rtlab_campaign::runner::{net_placement, probe_for, NET_CLIENT_SCHED};
use rtlab_core::sched::SchedParams;
use rtlab_probe::net::NetConfig;

fn net(body: &str) -> String {
    file(&[
        HEAD,
        "\n[[probe]]\nkind = \"net\"\n",
        body,
        LOADS,
        CONFIGURATIONS,
    ])
}

fn fifo(priority: u32) -> SchedParams {
    SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    }
}

fn other() -> SchedParams {
    SchedParams {
        policy: Policy::Other,
        priority: 0,
        deadline: None,
    }
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse(list).unwrap()
}

/// The net config of a campaign's first probe.
fn net_config(
    spec: &ProbeSpec,
    sched: SchedParams,
    duration_ns: u64,
    online: &str,
) -> Result<NetConfig, String> {
    let settings = spec
        .settings_as::<NetSettings>()
        .unwrap_or_else(|| panic!("not a net probe: {spec:?}"));
    settings.config_for(&OneRun {
        sched,
        duration_ns,
        online: &cpus(online),
    })
}

#[test]
fn a_net_probe_takes_its_defaults() {
    let c = parse_ok(&net(""));
    let p = &c.probes[0];
    assert_eq!((p.name.as_str(), p.kind.as_str()), ("net", "net"));
    assert_eq!(
        p.settings_as::<NetSettings>(),
        Some(&NetSettings::default())
    );
    let n = p.settings_as::<NetSettings>().unwrap();
    assert_eq!(n.target, None);
    assert_eq!(n.transport, Transport::Udp);
    assert_eq!(n.mode, NetMode::Exchange);
    // Paper 000: a message every 30 ms, four round trips.
    assert_eq!(n.interval_ns, 30_000_000);
    assert_eq!(n.round_trips, 4);
    assert_eq!(n.payload, 64);
    assert_eq!(n.timeout_ns, 100_000_000);
    assert_eq!((n.client_cpu, n.server_cpu), (None, None));
    assert_eq!(p.interval_ns(), Some(30_000_000));
    assert_eq!(p.settings_as::<TimerSettings>(), None);
    assert_eq!(
        p.describe(),
        "udp exchange every 30ms to rtlab's server, 4 round trips of 64 B, timeout 100ms, \
         client on the first CPU, server on the last CPU"
    );
    // 2 loads × 2 configurations.
    assert_eq!(plan(c).unwrap().runs.len(), 4);
}

#[test]
fn a_net_probe_reads_every_key() {
    let text = net(r#"name = "to-rack"
target = "10.0.0.2:7700"
transport = "tcp"
mode = "echo"
interval = "10ms"
round_trips = 2
payload = 512
timeout = "50ms"
client_cpu = 1
"#);
    let c = parse_ok(&text);
    assert_eq!(c.probes[0].name, "to-rack");
    assert_eq!(
        c.probes[0].settings_as::<NetSettings>(),
        Some(&NetSettings {
            target: Some("10.0.0.2:7700".parse().unwrap()),
            transport: Transport::Tcp,
            mode: NetMode::Echo,
            interval_ns: 10_000_000,
            round_trips: 2,
            payload: 512,
            timeout_ns: 50_000_000,
            client_cpu: Some(1),
            server_cpu: None,
        })
    );
    assert_eq!(
        c.probes[0].describe(),
        "tcp echo every 10ms to 10.0.0.2:7700, 2 round trips of 512 B, timeout 50ms, client on CPU 1"
    );
    let plan = plan(c).unwrap();
    let json = serde_json::to_value(&plan).unwrap();
    let probe = &json["campaign"]["probes"][0];
    assert_eq!(probe["kind"], "net");
    assert_eq!(probe["target"], "10.0.0.2:7700");
    assert_eq!(probe["transport"], "tcp");
    assert_eq!(probe["mode"], "echo");
    assert_eq!(probe["interval_ns"], 10_000_000);
    assert_eq!(probe["round_trips"], 2);
    assert_eq!(probe["client_cpu"], 1);
    assert_eq!(probe["server_cpu"], serde_json::Value::Null);

    // rtlab's own server, on given CPUs; an IPv6 target.
    let own = parse_ok(&net(
        "server_cpu = 0\nclient_cpu = 1\nmode = \"sockperf\"\n",
    ));
    let n = own.probes[0].settings_as::<NetSettings>().unwrap();
    assert_eq!(
        (n.target, n.client_cpu, n.server_cpu),
        (None, Some(1), Some(0))
    );
    assert_eq!(n.mode, NetMode::Sockperf);
    let v6 = parse_ok(&net("target = \"[fd00::2]:7700\"\n"));
    assert_eq!(
        v6.probes[0].settings_as::<NetSettings>().unwrap().target,
        Some("[fd00::2]:7700".parse().unwrap())
    );
}

#[test]
fn net_settings_are_checked() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // (body, marker, field, says)
        (
            "target = \"localhost\"\n",
            "target",
            "probe[0].target",
            "`localhost` is not an ADDR:PORT",
        ),
        (
            "target = \"10.0.0.2\"\n",
            "target",
            "probe[0].target",
            "omit `target` for rtlab's own server",
        ),
        (
            "target = \"10.0.0.2:0\"\n",
            "target",
            "probe[0].target",
            "port 0",
        ),
        (
            "target = 7700\n",
            "target",
            "probe[0].target",
            "expected a string, found integer",
        ),
        (
            "transport = \"sctp\"\n",
            "transport",
            "probe[0].transport",
            "unknown transport `sctp` (expected udp or tcp)",
        ),
        (
            "mode = \"ping\"\n",
            "mode",
            "probe[0].mode",
            "expected exchange, echo or sockperf",
        ),
        (
            "interval = \"0ms\"\n",
            "interval",
            "probe[0].interval",
            "must be longer than 0",
        ),
        (
            "interval = 30\n",
            "interval",
            "probe[0].interval",
            "a duration is a string with its unit",
        ),
        (
            "round_trips = 0\n",
            "round_trips",
            "probe[0].round_trips",
            "0 round trips is out of range 1-32",
        ),
        (
            "round_trips = 33\n",
            "round_trips",
            "probe[0].round_trips",
            "33 round trips is out of range 1-32",
        ),
        (
            "round_trips = \"4\"\n",
            "round_trips",
            "probe[0].round_trips",
            "expected an integer, found string",
        ),
        (
            "payload = 0\n",
            "payload",
            "probe[0].payload",
            "0 is not a size in bytes",
        ),
        // The probe's own check: an exchange request has a 32-byte header.
        (
            "payload = 16\n",
            "payload",
            "probe[0].payload",
            "take 32-65507 bytes (got 16)",
        ),
        (
            "payload = 70000\n",
            "payload",
            "probe[0].payload",
            "take 32-65507 bytes (got 70000)",
        ),
        (
            "timeout = \"0s\"\n",
            "timeout",
            "probe[0].timeout",
            "must be longer than 0",
        ),
        (
            "client_cpu = -1\n",
            "client_cpu",
            "probe[0].client_cpu",
            "-1 is not a CPU number",
        ),
        (
            "server_cpu = \"last\"\n",
            "server_cpu",
            "probe[0].server_cpu",
            "expected an integer, found string",
        ),
        (
            "target = \"10.0.0.2:7700\"\nserver_cpu = 1\n",
            "server_cpu",
            "probe[0].server_cpu",
            "with `target` the server is not rtlab's",
        ),
        // Keys of the other kinds are unknown keys here.
        (
            "cpus = \"1\"\n",
            "cpus",
            "probe[0].cpus",
            "unknown key `cpus`",
        ),
        ("cpu = 1\n", "cpu = 1", "probe[0].cpu", "unknown key `cpu`"),
        ("rate = \"4khz\"\n", "rate", "probe[0].rate", "unknown key"),
        (
            "threshold = \"1us\"\n",
            "threshold",
            "probe[0].threshold",
            "unknown key",
        ),
        (
            "hist_max = \"1ms\"\n",
            "hist_max",
            "probe[0].hist_max",
            "known keys here: kind, name, target, transport, mode, interval, round_trips, \
             payload, timeout, client_cpu, server_cpu",
        ),
    ];
    for (body, marker, field, says) in cases {
        assert_error(&net(body), marker, field, says);
    }
    // sockperf's header is 14 bytes: a 16-byte request is fine there.
    parse_ok(&net("mode = \"sockperf\"\npayload = 16\n"));
    // Over TCP a frame is a request too: no larger than a datagram.
    parse_ok(&net("transport = \"tcp\"\npayload = 65507\n"));

    // The run must hold at least one message.
    assert_error(
        &net("interval = \"3s\"\n"),
        "duration = \"2s\"",
        "duration",
        "shorter than the interval of probe `net`",
    );

    // Deadline scheduling is for the timer probe only.
    let text = file(&[
        HEAD,
        "\n[[probe]]\nkind = \"net\"\n",
        LOADS,
        "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\n",
    ]);
    assert_error(
        &text,
        "policy = \"deadline\"",
        "configuration[0].policy",
        "policy deadline is for timer probes only; probe `net` is a net probe",
    );
}

#[test]
fn the_configuration_schedules_rtlabs_server_and_the_client_is_fifo_90() {
    let c = parse_ok(&net(""));
    let spec = &c.probes[0];
    let config = net_config(spec, fifo(30), 300_000_000_000, "0-3").unwrap();
    assert_eq!(config.target, None);
    let server = config.server.as_ref().expect("rtlab's own server");
    assert_eq!(server.placement.sched, fifo(30));
    assert_eq!(server.placement.cpu, Some(3));
    assert_eq!((server.inject_delay_ns, server.inject_every), (None, 100));
    assert_eq!(config.client.sched, NET_CLIENT_SCHED);
    assert_eq!(
        NET_CLIENT_SCHED,
        SchedParams {
            policy: Policy::Fifo,
            priority: 90,
            deadline: None
        }
    );
    assert_eq!(config.client.cpu, Some(0));
    // 300 s at 30 ms: paper 000's 10 000 messages.
    assert_eq!(config.messages, 10_000);
    assert_eq!(config.interval_ns, 30_000_000);
    assert_eq!((config.round_trips, config.payload), (4, 64));
    assert_eq!(config.timeout_ns, 100_000_000);
    assert_eq!(config.key_file, None);
    config.validate().unwrap();

    // Not promoted: the server runs SCHED_OTHER, the client still FIFO 90.
    let config = net_config(spec, other(), 1_000_000_000, "0-3").unwrap();
    assert_eq!(config.server.unwrap().placement.sched, other());
    assert_eq!(config.client.sched, NET_CLIENT_SCHED);
    // 1 s at 30 ms: 33 messages (the remainder is not a message).
    assert_eq!(config.messages, 33);
    // A run shorter than the interval still sends one.
    assert_eq!(
        net_config(spec, other(), 1_000_000, "0-3")
            .unwrap()
            .messages,
        1
    );
    // The result records the probe's config.
    let probe = probe_for(spec, fifo(30), 300_000_000_000, &cpus("0-3")).unwrap();
    assert_eq!(probe.kind(), "net");
    let json = probe.config_json();
    assert_eq!(json["messages"], 10_000, "{json}");
    assert_eq!(
        json["server"]["placement"]["sched"]["priority"], 30,
        "{json}"
    );
    assert_eq!(
        json["client"]["placement"],
        serde_json::Value::Null,
        "{json}"
    );
    assert_eq!(json["client"]["sched"]["priority"], 90, "{json}");

    // Deadline scheduling has no period to take here.
    let deadline = SchedParams {
        policy: Policy::Deadline,
        priority: 0,
        deadline: None,
    };
    let err = net_config(spec, deadline, 1_000_000_000, "0-3").unwrap_err();
    assert!(
        err.contains("policy deadline is for timer probes only"),
        "{err}"
    );
}

#[test]
fn with_a_target_the_configuration_schedules_the_client() {
    let c = parse_ok(&net("target = \"10.0.0.2:7700\"\n"));
    let config = net_config(&c.probes[0], fifo(30), 3_000_000_000, "0-3").unwrap();
    assert_eq!(config.target, Some("10.0.0.2:7700".parse().unwrap()));
    assert!(config.server.is_none());
    assert_eq!(config.client.sched, fifo(30));
    assert_eq!(config.client.cpu, Some(0));
    assert_eq!(config.messages, 100);
    config.validate().unwrap();
    let config = net_config(&c.probes[0], other(), 3_000_000_000, "0").unwrap();
    assert_eq!((config.client.sched, config.client.cpu), (other(), None));
}

#[test]
fn net_threads_go_to_the_first_and_last_cpus_apart() {
    // Defaults: client first, server last; unpinned on one CPU.
    assert_eq!(
        net_placement(None, None, true, &cpus("0-3")),
        Ok((Some(0), Some(3)))
    );
    assert_eq!(
        net_placement(None, None, true, &cpus("2,5,7")),
        Ok((Some(2), Some(7)))
    );
    assert_eq!(
        net_placement(None, None, true, &cpus("0")),
        Ok((None, None))
    );
    assert_eq!(
        net_placement(Some(0), None, true, &cpus("0")),
        Ok((Some(0), None))
    );
    // A default never lands on the other thread's given CPU.
    assert_eq!(
        net_placement(Some(3), None, true, &cpus("0-3")),
        Ok((Some(3), Some(2)))
    );
    assert_eq!(
        net_placement(None, Some(0), true, &cpus("0-3")),
        Ok((Some(1), Some(0)))
    );
    // Both given: as given, even on one CPU.
    assert_eq!(
        net_placement(Some(1), Some(1), true, &cpus("0-3")),
        Ok((Some(1), Some(1)))
    );
    // With a target there is no server to place.
    assert_eq!(
        net_placement(None, None, false, &cpus("0-3")),
        Ok((Some(0), None))
    );
    assert!(net_placement(None, Some(1), false, &cpus("0-3")).is_err());
    // CPUs must be online when the run starts.
    let err = net_placement(Some(9), None, true, &cpus("0-3")).unwrap_err();
    assert_eq!(err, "client_cpu: CPU 9 is not online (online: 0-3)");
    let c = parse_ok(&net("server_cpu = 9\n"));
    let err = net_config(&c.probes[0], fifo(30), 1_000_000_000, "0-3").unwrap_err();
    assert_eq!(err, "server_cpu: CPU 9 is not online (online: 0-3)");
}

#[test]
fn hallberg2017_net_mirrors_the_papers_message_exchange() {
    let plan = plan(read("hallberg2017-net", &check_load).unwrap()).unwrap();
    let c = &plan.campaign;
    assert_eq!(c.probes.len(), 1);
    let n = c.probes[0]
        .settings_as::<NetSettings>()
        .expect("a net probe");
    assert_eq!(n.target, None, "rtlab's own server");
    assert_eq!((n.transport, n.mode), (Transport::Udp, NetMode::Exchange));
    assert_eq!(n.interval_ns, 30_000_000);
    assert_eq!((n.round_trips, n.payload), (4, 64));
    // 10 000 messages at 30 ms.
    assert_eq!(c.duration_ns, 10_000 * 30_000_000);
    assert_eq!(c.repeat, 1);
    assert!(c.cooldown_ns > 0);
    let specs: Vec<(&str, String)> = c
        .loads
        .iter()
        .map(|l| (l.name.as_str(), l.describe()))
        .collect();
    assert_eq!(
        specs,
        [
            ("idle", "-".to_string()),
            ("dohell-no-stat", "dohell:no-stat".to_string()),
            ("vm", "vm:workers=40,bytes=256M".to_string()),
            ("cpu", "cpu:workers=100".to_string()),
        ]
    );
    // The same load specs as the hallberg2017 preset.
    let timer = read("hallberg2017", &check_load).unwrap();
    for load in &c.loads {
        assert!(
            timer.loads.iter().any(|l| l.run == load.run),
            "{} is not one of hallberg2017's loads",
            load.name
        );
    }
    let configurations: Vec<(&str, Policy, Option<u32>)> = c
        .configurations
        .iter()
        .map(|c| (c.name.as_str(), c.policy, c.priority))
        .collect();
    assert_eq!(
        configurations,
        [
            ("promoted", Policy::Fifo, Some(30)),
            ("not-promoted", Policy::Other, None)
        ]
    );
    // Every load promoted and not: the server's promotion is the question.
    assert_eq!(plan.runs.len(), 8);
    for run in &plan.runs {
        let config = net_config(&run.probe, run.sched_params(), run.duration_ns, "0-3").unwrap();
        assert_eq!(config.messages, 10_000);
        assert_eq!(config.client.sched, NET_CLIENT_SCHED);
        let server = config.server.unwrap().placement.sched;
        match run.configuration.name.as_str() {
            "promoted" => assert_eq!(server, fifo(30)),
            _ => assert_eq!(server, other()),
        }
    }
    let table = plan.table();
    assert!(
        table.contains("probe net: udp exchange every 30ms to rtlab's server"),
        "{table}"
    );
    assert!(table.contains("8 runs, ETA 40m 15s"), "{table}");
    // The scheduling column says whose scheduling it is.
    assert!(table.contains("  server fifo 30  "), "{table}");
    assert!(table.contains("  server other  "), "{table}");
    let external = parse_ok(&net("target = \"10.0.0.2:7700\"\n"));
    let external = rtlab_campaign::plan(external).unwrap();
    assert_eq!(external.runs[0].scheduling_text(), "fifo 80");
}

#[test]
fn periodic_settings_are_checked() {
    let base = "name = \"p\"\nduration = \"1s\"\n[[load]]\nname = \"idle\"\nrun = []\n[[configuration]]\nname = \"c\"\npolicy = \"fifo\"\npriority = 80\n[[probe]]\nkind = \"periodic\"\n";
    let ok = parse_ok(&format!(
        "{base}tasks = 30\nmode = \"fifo\"\nwork = \"200us\"\n"
    ));
    let spec = &ok.probes[0];
    assert_eq!(
        spec.describe(),
        "30 tasks every 10ms, 200us work, fifo on the last CPU"
    );
    // The executive's guard: learned by default, or fixed; its budget.
    let ok = parse_ok(&format!("{base}guard = \"150us\"\nspin_budget = 40\n"));
    let settings = ok.probes[0]
        .settings_as::<rtlab_campaign::PeriodicSettings>()
        .unwrap();
    assert_eq!(settings.guard, rtlab_exec::guard::Guard::Fixed(150_000));
    assert_eq!(settings.spin_budget_percent, 40);
    let config = settings.config(1_000_000_000, 80);
    assert_eq!((config.guard_ns, config.learn.guard), (150_000, false));
    assert_eq!(config.learn.spin_budget_percent, 40);
    for (extra, says) in [
        ("mode = \"kurt\"\n", "expected executive or fifo"),
        ("tasks = 0\n", "out of range"),
        ("work = \"20ms\"\n", "shorter than the period"),
        ("period = \"10us\"\n", "shorter than the minimum"),
        ("interval = \"1ms\"\n", "interval"),
        (
            "guard = \"soon\"\n",
            "field `probe[0].guard`: expected auto or a duration",
        ),
        (
            "spin_budget = 0\n",
            "field `probe[0].spin_budget`: spin_budget 0%: expected 1-100",
        ),
        ("spin_budget = 101\n", "spin_budget 101%"),
    ] {
        let err = parse_err(&format!("{base}{extra}")).to_string();
        assert!(
            err.contains("c.toml:") && err.contains(says),
            "{extra}: {err}"
        );
    }
}

#[test]
fn periodic_probes_refuse_a_configuration_that_is_not_fifo() {
    let text = "name = \"p\"\nduration = \"1s\"\n[[load]]\nname = \"idle\"\nrun = []\n[[probe]]\nkind = \"periodic\"\n[[configuration]]\nname = \"c\"\npolicy = \"other\"\n";
    let err = parse_err(text).to_string();
    assert!(
        err.contains("c.toml:10") && err.contains("periodic tasks run SCHED_FIFO"),
        "{err}"
    );
}

/// Issue 16 item 12: a periodic probe beside a timer probe, and a
/// configuration (`other`) that is wrong for the periodic probe but right
/// for the timer one, kept apart by an exclude.
const PERIODIC_AND_OTHER: &str = r#"name = "mixed"
duration = "1s"

[[probe]]
kind = "timer"

[[probe]]
name = "tasks"
kind = "periodic"

[[load]]
name = "idle"
run = []

[[load]]
name = "vm"
run = ["vm:workers=2,bytes=64M"]

[[configuration]]
name = "promoted"
policy = "fifo"

[[configuration]]
name = "not-promoted"
policy = "other"
"#;

#[test]
fn an_exclude_keeps_a_periodic_probe_from_a_configuration_it_cannot_run() {
    let excluded = format!(
        "{PERIODIC_AND_OTHER}\n[[exclude]]\nprobe = \"tasks\"\nconfiguration = \"not-promoted\"\n"
    );
    let plan = rtlab_campaign::plan(parse_ok(&excluded)).unwrap();
    let cells: Vec<String> = plan.runs.iter().map(|r| r.label(1)).collect();
    assert_eq!(
        cells,
        [
            "timer / idle / promoted",
            "timer / idle / not-promoted",
            "timer / vm / promoted",
            "timer / vm / not-promoted",
            "tasks / idle / promoted",
            "tasks / vm / promoted",
        ]
    );
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);

    // Without the exclude: refused at the configuration's policy, naming
    // the probe (and its line) and the configuration.
    let err = parse_err(PERIODIC_AND_OTHER);
    let shown = err.to_string();
    let policy_line = line_of(PERIODIC_AND_OTHER, "policy = \"other\"");
    let probe_line = line_of(PERIODIC_AND_OTHER, "name = \"tasks\"") - 1;
    assert!(
        shown.starts_with(&format!("c.toml:{policy_line}:")),
        "{shown}"
    );
    assert_eq!(err.field.as_deref(), Some("configuration[1].policy"));
    for says in [
        "periodic tasks run SCHED_FIFO",
        &format!("configuration `not-promoted` with probe `tasks` (line {probe_line})"),
        "[[exclude]] probe = \"tasks\", configuration = \"not-promoted\"",
    ] {
        assert!(shown.contains(says), "{says:?} not in: {shown}");
    }

    // An exclude of the pair in one load only leaves the other load's cell:
    // still refused.
    let partly = format!(
        "{PERIODIC_AND_OTHER}\n[[exclude]]\nprobe = \"tasks\"\nload = \"vm\"\nconfiguration = \"not-promoted\"\n"
    );
    let err = parse_err(&partly).to_string();
    assert!(err.contains("periodic tasks run SCHED_FIFO"), "{err}");
}

/// `taskset = "FILE"` in a periodic probe: the set is read relative to
/// the campaign file and runs with its own timing, priorities and CPUs.
#[test]
fn a_periodic_probe_runs_a_task_set_beside_the_campaign_file() {
    let dir = tempfile::tempdir().unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/taskset.toml");
    std::fs::copy(example, dir.path().join("set.toml")).unwrap();
    let text = "name = \"set\"\nduration = \"1s\"\n\n[[probe]]\nname = \"tasks\"\nkind = \"periodic\"\ntaskset = \"set.toml\"\n\n[[load]]\nname = \"idle\"\nrun = []\n\n[[configuration]]\nname = \"rt\"\npolicy = \"fifo\"\n";
    let path = dir.path().join("c.toml");
    std::fs::write(&path, text).unwrap();
    let campaign = read(path.to_str().unwrap(), &check_load).unwrap_or_else(|e| panic!("{e}"));
    let settings = campaign.probes[0]
        .settings_as::<PeriodicSettings>()
        .unwrap();
    let set = settings.taskset.as_ref().unwrap();
    assert_eq!(set.tasks.len(), 3);
    assert_eq!(settings.interval_ns(), Some(1_000_000));
    assert!(
        settings.describe().starts_with("task set"),
        "{}",
        settings.describe()
    );
    // The tasks keep their priorities (85 the highest); the executive 10 above.
    let config = settings.config(1_000_000_000, 50);
    assert_eq!(config.executive_priority, 95);
    assert_eq!(config.planned_activations(), 1000 + 100 + 50);
    assert_eq!(config.validate(), Ok(()));

    // Not beside the keys of equal tasks; a missing file is named.
    let both = text.replace("taskset = ", "tasks = 3\ntaskset = ");
    std::fs::write(&path, &both).unwrap();
    let err = read(path.to_str().unwrap(), &check_load).unwrap_err();
    assert_eq!(err.line(), Some(line_of(&both, "taskset")));
    assert!(err.to_string().contains("not with `tasks`"), "{err}");
    std::fs::write(&path, text.replace("set.toml", "none.toml")).unwrap();
    let err = read(path.to_str().unwrap(), &check_load)
        .unwrap_err()
        .to_string();
    assert!(err.contains("none.toml: cannot read it"), "{err}");
}

#[test]
fn an_exclude_keeps_a_deadline_configuration_from_other_probes() {
    // A deadline configuration is for timer probes; with the noise probe
    // excluded from it, the file is fine, and a runtime too long for the
    // switch probe's period only matters if the pair runs.
    let text = format!(
        "{HEAD}\n[[probe]]\nkind = \"timer\"\n\n[[probe]]\nkind = \"noise\"\n{LOADS}\n[[configuration]]\nname = \"rt\"\n\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\ndl_runtime = \"200us\"\n"
    );
    let err = parse_err(&text).to_string();
    assert!(
        err.contains("policy deadline is for timer probes only; probe `noise` is a noise probe")
            && err.contains("configuration `dl` with probe `noise`"),
        "{err}"
    );
    let excluded = format!("{text}\n[[exclude]]\nprobe = \"noise\"\nconfiguration = \"dl\"\n");
    let plan = rtlab_campaign::plan(parse_ok(&excluded)).unwrap();
    assert_eq!(plan.runs.len(), 6);
    assert!(plan
        .runs
        .iter()
        .all(|r| r.configuration.name != "dl" || r.probe.name == "timer"));
}

/// The probe's own rules (its config's validate()) hold in a campaign as
/// on the command line: a noise threshold shorter than the window, no
/// timer distance with a deadline configuration.
#[test]
fn the_probes_own_rules_hold_in_a_campaign() {
    let noise = |body: &str| {
        file(&[
            HEAD,
            "\n[[probe]]\nkind = \"noise\"\n",
            body,
            LOADS,
            CONFIGURATIONS,
        ])
    };
    parse_ok(&noise("threshold = \"5us\"\nwindow = \"1ms\"\n"));
    assert_error(
        &noise("threshold = \"10ms\"\n"),
        "threshold",
        "probe[0].threshold",
        "threshold 10ms must be shorter than the window 10ms",
    );

    let deadline = "\n[[configuration]]\nname = \"dl\"\npolicy = \"deadline\"\n";
    parse_ok(&file(&[HEAD, PROBE, LOADS, deadline]));
    let text = file(&[HEAD, PROBE, "distance = \"50us\"\n", LOADS, deadline]);
    assert_error(
        &text,
        "policy = \"deadline\"",
        "configuration[0].policy",
        "distance cannot be used with policy deadline (the period is the interval): configuration `dl` with probe `timer`",
    );
}

// ---------------------------------------------------------------- registry

/// A campaign of one probe of `kind` with its defaults, on an idle machine
/// at fifo 90.
fn one_probe(kind: &str) -> Campaign {
    parse_ok(&format!(
        "name = \"k\"\nduration = \"1s\"\n[[probe]]\nkind = \"{kind}\"\n\
         [[load]]\nname = \"idle\"\nrun = []\n[[configuration]]\nname = \"c\"\n"
    ))
}

#[test]
fn every_kind_is_read_by_its_name_and_builds_its_probe() {
    for kind in ["timer", "switch", "noise", "net", "periodic"] {
        let c = one_probe(kind);
        let p = &c.probes[0];
        assert_eq!((p.name.as_str(), p.kind.as_str()), (kind, kind));
        assert_eq!(p.kind.to_string(), kind);
        assert_eq!(kind.parse::<ProbeKind>(), Ok(p.kind));
        // The probe the engine runs says the same kind in its result.
        let probe = probe_for(p, fifo(90), 1_000_000_000, &cpus("0-3")).unwrap();
        assert_eq!(probe.kind(), kind);
        assert!(probe.planned_ns() > 0, "{kind}");
        assert!(probe.config_json().is_object(), "{kind}");
        // A clone is equal, another kind's settings are not.
        assert_eq!(p.clone(), *p);
        let other = one_probe(if kind == "timer" { "noise" } else { "timer" });
        assert!(*other.probes[0].settings != *p.settings);
    }
}

#[test]
fn a_probes_json_keeps_its_settings_in_their_order() {
    let c = one_probe("timer");
    assert_eq!(
        serde_json::to_string(&c.probes[0]).unwrap(),
        r#"{"name":"timer","kind":"timer","cpus":"all","interval_ns":1000000,"distance_ns":0,"mode":"abs","hist_max_ns":1000000}"#
    );
    let c = one_probe("periodic");
    assert_eq!(
        serde_json::to_string(&c.probes[0]).unwrap(),
        r#"{"name":"periodic","kind":"periodic","tasks":1,"period_ns":10000000,"work_ns":100000,"mode":"executive","cpu":null}"#
    );
}

#[test]
fn settings_are_changed_through_their_own_type() {
    let mut c = one_probe("periodic");
    let p = &mut c.probes[0];
    assert!(p.settings_as_mut::<TimerSettings>().is_none());
    p.settings_as_mut::<PeriodicSettings>().unwrap().tasks = 3;
    assert_eq!(p.settings_as::<PeriodicSettings>().unwrap().tasks, 3);
    assert_eq!(
        p.describe(),
        "3 tasks every 10ms, 100us work, executive on the last CPU"
    );
}
