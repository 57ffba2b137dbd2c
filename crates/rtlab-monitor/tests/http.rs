//! The /metrics server against hostile clients: every bad request gets
//! its status, and slow or idle connections never keep a good scrape out.

mod common;

use common::{exposition_of, figures_of};
use rtlab_monitor::http::{MAX_CONNECTIONS, MAX_HEAD_BYTES, WRITE_TIMEOUT};
use rtlab_monitor::{Exposition, Server};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A read that takes longer than this is a hung server: the test fails.
const HANG: Duration = Duration::from_secs(30);

/// A server on a free port of 127.0.0.1, stopped when dropped.
struct Serving {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve() -> Serving {
    serve_exposition(exposition_of(figures_of(&[(0, &[(5_000, 0)])])))
}

fn serve_exposition(exposition: Exposition) -> Serving {
    let exposition = Arc::new(exposition);
    let server = Server::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(exposition, Arc::clone(&stop)).unwrap();
    Serving {
        addr,
        stop,
        thread: Some(thread),
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream
}

/// Everything the server sends until it closes.
fn read_all(mut stream: TcpStream) -> String {
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .expect("the server answers and closes in time");
    String::from_utf8_lossy(&answer).into_owned()
}

fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = connect(addr);
    stream.write_all(request).unwrap();
    read_all(stream)
}

fn status_of(answer: &str) -> &str {
    answer.lines().next().unwrap_or("")
}

/// A good scrape: 200 and the samples counter.
fn assert_scrape_works(addr: SocketAddr) {
    let answer = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status_of(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(answer.contains("Connection: close\r\n"), "{answer}");
    assert!(
        answer.contains("rtlab_wakeup_samples_total{cpu=\"0\"} 1"),
        "{answer}"
    );
}

#[test]
fn good_requests_get_the_metrics_the_page_or_just_the_head() {
    let serving = serve();
    assert_scrape_works(serving.addr);
    let page = exchange(serving.addr, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status_of(&page), "HTTP/1.1 200 OK");
    assert!(page.contains("/metrics"), "{page}");
    let head = exchange(serving.addr, b"HEAD /metrics?x=1 HTTP/1.1\r\n\r\n");
    assert_eq!(status_of(&head), "HTTP/1.1 200 OK");
    assert!(
        head.ends_with("\r\n\r\n"),
        "a HEAD answer has no body: {head}"
    );
    let protobuf = exchange(
        serving.addr,
        b"GET /metrics HTTP/1.1\r\nAccept: application/vnd.google.protobuf;\
proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n",
    );
    assert!(
        protobuf.contains("Content-Type: application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited\r\n"),
        "{protobuf}"
    );
}

#[test]
fn bad_requests_get_their_status() {
    let serving = serve();
    let cases: [(&[u8], &str); 6] = [
        (b"GET /nope HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
        (
            b"POST /metrics HTTP/1.1\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
        ),
        (
            b"DELETE / HTTP/1.1\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
        ),
        (b"GET /metrics\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        (b"GET /metrics SPDY/3\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        (
            b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
        ),
    ];
    for (request, status) in cases {
        let answer = exchange(serving.addr, request);
        assert_eq!(
            status_of(&answer),
            status,
            "{}",
            String::from_utf8_lossy(request)
        );
    }
    let post = exchange(serving.addr, b"POST /metrics HTTP/1.1\r\n\r\n");
    assert!(post.contains("Allow: GET, HEAD\r\n"), "{post}");
    let binary = exchange(serving.addr, b"GET /\xff\xfe HTTP/1.1\r\n\r\n");
    assert_eq!(status_of(&binary), "HTTP/1.1 400 Bad Request");

    // A head that never ends within the limit.
    let mut stream = connect(serving.addr);
    let mut oversized = b"GET /metrics HTTP/1.1\r\nX-Pad: ".to_vec();
    oversized.resize(MAX_HEAD_BYTES + 100, b'a');
    // The server may close before taking all of it.
    let _ = stream.write_all(&oversized);
    let answer = read_all(stream);
    assert_eq!(
        status_of(&answer),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    assert_scrape_works(serving.addr);
}

#[test]
fn a_slow_client_gets_a_timeout_and_never_holds_a_scrape_up() {
    let serving = serve();
    let mut slow = connect(serving.addr);
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // While it dawdles, scrapes go through.
    for _ in 0..3 {
        assert_scrape_works(serving.addr);
    }
    let answer = read_all(slow);
    assert_eq!(status_of(&answer), "HTTP/1.1 408 Request Timeout");
}

#[test]
fn many_idle_connections_never_keep_a_scrape_out() {
    let serving = serve();
    let idle: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS)
        .map(|_| connect(serving.addr))
        .collect();
    // Half of them have sent part of a head, the others nothing.
    for stream in idle.iter().step_by(2) {
        (&*stream).write_all(b"GET /metr").unwrap();
    }
    for _ in 0..3 {
        assert_scrape_works(serving.addr);
    }
    // The idle connections that lost their place were closed at once:
    // all but MAX_CONNECTIONS of them end without waiting for a timeout.
    let closed = idle.iter().filter(|stream| is_closed(stream)).count();
    assert!(closed >= MAX_CONNECTIONS, "{closed} closed");
}

/// The server closed `stream` (or answered it) rather than keeping it
/// open 100 ms more.
fn is_closed(stream: &TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut byte = [0u8; 1];
    match (&*stream).read(&mut byte) {
        Ok(0 | 1) => true,
        Ok(n) => unreachable!("{n} bytes read into 1"),
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// A connection to `addr` from the local address `source` (127.0.0.2 and
/// so on: another peer, as far as the server sees).
fn connect_from(source: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::from((source, 0)).into())
        .unwrap_or_else(|e| panic!("bind {source}: {e}"));
    socket.connect(&addr.into()).unwrap();
    let stream = TcpStream::from(socket);
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream
}

#[test]
fn a_flood_from_one_address_evicts_its_own_connections_not_another_peers_scrape() {
    let serving = serve();
    // A scrape from another address, its head under way.
    let mut scrape = connect_from(Ipv4Addr::new(127, 0, 0, 2), serving.addr);
    scrape.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    // Give the server time to take it in before the flood.
    std::thread::sleep(Duration::from_millis(200));
    let flood: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS)
        .map(|_| connect(serving.addr))
        .collect();
    // Every newcomer of the flood has been admitted (and so has evicted
    // someone) once MAX_CONNECTIONS of them are closed.
    let deadline = Instant::now() + HANG;
    while flood.iter().filter(|stream| is_closed(stream)).count() < MAX_CONNECTIONS {
        assert!(Instant::now() < deadline, "the flood was never admitted");
    }
    scrape.write_all(b"Host: x\r\n\r\n").unwrap();
    let answer = read_all(scrape);
    assert_eq!(status_of(&answer), "HTTP/1.1 200 OK", "{answer}");
}

#[test]
fn a_client_taking_its_answer_slowly_is_cut_off_after_the_write_timeout() {
    // An answer far larger than the socket buffers, taken at 640 KB/s: it
    // would take a minute, far longer than the server gives it.
    const BODY_BYTES: usize = 40 << 20;
    const CHUNK: usize = 64 * 1024;
    let pad = vec![("pad".to_string(), "x".repeat(BODY_BYTES))];
    let serving = serve_exposition(Exposition::new(figures_of(&[(0, &[(5_000, 0)])]), pad));
    let mut stream = connect(serving.addr);
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    let mut chunk = vec![0u8; CHUNK];
    let mut taken = 0;
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => taken += n,
        }
        assert!(
            started.elapsed() < 3 * WRITE_TIMEOUT,
            "still sending after {:?} ({taken} bytes taken)",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        taken < BODY_BYTES,
        "the whole answer was sent: {taken} bytes"
    );
    // The place is free again.
    assert_scrape_works(serving.addr);
}
