//! Every large sample explained: causes of known kind injected on the
//! probe's CPU must come out in the witness's attribution of the run's top
//! spikes (`RunResult.witness`, docs/runs.md "Spikes explained"). Counts
//! and names only: no timing is asserted.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; the call affects this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// One measurement at a time: each test's causes must be the only ones.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// The CPU the probe measures on, and another one for the injectors.
fn cpus() -> Option<(usize, usize)> {
    let probe = common::last_cpu();
    (probe > 0).then_some((probe, 0))
}

/// Measures the timer on `cpu` for `seconds` with the witness at 20 ms
/// while `inject` runs (it is given a stop flag), and returns the result.
fn measure_while(
    cpu: usize,
    seconds: u32,
    inject: impl FnOnce(Arc<AtomicBool>),
) -> serde_json::Value {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut child = common::start_timer(
        dir.path(),
        &[
            "--cpus",
            &cpu.to_string(),
            "--interval",
            "500us",
            "--duration",
            &format!("{seconds}s"),
            "--witness-period",
            "20ms",
        ],
        &json,
    );
    let stop = Arc::new(AtomicBool::new(false));
    inject(Arc::clone(&stop));
    assert!(child.wait().unwrap().success());
    stop.store(true, Ordering::SeqCst);
    common::read_json(&json).unwrap()
}

fn spikes(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    let witness = &doc["witness"];
    assert!(witness.is_object(), "no witness in the result");
    assert!(witness["windows"].as_u64().unwrap() > 10, "{witness}");
    let spikes = witness["spikes"].as_array().unwrap().clone();
    let top: usize = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["top"].as_array().unwrap().len())
        .sum();
    assert_eq!(spikes.len(), top, "every top spike is explained");
    spikes
}

fn count_of(list: &serde_json::Value, name_starts: &str) -> u64 {
    list.as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["name"].as_str().unwrap().starts_with(name_starts))
        .map(|c| c["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_fifo_spinner_above_the_probe_is_named_at_its_spikes() {
    require_realtime!();
    let Some((cpu, _)) = cpus() else {
        return common::skip("one CPU only");
    };
    let name = format!("rtl-hog-{}", std::process::id() % 100_000);
    let spun = Arc::new(AtomicU64::new(0));
    let doc = measure_while(cpu, 4, |stop| {
        let spun = Arc::clone(&spun);
        std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                pin(cpu);
                let param = libc::sched_param { sched_priority: 95 };
                // SAFETY: valid param for the calling thread.
                assert_eq!(
                    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) },
                    0
                );
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(200));
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(3) {
                        std::hint::spin_loop();
                    }
                    spun.fetch_add(1, Ordering::SeqCst);
                }
            })
            .unwrap();
    });
    let spun = spun.load(Ordering::SeqCst);
    let spikes = spikes(&doc);
    // The spinner's stalls are 3 ms; the spikes of 2 ms and more are its
    // (or the host's: this VM has multi-ms stalls of its own).
    let large: Vec<&serde_json::Value> = spikes
        .iter()
        .filter(|s| s["latency_ns"].as_u64().unwrap() >= 2_000_000)
        .collect();
    let named = large
        .iter()
        .filter(|s| {
            s["verdict"]
                .as_str()
                .unwrap()
                .starts_with(&format!("RT thread {name} (fifo 95) ran"))
        })
        .count();
    eprintln!(
        "spun {spun}, {} spikes of 2 ms+, {named} named after {name}",
        large.len()
    );
    for s in &spikes {
        eprintln!(
            "  {} µs: {}",
            s["latency_ns"].as_u64().unwrap() / 1000,
            s["verdict"]
        );
    }
    assert!(spun >= 5, "the spinner ran {spun} times");
    assert!(
        !large.is_empty(),
        "no spike of 2 ms or more under a 3 ms spinner"
    );
    assert!(
        named * 2 > large.len(),
        "{named} of {} large spikes named after the spinner",
        large.len()
    );
    for s in &large {
        if s["verdict"].as_str().unwrap().contains(&name) {
            assert_eq!(s["rt_at_or_above"], true);
            assert_eq!(s["source"], "proc");
        }
    }
    show_names(&doc, &name);
}

/// `rtlab show` of the run lists its spikes with the spinner's name (and
/// `--spikes 0` none); the same run stored as an older rtlab stored it,
/// without a witness, shows as it did.
fn show_names(doc: &serde_json::Value, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let file = dir.path().join("run.json");
    let show = |extra: &[&str]| {
        std::fs::write(&file, doc.to_string()).unwrap();
        let out = common::run(
            common::rtlab(dir.path())
                .arg("import")
                .arg(&file)
                .arg("--new-id")
                .arg("--db")
                .arg(&db),
        );
        assert!(out.status.success());
        let out = common::run(
            common::rtlab(dir.path())
                .args(["show", "last"])
                .args(extra)
                .arg("--db")
                .arg(&db),
        );
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let text = show(&[]);
    assert!(text.contains("top spikes explained"), "{text}");
    assert!(
        text.contains(&format!("RT thread {name} (fifo 95) ran")),
        "{text}"
    );
    assert!(!show(&["--spikes", "0"]).contains("top spikes explained"));
    let mut older = doc.clone();
    older.as_object_mut().unwrap().remove("witness");
    let mut file_doc = older;
    file_doc["id"] = "older-run".into();
    let doc = file_doc;
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = common::run(
        common::rtlab(dir.path())
            .arg("import")
            .arg(&file)
            .arg("--db")
            .arg(&db),
    );
    assert!(out.status.success());
    let out = common::run(
        common::rtlab(dir.path())
            .args(["show", "older-run", "--db"])
            .arg(&db),
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("older-run") && !text.contains("top spikes explained"),
        "{text}"
    );
}

#[test]
fn no_witness_runs_without_one() {
    require_realtime!();
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = common::run(
        common::rtlab(dir.path())
            .args([
                "measure",
                "timer",
                "--quiet",
                "--cpus",
                "0",
                "--loops",
                "200",
                "--no-witness",
                "--json",
            ])
            .arg(&json),
    );
    assert!(out.status.success());
    let doc = common::read_json(&json).unwrap();
    assert_eq!(doc["status"], "complete");
    assert!(doc.get("witness").is_none(), "{}", doc["witness"]);
    // A bad period names its flag and changes nothing.
    common::assert_refused(
        &[
            "measure",
            "timer",
            "--loops",
            "10",
            "--witness-period",
            "1ms",
        ],
        &["--witness-period", "1ms", "out of range", "5ms"],
    );
}

/// Function-call IPIs at `cpu`: a thread of this process spins there
/// (SCHED_OTHER: the probe preempts it), so every expedited private
/// membarrier from `from` interrupts that CPU; `calls` counts them.
fn membarrier_storm(cpu: usize, from: usize, stop: Arc<AtomicBool>, calls: Arc<AtomicU64>) {
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    // SAFETY: membarrier takes plain integers.
    let registered =
        unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) };
    assert_eq!(registered, 0, "membarrier registration");
    let spin_stop = Arc::clone(&stop);
    std::thread::spawn(move || {
        pin(cpu);
        while !spin_stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    std::thread::spawn(move || {
        pin(from);
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: as above.
            unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) };
            calls.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// The function-call interrupts (`CAL`) of every CPU so far.
fn function_calls() -> Vec<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("CAL:"))
        .expect("x86 names them CAL");
    line.split_once(':')
        .unwrap()
        .1
        .split_whitespace()
        .map_while(|t| t.parse().ok())
        .collect()
}

#[test]
fn a_membarrier_storm_shows_as_function_call_interrupts() {
    require_realtime!();
    let Some((cpu, other)) = cpus() else {
        return common::skip("one CPU only");
    };
    let calls = Arc::new(AtomicU64::new(0));
    let mut during = (Vec::new(), Vec::new(), Duration::ZERO);
    let doc = measure_while(cpu, 3, |stop| {
        let before = function_calls();
        let started = Instant::now();
        membarrier_storm(cpu, other, stop, Arc::clone(&calls));
        std::thread::sleep(Duration::from_millis(2500));
        during = (before, function_calls(), started.elapsed());
    });
    // The rate the storm raised on each CPU, from the whole file: the
    // witness's windows around each spike must show the probe CPU's.
    let (before, after, took) = during;
    let rate = |c: usize| (after[c] - before[c]) as f64 / took.as_nanos() as f64;
    let (on_probe, on_other) = (rate(cpu), rate(other));
    eprintln!(
        "{} membarrier calls; CAL per ms: CPU {cpu} {:.0}, CPU {other} {:.0}",
        calls.load(Ordering::SeqCst),
        on_probe * 1e6,
        on_other * 1e6
    );
    assert!(
        on_probe > 4.0 * on_other,
        "the storm did not aim at CPU {cpu}"
    );
    let spikes = spikes(&doc);
    let mut with_storm = 0;
    for s in &spikes {
        let cal = count_of(&s["interrupts"], "irq:CAL");
        let stretch = s["to_ns"].as_u64().unwrap() - s["from_ns"].as_u64().unwrap();
        let expected = on_probe * stretch as f64;
        eprintln!(
            "  {} µs: CAL ×{cal} (the storm's rate: ~{expected:.0}) {}",
            s["latency_ns"].as_u64().unwrap() / 1000,
            s["verdict"]
        );
        if cal as f64 >= expected / 4.0 && cal >= 10 {
            with_storm += 1;
        }
    }
    assert!(
        with_storm * 2 > spikes.len(),
        "{with_storm} of {} spikes show the function-call interrupts",
        spikes.len()
    );
}

/// The numbered interrupt line that rises most on any CPU while `work`
/// runs, and that CPU: `(irq:N, cpu)`.
fn busiest_line_during(work: impl FnOnce()) -> Option<(String, usize)> {
    let read = || -> Vec<(String, Vec<u64>)> {
        let text = std::fs::read_to_string("/proc/interrupts").unwrap();
        text.lines()
            .skip(1)
            .filter_map(|l| {
                let (key, rest) = l.split_once(':')?;
                let key = key.trim();
                key.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
                let counts = rest
                    .split_whitespace()
                    .map_while(|t| t.parse::<u64>().ok())
                    .collect();
                Some((format!("irq:{key} "), counts))
            })
            .collect()
    };
    let before = read();
    work();
    let after = read();
    after
        .iter()
        .filter_map(|(key, counts)| {
            let old = &before.iter().find(|(k, _)| k == key)?.1;
            counts
                .iter()
                .zip(old)
                .enumerate()
                .map(|(cpu, (a, b))| (a.saturating_sub(*b), cpu))
                .max()
                .map(|(rise, cpu)| (rise, key.clone(), cpu))
        })
        .max()
        .filter(|(rise, _, _)| *rise >= 50)
        .map(|(_, key, cpu)| (key, cpu))
}

/// Writes `blocks` blocks of 4 KiB with O_DIRECT|O_DSYNC to `path`, each
/// reaching the disk (and its completion interrupt) before the next.
fn direct_writes(path: &Path, blocks: u32, stop: Option<&AtomicBool>) -> u32 {
    use std::os::unix::fs::FileExt;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
        .open(path)
        .unwrap();
    let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    // SAFETY: a valid non-zero layout; freed below.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: buf points at 4096 initialized bytes.
    let block = unsafe { std::slice::from_raw_parts(buf, 4096) };
    let mut written = 0;
    for n in 0..blocks {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            break;
        }
        file.write_all_at(block, u64::from(n % 256) * 4096).unwrap();
        written += 1;
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(buf, layout) };
    written
}

#[test]
fn disk_interrupts_show_as_the_disk_line() {
    require_realtime!();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("direct");
    // Which line the disk's completions raise, and on which CPU.
    let Some((line, cpu)) = busiest_line_during(|| {
        direct_writes(&file, 300, None);
    }) else {
        return common::skip("no interrupt line rose under O_DIRECT writes");
    };
    eprintln!("the disk interrupts on {line}at CPU {cpu}");
    let writes = Arc::new(AtomicU64::new(0));
    let doc = measure_while(cpu, 3, |stop| {
        let writes = Arc::clone(&writes);
        let file = file.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = direct_writes(&file, 64, Some(&stop));
                writes.fetch_add(u64::from(n), Ordering::Relaxed);
            }
        });
        std::thread::sleep(Duration::from_secs(3));
    });
    let spikes = spikes(&doc);
    let with_disk = spikes
        .iter()
        .filter(|s| count_of(&s["interrupts"], &line) > 0)
        .count();
    for s in &spikes {
        eprintln!(
            "  {} µs: {line}×{} {}",
            s["latency_ns"].as_u64().unwrap() / 1000,
            count_of(&s["interrupts"], &line),
            s["verdict"]
        );
    }
    let writes = writes.load(Ordering::SeqCst);
    eprintln!(
        "{writes} writes; {with_disk} of {} spikes show {line}",
        spikes.len()
    );
    assert!(writes > 100, "only {writes} writes");
    assert!(
        with_disk * 2 > spikes.len(),
        "{with_disk} of {} spikes show the disk's line {line}",
        spikes.len()
    );
}
