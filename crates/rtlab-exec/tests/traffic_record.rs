//! `rtlab traffic record`'s receiver on lo: plain sockets send stamped
//! and unstamped datagrams with known sizes, gaps, duplicates and swaps;
//! the counts, the plan written and the series must say exactly what was
//! sent. No absolute timing is asserted: counts, identities, lower bounds
//! of injected stalls, and that every run ends.
//!
//! These promote a thread and send timed traffic: run them under the
//! machine-wide lock (`flock /tmp/rtlab-host.lock cargo test -p rtlab-exec
//! --test traffic_record`).

mod common;

use rtlab_exec::plan;
use rtlab_exec::traffic::format::{digest, Stamp, TrafficData};
use rtlab_exec::traffic::record::{RecordConfig, RecordRun};
use rtlab_exec::traffic::sink::{FlowKey, PlanSink};
use rtlab_probe::{ProbeOutcome, ProbeRun, Start};
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn config(output: Option<&Path>) -> RecordConfig {
    RecordConfig {
        output: output.map(Path::to_path_buf),
        idle_ns: Some(400_000_000),
        ..RecordConfig::new("127.0.0.1:0".parse().unwrap())
    }
}

fn wait_finished(run: &RecordRun) {
    common::eventually("the recording's end", || run.is_finished());
}

/// Records with `config` while `send` sends to the bound address; the
/// outcome once the run ended by itself (idle or count).
fn record(config: RecordConfig, csv: Option<&Path>, send: impl FnOnce(SocketAddr)) -> ProbeOutcome {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let samples_csv =
        csv.map(|p| Box::new(std::fs::File::create(p).unwrap()) as Box<dyn Write + Send>);
    let run = RecordRun::start(
        &config,
        Start {
            stop: Arc::new(AtomicBool::new(false)),
            samples_csv,
            journal: &journal,
        },
    )
    .unwrap();
    send(run.local_addr());
    wait_finished(&run);
    Box::new(run).finish().unwrap()
}

fn stamped(stream: u32, sequence: u64, planned_ns: u64, size: usize) -> Vec<u8> {
    let mut payload = vec![0u8; size];
    for (i, byte) in payload.iter_mut().enumerate() {
        *byte = (i as u64 ^ sequence) as u8;
    }
    assert!(Stamp {
        stream,
        sequence,
        planned_ns
    }
    .write(&mut payload));
    payload
}

fn pause() {
    std::thread::sleep(Duration::from_micros(200));
}

/// What one flow's events in a plan are, in order.
fn flow_events(plan: &plan::LoadedPlan, module: u16) -> Vec<TrafficData> {
    (0..plan.events.len())
        .map(|i| plan.events.event(i))
        .filter(|e| e.module == module)
        .map(|e| TrafficData::decode(&e.data).unwrap())
        .collect()
}

#[test]
fn a_gap_a_duplicate_a_swap_and_unstamped_datagrams_are_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got.plan");
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent_a = Vec::new();
    let mut sent_b = Vec::new();
    let mut listen = None;
    let outcome = record(config(Some(&out)), None, |to| {
        listen = Some(to);
        // Sequences 0..200 on flow a: 50 never sent, 60 twice, 100 and
        // 101 swapped; every tenth, 7 unstamped datagrams on flow b.
        let mut order: Vec<u64> = (0..200).filter(|&s| s != 50).collect();
        let at = order.iter().position(|&s| s == 60).unwrap();
        order.insert(at, 60);
        let at = order.iter().position(|&s| s == 100).unwrap();
        order.swap(at, at + 1);
        for (i, &s) in order.iter().enumerate() {
            let payload = stamped(0xfeed, s, s * 200_000, 24 + (s as usize * 7) % 1400);
            a.send_to(&payload, to).unwrap();
            sent_a.push(TrafficData {
                size: payload.len() as u16,
                digest: digest(&payload),
            });
            if i % 10 == 0 {
                let plain = vec![b'x'; 7 + i % 50];
                b.send_to(&plain, to).unwrap();
                sent_b.push(TrafficData {
                    size: plain.len() as u16,
                    digest: digest(&plain),
                });
            }
            pause();
        }
    });
    let report = outcome.traffic.expect("a traffic report");
    let c = report.counts;
    let received = sent_a.len() as u64 + sent_b.len() as u64;
    assert_eq!(
        (c.received, c.lost, c.duplicates, c.reordered, c.unstamped),
        (received, 1, 1, 1, sent_b.len() as u64),
        "{report:?}"
    );
    assert_eq!(c.planned, 200);
    assert_eq!(report.role, "record");
    assert_eq!(report.timestamps, "kernel-rx");
    assert_eq!(report.stream.as_deref(), Some("0000feed"));
    let bytes: u64 = sent_a
        .iter()
        .chain(&sent_b)
        .map(|d| u64::from(d.size))
        .sum();
    assert_eq!(report.bytes, bytes);
    assert!(!outcome.stopped_early && outcome.failure.is_none());
    // One interarrival per datagram after the first; one arrival per
    // first copy (the reference's is 0) and one gap per first copy after
    // the first.
    let samples: Vec<u64> = outcome.series.iter().map(|s| s.stats.samples).collect();
    assert_eq!(samples, vec![received - 1, 199, 198]);

    let plan = plan::load(&out).unwrap();
    assert_eq!(plan.events.len(), received);
    let modules = &plan.header.modules;
    assert_eq!(modules.len(), 2);
    let listen = listen.unwrap().to_string();
    assert_eq!(
        modules[0].setting("src"),
        Some(a.local_addr().unwrap().to_string().as_str())
    );
    assert_eq!(
        modules[1].setting("src"),
        Some(b.local_addr().unwrap().to_string().as_str())
    );
    assert!(modules
        .iter()
        .all(|m| m.setting("dest") == Some(listen.as_str())));
    assert_eq!(flow_events(&plan, 0), sent_a);
    assert_eq!(flow_events(&plan, 1), sent_b);
    let offsets: Vec<u64> = (0..plan.events.len())
        .map(|i| plan.events.event(i).offset_ns)
        .collect();
    assert_eq!(offsets[0], 0);
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn count_stops_at_exactly_n() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got.plan");
    let outcome = record(
        RecordConfig {
            count: Some(40),
            idle_ns: None,
            ..config(Some(&out))
        },
        None,
        |to| {
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            for s in 0..100 {
                tx.send_to(&stamped(1, s, s * 100_000, 64), to).unwrap();
                pause();
            }
        },
    );
    assert_eq!(outcome.traffic.unwrap().counts.received, 40);
    assert!(!outcome.stopped_early);
    assert_eq!(plan::load(&out).unwrap().events.len(), 40);
}

#[test]
fn a_stop_keeps_what_came_and_writes_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got.plan");
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let stop = Arc::new(AtomicBool::new(false));
    let run = RecordRun::start(
        &RecordConfig {
            idle_ns: None,
            ..config(Some(&out))
        },
        Start {
            stop: Arc::clone(&stop),
            samples_csv: None,
            journal: &journal,
        },
    )
    .unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for s in 0..30 {
        tx.send_to(&stamped(1, s, s * 100_000, 100), run.local_addr())
            .unwrap();
    }
    // Until all 30 went through (29 gaps), then the "signal".
    common::eventually("all 30 datagrams' arrival", || run.live()[0].samples >= 29);
    assert!(!run.is_finished(), "no limit: only the stop ends it");
    stop.store(true, Ordering::Relaxed);
    wait_finished(&run);
    let outcome = Box::new(run).finish().unwrap();
    assert!(outcome.stopped_early);
    assert_eq!(outcome.traffic.unwrap().counts.received, 30);
    assert_eq!(plan::load(&out).unwrap().events.len(), 30);
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn hostile_stamps_never_panic_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got.plan");
    let mut before = 0;
    let outcome = record(config(Some(&out)), None, |to| {
        before = vm_hwm_kib();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..20_000u64 {
            let (stream, sequence, planned) = match i % 4 {
                0 => (1, 1 << 63, u64::MAX),
                1 => (1, 0, 0),
                2 => (1, u64::MAX - i, u64::MAX - i),
                // A new stream every time.
                _ => (i as u32, i, i),
            };
            tx.send_to(&stamped(stream, sequence, planned, 32), to)
                .unwrap();
            if i % 16 == 0 {
                pause();
            }
        }
    });
    let grown_kib = vm_hwm_kib().saturating_sub(before);
    eprintln!("VmHWM grew by {grown_kib} KiB over 20 000 hostile datagrams");
    let report = outcome.traffic.unwrap();
    let c = report.counts;
    assert_eq!(c.received, 20_000, "{:?}", outcome.warnings);
    assert_eq!(c.unstamped, 5_000);
    // 2^63 and 0 fall below the window once u64::MAX - i moved it up:
    // too old to tell, counted reordered and said.
    assert_eq!(c.reordered, 15_000 - 2, "{c:?}");
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.contains("below the highest")));
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.contains("another stream")));
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    // The rings were allocated at the start; what grows is the series'
    // bins and the plan's buffers, nothing sized by a peer's numbers.
    assert!(grown_kib < 64 * 1024, "VmHWM grew by {grown_kib} KiB");
    assert_eq!(plan::load(&out).unwrap().events.len(), 20_000);
}

#[test]
fn an_injected_stall_shows_in_arrival_gap_at_that_packet() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("samples.csv");
    const STALL_NS: u64 = 20_000_000;
    const STALLED: usize = 30;
    let outcome = record(config(None), Some(&csv), |to| {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in 0..50u64 {
            if s as usize == STALLED {
                std::thread::sleep(Duration::from_nanos(STALL_NS));
            }
            tx.send_to(&stamped(9, s, s * 1_000_000, 64), to).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    assert_eq!(outcome.traffic.unwrap().counts.received, 50);
    let text = std::fs::read_to_string(&csv).unwrap();
    let gaps: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("arrival_gap,"))
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(gaps.len(), 49);
    // The gap before packet k is the (k-1)-th gap sample. The sender slept
    // at least the stall there, and at least 1 ms before every packet: the
    // gap exceeds its planned 1 ms by at least the stall.
    assert!(gaps[STALLED - 1] >= STALL_NS, "{}", gaps[STALLED - 1]);
}

#[test]
fn against_the_plan_sent_lost_counts_what_never_came_after_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let sent = dir.path().join("sent.plan");
    // 20 datagrams 500 µs apart; the plan's instants, not the stamps',
    // are the reference (the stamps below say 0 for every packet).
    let mut sink = PlanSink::create(&sent).unwrap();
    let flow = sink
        .flow(FlowKey {
            src: None,
            dest: None,
        })
        .unwrap();
    for i in 0..20u64 {
        let data = TrafficData {
            size: 64,
            digest: 0,
        };
        sink.push(i * 500_000, flow, data).unwrap();
    }
    sink.finish(|_| {}).unwrap();
    let outcome = record(
        RecordConfig {
            against: Some(sent),
            ..config(None)
        },
        None,
        |to| {
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            for s in 0..15 {
                // 3 is never sent, but its time passes.
                if s != 3 {
                    tx.send_to(&stamped(3, s, 0, 64), to).unwrap();
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        },
    );
    let report = outcome.traffic.unwrap();
    let c = report.counts;
    // 3 and 15..20 never came.
    assert_eq!((c.planned, c.received, c.lost), (20, 14, 6), "{c:?}");
    // The sender slept at least 500 µs per planned packet, and lo stamps
    // a datagram in its send call (netdev_tstamp_prequeue): no gap is
    // shorter than planned, whatever the stamps said.
    let gap = report
        .accuracy
        .iter()
        .find(|a| a.series == "arrival_gap")
        .unwrap();
    assert_eq!(gap.samples, 13);
    assert!(gap.min_ns >= 0, "{gap:?}");
}
