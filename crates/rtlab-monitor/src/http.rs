//! The `/metrics` server: std's `TcpListener` and a thread per connection,
//! no framework. It serves one route to scrapers, so a framework (and an
//! async runtime) would bring far more code than the ~300 lines it saves,
//! and the rules that matter against a hostile client are easier to see
//! here: a request head of at most [`MAX_HEAD_BYTES`] that must be whole
//! within [`HEAD_TIMEOUT`], an answer that must be taken whole within
//! [`WRITE_TIMEOUT`] (a client reading a byte now and then cannot hold its
//! place), `Connection: close` on every answer, and at most
//! [`MAX_CONNECTIONS`] at once, where a newcomer takes the place of the
//! oldest connection of the peer holding the most places (still sending
//! its head if any is), so that idle or slow clients (slowloris) cannot
//! keep a scrape out for long, and a flood from one address evicts its
//! own connections rather than another's scrape. Every thread here is
//! SCHED_OTHER and none is a measuring thread.

use crate::exposition::{Exposition, Format};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest request head (request line and headers) read.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// A request head must be whole this long after the connection came.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// An answer must be taken whole within this long.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How often the accepting thread looks at the stop flag.
const STOP_POLL_MS: i32 = 200;
/// Each connection's thread needs little stack (and under mlockall each
/// byte of it is locked).
const CONNECTION_STACK_BYTES: usize = 256 * 1024;

const HOME_PAGE: &str = "rtlab monitor: timer wake-up latency per CPU.\n\
Metrics: /metrics (Prometheus text 0.0.4, or protobuf with native histograms when the Accept header asks for it).\n\
Docs: docs/monitor.md\n";

/// A bound listener, not yet serving.
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Binds `addr` (port 0: a free port).
    pub fn bind(addr: SocketAddr) -> io::Result<Server> {
        Ok(Server {
            listener: TcpListener::bind(addr)?,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves on a thread of its own until `stop`; the thread ends within
    /// [`STOP_POLL_MS`] of it (connections in progress end on their own,
    /// within their timeouts).
    pub fn spawn(
        self,
        exposition: Arc<Exposition>,
        stop: Arc<AtomicBool>,
    ) -> io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("rtlab-mon-http".into())
            .spawn(move || self.accept_loop(&exposition, &stop))
    }

    fn accept_loop(self, exposition: &Arc<Exposition>, stop: &AtomicBool) {
        let slots = Arc::new(Slots::default());
        let mut next_id = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if !readable(&self.listener, STOP_POLL_MS) {
                continue;
            }
            let Ok((stream, peer)) = self.listener.accept() else {
                // EMFILE and the like: leave the kernel's queue a moment.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            next_id += 1;
            slots.admit(next_id, stream, peer_key(peer.ip()), exposition);
        }
    }
}

/// Who a connection counts against when places are shared out: its IPv4
/// address (also when it comes IPv4-mapped), or its IPv6 /64 (one host
/// has a whole /64 to draw addresses from).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Waits at most `timeout_ms` for a connection to accept.
fn readable(listener: &TcpListener, timeout_ms: i32) -> bool {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: fd is one valid pollfd for the call.
    unsafe { libc::poll(&mut fd, 1, timeout_ms) > 0 }
}

/// One connection being served.
struct Slot {
    id: u64,
    /// Who it is from: a peer holding many places loses them first.
    peer: IpAddr,
    /// A handle on the connection, to cut it when its place is taken.
    stream: TcpStream,
    /// Its head is read and it is being answered: never cut then.
    answering: Arc<AtomicBool>,
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Slots(Mutex<Vec<Slot>>);

impl Slots {
    fn lock(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves `stream` from `peer` on a thread of its own, in the place
    /// of [`victim`]'s connection when all are taken; when there is none,
    /// the newcomer is told to come back.
    fn admit(
        self: &Arc<Self>,
        id: u64,
        stream: TcpStream,
        peer: IpAddr,
        exposition: &Arc<Exposition>,
    ) {
        let answering = Arc::new(AtomicBool::new(false));
        {
            let mut slots = self.lock();
            if slots.len() >= MAX_CONNECTIONS {
                match victim(&slots, peer) {
                    Some(oldest) => {
                        let _ = slots.remove(oldest).stream.shutdown(Shutdown::Both);
                    }
                    None => {
                        let mut stream = stream;
                        let busy = Answer::status(503, "busy, retry\n");
                        let by = Instant::now() + Duration::from_millis(100);
                        let _ = respond(&mut stream, &busy, false, by);
                        return;
                    }
                }
            }
            let Ok(handle) = stream.try_clone() else {
                return;
            };
            slots.push(Slot {
                id,
                peer,
                stream: handle,
                answering: Arc::clone(&answering),
            });
        }
        let slots = Arc::clone(self);
        let exposition = Arc::clone(exposition);
        let spawned = std::thread::Builder::new()
            .name("rtlab-mon-conn".into())
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                serve_connection(stream, &exposition, &answering);
                slots.lock().retain(|s| s.id != id);
            });
        if spawned.is_err() {
            self.lock().retain(|s| s.id != id);
        }
    }
}

/// The connection a newcomer from `newcomer` takes the place of, all
/// places being taken. The loser is the peer holding the most places if
/// it holds more than the newcomer's, else the newcomer's own: its oldest
/// connection still sending its head goes first (a flood from one address
/// evicts its own connections, not another's scrape), else, when the
/// loser is another peer, its oldest answer (a peer taking its answers
/// slowly cannot keep others out); else none, and the newcomer is told to
/// come back.
fn victim(slots: &[Slot], newcomer: IpAddr) -> Option<usize> {
    let held = |peer: IpAddr| slots.iter().filter(|s| s.peer == peer).count();
    let top = slots
        .iter()
        .map(|s| s.peer)
        .max_by_key(|&peer| held(peer))?;
    let loser = if held(top) > held(newcomer) {
        top
    } else {
        newcomer
    };
    let oldest_of_loser = |also_answering: bool| {
        slots.iter().position(|s| {
            s.peer == loser && (also_answering || !s.answering.load(Ordering::Relaxed))
        })
    };
    oldest_of_loser(false).or_else(|| {
        if loser == newcomer {
            None
        } else {
            oldest_of_loser(true)
        }
    })
}

/// An answer: status, extra headers, body.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub allow: bool,
    pub body: Vec<u8>,
}

impl Answer {
    fn status(status: u16, text: &str) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            allow: status == 405,
            body: text.as_bytes().to_vec(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

fn serve_connection(mut stream: TcpStream, exposition: &Exposition, answering: &AtomicBool) {
    let (answer, with_body) = match read_head(&mut stream, Instant::now() + HEAD_TIMEOUT) {
        Ok(Some(head)) => answer(&head, exposition),
        // The client went away: nobody to answer.
        Ok(None) => return,
        Err(status) => (
            Answer::status(status, &format!("{}\n", reason(status))),
            true,
        ),
    };
    answering.store(true, Ordering::Relaxed);
    let _ = respond(
        &mut stream,
        &answer,
        with_body,
        Instant::now() + WRITE_TIMEOUT,
    );
    let _ = stream.shutdown(Shutdown::Write);
}

/// Reads a request head until its blank line: None when the client closed
/// first, the status to answer when it is too long or too slow.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Option<String>, u16> {
    let mut head = vec![0u8; MAX_HEAD_BYTES];
    let mut len = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(408);
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut head[len..]) {
            Ok(0) => return Ok(None),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(408)
            }
            Err(_) => return Ok(None),
        }
        if let Some(end) = head_end(&head[..len]) {
            return String::from_utf8(head[..end].to_vec())
                .map(Some)
                .map_err(|_| 400);
        }
        if len == MAX_HEAD_BYTES {
            return Err(431);
        }
    }
}

/// Where the head ends (its blank line), if it does.
fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = bytes.windows(2).position(|w| w == b"\n\n");
    crlf.into_iter().chain(lf).min()
}

/// The answer to a request head, and whether it carries its body (not
/// for HEAD).
pub fn answer(head: &str, exposition: &Exposition) -> (Answer, bool) {
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (Answer::status(400, "bad request line\n"), true);
    };
    if !version.starts_with("HTTP/1.") {
        return (Answer::status(400, "HTTP/1.x only\n"), true);
    }
    let mut accept = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return (Answer::status(400, "bad header line\n"), true);
        };
        if name.trim().eq_ignore_ascii_case("accept") {
            accept = Some(value.trim());
        }
    }
    let path = target.split('?').next().unwrap_or("");
    let with_body = method != "HEAD";
    if path != "/" && path != "/metrics" {
        return (Answer::status(404, "not found: try /metrics\n"), true);
    }
    if method != "GET" && method != "HEAD" {
        return (Answer::status(405, "GET only\n"), true);
    }
    if path == "/" {
        return (Answer::status(200, HOME_PAGE), with_body);
    }
    let format = Format::negotiate(accept);
    match exposition.encode(format) {
        Ok(body) => (
            Answer {
                status: 200,
                content_type: format.content_type(),
                allow: false,
                body,
            },
            with_body,
        ),
        Err(e) => (Answer::status(500, &format!("{e}\n")), true),
    }
}

/// Sends `answer`, all of it by `deadline`: the socket's write timeout
/// bounds one write only, and a client that takes a byte now and then
/// would make each of them succeed.
fn respond(
    stream: &mut TcpStream,
    answer: &Answer,
    with_body: bool,
    deadline: Instant,
) -> io::Result<()> {
    let allow = if answer.allow {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        answer.status,
        reason(answer.status),
        answer.content_type,
        answer.body.len()
    );
    write_all_by(stream, head.as_bytes(), deadline)?;
    if with_body {
        write_all_by(stream, &answer.body, deadline)?;
    }
    Ok(())
}

fn write_all_by(stream: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_its_ipv4_address_or_its_ipv6_64() {
        let key = |text: &str| peer_key(text.parse().unwrap());
        assert_eq!(key("192.0.2.7"), key("::ffff:192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:1:2:3"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
    }
}
