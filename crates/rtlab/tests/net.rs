//! `rtlab net serve` and `rtlab net probe` end to end: exact counts through
//! two namespaces, an injected server delay found at its message indices
//! while the schedule holds, bad datagrams from a raw socket dropped and
//! counted while a client is served, sockperf interworking, bad input.

mod common;

use common::{is_root, rtlab, run, skip};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A `rtlab net serve` process and the address it listens on.
struct Served {
    child: Child,
    addr: String,
    stdout: Option<BufReader<std::process::ChildStdout>>,
}

impl Served {
    // The child is killed and waited for by `Drop` once it is in a Served.
    #[allow(clippy::zombie_processes)]
    fn start(state: &Path, args: &[&str]) -> Served {
        let mut child = rtlab(state)
            .args(["net", "serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtlab starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.kill();
                let status = child.wait();
                panic!("the server ended before listening: {status:?}");
            }
            if let Some(rest) = line.split("listening on ").nth(1) {
                let addr = rest.split_whitespace().next().unwrap().to_string();
                // Keep draining stderr so the server never blocks on it.
                std::thread::spawn(move || for _ in stderr.lines() {});
                let stdout = child.stdout.take().map(BufReader::new);
                return Served {
                    child,
                    addr,
                    stdout,
                };
            }
        }
    }

    fn signal(&self, signal: i32) {
        common::signal(&self.child, signal);
    }

    /// The counters now (--json): SIGUSR1, and the line it prints.
    fn counters(&mut self) -> Value {
        self.signal(libc::SIGUSR1);
        let mut line = String::new();
        let stdout = self.stdout.as_mut().expect("stdout is read until stop");
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        let line: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(line["event"], "signal", "{line}");
        line["counters"].clone()
    }

    /// Stops the server and returns the counters it printed last (--json).
    fn stop(mut self) -> Value {
        self.signal(libc::SIGTERM);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the server exits 0 on SIGTERM: {status}");
        let stdout = self.stdout.take().unwrap();
        let last = stdout
            .lines()
            .map(Result::unwrap)
            .last()
            .expect("the server prints its counters at exit");
        let last: Value = serde_json::from_str(&last).unwrap();
        assert_eq!(last["event"], "exit", "{last}");
        last["counters"].clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn probe_json(state: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let out =
        run(rtlab(state)
            .args(["net", "probe"])
            .args(args)
            .args(["--json", "-", "--no-store"]));
    let json = serde_json::from_slice(&out.stdout).expect("--json - prints the result");
    (out.status.code(), json)
}

fn count(json: &Value, field: &str) -> u64 {
    json["net"]["messages"][field].as_u64().unwrap()
}

fn assert_every_message_answered(json: &Value, n: u64) {
    for field in ["planned", "sent", "completed"] {
        assert_eq!(
            count(json, field),
            n,
            "{field}: {}",
            json["net"]["messages"]
        );
    }
    for field in [
        "lost",
        "unsent",
        "late_replies",
        "duplicate_replies",
        "bad_replies",
        "reordered_replies",
    ] {
        assert_eq!(
            count(json, field),
            0,
            "{field}: {}",
            json["net"]["messages"]
        );
    }
    for series in json["series"].as_array().unwrap() {
        assert_eq!(series["samples"].as_u64(), Some(n), "{}", series["name"]);
        assert_eq!(series["missed"].as_u64(), Some(0), "{}", series["name"]);
    }
    assert_eq!(json["net"]["timeline"].as_array().unwrap().len() as u64, n);
}

#[test]
fn two_namespaces_answer_1000_messages_at_1ms_exactly_over_udp_and_tcp() {
    if !is_root() {
        skip("network namespaces need root (CAP_SYS_ADMIN)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for transport in ["--udp", "--tcp"] {
        let (code, json) = probe_json(
            &dir.path().join("state"),
            &["--netns", transport, "--interval", "1ms", "--count", "1000"],
        );
        assert_eq!(code, Some(0), "{transport}");
        assert_eq!(json["status"], "complete");
        assert_eq!(json["probe"], "net");
        assert_every_message_answered(&json, 1000);
        let server = &json["net"]["server"];
        assert_eq!(
            server["received"].as_u64(),
            Some(4000),
            "{transport}: 4 steps each"
        );
        assert_eq!(server["replied"].as_u64(), Some(4000));
        assert_eq!(json["net"]["target"], "10.77.0.2:7700");
    }
}

/// Rows of the `--samples` CSV: index, t_ns, send_lag_ns, response_ns.
fn timeline_csv(path: &Path) -> Vec<(u64, u64, u64, Option<u64>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("index,t_ns,send_lag_ns,response_ns,response_from_send_ns,lost")
    );
    let mut rows: Vec<_> = lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().ok(),
            )
        })
        .collect();
    rows.sort_unstable();
    rows
}

#[test]
fn an_injected_server_delay_shows_at_its_indices_and_the_schedule_holds() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // The held replies must not be starved past the timeout by the
    // real-time threads of tests running beside this one: the server runs
    // promoted where it may, and the timeout is far above the delay.
    let mut server_args = vec!["--inject-delay", "5ms", "--every", "100", "--json"];
    if common::realtime_allowed().is_ok() {
        server_args.extend(["--policy", "fifo", "--priority", "70"]);
    }
    let server = Served::start(&state, &server_args);
    let samples = dir.path().join("samples.csv");
    let (code, json) = probe_json(
        &state,
        &[
            &server.addr,
            "--interval",
            "1ms",
            "--count",
            "1000",
            "--timeout",
            "2s",
            "--samples",
            samples.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0));
    assert_every_message_answered(&json, 1000);
    let counters = server.stop();
    assert_eq!(counters["delayed"].as_u64(), Some(10));

    let rows = timeline_csv(&samples);
    assert_eq!(rows.len(), 1000);
    let delay = 5_000_000;
    for &(index, _, _, response) in rows.iter().filter(|r| r.0 % 100 == 0) {
        assert!(response.unwrap() >= delay, "message {index} was held 5 ms");
    }
    // Open loop: the messages after a held one leave on their schedule,
    // before the held one's reply, not after it (a closed loop would wait).
    let mut on_schedule = 0;
    let mut checked = 0;
    for held in (0..1000).step_by(100) {
        let (_, at, _, response) = rows[held];
        let reply_at = at + response.unwrap();
        for &(_, next_at, next_lag, _) in &rows[held + 1..held + 4] {
            checked += 1;
            if next_at + next_lag < reply_at {
                on_schedule += 1;
            }
        }
    }
    assert!(
        on_schedule * 10 >= checked * 9,
        "{on_schedule} of {checked} messages after a held one were sent before its reply"
    );
    // Far from the held ones, most messages are fast: the delay is where it was put.
    let far: Vec<_> = rows
        .iter()
        .filter(|r| (20..90).contains(&(r.0 % 100)))
        .collect();
    let slow = far.iter().filter(|r| r.3.unwrap() >= delay).count();
    assert!(
        slow * 10 < far.len(),
        "{slow} of {} messages far from the held ones took 5 ms",
        far.len()
    );
}

/// A UDP datagram from a raw socket (the test writes the UDP header itself).
fn send_raw_udp(raw: i32, port: u16, payload: &[u8]) {
    let mut packet = Vec::with_capacity(8 + payload.len());
    packet.extend_from_slice(&40000u16.to_be_bytes());
    packet.extend_from_slice(&port.to_be_bytes());
    packet.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0]); // no checksum (allowed over IPv4)
    packet.extend_from_slice(payload);
    let to = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid buffer and address of the given sizes.
    let sent = unsafe {
        libc::sendto(
            raw,
            packet.as_ptr().cast(),
            packet.len(),
            0,
            (&to as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(
        sent as usize,
        packet.len(),
        "{}",
        std::io::Error::last_os_error()
    );
}

/// An exchange request header of `len` bytes announced, as rtlab's client sends.
fn exchange_request(announced: u32, actual: usize) -> Vec<u8> {
    let mut buf = vec![0u8; actual.max(32)];
    buf[0..4].copy_from_slice(b"RTLX");
    buf[4] = 1;
    buf[5] = 1;
    buf[7] = 1;
    buf[24..28].copy_from_slice(&announced.to_be_bytes());
    buf.truncate(actual);
    buf
}

#[test]
fn bad_datagrams_from_a_raw_socket_are_dropped_and_counted_while_a_client_is_served() {
    if !is_root() {
        skip("raw sockets need root (CAP_NET_RAW)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = Served::start(&state, &["--max-size", "1024", "--json"]);
    let port: u16 = server.addr.rsplit(':').next().unwrap().parse().unwrap();
    // SAFETY: plain socket(2).
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_UDP) };
    assert!(raw >= 0, "{}", std::io::Error::last_os_error());

    let state_for_probe = state.clone();
    let addr = server.addr.clone();
    let client = std::thread::spawn(move || {
        probe_json(
            &state_for_probe,
            &[&addr, "--interval", "2ms", "--count", "500"],
        )
    });
    let rounds = 50;
    for _ in 0..rounds {
        send_raw_udp(raw, port, b"GET / HTTP/1.0\r\n\r\n junk that is no request");
        send_raw_udp(raw, port, &[]);
        send_raw_udp(raw, port, &exchange_request(64, 40)); // truncated
        send_raw_udp(raw, port, &exchange_request(2000, 2000)); // oversized
        send_raw_udp(raw, port, &exchange_request(64, 65)); // longer than announced
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(raw) };
    let (code, json) = client.join().unwrap();
    assert_eq!(code, Some(0));
    assert_every_message_answered(&json, 500);

    server.signal(libc::SIGUSR1);
    let counters = server.stop();
    let get = |name: &str| counters[name].as_u64().unwrap();
    assert_eq!(get("malformed"), 3 * rounds, "{counters}");
    assert_eq!(get("truncated"), rounds, "{counters}");
    assert_eq!(get("oversized"), rounds, "{counters}");
    assert_eq!(get("replied"), 500 * 4, "{counters}");
    assert_eq!(get("received"), 500 * 4 + 5 * rounds, "{counters}");
}

#[test]
fn a_keyed_server_answers_only_signed_messages() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let key = dir.path().join("key");
    std::fs::write(
        &key,
        "5f4dcc3b5aa765d61d8327deb882cf99aa765d61d8327deb882cf995f4dcc3b\n",
    )
    .unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();
    let server = Served::start(&state, &["--key-file", key, "--json"]);
    let (code, json) = probe_json(
        &state,
        &[
            &server.addr,
            "--interval",
            "1ms",
            "--count",
            "100",
            "--key-file",
            key,
        ],
    );
    assert_eq!(code, Some(0));
    assert_every_message_answered(&json, 100);
    let (code, json) = probe_json(
        &state,
        &[
            &server.addr,
            "--interval",
            "1ms",
            "--count",
            "20",
            "--timeout",
            "20ms",
        ],
    );
    assert_eq!(code, Some(1), "no reply at all is a failed run");
    assert_eq!(json["status"], "failed");
    assert_eq!(count(&json, "lost"), 20);
    let counters = server.stop();
    assert_eq!(
        counters["bad_auth"].as_u64(),
        Some(20),
        "only first steps are sent"
    );
}

#[test]
fn the_result_is_stored_and_shown_with_its_message_counts() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = Served::start(&state, &["--tcp"]);
    let db = dir.path().join("runs.db");
    let out = run(rtlab(&state).args([
        "net",
        "probe",
        &server.addr,
        "--tcp",
        "--interval",
        "1ms",
        "--count",
        "200",
        "--timeout",
        "2s",
        "--db",
        db.to_str().unwrap(),
    ]));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("200 planned, 200 sent, 200 completed, 0 lost"),
        "{stdout}"
    );
    let shown = run(rtlab(&state).args(["show", "last", "--db", db.to_str().unwrap()]));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("response_from_send") && shown.contains("200 completed"),
        "{shown}"
    );
}

fn sockperf_available() -> bool {
    std::process::Command::new("sockperf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn sockperf_s_client_measures_rtlab_s_server_and_rtlab_s_probe_measures_sockperf_s_server() {
    if !sockperf_available() {
        skip("sockperf is not installed (scripts/setup installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = Served::start(&state, &["--mode", "sockperf", "--json"]);
    let (ip, port) = server.addr.rsplit_once(':').unwrap();
    let out = run(std::process::Command::new("sockperf").args([
        "ping-pong",
        "-i",
        ip,
        "-p",
        port,
        "-t",
        "1",
        "--mps",
        "200",
        "-m",
        "64",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let received = text
        .split("ReceivedMessages=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok())
        .expect("sockperf reports ReceivedMessages");
    assert!(received > 50, "{text}");
    assert!(text.contains("# dropped messages = 0"), "{text}");
    let counters = server.stop();
    assert_eq!(counters["malformed"].as_u64(), Some(0), "{counters}");

    // And the other way: sockperf's server, rtlab's probe.
    let port = {
        let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut sockperf = std::process::Command::new("sockperf")
        .args(["server", "-i", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let target = format!("127.0.0.1:{port}");
    let (code, json) = probe_json(
        &state,
        &[
            &target,
            "--mode",
            "sockperf",
            "--interval",
            "2ms",
            "--count",
            "200",
            "--round-trips",
            "2",
        ],
    );
    let _ = sockperf.kill();
    let _ = sockperf.wait();
    assert_eq!(code, Some(0));
    assert_every_message_answered(&json, 200);
}

#[test]
fn bad_input_is_refused_with_what_and_where() {
    use common::assert_refused;
    assert_refused(
        &["net", "probe", "127.0.0.1:7700", "--payload", "10"],
        &["--payload", "32"],
    );
    assert_refused(
        &[
            "net",
            "probe",
            "127.0.0.1:7700",
            "--key-file",
            "/nonexistent/key",
        ],
        &["--key-file", "/nonexistent/key"],
    );
    assert_refused(
        &["net", "probe", "no-port-here"],
        &["no-port-here", "ADDR:PORT"],
    );
    assert_refused(&["net", "probe"], &["ADDR:PORT"]);
    assert_refused(
        &["net", "probe", "127.0.0.1:7700", "--mode", "ping"],
        &["ping", "exchange"],
    );
    assert_refused(
        &["net", "probe", "127.0.0.1:7700", "--round-trips", "33"],
        &["round-trips"],
    );
    assert_refused(
        &["net", "probe", "127.0.0.1:7700", "--server-cpu", "1"],
        &["--netns"],
    );
    assert_refused(
        &[
            "net",
            "probe",
            "127.0.0.1:7700",
            "--mode",
            "echo",
            "--key-file",
            "/etc/hostname",
        ],
        &["key"],
    );
    assert_refused(
        &["net", "serve", "--listen", "nonsense"],
        &["--listen", "nonsense"],
    );
    assert_refused(&["net", "serve", "--every", "5"], &["--inject-delay"]);
    assert_refused(
        &["net", "serve", "--rate-limit", "0", "--burst", "5"],
        &["--burst"],
    );
    assert_refused(
        &["net", "serve", "--mode", "sockperf", "--max-size", "8"],
        &["max-size"],
    );
    assert_refused(
        &[
            "net",
            "probe",
            "127.0.0.1:7700",
            "--count",
            "100000000000000",
        ],
        &["--count", "100000000"],
    );
    assert_refused(
        &[
            "net",
            "probe",
            "127.0.0.1:7700",
            "--interval",
            "1us",
            "--timeout",
            "1h",
        ],
        &["--timeout", "in flight"],
    );
    assert_refused(
        &["net", "probe", "127.0.0.1:7700", "--key-file", "/dev/zero"],
        &["--key-file", "not a key"],
    );
    assert_refused(&["net", "probe", "127.0.0.1:0"], &["port 0"]);
    assert_refused(
        &[
            "net",
            "probe",
            "127.0.0.1:7700",
            "--policy",
            "other",
            "--priority",
            "5",
        ],
        &["--priority 5"],
    );
    assert_refused(
        &["net", "serve", "--max-size", "20"],
        &["--max-size 20", "32"],
    );
    assert_refused(&["net", "serve", "--burst", "0"], &["--burst 0"]);
    assert_refused(
        &["net", "serve", "--frame-timeout", "0"],
        &["--frame-timeout"],
    );
    assert_refused(
        &["net", "serve", "--max-per-source", "0"],
        &["--max-per-source"],
    );
}

#[test]
fn after_a_stall_of_the_probe_its_catch_up_burst_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = Served::start(&state, &["--rate-limit", "0"]);
    let child = rtlab(&state)
        .args([
            "net",
            "probe",
            &server.addr,
            "--interval",
            "100us",
            "--count",
            "20000",
        ])
        .args([
            "--round-trips",
            "1",
            "--timeout",
            "2s",
            "--json",
            "-",
            "--no-store",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // Stop the whole probe: 1000 messages fall due meanwhile (200 without
    // root, whose sockets keep the default buffer of about 270 datagrams).
    let stall_ms = if is_root() { 100 } else { 20 };
    common::signal(&child, libc::SIGSTOP);
    std::thread::sleep(std::time::Duration::from_millis(stall_ms));
    common::signal(&child, libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_every_message_answered(&json, 20_000);
    let send_lag = &json["series"][2];
    assert_eq!(send_lag["name"], "send_lag");
    // The first message due in the stall waited for most of it (the stop
    // can land up to an interval before that message was due).
    assert!(
        send_lag["max_ns"].as_u64().unwrap() >= stall_ms * 1_000_000 / 2,
        "the stall shows as the probe's own lateness: {}",
        send_lag["max_ns"]
    );
}

/// A TCP connection from `from` (any 127.0.0.X: all of 127.0.0.0/8 is
/// loopback) to `to`; std cannot bind a stream before it connects.
fn connect_from(from: std::net::Ipv4Addr, to: &str) -> std::io::Result<TcpStream> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let to: std::net::SocketAddrV4 = to.parse().expect("an IPv4 server");
    let address = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
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
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        TcpStream::from_raw_fd(fd)
    };
    let (local, remote) = (address(from, 0), address(*to.ip(), to.port()));
    let fd = stream.as_raw_fd();
    // SAFETY: valid addresses of the given length, on our own descriptor.
    let done = unsafe {
        libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len) == 0
            && libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len) == 0
    };
    if !done {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stream)
}

/// Whether the server has closed `stream` by now (without waiting).
fn closed_now(stream: &mut TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Slowloris from `sources` (one connection each, 127.0.0.X): every 0.5 s
/// each connection gets one more byte of a frame it never finishes, and a
/// connection the server closed is opened again at once. Runs until `stop`
/// (a minute at most); returns how many connections it opened.
fn slowloris(
    sources: Vec<std::net::Ipv4Addr>,
    server: String,
    stop: Arc<AtomicBool>,
    first_round: std::sync::mpsc::Sender<()>,
) -> u64 {
    // An exchange header announcing 1472 bytes: 32 bytes to trickle.
    let frame = exchange_request(1472, 32);
    let mut conns: Vec<Option<(TcpStream, usize)>> = sources.iter().map(|_| None).collect();
    let mut opened = 0;
    for round in 0..120 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        for (conn, &source) in conns.iter_mut().zip(&sources) {
            let alive = match conn {
                Some((stream, sent)) => {
                    *sent < frame.len() - 1
                        && !closed_now(stream)
                        && stream.write_all(&frame[*sent..*sent + 1]).is_ok()
                }
                None => false,
            };
            if alive {
                conn.as_mut().unwrap().1 += 1;
                continue;
            }
            *conn = None;
            if let Ok(mut stream) = connect_from(source, &server) {
                opened += 1;
                if stream.write_all(&frame[..1]).is_ok() {
                    *conn = Some((stream, 1));
                }
            }
        }
        if round == 0 {
            let _ = first_round.send(());
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    opened
}

#[test]
fn a_tcp_probe_is_served_through_a_slowloris_of_70_connections() {
    // 70 connections from 127.0.0.2-71 trickle unfinished frames at a
    // server of 64 slots and reopen whatever it closes: the probe from
    // 127.0.0.1 must still get a slot and every reply.
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut server = Served::start(&state, &["--tcp", "--frame-timeout", "1s", "--json"]);
    let stop = Arc::new(AtomicBool::new(false));
    let (started, first_round) = std::sync::mpsc::channel();
    let sources: Vec<_> = (2..72)
        .map(|x| std::net::Ipv4Addr::new(127, 0, 0, x))
        .collect();
    let attack = {
        let (addr, stop) = (server.addr.clone(), Arc::clone(&stop));
        std::thread::spawn(move || slowloris(sources, addr, stop, started))
    };
    first_round
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the slowloris connects");
    // Past the first deadlines: the server has closed slowloris
    // connections and they are coming back.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let before = server.counters();
    let (code, json) = probe_json(
        &state,
        &[
            &server.addr,
            "--tcp",
            "--interval",
            "10ms",
            "--count",
            "100",
            "--timeout",
            "2s",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let opened = attack.join().unwrap();
    assert_eq!(
        code,
        Some(0),
        "{} {}",
        json["warnings"],
        json["net"]["messages"]
    );
    assert_every_message_answered(&json, 100);
    let counters = server.stop();
    eprintln!("{opened} slowloris connections; the server's counters: {counters}");
    let get = |name: &str| counters[name].as_u64().unwrap();
    assert!(
        before["connections"].as_u64().unwrap() >= 64,
        "the slowloris filled the server first: {before}"
    );
    assert!(get("connections_timed_out") >= 64, "{counters}");
    assert_eq!(get("connections_refused_per_source"), 0, "{counters}");
    assert_eq!(get("connections"), opened + 1, "{counters}");
    assert_eq!(get("replied"), 100 * 4, "{counters}");
}

#[test]
fn max_per_source_refuses_the_connection_over_it_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Served::start(
        &dir.path().join("state"),
        &["--tcp", "--max-per-source", "2", "--json"],
    );
    let local = std::net::Ipv4Addr::LOCALHOST;
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| connect_from(local, &server.addr).unwrap())
        .collect();
    let mut third = connect_from(local, &server.addr).unwrap();
    third
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(
        matches!(third.read(&mut buf), Ok(0) | Err(_)) && closed_now(&mut third),
        "the third connection from 127.0.0.1 is closed"
    );
    // The first two are served.
    for stream in &mut held {
        stream.write_all(&exchange_request(64, 64)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        stream.read_exact(&mut buf).unwrap();
        assert_eq!(buf[5], 2, "an acknowledge");
    }
    let counters = server.counters();
    assert_eq!(counters["connections_refused_per_source"].as_u64(), Some(1));
    assert_eq!(counters["connections"].as_u64(), Some(3));
    drop(server);
}
