//! `rtlab traffic replay`'s sender through the probe interface, on
//! loopback: every datagram arrives in order with its planned size and a
//! stamp naming its sequence and exact planned instant; loops and speed;
//! the kernel's transmit stamps; an injected stall in the departure series
//! at exactly its packets; refused sends counted, never fatal; `plan run`
//! of a traffic plan. No absolute timing is asserted: counts, exact
//! planned values and accounting identities.

mod common;

use common::{fifo_allowed, run, skip};
use rtlab_core::result::TrafficReport;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_exec::dispatch::{
    start_with, DispatchConfig, Extras, Guard, Inject, Lead, Modules, Repeat,
};
use rtlab_exec::module::{Module, Slot};
use rtlab_exec::plan::Event;
use rtlab_exec::traffic::format::{Stamp, STAMP_BYTES};
use rtlab_exec::traffic::replay::{ReplayConfig, TxStamps, TxTime};
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The size of packet `i` of the test plans: one under the stamp's 24
/// bytes, the others of several sizes.
fn size_of(i: usize) -> u16 {
    [10u16, 24, 100, 1400, 60][i % 5]
}

/// A text traffic plan: `n` packets `spacing_us` apart alternating over
/// two flows (neither with a dest: the tests give `to`), `header` lines
/// (e.g. `repeat 100ms`) before the events.
fn write_plan(path: &Path, header: &str, n: usize, spacing_us: u64) {
    let mut text = format!("rtlab-plan 1\nmodule a traffic\nmodule b traffic\n{header}events\n");
    for i in 0..n {
        let size = size_of(i).to_le_bytes();
        text += &format!(
            "{}us {} hex:{:02x}{:02x}\n",
            i as u64 * spacing_us,
            if i % 2 == 0 { "a" } else { "b" },
            size[0],
            size[1]
        );
    }
    std::fs::write(path, text).unwrap();
}

fn config(plan: &Path, to: SocketAddr) -> ReplayConfig {
    ReplayConfig {
        plan: plan.to_path_buf(),
        to: Some(to),
        speed: 1.0,
        repeat: Repeat::Times(1),
        cpu: None,
        sched: SchedParams {
            policy: Policy::Fifo,
            priority: 80,
            deadline: None,
        },
        guard: Guard::Fixed(200_000),
        // The tests count: nothing is skipped unless a test asks for it.
        skip_after_ns: 10_000_000_000,
        late_after_ns: 5_000,
        stamp: true,
        stream: 0x5eed_0001,
        timestamps: TxStamps::Kernel,
        txtime: TxTime::Off,
        inject: None,
    }
}

/// A loopback receiver taking `expected` datagrams (or what came before
/// 10 s without one).
fn receiver(expected: usize) -> (SocketAddr, JoinHandle<Vec<Vec<u8>>>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let bytes: libc::c_int = 8 << 20;
    // SAFETY: an int option; a bigger buffer so no datagram is dropped.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const libc::c_int).cast(),
            4,
        )
    };
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while got.len() < expected {
            match socket.recv(&mut buf) {
                Ok(n) => got.push(buf[..n].to_vec()),
                Err(_) => break,
            }
        }
        got
    });
    (addr, thread)
}

fn traffic(outcome: &ProbeOutcome) -> &TrafficReport {
    outcome
        .traffic
        .as_ref()
        .expect("a replay reports its traffic")
}

/// Each datagram has its planned size; a long one starts with a stamp of
/// sequence k and planned instant `planned(k)`, a short one is zeros.
fn check_datagrams(got: &[Vec<u8>], n: usize, stream: u32, planned: impl Fn(usize) -> u64) {
    assert_eq!(got.len(), n, "datagrams received");
    for (k, datagram) in got.iter().enumerate() {
        let size = usize::from(size_of(k));
        assert_eq!(datagram.len(), size, "datagram {k}");
        if size < STAMP_BYTES {
            assert!(datagram.iter().all(|&b| b == 0), "datagram {k}: zeros");
            continue;
        }
        let stamp = Stamp::read(datagram).unwrap_or_else(|| panic!("datagram {k}: no stamp"));
        assert_eq!(
            stamp,
            Stamp {
                stream,
                sequence: k as u64,
                planned_ns: planned(k),
            }
        );
        assert!(datagram[STAMP_BYTES..].iter().all(|&b| b == 0));
    }
}

#[test]
fn every_datagram_arrives_in_order_with_its_size_and_exact_stamp() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    let n = 200;
    write_plan(&plan, "", n, 500);
    let (to, rx) = receiver(n);
    let cfg = config(&plan, to);
    let outcome = run(&cfg, None);
    check_datagrams(&rx.join().unwrap(), n, cfg.stream, |k| k as u64 * 500_000);
    let t = traffic(&outcome);
    let c = &t.counts;
    assert_eq!((c.planned, c.sent, c.skipped, c.failed), (200, 200, 0, 0));
    let sizes: u64 = (0..n).map(|i| u64::from(size_of(i))).sum();
    assert_eq!(t.bytes, sizes);
    assert_eq!(t.role, "replay");
    assert_eq!(t.stream.as_deref(), Some("5eed0001"));
    assert_eq!(t.planned_pps, Some(2_000.0));
    let names: Vec<&str> = outcome.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["dispatch", "departure", "gap"]);
    assert_eq!(outcome.series[1].stats.samples, 200);
    assert_eq!(outcome.series[2].stats.samples, 199);
    assert_eq!(t.accuracy[0].samples, 200);
    assert_eq!(t.accuracy[1].samples, 199);
    // Kernel transmit stamps on lo.
    if c.without_kernel_stamp == c.sent {
        return skip("this kernel gave no software transmit stamp on lo");
    }
    assert_eq!(t.timestamps, "kernel-tx-software");
    assert_eq!(c.without_kernel_stamp, 0);
}

#[test]
fn a_loop_of_three_at_double_speed_numbers_every_packet_and_halves_the_instants() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    let n = 50;
    // Repetitions 100 ms apart, played at 2: 50 ms apart, offsets halved.
    write_plan(&plan, "repeat 100ms\n", n, 1_000);
    let (to, rx) = receiver(3 * n);
    let mut cfg = config(&plan, to);
    cfg.repeat = Repeat::Times(3);
    cfg.speed = 2.0;
    cfg.timestamps = TxStamps::User;
    let outcome = run(&cfg, None);
    let got = rx.join().unwrap();
    // Sizes follow the plan's index, stamps the index over repetitions.
    assert_eq!(got.len(), 3 * n);
    for (k, datagram) in got.iter().enumerate() {
        assert_eq!(datagram.len(), usize::from(size_of(k % n)), "datagram {k}");
        if let Some(stamp) = Stamp::read(datagram) {
            let (r, i) = ((k / n) as u64, (k % n) as u64);
            assert_eq!(stamp.sequence, k as u64);
            assert_eq!(stamp.planned_ns, r * 50_000_000 + i * 500_000);
        } else {
            assert!(usize::from(size_of(k % n)) < STAMP_BYTES);
        }
    }
    let t = traffic(&outcome);
    assert_eq!(t.timestamps, "user-space");
    assert_eq!((t.counts.planned, t.counts.sent), (150, 150));
}

#[test]
fn an_injected_stall_shows_in_the_departures_of_exactly_those_packets() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    let n = 100;
    write_plan(&plan, "", n, 3_000);
    let (to, rx) = receiver(n);
    let mut cfg = config(&plan, to);
    let stall = 1_000_000;
    cfg.inject = Some(Inject {
        delay_ns: stall,
        every: 20,
    });
    let samples = dir.path().join("samples.csv");
    let outcome = run(&cfg, Some(&samples));
    assert_eq!(rx.join().unwrap().len(), n);
    let text = std::fs::read_to_string(&samples).unwrap();
    // The departure series: (planned instant, error) in sequence order.
    let departures: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("departure,"))
        .map(|l| {
            let (at, error) = l.split_once(',').unwrap();
            (at.parse().unwrap(), error.parse().unwrap())
        })
        .collect();
    assert_eq!(departures.len(), n);
    // Packets 20, 40, ... (1-based) were stalled: sequence 19, 39, ...
    for (k, &(at, error)) in departures.iter().enumerate() {
        assert_eq!(at, k as u64 * 3_000_000);
        if (k + 1) % 20 == 0 {
            assert!(error >= stall, "packet {k} was stalled 1 ms: {error}");
        }
    }
    // The top five departures are the stalled ones (unless the host
    // stalled others as long: then a few more, never fewer).
    let stalled = departures.iter().filter(|d| d.1 >= stall).count();
    assert!((5..=10).contains(&stalled), "{stalled} departures ≥ 1 ms");
    let t = traffic(&outcome);
    assert!(t.counts.late >= 5);
    assert!(t.accuracy[0].max_ns >= stall as i64);
}

#[test]
fn refused_sends_are_counted_and_never_fatal() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    let n = 40;
    write_plan(&plan, "", n, 1_000);
    // A port nobody listens on: each send draws an ICMP port unreachable,
    // which makes a later send on the connected socket ECONNREFUSED.
    let closed = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let outcome = run(&config(&plan, closed), None);
    let c = traffic(&outcome).counts;
    assert!(c.failed > 0, "{c:?}");
    assert_eq!(c.sent + c.skipped + c.failed, c.planned);
    assert_eq!(c.planned, 40);
    // Every packet reached is a departure or a miss.
    let departure = &outcome.series[1].stats;
    assert_eq!(departure.missed, c.skipped + c.failed);
    assert_eq!(departure.samples + departure.missed, c.planned);
    assert!(outcome.failure.is_none());
    assert!(outcome.warnings.iter().any(|w| w.contains("events failed")));
    // The kernel counts only the datagrams it accepted (OPT_ID): the
    // pairing survives the refused sends.
    if c.sent > c.without_kernel_stamp {
        assert_eq!(c.without_kernel_stamp, 0, "{c:?}");
    }
}

#[test]
fn a_plan_that_is_not_traffic_or_has_nowhere_to_go_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let start = |cfg: &ReplayConfig| {
        cfg.start(Start {
            stop: Arc::new(AtomicBool::new(false)),
            samples_csv: None,
            journal: &journal,
        })
        .err()
        .expect("refused")
        .to_string()
    };
    let marks = dir.path().join("marks.plan");
    std::fs::write(&marks, "rtlab-plan 1\nmodule m mark\nevents\n0us m\n").unwrap();
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let e = start(&config(&marks, to));
    assert!(
        e.contains("not a traffic plan") && e.contains("module m"),
        "{e}"
    );
    let plan = dir.path().join("p.plan");
    write_plan(&plan, "", 4, 1_000);
    let mut nowhere = config(&plan, to);
    nowhere.to = None;
    let e = start(&nowhere);
    assert!(e.contains("flow a has no dest="), "{e}");
}

#[test]
fn plan_run_of_a_traffic_plan_delivers_every_datagram() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let n = 30;
    let (to, rx) = receiver(n);
    let mut text = format!("rtlab-plan 1\nmodule a traffic dest={to}\nevents\n");
    for i in 0..n {
        let size = size_of(i).to_le_bytes();
        text += &format!("{}us a hex:{:02x}{:02x}\n", i * 1_000, size[0], size[1]);
    }
    let plan = dir.path().join("p.plan");
    std::fs::write(&plan, text).unwrap();
    // The replay's own settings as the dispatcher takes them: no --to,
    // the flow's dest= instead.
    let unused: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let cfg: DispatchConfig = config(&plan, unused).dispatch();
    let outcome = run(&cfg, None);
    let got = rx.join().unwrap();
    let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
    let planned: Vec<usize> = (0..n).map(|i| usize::from(size_of(i))).collect();
    assert_eq!(sizes, planned);
    assert!(got.iter().all(|d| d.iter().all(|&b| b == 0)));
    assert_eq!(outcome.series[0].stats.samples, n as u64);
    assert!(outcome.traffic.is_none());
}

#[test]
fn a_loop_without_end_stops_when_told_and_accounts_for_what_it_reached() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    write_plan(&plan, "", 10, 1_000);
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = config(&plan, sink.local_addr().unwrap());
    cfg.repeat = Repeat::Forever;
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let stop = Arc::new(AtomicBool::new(false));
    let run = cfg
        .start(Start {
            stop: Arc::clone(&stop),
            samples_csv: None,
            journal: &journal,
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!run.is_finished(), "a loop without end ran to an end");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    while !run.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let outcome = run.finish().unwrap();
    assert!(outcome.stopped_early);
    let c = traffic(&outcome).counts;
    assert!(c.sent > 10, "{c:?}");
    assert_eq!(c.planned, c.sent + c.skipped + c.failed);
}

/// Records when each event fired and what the dispatcher said of it.
struct Recording(Arc<Mutex<Vec<(u64, Slot)>>>);

impl Module for Recording {
    fn fire(&mut self, _event: &Event, _now_ns: u64) {
        unreachable!("the dispatcher calls fire_at");
    }
    fn fire_at(&mut self, _event: &Event, slot: Slot, now_ns: u64) {
        self.0.lock().unwrap().push((now_ns, slot));
    }
    fn counts(&self) -> (u64, u64) {
        (0, 0)
    }
}

#[test]
fn a_lead_fires_each_event_ahead_and_tells_the_module_its_planned_instant() {
    if !fifo_allowed() {
        return skip("SCHED_FIFO not allowed: run as root or with CAP_SYS_NICE");
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.plan");
    // Four events 100 ms apart, fired 50 ms ahead (SO_TXTIME's delta):
    // only a 50 ms stall of the host could make one fire after its instant.
    write_plan(&plan, "", 4, 100_000);
    let fired = Arc::new(Mutex::new(Vec::new()));
    let modules: Modules = vec![
        ("a".into(), Box::new(Recording(Arc::clone(&fired)))),
        ("b".into(), Box::new(Recording(Arc::clone(&fired)))),
    ];
    let extras = Extras {
        modules: Some(modules),
        lead: Lead::Fixed(50_000_000),
        ..Extras::default()
    };
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let run = start_with(
        &config(&plan, to).dispatch(),
        Arc::new(AtomicBool::new(false)),
        None,
        extras,
    )
    .unwrap();
    assert_eq!(run.lead_ns(), 50_000_000);
    let run: Box<dyn ProbeRun> = Box::new(run);
    while !run.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let outcome = run.finish().unwrap();
    let fired = fired.lock().unwrap();
    let slots: Vec<(u64, u64)> = fired.iter().map(|(_, s)| (s.index, s.planned_ns)).collect();
    assert_eq!(
        slots,
        [(0, 0), (1, 100_000_000), (2, 200_000_000), (3, 300_000_000)]
    );
    for (now, slot) in fired.iter() {
        assert!(
            *now < slot.start_ns + slot.planned_ns,
            "fired after its instant"
        );
    }
    // The dispatch series: each event at its planned instant.
    assert_eq!(outcome.series[0].stats.samples, 4);
}
