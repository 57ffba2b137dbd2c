//! `rtlab measure switch` and `rtlab measure noise` from the command line:
//! bad input refused before anything changes; the probes measure, store,
//! export and compare like the timer probe; the injected delay lands in the
//! switch series only; an interrupt-heavy load raises the noise rows; the
//! switch probe's `--pacing rt-tests` counts every cycle and shows stalls.

mod common;

use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The measuring tests share CPU 1 at real-time priorities: one at a time,
/// or one would measure the other.
static REALTIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    REALTIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn refused(probe: &str, args: &[&str], must_mention: &[&str]) {
    common::assert_refused(&[&["measure", probe], args].concat(), must_mention);
}

#[test]
fn bad_switch_input_is_refused() {
    refused(
        "switch",
        &["--mechanism", "smoke"],
        &["--mechanism", "smoke", "futex"],
    );
    refused(
        "switch",
        &["--mechanism", "pipe,pipe"],
        &["--mechanism", "`pipe` is listed twice"],
    );
    refused("switch", &["--rate", "4000"], &["--rate", "'4000'", "unit"]);
    refused("switch", &["--rate", "3hz"], &["--rate", "whole number"]);
    refused(
        "switch",
        &["--rate", "4khz", "--interval", "1ms"],
        &["--rate", "--interval"],
    );
    refused(
        "switch",
        &["--all", "--mechanism", "pipe"],
        &["--all", "--mechanism"],
    );
    refused("switch", &["--events", "0"], &["--events"]);
    refused(
        "switch",
        &["--events", "10", "--duration", "1s"],
        &["--events", "--duration"],
    );
    refused("switch", &["--priority", "1"], &["--priority", "1"]);
    refused(
        "switch",
        &["--policy", "deadline"],
        &["--policy deadline", "fifo, rr or other"],
    );
    refused(
        "switch",
        &["--policy", "other", "--priority", "10"],
        &["--priority 10", "fifo or rr"],
    );
    refused(
        "switch",
        &["--cpu", "9999"],
        &["--cpu", "9999", "not online"],
    );
    refused("switch", &["--inject-every", "5"], &["--inject-delay"]);
    refused("switch", &["--load", "smoke"], &["--load", "smoke"]);
}

#[test]
fn bad_noise_input_is_refused() {
    refused("noise", &["--cpus", "4095"], &["--cpus", "not online"]);
    refused("noise", &["--threshold", "1"], &["--threshold", "unit"]);
    refused(
        "noise",
        &["--runtime", "2s", "--period", "1s"],
        &["--runtime 2s", "longer than the --period 1s"],
    );
    refused(
        "noise",
        &["--window", "950ms"],
        &["--window", "longer than the --runtime"],
    );
    refused(
        "noise",
        &["--threshold", "10ms", "--window", "10ms"],
        &["--threshold", "shorter than the --window"],
    );
    refused("noise", &["--policy", "idle"], &["--policy idle"]);
    refused(
        "noise",
        &["--window", "50us"],
        &["--window 50us", "shorter than 100us"],
    );
    refused("noise", &["--sysctl", "nokey"], &["--sysctl"]);
}

fn series<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no series {name} in {}", result["series"]))
}

fn count(series: &Value, key: &str) -> u64 {
    series[key].as_u64().unwrap()
}

fn measure(state: &Path, probe: &str, args: &[&str]) -> (Value, String) {
    let json = state.join(format!("{probe}.json"));
    let out = common::run(
        common::rtlab(state)
            .args(["measure", probe])
            .args(args)
            .arg("--json")
            .arg(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (common::read_json(&json).expect("a result file"), stdout)
}

#[test]
fn switch_measures_every_mechanism_stores_and_compares() {
    require_realtime!();
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let db = state.join("r.db");
    let db = db.to_str().unwrap();
    let (result, stdout) = measure(
        state,
        "switch",
        &["--all", "--events", "300", "--rate", "2khz", "--db", db],
    );
    assert_eq!(result["probe"], "switch");
    assert_eq!(result["status"], "complete");
    assert_eq!(result["series"].as_array().unwrap().len(), 18);
    for mechanism in [
        "futex",
        "pthread-mutex",
        "pthread-cond",
        "posix-sem",
        "sysv-sem",
        "pipe",
        "eventfd",
        "mq",
        "signal",
    ] {
        let interrupt = series(&result, &format!("{mechanism}.interrupt"));
        let switch = series(&result, &format!("{mechanism}.switch"));
        assert_eq!(interrupt["metric"], "interrupt_latency");
        assert_eq!(switch["metric"], "switch_latency");
        // Every event is accounted for in both series.
        assert_eq!(
            count(interrupt, "samples") + count(interrupt, "missed"),
            300
        );
        assert_eq!(count(switch, "samples") + count(switch, "missed"), 300);
        assert!(count(switch, "samples") > 0, "{mechanism}");
        // Table 1's row.
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(mechanism) && l.contains(" 300 ") && l.contains('±')),
            "{mechanism} row missing in:\n{stdout}"
        );
    }
    assert!(stdout.contains("interrupt latency and switch to the released task"));

    // Stored, shown, exported and compared like any run.
    let id = result["id"].as_str().unwrap();
    let out = common::run(common::rtlab(state).args(["show", id, "--db", db]));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && shown.contains("pthread-cond"),
        "{shown}"
    );
    let out = common::run(common::rtlab(state).args(["export", id, "--format", "csv", "--db", db]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("futex.switch"));
    let (again, _) = measure(
        state,
        "switch",
        &[
            "--mechanism",
            "futex,pipe",
            "--events",
            "300",
            "--rate",
            "2khz",
            "--db",
            db,
        ],
    );
    let out = common::run(common::rtlab(state).args([
        "compare",
        id,
        again["id"].as_str().unwrap(),
        "--db",
        db,
    ]));
    let compared = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{compared}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        compared.contains("futex.switch") && compared.contains("pipe.interrupt"),
        "{compared}"
    );
}

#[test]
fn switch_injected_release_delay_shows_in_the_switch_series_only() {
    require_realtime!();
    let _alone = one_at_a_time();
    for placement in [&[][..], &["--process", "--cross-cpu"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            // 2100 deadlines: at least 2000 releases even if the host
            // steals a few, so at least 40 of them are delayed.
            "--events",
            "2100",
            "--rate",
            "1khz",
            "--inject-delay",
            "300us",
            "--inject-every",
            "50",
            "--no-store",
        ];
        let samples = dir.path().join("samples.csv");
        args.extend_from_slice(&["--samples", samples.to_str().unwrap()]);
        args.extend_from_slice(placement);
        let (result, _) = measure(dir.path(), "switch", &args);
        // Per event (the deadline's time t_ns is shared by its two
        // samples): the delayed releases are late in the switch series and
        // on time in the interrupt series of the same event. A host spike
        // may land on a few of them; it cannot make 40 of them look so.
        let mut interrupt_at = std::collections::HashMap::new();
        let mut switch_at = Vec::new();
        for line in std::fs::read_to_string(&samples).unwrap().lines().skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let (t, latency): (u64, u64) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
            match fields[0] {
                "futex.interrupt" => {
                    interrupt_at.insert(t, latency);
                }
                "futex.switch" => switch_at.push((t, latency)),
                other => panic!("unexpected series {other}"),
            }
        }
        let delayed: Vec<u64> = switch_at
            .iter()
            .filter(|(_, latency)| *latency >= 300_000)
            .map(|(t, _)| *t)
            .collect();
        let clean = delayed
            .iter()
            .filter(|t| interrupt_at.get(*t).is_some_and(|l| *l < 300_000))
            .count();
        assert!(
            delayed.len() >= 40,
            "{placement:?}: only {} switch samples >= 300 µs",
            delayed.len()
        );
        assert!(
            clean >= 36,
            "{placement:?}: only {clean} of {} delayed switches had an on-time interrupt",
            delayed.len()
        );
        let switch = series(&result, "futex.switch");
        assert_eq!(common::samples_at_least(switch, 300), delayed.len() as u64);
        assert_eq!(result["config"]["inject"]["every"], 50);
    }
}

#[test]
fn noise_attributes_a_preempting_thread_and_runs_under_load() {
    require_realtime!();
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    // A FIFO 99 thread on CPU 1 spinning 2 ms every 100 ms (the helper
    // sleeps 100 ms between stalls); rtlab spins at FIFO 90 beside it.
    let stalls = common::inject_stalls(
        1,
        std::time::Duration::from_millis(2),
        std::time::Duration::from_millis(100),
        30,
    );
    let (result, stdout) = measure(
        dir.path(),
        "noise",
        &[
            "--cpus",
            "1",
            "--duration",
            "3s",
            "--load",
            "net",
            "--no-store",
        ],
    );
    stalls.join().unwrap();
    assert_eq!(result["probe"], "noise");
    let cpu = &result["noise"]["cpus"][0];
    let sources = cpu["sources"].as_array().unwrap();
    let preempted = sources
        .iter()
        .find(|s| s["source"] == "preempted")
        .unwrap_or_else(|| panic!("no preempted row in {stdout}"));
    // 900 ms of every second is measured: about 26 of the 30 stalls fall
    // inside; some straddle a window edge, and kernel threads preempt too.
    let events = preempted["events"].as_u64().unwrap();
    assert!(
        (18..=80).contains(&events),
        "preempted events {events}:\n{stdout}"
    );
    assert!(
        preempted["max_ns"].as_u64().unwrap() >= 1_900_000,
        "{stdout}"
    );
    assert!(cpu["noise_ns"].as_u64().unwrap() >= preempted["total_ns"].as_u64().unwrap());
    assert_eq!(result["loads"][0]["name"], "net");
    assert!(
        stdout.contains("preempted") && stdout.contains("counted"),
        "{stdout}"
    );
}

/// The disk's completion interrupt line and the CPU the kernel delivers it
/// to (the busiest `-req`/nvme/ahci line of /proc/interrupts).
fn disk_interrupt() -> Option<(String, usize)> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let mut best: Option<(u64, String)> = None;
    for line in text.lines().skip(1) {
        let Some((number, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        if number.parse::<u32>().is_err()
            || !["-req", "nvme", "ahci", "ata_piix"]
                .iter()
                .any(|d| rest.contains(d))
        {
            continue;
        }
        let total: u64 = rest
            .split_whitespace()
            .map_while(|w| w.parse::<u64>().ok())
            .sum();
        if best.as_ref().is_none_or(|(t, _)| total > *t) {
            best = Some((total, number.to_string()));
        }
    }
    let (_, number) = best?;
    let cpus =
        std::fs::read_to_string(format!("/proc/irq/{number}/effective_affinity_list")).ok()?;
    let cpu = cpus.trim().split([',', '-']).next()?.parse().ok()?;
    Some((number, cpu))
}

/// Counted occurrences of the disk's interrupt and of the BLOCK softirq.
fn disk_rows(result: &Value, irq: &str) -> u64 {
    result["noise"]["cpus"][0]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let name = s["source"].as_str().unwrap();
            name == "softirq:BLOCK" || name.starts_with(&format!("irq:{irq} "))
        })
        .map(|s| s["counted"].as_u64().unwrap())
        .sum()
}

#[test]
fn noise_interrupt_rows_rise_under_disk_load() {
    require_realtime!();
    let _alone = one_at_a_time();
    let Some((irq, cpu)) = disk_interrupt() else {
        common::skip("no disk interrupt line (virtio -req, nvme, ahci) in /proc/interrupts");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cpu = cpu.to_string();
    let args = ["--cpus", &cpu, "--duration", "3s", "--no-store"];
    let (idle, _) = measure(dir.path(), "noise", &args);
    let (loaded, stdout) = measure(
        dir.path(),
        "noise",
        &[&args[..], &["--load", "io"]].concat(),
    );
    let (before, after) = (disk_rows(&idle, &irq), disk_rows(&loaded, &irq));
    assert!(
        after >= 50 && after >= 5 * (before + 1),
        "irq {irq} + softirq:BLOCK on CPU {cpu}: {before} idle, {after} under io:\n{stdout}"
    );
}

// `--pacing rt-tests`: bad combinations refused naming the flag; a run
// counts every cycle in both series and records its pacing; a stall of
// known size on the CPU and a delay injected on the release path show.

#[test]
fn bad_pacing_input_is_refused() {
    refused(
        "switch",
        &["--pacing", "cyclic"],
        &["--pacing", "cyclic", "grid, rt-tests"],
    );
    // The default mechanism, futex, has no rt-tests tool.
    refused(
        "switch",
        &["--pacing", "rt-tests"],
        &["--pacing", "`futex` has no rt-tests counterpart", "pmqtest"],
    );
    refused(
        "switch",
        &["--pacing", "rt-tests", "--mechanism", "mq,pipe"],
        &["--pacing", "`pipe`"],
    );
    refused(
        "switch",
        &["--pacing", "rt-tests", "--mechanism", "mq", "--process"],
        &["--process", "threads"],
    );
}

/// `rtlab measure switch --pacing rt-tests ARGS` on the last CPU.
fn paced(state: &Path, args: &[&str]) -> Value {
    let json = state.join("paced.json");
    let cpu = common::last_cpu().to_string();
    let out = common::run(
        common::rtlab(state)
            .args(["measure", "switch", "--pacing", "rt-tests", "--cpu", &cpu])
            .args(["--no-store", "--quiet", "--json"])
            .arg(&json)
            .args(args),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::read_json(&json).expect("a result file")
}

#[test]
fn a_paced_run_counts_every_cycle_and_records_its_pacing() {
    require_realtime!();
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let result = paced(
        dir.path(),
        &[
            "--mechanism",
            "pthread-mutex,mq,signal,sysv-sem",
            "--interval",
            "500us",
            "--events",
            "200",
        ],
    );
    assert_eq!(result["status"], "complete");
    assert_eq!(result["config"]["pacing"], "rt-tests");
    for mechanism in ["pthread-mutex", "mq", "signal", "sysv-sem"] {
        for kind in ["interrupt", "switch"] {
            let s = series(&result, &format!("{mechanism}.{kind}"));
            // Nothing is ever late in this pacing: every cycle is a sample.
            assert_eq!(
                (count(s, "samples"), count(s, "missed")),
                (200, 0),
                "{mechanism}.{kind}"
            );
        }
        // Both threads at --priority (default 90), as the tools' one pair.
        let switch = series(&result, &format!("{mechanism}.switch"));
        assert_eq!(switch["thread"]["requested"]["priority"], 90);
    }
}

#[test]
fn stalls_and_injected_delays_show_in_a_paced_run() {
    require_realtime!();
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    // 10 stalls of 3 ms every 150 ms on the run's CPU, from about 1 s on
    // (once the run, about 2.5 s of measuring, has started).
    let stalls = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(800));
        let cpu = common::last_cpu();
        common::inject_stalls(
            cpu,
            Duration::from_millis(3),
            Duration::from_millis(150),
            10,
        )
        .join()
        .unwrap()
    });
    let result = paced(
        dir.path(),
        &[
            "--mechanism",
            "mq",
            "--interval",
            "1ms",
            "--events",
            "2500",
            "--inject-delay",
            "200us",
            "--inject-every",
            "100",
        ],
    );
    let made = stalls.join().unwrap();
    let interrupt = series(&result, "mq.interrupt");
    let switch = series(&result, "mq.switch");
    // 25 releases delayed (every 100th of 2500): each sample >= the spin.
    assert!(common::samples_at_least(switch, 200) >= 25, "{switch}");
    // A 3 ms stall in the receiver's 1 ms sleep wakes it at least 2 ms
    // late; in a hand-off it delays the switch by 3 ms. Only a stall that
    // starts in the few µs between the receiver's wake-up and the
    // sender's next stamp shows in neither (as in the tools).
    let seen = common::samples_at_least(interrupt, 2000) + common::samples_at_least(switch, 2000);
    assert!(
        seen + 1 >= u64::from(made),
        "{made} stalls, {seen} samples >= 2 ms: {interrupt}"
    );
}
