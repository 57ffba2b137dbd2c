//! The net probe against servers on loopback and in namespaces: exact
//! counts, loss and late replies, authentication, the server's drops.

use rtlab_core::result::NetReport;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_probe::net::auth::Key;
use rtlab_probe::net::server::{Inject, RateLimit, ServeConfig, Server};
use rtlab_probe::net::wire::{Exchange, Kind};
use rtlab_probe::net::{Mode, NetConfig, OwnServer, Placement, Transport};
use rtlab_probe::{Probe, ProbeOutcome, Start};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

fn other() -> SchedParams {
    SchedParams {
        policy: Policy::Other,
        priority: 0,
        deadline: None,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The tests' server: exchange mode on loopback, any free port.
fn serve_config(transport: Transport) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        transport,
        mode: Mode::Exchange,
        max_size: 1472,
        rate_limit: Some(RateLimit::DEFAULT),
        key: None,
        inject: None,
        max_clients: 4,
        // Above max_clients: most test clients come from 127.0.0.1.
        max_per_source: 8,
        frame_timeout_ns: 60_000_000_000,
        idle_timeout_ns: 60_000_000_000,
    }
}

/// A server on loopback in a thread of the test.
struct TestServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counters: Arc<rtlab_probe::net::server::Counters>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    fn start(
        transport: Transport,
        mode: Mode,
        key: Option<Key>,
        inject: Option<Inject>,
    ) -> TestServer {
        TestServer::serve(ServeConfig {
            key,
            inject,
            mode,
            ..serve_config(transport)
        })
    }

    fn serve(config: ServeConfig) -> TestServer {
        let server = Server::bind(config).unwrap();
        let addr = server.local_addr();
        let counters = server.counters();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || server.run(&flag, None, &mut |_| {}).unwrap());
        TestServer {
            addr,
            stop,
            counters,
            thread: Some(thread),
        }
    }

    /// Stops the server and returns its counters: final, so they add up
    /// (a snapshot of a busy server may fall between two of them).
    fn stopped(mut self) -> rtlab_core::result::NetServerCounters {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.counters.snapshot()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn config(target: Option<SocketAddr>, transport: Transport, messages: u64) -> NetConfig {
    NetConfig {
        target,
        transport,
        mode: Mode::Exchange,
        interval_ns: 1_000_000,
        messages,
        round_trips: 4,
        payload: 64,
        // Far above any host stall: the tests count, they do not time.
        timeout_ns: 2_000_000_000,
        key_file: None,
        client: Placement {
            cpu: None,
            sched: other(),
        },
        server: target.is_none().then_some(OwnServer {
            placement: Placement {
                cpu: None,
                sched: other(),
            },
            inject_delay_ns: None,
            inject_every: 100,
        }),
    }
}

fn run(config: NetConfig) -> (ProbeOutcome, NetReport) {
    run_with_stop(config, Arc::new(AtomicBool::new(false)))
}

fn run_with_stop(config: NetConfig, stop: Arc<AtomicBool>) -> (ProbeOutcome, NetReport) {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        dir.path().join("state"),
    )));
    let run = config
        .start(Start {
            stop,
            samples_csv: None,
            journal: &journal,
        })
        .unwrap();
    while !run.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut outcome = run.finish().unwrap();
    let net = outcome.net.take().unwrap();
    (outcome, net)
}

fn assert_exact(outcome: &ProbeOutcome, net: &NetReport, n: u64) {
    let m = &net.messages;
    assert_eq!(
        (m.planned, m.sent, m.completed, m.lost, m.unsent),
        (n, n, n, 0, 0),
        "{m:?}"
    );
    assert_eq!(
        (
            m.duplicate_replies,
            m.late_replies,
            m.bad_replies,
            m.reordered_replies
        ),
        (0, 0, 0, 0),
        "{m:?}"
    );
    for series in &outcome.series {
        assert_eq!(series.stats.samples, n, "{}", series.name);
        assert_eq!(series.stats.missed, 0, "{}", series.name);
    }
    assert_eq!(net.timeline.len() as u64, n);
    assert!(net.timeline_complete);
    for (i, row) in net.timeline.iter().enumerate() {
        assert_eq!(row.0, i as u64);
        assert_eq!(row.1, i as u64 * net.interval_ns, "scheduled on the grid");
        assert!(row.3.is_some());
    }
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
}

#[test]
fn udp_and_tcp_on_loopback_count_every_message() {
    for transport in [Transport::Udp, Transport::Tcp] {
        let server = TestServer::start(transport, Mode::Exchange, None, None);
        let (outcome, net) = run(config(Some(server.addr), transport, 300));
        assert_exact(&outcome, &net, 300);
        let counters = server.counters.snapshot();
        assert_eq!(
            counters.received,
            300 * 4,
            "{transport}: four steps per message"
        );
        assert_eq!(counters.replied, 300 * 4);
    }
}

#[test]
fn own_server_in_two_namespaces_answers_1000_messages_exactly() {
    if !is_root() {
        // Past the harness's capture: a skip must be seen.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\nskipped: network namespaces need root (CAP_SYS_ADMIN)"
        );
        return;
    }
    for transport in [Transport::Udp, Transport::Tcp] {
        let (outcome, net) = run(config(None, transport, 1000));
        assert_exact(&outcome, &net, 1000);
        assert_eq!(net.target, "10.77.0.2:7700");
        let server = net.server.expect("rtlab's own server reports its counters");
        assert_eq!(
            (server.received, server.replied),
            (4000, 4000),
            "{transport}"
        );
        assert_eq!(
            server.malformed + server.truncated + server.oversized + server.bad_auth,
            0
        );
    }
}

#[test]
fn replies_after_the_timeout_are_lost_messages_and_late_replies() {
    // Every 50th message is held 40 ms; the timeout is 10 ms. The held one
    // and those queued behind it time out, and their replies come late.
    let inject = Inject {
        delay_ns: 40_000_000,
        every: 50,
    };
    let server = TestServer::start(Transport::Udp, Mode::Exchange, None, Some(inject));
    let mut cfg = config(Some(server.addr), Transport::Udp, 200);
    cfg.round_trips = 1;
    cfg.timeout_ns = 10_000_000;
    let (outcome, net) = run(cfg);
    let m = &net.messages;
    assert_eq!(m.sent, 200);
    assert_eq!(m.completed + m.lost, 200, "{m:?}");
    assert!(m.lost >= 4, "at least the 4 held messages are lost: {m:?}");
    assert!(m.late_replies >= 1, "{m:?}");
    for held in [0u64, 50, 100, 150] {
        assert_eq!(
            net.timeline[held as usize].3, None,
            "message {held} was held 40 ms"
        );
    }
    let response = &outcome.series[0];
    assert_eq!(response.stats.samples + response.stats.missed, 200);
    assert_eq!(response.stats.missed, m.lost);
}

#[test]
fn with_a_key_signed_messages_pass_and_unsigned_ones_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(
        &key_file,
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    )
    .unwrap();
    let (key, _) = Key::load(&key_file).unwrap();
    let server = TestServer::start(Transport::Udp, Mode::Exchange, Some(key), None);
    let mut signed = config(Some(server.addr), Transport::Udp, 50);
    signed.key_file = Some(key_file.clone());
    let (outcome, net) = run(signed);
    assert_exact(&outcome, &net, 50);

    let mut unsigned = config(Some(server.addr), Transport::Udp, 20);
    unsigned.timeout_ns = 20_000_000;
    let (outcome, net) = run(unsigned);
    assert_eq!(net.messages.lost, 20);
    assert!(outcome
        .failure
        .unwrap()
        .contains("no message got its reply"));
    assert_eq!(server.counters.snapshot().bad_auth, 20);
}

#[test]
fn no_server_is_a_failure_that_says_so() {
    // A port nothing listens on (bound then closed).
    let addr = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cfg = config(Some(addr), Transport::Udp, 10);
    cfg.timeout_ns = 20_000_000;
    let (outcome, net) = run(cfg);
    assert_eq!(net.messages.lost, 10);
    let failure = outcome.failure.unwrap();
    assert!(
        failure.contains(&addr.to_string()) && failure.contains("listening"),
        "{failure}"
    );

    let tcp = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let journal = Arc::new(Mutex::new(rtlab_core::journal::Journal::new(
        tempfile::tempdir().unwrap().path().join("state"),
    )));
    let err = config(Some(tcp), Transport::Tcp, 10)
        .start(Start {
            stop: Arc::new(AtomicBool::new(false)),
            samples_csv: None,
            journal: &journal,
        })
        .err()
        .expect("nothing listens there");
    assert!(
        err.to_string()
            .contains(&format!("cannot reach {tcp} over tcp")),
        "{err}"
    );
}

#[test]
fn a_stop_ends_the_schedule_and_counts_the_unsent() {
    let server = TestServer::start(Transport::Udp, Mode::Exchange, None, None);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let (outcome, net) = run_with_stop(config(Some(server.addr), Transport::Udp, 100_000), stop);
    stopper.join().unwrap();
    let m = &net.messages;
    assert!(outcome.stopped_early);
    assert!(m.unsent > 0 && m.sent > 0, "{m:?}");
    assert_eq!(m.sent + m.unsent, 100_000);
    assert_eq!(
        m.completed + m.lost,
        m.sent,
        "every sent message ends one way or the other"
    );
}

#[test]
fn echo_and_sockperf_modes_work_against_rtlab_s_server() {
    for transport in [Transport::Udp, Transport::Tcp] {
        for mode in [Mode::Echo, Mode::Sockperf] {
            let server = TestServer::start(transport, mode, None, None);
            let mut cfg = config(Some(server.addr), transport, 100);
            cfg.mode = mode;
            let (outcome, net) = run(cfg);
            assert_exact(&outcome, &net, 100);
        }
    }
}

#[test]
fn reordered_and_duplicate_replies_are_counted_not_mistaken() {
    // A server of the test's own that acknowledges requests in pairs, the
    // second first and twice: every pair gives one duplicate and one
    // reordered reply (the duplicate comes before the pair's last reply, so
    // the run cannot end before it is seen).
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        for _ in 0..50 {
            let (n, from) = socket.recv_from(&mut buf).unwrap();
            let mut first = buf[..n].to_vec();
            let (n, _) = socket.recv_from(&mut buf).unwrap();
            let mut second = buf[..n].to_vec();
            first[5] = 2; // acknowledge
            second[5] = 2;
            socket.send_to(&second, from).unwrap();
            socket.send_to(&second, from).unwrap();
            socket.send_to(&first, from).unwrap();
        }
    });
    let mut cfg = config(Some(addr), Transport::Udp, 100);
    cfg.round_trips = 1;
    let (outcome, net) = run(cfg);
    server.join().unwrap();
    let m = &net.messages;
    assert_eq!((m.completed, m.lost), (100, 0), "{m:?}");
    assert_eq!(m.reordered_replies, 50, "{m:?}");
    assert_eq!(m.duplicate_replies, 50, "{m:?}");
    assert_eq!(outcome.series[0].stats.samples, 100);
}

#[test]
fn a_tcp_echo_server_survives_writes_larger_than_its_max_size() {
    use std::io::{Read, Write};
    let server = TestServer::start(Transport::Tcp, Mode::Echo, None, None);
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    let sent: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    stream.write_all(&sent).unwrap();
    let mut back = vec![0u8; sent.len()];
    stream.read_exact(&mut back).unwrap();
    assert_eq!(
        back, sent,
        "echoed byte for byte, in reads of at most --max-size"
    );
    // And it still serves a probe.
    let mut cfg = config(Some(server.addr), Transport::Tcp, 50);
    cfg.mode = Mode::Echo;
    let (outcome, net) = run(cfg);
    assert_exact(&outcome, &net, 50);
}

#[test]
fn a_tcp_server_sending_frames_of_another_size_fails_the_run_without_a_panic() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hostile = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0u8; 64];
        stream.read_exact(&mut request).unwrap();
        // An acknowledge that announces 70 000 bytes.
        request[5] = 2;
        request[24..28].copy_from_slice(&70_000u32.to_be_bytes());
        let _ = stream.write_all(&request);
        std::thread::sleep(std::time::Duration::from_millis(200));
    });
    let (outcome, net) = run(config(Some(addr), Transport::Tcp, 20));
    hostile.join().unwrap();
    let failure = outcome.failure.expect("the stream cannot be followed");
    assert!(failure.contains("70000 bytes"), "{failure}");
    assert_eq!(
        net.messages.completed + net.messages.lost,
        net.messages.sent
    );
}

#[test]
fn idle_tcp_connections_give_their_place_up_to_a_real_client() {
    let server = TestServer::start(Transport::Tcp, Mode::Exchange, None, None);
    let idle: Vec<_> = (0..4)
        .map(|_| std::net::TcpStream::connect(server.addr).unwrap())
        .collect();
    // Idle for over a second: evictable (the server takes at most 4 clients).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (outcome, net) = run(config(Some(server.addr), Transport::Tcp, 50));
    assert_exact(&outcome, &net, 50);
    assert!(server.counters.snapshot().connections_dropped >= 1);
    drop(idle);
}

#[test]
fn rtlab_s_own_server_never_rate_limits_its_probe() {
    if !is_root() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\nskipped: network namespaces need root (CAP_SYS_ADMIN)"
        );
        return;
    }
    // 50 000 requests/s, half the default limit of a server for strangers;
    // over a run the default burst would be long spent.
    let mut cfg = config(None, Transport::Udp, 20_000);
    cfg.interval_ns = 20_000;
    cfg.round_trips = 1;
    let (_, net) = run(cfg);
    let server = net.server.unwrap();
    assert_eq!(server.rate_limited, 0);
    let m = &net.messages;
    assert_eq!(m.completed + m.lost, m.sent);
}

/// The bucket the server's rate limit used to share among sources: FNV-1a
/// of the address bytes, mod 1024 (before each source had its own).
fn old_rate_bucket(ip: Ipv4Addr) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in ip.octets() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash % 1024
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    // Bounded: the condition is a count, the bound only ends a broken run.
    for _ in 0..1000 {
        if done() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("gave up waiting for {what}");
}

#[test]
fn a_flood_from_an_address_that_shared_127_0_0_1_s_rate_bucket_starves_no_probe() {
    // The first address of 127.0.0.0/8 (all loopback) that the old table
    // put in 127.0.0.1's bucket: its flood used to take 127.0.0.1's tokens.
    let victim = Ipv4Addr::LOCALHOST;
    let flooder = (u32::from(victim) + 1..u32::from(Ipv4Addr::new(127, 255, 255, 254)))
        .map(Ipv4Addr::from)
        .find(|&ip| old_rate_bucket(ip) == old_rate_bucket(victim))
        .expect("2^24 addresses over 1024 buckets");
    // The probe sends 500 requests/s, well within the limit; the flood
    // goes far above it.
    let server = TestServer::serve(ServeConfig {
        rate_limit: Some(RateLimit {
            per_second: 2000,
            burst: 1000,
        }),
        ..serve_config(Transport::Udp)
    });
    let socket = std::net::UdpSocket::bind((flooder, 0)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = Arc::clone(&stop);
    let target = server.addr;
    let flood = std::thread::spawn(move || {
        let mut request = vec![0u8; 64];
        Exchange {
            kind: Kind::Request,
            step: 0,
            steps: 1,
            id: 1,
            sent_ns: 0,
            len: 64,
            tagged: false,
        }
        .write(&mut request);
        let mut sent = 0u64;
        // Up to 10 000 requests/s, in bursts that the server's receive
        // buffer takes whole; bounded in case the test stops early.
        for _ in 0..60_000 {
            if flooding.load(Ordering::Relaxed) {
                break;
            }
            for _ in 0..10 {
                if socket.send_to(&request, target).is_ok() {
                    sent += 1;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        sent
    });
    let counters = Arc::clone(&server.counters);
    wait_for("the flood to exceed its limit", || {
        counters.snapshot().rate_limited > 0
    });
    let mut cfg = config(Some(server.addr), Transport::Udp, 300);
    cfg.round_trips = 1;
    cfg.interval_ns = 2_000_000;
    let (outcome, net) = run(cfg);
    let limited_during_probe = counters.snapshot().rate_limited;
    stop.store(true, Ordering::Relaxed);
    let flooded = flood.join().unwrap();
    assert_exact(&outcome, &net, 300);
    let c = server.counters.snapshot();
    assert!(
        c.rate_limited >= limited_during_probe && limited_during_probe > 0,
        "the flood from {flooder} went above its limit: {c:?}"
    );
    assert!(c.rate_limited < flooded, "{c:?}, {flooded} flooded");
    assert_counters_add_up(&c);
}

/// A TCP connection from `from` (any 127.0.0.X: all of 127.0.0.0/8 is
/// loopback) to `to`; std cannot bind a stream before it connects.
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        panic!("an IPv4 server")
    };
    let address = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: socket(2); the stream owns the descriptor from here on.
    let stream = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    };
    let (local, remote) = (address(from, 0), address(*to.ip(), to.port()));
    // SAFETY: valid addresses of the given length, on our own descriptor.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
        let bound = libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len);
        assert_eq!(bound, 0, "bind {from}: {}", std::io::Error::last_os_error());
        let connected = libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len);
        assert_eq!(
            connected,
            0,
            "connect {to}: {}",
            std::io::Error::last_os_error()
        );
    }
    stream
}

/// An exchange request header announcing `len` bytes.
fn request(id: u64, len: u32) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    Exchange {
        kind: Kind::Request,
        step: 0,
        steps: 1,
        id,
        sent_ns: 0,
        len,
        tagged: false,
    }
    .write(&mut buf);
    buf
}

/// One whole request and its acknowledge over `stream`.
fn round_trip(stream: &mut TcpStream, id: u64) {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(&request(id, 64)).unwrap();
    let mut reply = [0u8; 64];
    stream.read_exact(&mut reply).unwrap();
    let ack = Exchange::read(&reply).unwrap();
    assert_eq!((ack.kind, ack.id), (Kind::Ack, id));
}

/// Whether the server has closed `stream` by now (without waiting).
fn closed_now(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

/// Waits for the server to close `stream`: false if it has not in 20 s
/// (far beyond any deadline the tests set, far below the 60 s ones).
fn closed_within_20s(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn a_frame_not_finished_in_time_closes_its_connection_however_busy_and_so_does_silence() {
    let server = TestServer::serve(ServeConfig {
        frame_timeout_ns: 300_000_000,
        idle_timeout_ns: 2_000_000_000,
        ..serve_config(Transport::Tcp)
    });
    // A client sending whole frames (every 100 ms for 3 s) is never idle.
    let addr = server.addr;
    let steady = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        for id in 0..30 {
            round_trip(&mut stream, id);
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    });
    let mut silent = TcpStream::connect(server.addr).unwrap();
    // A slowloris: a byte of a header every 100 ms, never the whole frame;
    // the idle timeout never fires on it, the frame timeout must.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    let header = request(1, 1472);
    let mut closed = false;
    for &byte in &header[..31] {
        if slow.write_all(&[byte]).is_err() || closed_now(&mut slow) {
            closed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        closed || closed_within_20s(&mut slow),
        "a frame begun and never finished holds its connection"
    );
    assert!(closed_within_20s(&mut silent), "a silent connection stays");
    steady.join().unwrap();
    let c = server.counters.snapshot();
    assert_eq!(
        (c.connections_timed_out, c.connections_dropped),
        (2, 2),
        "{c:?}"
    );
    assert_eq!((c.received, c.replied), (30, 30), "{c:?}");
}

#[test]
fn one_source_holds_at_most_max_per_source_connections_and_others_are_not_refused() {
    let server = TestServer::serve(ServeConfig {
        max_clients: 8,
        max_per_source: 3,
        ..serve_config(Transport::Tcp)
    });
    let mut held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    for (id, stream) in held.iter_mut().enumerate() {
        round_trip(stream, id as u64);
    }
    let mut fourth = TcpStream::connect(server.addr).unwrap();
    assert!(
        closed_within_20s(&mut fourth),
        "the 4th connection from 127.0.0.1 is closed"
    );
    let c = server.counters.snapshot();
    assert_eq!(
        (
            c.connections,
            c.connections_refused_per_source,
            c.connections_dropped
        ),
        (4, 1, 1),
        "{c:?}"
    );
    // Another source is not refused, and the three held are served on.
    let mut other = connect_from(Ipv4Addr::new(127, 0, 0, 2), server.addr);
    round_trip(&mut other, 10);
    for (id, stream) in held.iter_mut().enumerate() {
        round_trip(stream, 20 + id as u64);
    }
    assert_eq!(server.counters.snapshot().connections_refused_per_source, 1);
}

#[test]
fn a_full_server_gives_a_stalled_connection_s_place_to_a_client_that_sends_whole_frames() {
    // Four slowloris connections fill the server (4 clients at most); the
    // frame timeout is far off, so only eviction can let the probe in.
    let server = TestServer::serve(serve_config(Transport::Tcp));
    let stop = Arc::new(AtomicBool::new(false));
    let trickling = Arc::clone(&stop);
    let addr = server.addr;
    let slowloris = std::thread::spawn(move || {
        let mut streams: Vec<Option<TcpStream>> = (2..6)
            .map(|x| Some(connect_from(Ipv4Addr::new(127, 0, 0, x), addr)))
            .collect();
        let header = request(1, 1472);
        // A byte each every 200 ms: never idle for the second that would
        // make a connection give its place up before.
        for &byte in &header[..31] {
            if trickling.load(Ordering::Relaxed) {
                break;
            }
            for slot in streams.iter_mut() {
                if let Some(stream) = slot {
                    if stream.write_all(&[byte]).is_err() || closed_now(stream) {
                        *slot = None;
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        streams
            .iter_mut()
            .map(|slot| slot.as_mut().is_none_or(closed_now))
            .filter(|&closed| closed)
            .count()
    });
    let counters = Arc::clone(&server.counters);
    wait_for("the four slowloris connections", || {
        counters.snapshot().connections == 4
    });
    let (outcome, net) = run(config(Some(server.addr), Transport::Tcp, 50));
    stop.store(true, Ordering::Relaxed);
    let evicted = slowloris.join().unwrap();
    assert_exact(&outcome, &net, 50);
    let c = server.counters.snapshot();
    assert_eq!((c.connections, c.connections_dropped), (5, 1), "{c:?}");
    assert_eq!(c.connections_timed_out, 0, "{c:?}");
    assert_eq!(evicted, 1, "one slowloris connection gave its place up");
}

/// Every request received is replied, unanswered or dropped for one reason.
fn assert_counters_add_up(c: &rtlab_core::result::NetServerCounters) {
    assert_eq!(
        c.received,
        c.replied
            + c.unanswered
            + c.malformed
            + c.truncated
            + c.oversized
            + c.bad_auth
            + c.rate_limited
            + c.send_errors,
        "{c:?}"
    );
}

#[test]
fn a_tcp_client_that_never_reads_its_replies_is_closed_and_every_frame_is_counted() {
    let server = TestServer::serve(ServeConfig {
        rate_limit: None,
        ..serve_config(Transport::Tcp)
    });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let frame = request(1, 64);
    // The replies fill the sockets' buffers and the server's 16 frames,
    // then the server gives up on the client; bounded in case it never does.
    let mut closed = false;
    for _ in 0..2_000_000 {
        if stream.write_all(&frame).is_err() {
            closed = true;
            break;
        }
    }
    assert!(closed, "a client that never reads is closed");
    let c = server.counters.snapshot();
    assert_eq!((c.connections, c.connections_dropped), (1, 1), "{c:?}");
    assert_eq!(c.send_errors, 1, "the reply that found no room: {c:?}");
    assert_counters_add_up(&c);
}

/// Opens connections from 127.0.0.2-201 in turn until `stop` (or 20 000 of
/// them), `between` apart; each writes `first` when it connects and is
/// kept until `keep` newer ones are open (then closed); returns how many.
fn churn(
    to: SocketAddr,
    first: Vec<u8>,
    keep: usize,
    between: std::time::Duration,
    stop: Arc<AtomicBool>,
) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut open = std::collections::VecDeque::new();
        let mut opened = 0;
        while opened < 20_000 && !stop.load(Ordering::Relaxed) {
            if open.len() >= keep {
                drop(open.pop_front());
            }
            let from = Ipv4Addr::new(127, 0, 0, 2 + (opened % 200) as u8);
            let mut stream = connect_from(from, to);
            opened += 1;
            let _ = stream.write_all(&first);
            open.push_back(stream);
            std::thread::sleep(between);
        }
        opened
    })
}

#[test]
fn a_client_whose_frames_arrive_in_pieces_keeps_its_place_while_newcomers_churn() {
    // A probe over a slow link: each frame arrives in two pieces 20 ms
    // apart, a frame in progress half the time. Newcomers from 200 other
    // sources, each sending a whole frame and the first byte of another,
    // arrive every millisecond at a server of 4 slots.
    let server = TestServer::serve(serve_config(Transport::Tcp));
    let mut probe = TcpStream::connect(server.addr).unwrap();
    round_trip(&mut probe, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let mut first = request(1, 64);
    first.push(request(2, 64)[0]);
    let attack = churn(
        server.addr,
        first,
        8,
        std::time::Duration::from_millis(1),
        Arc::clone(&stop),
    );
    let counters = Arc::clone(&server.counters);
    wait_for("newcomers on a full server", || {
        counters.snapshot().connections_dropped > 10
    });
    let mut answered = 0;
    for id in 1..=50 {
        let frame = request(id, 1472);
        let sent = probe.write_all(&frame[..700]).is_ok() && {
            std::thread::sleep(std::time::Duration::from_millis(20));
            probe.write_all(&frame[700..]).is_ok()
        };
        let mut reply = vec![0u8; 1472];
        if !sent || probe.read_exact(&mut reply).is_err() {
            break;
        }
        answered += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let opened = attack.join().unwrap();
    let c = server.stopped();
    assert_eq!(
        answered, 50,
        "the slow client was closed: {c:?}, {opened} newcomers"
    );
    assert_counters_add_up(&c);
}

#[test]
fn newcomers_that_never_send_cannot_keep_a_probe_out_of_a_full_server() {
    // Four slots, held by connections from other sources that send nothing
    // and are replaced every 100 ms (none silent for the second that made
    // a connection give its place up): the probe must still get in.
    let server = TestServer::serve(serve_config(Transport::Tcp));
    let stop = Arc::new(AtomicBool::new(false));
    let attack = churn(
        server.addr,
        Vec::new(),
        4,
        std::time::Duration::from_millis(25),
        Arc::clone(&stop),
    );
    let counters = Arc::clone(&server.counters);
    wait_for("the slots to be held", || {
        counters.snapshot().connections > 8
    });
    let (outcome, net) = run(config(Some(server.addr), Transport::Tcp, 50));
    stop.store(true, Ordering::Relaxed);
    attack.join().unwrap();
    assert_exact(&outcome, &net, 50);
    assert_counters_add_up(&server.stopped());
}

#[test]
fn a_client_that_streams_frames_without_pause_does_not_hold_the_server_from_others() {
    // Over its rate, its frames cost the server little and get no reply:
    // it writes 1024 frames at a time, as fast as the socket takes them
    // (and reads what replies it gets). The probe's 200 requests are
    // within its burst.
    let server = TestServer::serve(ServeConfig {
        rate_limit: Some(RateLimit {
            per_second: 1000,
            burst: 1000,
        }),
        ..serve_config(Transport::Tcp)
    });
    let stop = Arc::new(AtomicBool::new(false));
    let streaming = Arc::clone(&stop);
    let mut stream = connect_from(Ipv4Addr::new(127, 0, 0, 2), server.addr);
    let mut replies = stream.try_clone().unwrap();
    // Ends when the connection does.
    std::thread::spawn(move || while matches!(replies.read(&mut [0u8; 4096]), Ok(1..)) {});
    let flood = std::thread::spawn(move || {
        let chunk: Vec<u8> = (0..1024).flat_map(|id| request(id, 64)).collect();
        // Bounded: 64 GiB at most.
        for _ in 0..1_000_000 {
            if streaming.load(Ordering::Relaxed) || stream.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let counters = Arc::clone(&server.counters);
    wait_for("the stream to go over its rate", || {
        counters.snapshot().rate_limited > 100_000
    });
    let (outcome, net) = run(config(Some(server.addr), Transport::Tcp, 50));
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    assert_exact(&outcome, &net, 50);
    assert_counters_add_up(&server.stopped());
}
