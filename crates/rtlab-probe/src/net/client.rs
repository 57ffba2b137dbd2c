//! The open-loop client: messages leave on an absolute schedule whether or
//! not the server has answered the earlier ones (a slow server cannot slow
//! the schedule down and hide its own stalls: coordinated omission), each
//! message is K request/acknowledge steps, and every message ends completed
//! or lost, never silently skipped.
//!
//! Hot path: one thread, everything allocated in [`Client::connect`]; the
//! loop makes no syscall but the clock, `ppoll` (the wait), and the sends
//! and receives under test.

use super::auth::Key;
use super::outgoing::Outgoing;
use super::wire::{self, Exchange, Kind, Mode, Sockperf, Transport};
use rtlab_core::clock;
use rtlab_core::result::NetMessageCounts;
use std::io::{self, ErrorKind, Read};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Counts one more (a relaxed add: no lock, no syscall).
pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What the client sends, where, and how often.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    pub target: SocketAddr,
    pub transport: Transport,
    pub mode: Mode,
    /// Request/acknowledge steps per message (1-32).
    pub steps: u8,
    /// Bytes per request.
    pub payload: usize,
    pub interval_ns: u64,
    pub timeout_ns: u64,
    pub messages: u64,
    pub key: Option<Key>,
}

/// Response time of a message that got no complete answer.
pub const LOST: u64 = u64::MAX;

/// One message's fate, as it leaves the client thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageRecord {
    pub index: u64,
    /// Scheduled send time since the run's start.
    pub at_ns: u64,
    /// Actual first send − scheduled.
    pub send_lag_ns: u64,
    /// Last reply − scheduled; [`LOST`] when lost.
    pub response_ns: u64,
    /// Last reply − actual first send; [`LOST`] when lost.
    pub from_send_ns: u64,
}

/// Counts shared with the status line while the client runs.
#[derive(Debug, Default)]
pub struct ClientCounters {
    sent: AtomicU64,
    completed: AtomicU64,
    lost: AtomicU64,
    late: AtomicU64,
    duplicate: AtomicU64,
    reordered: AtomicU64,
    bad: AtomicU64,
    send_errors: AtomicU64,
}

impl ClientCounters {
    pub fn snapshot(&self, planned: u64) -> NetMessageCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let sent = get(&self.sent);
        NetMessageCounts {
            planned,
            sent,
            completed: get(&self.completed),
            lost: get(&self.lost),
            unsent: planned.saturating_sub(sent),
            late_replies: get(&self.late),
            duplicate_replies: get(&self.duplicate),
            reordered_replies: get(&self.reordered),
            bad_replies: get(&self.bad),
            send_errors: get(&self.send_errors),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    id: u64,
    active: bool,
    scheduled_ns: u64,
    sent_ns: u64,
    /// The step whose acknowledge is awaited.
    step: u8,
    /// Send order of that step's request, across all messages.
    request_seq: u64,
}

enum Conn {
    Udp(UdpSocket),
    Tcp(TcpLink),
}

/// A TCP connection with bounded buffers for frames in and out.
struct TcpLink {
    stream: TcpStream,
    input: Vec<u8>,
    filled: usize,
    output: Outgoing,
}

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long before a send the client wakes, to spin to the exact time: above
/// the wake-up latency of a VM (20-50 µs), so that sends leave on time.
const SEND_SPIN_NS: u64 = 100_000;
/// The longest wait between looks at the stop flag.
const STOP_CHECK_NS: u64 = 100_000_000;
/// In-flight slots beyond what the timeout needs: room for a client that
/// falls this far behind its schedule before an old message has to be
/// given up before its deadline.
const TOLERATED_LAG_NS: u64 = 1_000_000_000;
/// Most in-flight slots (about 40 MiB).
pub const MAX_SLOTS: u64 = 1 << 20;
/// Receive buffer asked of the kernel, so that a burst of replies waits.
const RECEIVE_BUFFER: libc::c_int = 4 << 20;

/// In-flight slots for a timeout and an interval: every message that can
/// be waiting for its replies, plus a second of client lag; at most
/// [`MAX_SLOTS`].
pub fn slot_count(timeout_ns: u64, interval_ns: u64) -> u64 {
    let interval = interval_ns.max(1);
    (timeout_ns / interval)
        .saturating_add(2)
        .saturating_add((TOLERATED_LAG_NS / interval).max(64))
        .min(MAX_SLOTS)
}

/// A connected client with everything it needs allocated.
pub struct Client {
    plan: ClientPlan,
    conn: Conn,
    slots: Vec<Slot>,
    in_flight: u64,
    /// Oldest message that may still be in flight.
    oldest: u64,
    /// One bit per message: completed, and given up as lost.
    done: Vec<u64>,
    lost: Vec<u64>,
    /// Requests sent so far (the next one's send order).
    requests_sent: u64,
    /// Send order of the latest-sent request acknowledged so far: a reply
    /// to an earlier-sent request after it is reordered.
    highest_ack: Option<u64>,
    request: Vec<u8>,
    reply: Vec<u8>,
    next_id: u64,
}

/// How the client's run ended.
pub struct ClientEnd {
    /// Why it could not go on (the server closed the TCP connection, ...).
    pub failure: Option<String>,
}

impl Client {
    /// Connects (TCP) or binds and connects (UDP) to the target, and
    /// allocates the run's buffers.
    pub fn connect(plan: ClientPlan) -> io::Result<Client> {
        let conn = match plan.transport {
            Transport::Udp => {
                let any: SocketAddr = if plan.target.is_ipv4() {
                    "0.0.0.0:0".parse().expect("valid address")
                } else {
                    "[::]:0".parse().expect("valid address")
                };
                let socket = UdpSocket::bind(any)?;
                socket.connect(plan.target)?;
                socket.set_nonblocking(true)?;
                set_receive_buffer(socket.as_raw_fd());
                Conn::Udp(socket)
            }
            Transport::Tcp => {
                let stream = TcpStream::connect_timeout(&plan.target, CONNECT_TIMEOUT)?;
                stream.set_nodelay(true)?;
                stream.set_nonblocking(true)?;
                set_receive_buffer(stream.as_raw_fd());
                Conn::Tcp(TcpLink {
                    stream,
                    input: vec![0u8; plan.payload * 4],
                    filled: 0,
                    // 64 requests waiting for the socket; payloads are at
                    // most 64 KiB, so at most 4 MiB.
                    output: Outgoing::with_capacity(plan.payload * 64),
                })
            }
        };
        let slots = slot_count(plan.timeout_ns, plan.interval_ns) as usize;
        let words = (plan.messages / 64 + 1) as usize;
        Ok(Client {
            conn,
            slots: vec![Slot::default(); slots],
            in_flight: 0,
            oldest: 0,
            done: vec![0; words],
            lost: vec![0; words],
            requests_sent: 0,
            highest_ack: None,
            request: vec![0u8; plan.payload],
            // Room for a reply larger than any request, to see it as bad.
            reply: vec![0u8; plan.payload.max(wire::MAX_DATAGRAM) + 1],
            next_id: 0,
            plan,
        })
    }

    /// Runs the schedule from `start_ns` (CLOCK_MONOTONIC) until every
    /// message is done or `stop` is set; then waits for the messages in
    /// flight (up to the timeout).
    pub fn run(
        &mut self,
        start_ns: u64,
        ring: &mut rtrb::Producer<MessageRecord>,
        dropped: &AtomicU64,
        counters: &ClientCounters,
        stop: &AtomicBool,
    ) -> ClientEnd {
        let interval = self.plan.interval_ns;
        let messages = self.plan.messages;
        let mut out = Outlet {
            ring,
            dropped,
            counters,
            start_ns,
        };
        let mut stopping = false;
        let mut failure = None;
        loop {
            stopping |= stop.load(Ordering::Relaxed);
            let mut now = clock::now_ns();
            let next_send = start_ns + self.next_id * interval;
            if !stopping && self.next_id < messages && now < next_send {
                // Woken early on purpose: spin to the exact send time
                // (paper 002's wake-early-and-spin), taking replies meanwhile
                // so that none waits for the spin to end.
                while now < next_send && now + SEND_SPIN_NS >= next_send {
                    if let Err(why) = self.receive(&mut out) {
                        failure = Some(why);
                        break;
                    }
                    now = clock::now_ns();
                }
                if failure.is_some() {
                    break;
                }
            }
            while !stopping && self.next_id < messages && start_ns + self.next_id * interval <= now
            {
                let id = self.next_id;
                self.next_id += 1;
                self.begin(id, start_ns + id * interval, &mut out);
                // A burst after a stall must not let replies pile up unread.
                if let Err(why) = self.receive(&mut out) {
                    failure = Some(why);
                    break;
                }
                now = clock::now_ns();
            }
            if failure.is_some() {
                break;
            }
            if let Err(why) = self.receive(&mut out) {
                failure = Some(why);
                break;
            }
            self.expire(clock::now_ns(), &mut out);
            let all_sent = stopping || self.next_id == messages;
            if all_sent && self.in_flight == 0 {
                break;
            }
            let now = clock::now_ns();
            let mut wake = now + STOP_CHECK_NS;
            if !all_sent {
                let next_send = start_ns + self.next_id * interval;
                wake = wake.min(next_send.saturating_sub(SEND_SPIN_NS));
            }
            if let Some(deadline) = self.oldest_deadline() {
                wake = wake.min(deadline);
            }
            self.wait(wake.saturating_sub(now));
        }
        if failure.is_some() {
            // Nothing more can arrive: what is in flight is lost.
            self.expire(u64::MAX, &mut out);
        }
        ClientEnd { failure }
    }

    fn slot_of(&self, id: u64) -> usize {
        (id % self.slots.len() as u64) as usize
    }

    /// Sends the first request of message `id`.
    fn begin(&mut self, id: u64, scheduled_ns: u64, out: &mut Outlet<'_, '_>) {
        let index = self.slot_of(id);
        if self.slots[index].active {
            // The client fell so far behind that an old message still holds
            // the slot: it is given up now (counted lost, never dropped).
            let old = self.slots[index];
            self.give_up(old, out);
        }
        let sent_ns = clock::now_ns();
        self.slots[index] = Slot {
            id,
            active: true,
            scheduled_ns,
            sent_ns,
            step: 0,
            request_seq: self.requests_sent,
        };
        self.in_flight += 1;
        bump(&out.counters.sent);
        if !self.send(id, 0, sent_ns) {
            bump(&out.counters.send_errors);
        }
    }

    /// Builds and sends one request; false when the kernel refused it.
    fn send(&mut self, id: u64, step: u8, now_ns: u64) -> bool {
        self.requests_sent += 1;
        let plan = &self.plan;
        let len = self.request.len();
        match plan.mode {
            Mode::Exchange | Mode::Echo => {
                Exchange {
                    kind: Kind::Request,
                    step,
                    steps: plan.steps,
                    id,
                    sent_ns: now_ns,
                    len: len as u32,
                    tagged: plan.key.is_some(),
                }
                .write(&mut self.request);
                if let Some(key) = &plan.key {
                    key.sign(&mut self.request);
                }
            }
            Mode::Sockperf => Sockperf::ping(wire::sockperf_sequence(id, step), len as u32)
                .write(&mut self.request),
        }
        match &mut self.conn {
            Conn::Udp(socket) => socket.send(&self.request).is_ok(),
            Conn::Tcp(link) => link.output.send(&mut link.stream, &self.request),
        }
    }

    /// Takes every reply that has arrived; Err when the connection is gone.
    fn receive(&mut self, out: &mut Outlet<'_, '_>) -> Result<(), String> {
        loop {
            let got = match &mut self.conn {
                Conn::Udp(socket) => match socket.recv(&mut self.reply) {
                    Ok(n) => Some(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => None,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    // An ICMP error for an earlier request (port or host
                    // unreachable, prohibited, ...): that request is lost,
                    // the run goes on.
                    Err(e) if is_icmp_error(&e) => {
                        bump(&out.counters.send_errors);
                        continue;
                    }
                    Err(e) => return Err(format!("receiving from {}: {e}", self.plan.target)),
                },
                Conn::Tcp(link) => {
                    if !link.output.flush(&mut link.stream) {
                        return Err(format!("{} closed the connection", self.plan.target));
                    }
                    link.next_frame(self.plan.mode, self.plan.payload, &mut self.reply)?
                }
            };
            let Some(len) = got else { return Ok(()) };
            let now = clock::now_ns();
            self.on_reply(len, now, out);
        }
    }

    /// Message id and step of a reply, if it is a valid one for this run.
    fn parse(&self, reply: &[u8]) -> Option<(u64, u8)> {
        let plan = &self.plan;
        if reply.len() != plan.payload {
            return None;
        }
        match plan.mode {
            Mode::Exchange | Mode::Echo => {
                let header = Exchange::read(reply).ok()?;
                // Echo returns the request itself; exchange acknowledges it.
                let expected = if plan.mode == Mode::Echo {
                    Kind::Request
                } else {
                    Kind::Ack
                };
                if header.kind != expected || header.steps != plan.steps {
                    return None;
                }
                if let Some(key) = &plan.key {
                    if !header.tagged || !key.verify(reply) {
                        return None;
                    }
                }
                Some((header.id, header.step))
            }
            Mode::Sockperf => {
                let header = Sockperf::read(reply).ok()?;
                if header.from_client() {
                    return None;
                }
                let (id, step) = wire::split_sockperf_sequence(header.sequence);
                (step < plan.steps).then_some((id, step))
            }
        }
    }

    fn on_reply(&mut self, len: usize, now_ns: u64, out: &mut Outlet<'_, '_>) {
        let Some((id, step)) = self.parse(&self.reply[..len]) else {
            bump(&out.counters.bad);
            return;
        };
        if id >= self.next_id {
            bump(&out.counters.bad);
            return;
        }
        let index = self.slot_of(id);
        let slot = self.slots[index];
        if !(slot.active && slot.id == id) {
            if bit(&self.done, id) {
                bump(&out.counters.duplicate);
            } else if bit(&self.lost, id) {
                bump(&out.counters.late);
            } else {
                bump(&out.counters.bad);
            }
            return;
        }
        if step < slot.step {
            bump(&out.counters.duplicate);
            return;
        }
        if step > slot.step {
            // An acknowledge of a request not yet sent.
            bump(&out.counters.bad);
            return;
        }
        match self.highest_ack {
            Some(highest) if slot.request_seq < highest => bump(&out.counters.reordered),
            _ => self.highest_ack = Some(slot.request_seq),
        }
        let next_step = step + 1;
        if next_step < self.plan.steps {
            self.slots[index].step = next_step;
            self.slots[index].request_seq = self.requests_sent;
            if !self.send(id, next_step, now_ns) {
                bump(&out.counters.send_errors);
            }
            return;
        }
        self.slots[index].active = false;
        self.in_flight -= 1;
        set_bit(&mut self.done, id);
        bump(&out.counters.completed);
        out.push(MessageRecord {
            index: id,
            at_ns: slot.scheduled_ns - out.start_ns,
            send_lag_ns: slot.sent_ns.saturating_sub(slot.scheduled_ns),
            response_ns: now_ns.saturating_sub(slot.scheduled_ns),
            from_send_ns: now_ns.saturating_sub(slot.sent_ns),
        });
    }

    /// The deadline of the oldest message in flight.
    fn oldest_deadline(&mut self) -> Option<u64> {
        self.advance_oldest();
        (self.in_flight > 0).then(|| {
            let slot = self.slots[self.slot_of(self.oldest)];
            slot.sent_ns + self.plan.timeout_ns
        })
    }

    /// Moves `oldest` past messages no longer in flight. Messages leave in
    /// id order, so their deadlines are in id order too.
    fn advance_oldest(&mut self) {
        while self.oldest < self.next_id {
            let slot = self.slots[self.slot_of(self.oldest)];
            if slot.active && slot.id == self.oldest {
                break;
            }
            self.oldest += 1;
        }
    }

    /// Gives up every message whose deadline is at or before `now_ns`.
    fn expire(&mut self, now_ns: u64, out: &mut Outlet<'_, '_>) {
        while self.in_flight > 0 {
            self.advance_oldest();
            let slot = self.slots[self.slot_of(self.oldest)];
            if slot.sent_ns.saturating_add(self.plan.timeout_ns) > now_ns {
                break;
            }
            self.give_up(slot, out);
        }
    }

    fn give_up(&mut self, slot: Slot, out: &mut Outlet<'_, '_>) {
        let index = self.slot_of(slot.id);
        self.slots[index].active = false;
        self.in_flight -= 1;
        set_bit(&mut self.lost, slot.id);
        bump(&out.counters.lost);
        out.push(MessageRecord {
            index: slot.id,
            at_ns: slot.scheduled_ns - out.start_ns,
            send_lag_ns: slot.sent_ns.saturating_sub(slot.scheduled_ns),
            response_ns: LOST,
            from_send_ns: LOST,
        });
    }

    /// Waits up to `timeout_ns` for a reply (or room to send, over TCP).
    fn wait(&self, timeout_ns: u64) {
        let (fd, events): (RawFd, libc::c_short) = match &self.conn {
            Conn::Udp(socket) => (socket.as_raw_fd(), libc::POLLIN),
            Conn::Tcp(link) => (
                link.stream.as_raw_fd(),
                libc::POLLIN
                    | if link.output.is_empty() {
                        0
                    } else {
                        libc::POLLOUT
                    },
            ),
        };
        let mut fds = [libc::pollfd {
            fd,
            events,
            revents: 0,
        }];
        let timeout = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd and a valid timespec; no signal mask.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 1, &timeout, std::ptr::null()) };
    }
}

impl TcpLink {
    /// The next whole frame, copied into `reply`; None when none is there
    /// yet. Every reply has the request's size: a frame of another size
    /// means the stream cannot be followed.
    fn next_frame(
        &mut self,
        mode: Mode,
        payload: usize,
        reply: &mut [u8],
    ) -> Result<Option<usize>, String> {
        loop {
            if let Some(len) = wire::frame_len(mode, &self.input[..self.filled]) {
                let len = match len {
                    Ok(len) if len == payload => len,
                    Ok(len) => {
                        return Err(format!(
                            "the server sent a frame of {len} bytes for requests of {payload}"
                        ))
                    }
                    Err(_) => {
                        return Err(format!("the server's byte stream is not in {mode} format"))
                    }
                };
                if self.filled >= len {
                    reply[..len].copy_from_slice(&self.input[..len]);
                    self.input.copy_within(len..self.filled, 0);
                    self.filled -= len;
                    return Ok(Some(len));
                }
            }
            match self.stream.read(&mut self.input[self.filled..]) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("the connection failed: {e}")),
            }
        }
    }
}

/// Where finished messages go.
struct Outlet<'a, 'b> {
    ring: &'a mut rtrb::Producer<MessageRecord>,
    dropped: &'b AtomicU64,
    counters: &'b ClientCounters,
    start_ns: u64,
}

impl Outlet<'_, '_> {
    fn push(&mut self, record: MessageRecord) {
        if self.ring.push(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Asks for a larger receive buffer, so that a burst of datagrams waits
/// instead of being dropped: beyond net.core.rmem_max where allowed
/// (CAP_NET_ADMIN), else up to it.
pub fn set_receive_buffer(fd: RawFd) {
    let size = RECEIVE_BUFFER;
    for option in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: setsockopt with a valid int option value.
        let done = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                option,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        } == 0;
        if done {
            return;
        }
    }
}

/// Errors a connected UDP socket reports for an ICMP message about an
/// earlier datagram: they say nothing about the socket itself.
fn is_icmp_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EPROTO
                | libc::EACCES
                | libc::EMSGSIZE
                | libc::ENOPROTOOPT
                | libc::ETIMEDOUT
                | libc::ECONNRESET
        )
    )
}

fn bit(bits: &[u64], id: u64) -> bool {
    bits.get((id / 64) as usize)
        .is_some_and(|word| word & (1 << (id % 64)) != 0)
}

fn set_bit(bits: &mut [u64], id: u64) {
    if let Some(word) = bits.get_mut((id / 64) as usize) {
        *word |= 1 << (id % 64);
    }
}
