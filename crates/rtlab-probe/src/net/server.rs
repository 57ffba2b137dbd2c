//! The responder: answers each request of its mode with a reply of the
//! same size, from one thread (which the caller promotes and pins).
//!
//! Robust by construction: buffers are allocated once and bounded, a
//! datagram that does not parse is dropped and counted by reason, no reply
//! is ever larger than its request, every source has a rate limit of its
//! own (limiter.rs), with a key only requests carrying a valid tag are
//! answered, and over TCP a connection must finish each frame it begins
//! within a deadline and one source may hold only so many connections, so
//! slow senders cannot keep the slots from clients that send whole frames.

use super::auth::Key;
use super::client::bump;
pub use super::limiter::RateLimit;
use super::limiter::{Limiter, Source};
use super::outgoing::Outgoing;
use super::wire::{self, Exchange, Kind, Mode, Reject, Sockperf, Transport};
use rtlab_core::clock;
use rtlab_core::result::NetServerCounters;
use std::io::{self, ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Everything a server needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub transport: Transport,
    pub mode: Mode,
    /// Larger requests are dropped as oversized, bytes.
    pub max_size: usize,
    pub rate_limit: Option<RateLimit>,
    pub key: Option<Key>,
    pub inject: Option<Inject>,
    /// TCP connections served at once; when full, one that is stalled
    /// (no whole frame yet since it connected, or none for a second) gives
    /// its place up, else the newcomer is closed.
    pub max_clients: usize,
    /// TCP connections from one source (IPv4 address, IPv6 /64) at once;
    /// more are closed as they come.
    pub max_per_source: usize,
    /// A TCP connection whose frame, once begun, is not whole this long
    /// after its first byte is closed, ns.
    pub frame_timeout_ns: u64,
    /// A TCP connection with no frame in progress that sends nothing for
    /// this long after its last frame is closed, ns.
    pub idle_timeout_ns: u64,
}

/// A test hook: hold the reply to every `every`-th message back for `delay_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inject {
    pub delay_ns: u64,
    pub every: u64,
}

/// The server's counters, readable while it runs.
#[derive(Debug, Default)]
pub struct Counters {
    received: AtomicU64,
    replied: AtomicU64,
    unanswered: AtomicU64,
    malformed: AtomicU64,
    truncated: AtomicU64,
    oversized: AtomicU64,
    bad_auth: AtomicU64,
    rate_limited: AtomicU64,
    delayed: AtomicU64,
    send_errors: AtomicU64,
    connections: AtomicU64,
    connections_dropped: AtomicU64,
    connections_timed_out: AtomicU64,
    connections_refused_per_source: AtomicU64,
}

impl Counters {
    pub fn snapshot(&self) -> NetServerCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        NetServerCounters {
            received: get(&self.received),
            replied: get(&self.replied),
            unanswered: get(&self.unanswered),
            malformed: get(&self.malformed),
            truncated: get(&self.truncated),
            oversized: get(&self.oversized),
            bad_auth: get(&self.bad_auth),
            rate_limited: get(&self.rate_limited),
            delayed: get(&self.delayed),
            send_errors: get(&self.send_errors),
            connections: get(&self.connections),
            connections_dropped: get(&self.connections_dropped),
            connections_timed_out: get(&self.connections_timed_out),
            connections_refused_per_source: get(&self.connections_refused_per_source),
        }
    }

    fn reject(&self, why: Reject) {
        bump(match why {
            Reject::Malformed => &self.malformed,
            Reject::Truncated => &self.truncated,
            Reject::Oversized => &self.oversized,
            Reject::BadAuth => &self.bad_auth,
        });
    }
}

/// One line of counters for a terminal.
pub fn counters_line(c: &NetServerCounters) -> String {
    format!(
        "received {}, replied {}, unanswered {}, dropped: malformed {}, truncated {}, oversized {}, bad auth {}, rate limited {}; delayed {}, send errors {}, connections {} ({} closed by the server: {} timed out, {} over the per-source cap)",
        c.received,
        c.replied,
        c.unanswered,
        c.malformed,
        c.truncated,
        c.oversized,
        c.bad_auth,
        c.rate_limited,
        c.delayed,
        c.send_errors,
        c.connections,
        c.connections_dropped,
        c.connections_timed_out,
        c.connections_refused_per_source
    )
}

enum Socket {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// A bound server, ready to run.
pub struct Server {
    socket: Socket,
    config: ServeConfig,
    counters: Arc<Counters>,
    local: SocketAddr,
}

/// How often the loop looks at the stop flag when nothing arrives.
const IDLE_POLL_MS: i32 = 100;
/// Datagrams taken per wake-up before the signals are looked at again.
const DRAIN_BATCH: usize = 1024;
/// Reads from one TCP connection before the others get their turn.
const READS_PER_TURN: usize = 16;

impl Server {
    pub fn bind(config: ServeConfig) -> io::Result<Server> {
        let socket = match config.transport {
            Transport::Udp => Socket::Udp(UdpSocket::bind(config.listen)?),
            Transport::Tcp => Socket::Tcp(TcpListener::bind(config.listen)?),
        };
        let local = match &socket {
            Socket::Udp(s) => {
                s.set_nonblocking(true)?;
                super::client::set_receive_buffer(s.as_raw_fd());
                s.local_addr()?
            }
            Socket::Tcp(l) => {
                l.set_nonblocking(true)?;
                l.local_addr()?
            }
        };
        Ok(Server {
            socket,
            config,
            counters: Arc::new(Counters::default()),
            local,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Serves until `stop` is set. `wake` is a descriptor that becomes
    /// readable when the caller wants attention (a signal's self-pipe): it
    /// is drained and `on_wake` called.
    pub fn run(
        self,
        stop: &AtomicBool,
        wake: Option<RawFd>,
        on_wake: &mut dyn FnMut(&Counters),
    ) -> io::Result<()> {
        let Server {
            socket,
            config,
            counters,
            ..
        } = self;
        let mut handler = Handler::new(&config, &counters);
        match socket {
            Socket::Udp(socket) => serve_udp(&socket, &mut handler, stop, wake, on_wake),
            Socket::Tcp(listener) => {
                serve_tcp(&listener, &config, &mut handler, stop, wake, on_wake)
            }
        }
    }
}

/// Turns one request into its reply, in place.
struct Handler<'a> {
    mode: Mode,
    max_size: usize,
    key: Option<Key>,
    inject: Option<Inject>,
    limiter: Option<Limiter>,
    counters: &'a Counters,
    /// Requests seen, for `--inject-delay` in modes without a message id.
    requests: u64,
}

impl<'a> Handler<'a> {
    fn new(config: &ServeConfig, counters: &'a Counters) -> Handler<'a> {
        Handler {
            mode: config.mode,
            max_size: config.max_size,
            key: config.key.clone(),
            inject: config.inject,
            limiter: config.rate_limit.map(Limiter::new),
            counters,
            requests: 0,
        }
    }

    /// Handles a whole request in `buf`; returns whether to send `buf` back
    /// (same length: a reply is never larger than its request).
    fn handle(&mut self, buf: &mut [u8], source: IpAddr) -> bool {
        bump(&self.counters.received);
        if let Some(limiter) = &mut self.limiter {
            if !limiter.admit(source, clock::now_ns()) {
                bump(&self.counters.rate_limited);
                return false;
            }
        }
        if buf.len() > self.max_size {
            self.counters.reject(Reject::Oversized);
            return false;
        }
        let message = match self.check(buf) {
            Ok(Verdict::Answer(message)) => message,
            Ok(Verdict::Silent) => {
                bump(&self.counters.unanswered);
                return false;
            }
            Err(why) => {
                self.counters.reject(why);
                return false;
            }
        };
        self.requests += 1;
        if let (Some(inject), Some(message)) = (self.inject, message) {
            if message % inject.every == 0 {
                bump(&self.counters.delayed);
                clock::sleep_for(inject.delay_ns);
            }
        }
        true
    }

    /// Checks a request and turns it into its reply.
    fn check(&mut self, buf: &mut [u8]) -> Result<Verdict, Reject> {
        match self.mode {
            Mode::Exchange => {
                let header = Exchange::read(buf)?;
                if header.kind != Kind::Request {
                    return Err(Reject::Malformed);
                }
                match (&self.key, header.tagged) {
                    (Some(key), true) if key.verify(buf) => {}
                    (Some(_), _) => return Err(Reject::BadAuth),
                    (None, _) => {}
                }
                Exchange::set_kind(buf, Kind::Ack);
                if let (Some(key), true) = (&self.key, header.tagged) {
                    key.sign(buf);
                }
                // Only a message's first step is held back, once.
                Ok(Verdict::Answer((header.step == 0).then_some(header.id)))
            }
            Mode::Echo => Ok(Verdict::Answer(Some(self.requests))),
            Mode::Sockperf => {
                let header = Sockperf::read(buf)?;
                if !header.from_client() {
                    return Err(Reject::Malformed);
                }
                if !header.wants_pong() {
                    return Ok(Verdict::Silent);
                }
                Sockperf::make_pong(buf);
                Ok(Verdict::Answer(Some(self.requests)))
            }
        }
    }
}

/// What to do with a valid request.
enum Verdict {
    /// Send the reply; the number counts messages for `--inject-delay`
    /// (the message id in exchange mode, only at its first step).
    Answer(Option<u64>),
    /// A valid request that asks for no reply.
    Silent,
}

fn poll_fds(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Drains a wake-up descriptor (a non-blocking self-pipe).
fn drain(fd: RawFd) {
    let mut sink = [0u8; 64];
    // SAFETY: reading into a local buffer of the given size.
    while unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.len()) } > 0 {}
}

fn serve_udp(
    socket: &UdpSocket,
    handler: &mut Handler<'_>,
    stop: &AtomicBool,
    wake: Option<RawFd>,
    on_wake: &mut dyn FnMut(&Counters),
) -> io::Result<()> {
    // One byte more than the largest request: a larger datagram arrives
    // cut to this size and is seen as oversized.
    let mut buf = vec![0u8; handler.max_size.min(wire::MAX_DATAGRAM) + 1];
    let mut fds = vec![pollfd(socket.as_raw_fd(), libc::POLLIN)];
    if let Some(fd) = wake {
        fds.push(pollfd(fd, libc::POLLIN));
    }
    while !stop.load(Ordering::Relaxed) {
        poll_fds(&mut fds, IDLE_POLL_MS)?;
        if fds.len() > 1 && fds[1].revents != 0 {
            drain(fds[1].fd);
            on_wake(handler.counters);
        }
        // A flood must not keep the loop from its signals and stop flag.
        for _ in 0..DRAIN_BATCH {
            let (len, source) = match socket.recv_from(&mut buf) {
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // An ICMP error for an earlier reply: not this request's.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            let request = &mut buf[..len];
            if handler.handle(request, source.ip()) {
                match socket.send_to(request, source) {
                    Ok(_) => bump(&handler.counters.replied),
                    Err(_) => bump(&handler.counters.send_errors),
                }
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
    Ok(())
}

/// One TCP client: bounded input and output buffers.
struct Connection {
    stream: TcpStream,
    source: IpAddr,
    /// What the per-source cap counts.
    key: Source,
    input: Vec<u8>,
    filled: usize,
    output: Outgoing,
    /// When the frame in progress began (its first byte arrived), while
    /// one is (CLOCK_MONOTONIC, ns).
    frame_since_ns: Option<u64>,
    /// When it last completed a frame, or was accepted (ns).
    progress_ns: u64,
    /// Whether it has completed a frame since it was accepted.
    proven: bool,
}

impl Connection {
    /// Whether it may give its place up to a newcomer on a full server:
    /// not one whole frame yet since it connected, or none for
    /// [`EVICTABLE_AFTER_NS`]. A client whose frames arrive in pieces (a
    /// slow link, frames larger than a segment) is not stalled while it
    /// completes one a second: a frame in progress is not enough.
    fn stalled(&self, now_ns: u64) -> bool {
        !self.proven || now_ns.saturating_sub(self.progress_ns) >= EVICTABLE_AFTER_NS
    }

    /// Which stalled connection goes first (the least): those without a
    /// whole frame yet, then the one longest without a whole frame.
    fn eviction_order(&self) -> (bool, u64) {
        (self.proven, self.progress_ns)
    }

    /// Whether its deadline has passed: the frame in progress not whole
    /// within the frame timeout, or no frame within the idle timeout.
    fn expired(&self, config: &ServeConfig, now_ns: u64) -> bool {
        match self.frame_since_ns {
            Some(since) => now_ns.saturating_sub(since) >= config.frame_timeout_ns,
            None => now_ns.saturating_sub(self.progress_ns) >= config.idle_timeout_ns,
        }
    }
}

/// A connection that completed no frame for this long gives its place up
/// when the server is full (and is closed after
/// [`ServeConfig::idle_timeout_ns`], or [`ServeConfig::frame_timeout_ns`]
/// into a frame).
const EVICTABLE_AFTER_NS: u64 = 1_000_000_000;

fn serve_tcp(
    listener: &TcpListener,
    config: &ServeConfig,
    handler: &mut Handler<'_>,
    stop: &AtomicBool,
    wake: Option<RawFd>,
    on_wake: &mut dyn FnMut(&Counters),
) -> io::Result<()> {
    let frame_max = config.max_size.min(wire::MAX_DATAGRAM);
    let mut connections: Vec<Connection> = Vec::with_capacity(config.max_clients);
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(config.max_clients + 2);
    // As large as a connection's input: an echo reply is whatever one read got.
    let mut reply = vec![0u8; frame_max + 1];
    while !stop.load(Ordering::Relaxed) {
        fds.clear();
        fds.push(pollfd(listener.as_raw_fd(), libc::POLLIN));
        fds.push(pollfd(wake.unwrap_or(-1), libc::POLLIN));
        for c in &connections {
            let out = if c.output.is_empty() {
                0
            } else {
                libc::POLLOUT
            };
            fds.push(pollfd(c.stream.as_raw_fd(), libc::POLLIN | out));
        }
        poll_fds(&mut fds, IDLE_POLL_MS)?;
        if fds[1].revents != 0 {
            drain(fds[1].fd);
            on_wake(handler.counters);
        }
        let now = clock::now_ns();
        let mut index = 2;
        connections.retain_mut(|c| {
            let ready = fds[index].revents != 0;
            index += 1;
            let keep = if ready {
                serve_connection(c, config.mode, frame_max, handler, &mut reply, now)
            } else {
                true
            };
            // Deadlines are looked at every IDLE_POLL_MS at least.
            let expired = keep && c.expired(config, now);
            if expired {
                bump(&handler.counters.connections_dropped);
                bump(&handler.counters.connections_timed_out);
            }
            keep && !expired
        });
        accept_all(
            listener,
            config,
            frame_max,
            handler.counters,
            &mut connections,
        );
    }
    Ok(())
}

fn accept_all(
    listener: &TcpListener,
    config: &ServeConfig,
    frame_max: usize,
    counters: &Counters,
    connections: &mut Vec<Connection>,
) {
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        bump(&counters.connections);
        let now = clock::now_ns();
        let key = Source::of(peer.ip());
        // One source cannot take more than its share, however many of its
        // connections are stalled (it never evicts another's).
        let from_source = connections.iter().filter(|c| c.key == key).count();
        if from_source >= config.max_per_source {
            bump(&counters.connections_dropped);
            bump(&counters.connections_refused_per_source);
            continue;
        }
        if connections.len() >= config.max_clients {
            // Full: a stalled connection gives its place up (one that has
            // sent no whole frame yet first, oldest first: connections
            // opened and left silent cannot keep a probe out, however
            // often they are replaced); a server full of connections that
            // are all being served refuses the newcomer.
            let victim = (0..connections.len())
                .filter(|&i| connections[i].stalled(now))
                .min_by_key(|&i| connections[i].eviction_order());
            match victim {
                Some(i) => {
                    connections.swap_remove(i);
                    bump(&counters.connections_dropped);
                }
                None => {
                    bump(&counters.connections_dropped);
                    continue;
                }
            }
        }
        if stream.set_nonblocking(true).is_err() {
            bump(&counters.connections_dropped);
            continue;
        }
        let _ = stream.set_nodelay(true);
        // Room for a frame in, and for a burst of replies out.
        connections.push(Connection {
            stream,
            source: peer.ip(),
            key,
            input: vec![0u8; frame_max + 1],
            filled: 0,
            output: Outgoing::with_capacity(frame_max * 16),
            frame_since_ns: None,
            progress_ns: now,
            proven: false,
        });
    }
}

/// Reads what arrived, answers every whole frame, sends what is pending;
/// false closes the connection.
fn serve_connection(
    c: &mut Connection,
    mode: Mode,
    frame_max: usize,
    handler: &mut Handler<'_>,
    reply: &mut [u8],
    now_ns: u64,
) -> bool {
    // An echo stream is returned read by read: at most a request's worth.
    let limit = if mode == Mode::Echo {
        frame_max
    } else {
        c.input.len()
    };
    // A turn: a client that keeps its socket full must not hold the loop
    // from the others, the listener and the stop flag (poll comes back
    // at once for what is left).
    for _ in 0..READS_PER_TURN {
        match c.stream.read(&mut c.input[c.filled..limit]) {
            Ok(0) => return false,
            Ok(n) => c.filled += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
        if mode == Mode::Echo {
            // A byte stream: returned as it came, read by read (each read
            // a whole request: never a frame in progress).
            let n = c.filled;
            c.filled = 0;
            c.progress_ns = now_ns;
            c.proven = true;
            reply[..n].copy_from_slice(&c.input[..n]);
            if handler.handle(&mut reply[..n], c.source) {
                if !c.output.send(&mut c.stream, &reply[..n]) {
                    // Counted as a reply not sent: the counts add up.
                    bump(&handler.counters.send_errors);
                    bump(&handler.counters.connections_dropped);
                    return false;
                }
                bump(&handler.counters.replied);
            }
            continue;
        }
        loop {
            let len = match wire::frame_len(mode, &c.input[..c.filled]) {
                None => break,
                Some(Ok(len)) if len <= frame_max => len,
                Some(Ok(_)) => {
                    // A frame larger than allowed: the stream cannot be
                    // followed past it.
                    bump(&handler.counters.received);
                    handler.counters.reject(Reject::Oversized);
                    bump(&handler.counters.connections_dropped);
                    return false;
                }
                Some(Err(why)) => {
                    bump(&handler.counters.received);
                    handler.counters.reject(why);
                    bump(&handler.counters.connections_dropped);
                    return false;
                }
            };
            if c.filled < len {
                break;
            }
            reply[..len].copy_from_slice(&c.input[..len]);
            c.input.copy_within(len..c.filled, 0);
            c.filled -= len;
            c.progress_ns = now_ns;
            c.proven = true;
            c.frame_since_ns = None;
            if handler.handle(&mut reply[..len], c.source) {
                if !c.output.send(&mut c.stream, &reply[..len]) {
                    bump(&handler.counters.send_errors);
                    bump(&handler.counters.connections_dropped);
                    return false;
                }
                bump(&handler.counters.replied);
            }
        }
        // What is left begins the next frame: its clock starts now.
        if c.filled > 0 && c.frame_since_ns.is_none() {
            c.frame_since_ns = Some(now_ns);
        }
    }
    c.output.flush(&mut c.stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler_for(mode: Mode, counters: &Counters, key: Option<Key>) -> Handler<'_> {
        let config = ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            transport: Transport::Udp,
            mode,
            max_size: 128,
            rate_limit: None,
            key,
            inject: None,
            max_clients: 4,
            max_per_source: 4,
            frame_timeout_ns: 2_000_000_000,
            idle_timeout_ns: 60_000_000_000,
        };
        Handler::new(&config, counters)
    }

    fn request(len: usize, tagged: bool) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        Exchange {
            kind: Kind::Request,
            step: 0,
            steps: 1,
            id: 9,
            sent_ns: 1,
            len: len as u32,
            tagged,
        }
        .write(&mut buf);
        buf
    }

    #[test]
    fn the_handler_answers_good_requests_and_counts_every_drop() {
        let counters = Counters::default();
        let mut handler = handler_for(Mode::Exchange, &counters, None);
        let source: IpAddr = "127.0.0.1".parse().unwrap();
        let mut good = request(64, false);
        assert!(handler.handle(&mut good, source));
        assert_eq!(Exchange::read(&good).unwrap().kind, Kind::Ack);
        let mut ack = good.clone();
        assert!(
            !handler.handle(&mut ack, source),
            "an acknowledge is not a request"
        );
        let mut cut = request(64, false);
        assert!(!handler.handle(&mut cut[..40], source));
        let mut big = request(200, false);
        assert!(!handler.handle(&mut big, source));
        let mut junk = b"hello there, this is not a request".to_vec();
        assert!(!handler.handle(&mut junk, source));
        let c = counters.snapshot();
        assert_eq!(
            (c.received, c.malformed, c.truncated, c.oversized),
            (5, 2, 1, 1)
        );
    }

    #[test]
    fn with_a_key_only_signed_requests_are_answered_and_replies_are_signed() {
        let key = Key::new(b"a key of sixteen!").unwrap();
        let counters = Counters::default();
        let mut handler = handler_for(Mode::Exchange, &counters, Some(key.clone()));
        let source: IpAddr = "127.0.0.1".parse().unwrap();
        let mut unsigned = request(64, false);
        assert!(!handler.handle(&mut unsigned, source));
        let mut forged = request(64, true);
        assert!(!handler.handle(&mut forged, source));
        let mut signed = request(64, true);
        key.sign(&mut signed);
        assert!(handler.handle(&mut signed, source));
        assert!(key.verify(&signed), "the reply carries a valid tag");
        assert_eq!(counters.snapshot().bad_auth, 2);
    }

    #[test]
    fn sockperf_pings_get_pongs_and_other_messages_none() {
        let counters = Counters::default();
        let mut handler = handler_for(Mode::Sockperf, &counters, None);
        let source: IpAddr = "127.0.0.1".parse().unwrap();
        let mut ping = vec![0u8; 32];
        Sockperf::ping(4, 32).write(&mut ping);
        assert!(handler.handle(&mut ping, source));
        assert!(!Sockperf::read(&ping).unwrap().from_client());
        let mut no_pong = vec![0u8; 32];
        Sockperf {
            sequence: 5,
            flags: 1,
            len: 32,
        }
        .write(&mut no_pong);
        assert!(!handler.handle(&mut no_pong, source));
        let c = counters.snapshot();
        assert_eq!((c.received, c.unanswered, c.malformed), (2, 1, 0));
    }
}
