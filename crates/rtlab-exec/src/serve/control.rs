//! The control thread of `exec serve` (SCHED_OTHER; it may allocate and
//! block): accepts connections, judges requests, attaches and ends
//! processes, drains their rings, watches that they live and yield, and
//! answers `exec status`. One poll(2) over the listener, every connection
//! and every attached process's pidfd, at least every [`TICK_MS`].

use super::access::{Access, Peer};
use super::attachment::{Attachment, End, Placement};
use super::config::{grant, ServeConfig};
use super::executive::Executive;
use super::focused::Partition;
use crate::admission::serve::{cpu_asked, task_of, ServeAdmission};
use rtlab_client::protocol::{
    self, Attached, Empty, ErrorReply, Reason, Reply, Request, StatusReply, MAX_MESSAGE,
};
use rtlab_core::env::Environment;
use rtlab_core::journal::{ForeignThread, Journal};
use rtlab_core::process::Stat;
use rtlab_core::result::RunResult;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// The longest poll: how often rings are drained and processes checked.
pub const TICK_MS: i32 = 10;
/// A connection must say what it wants within this.
const FIRST_REQUEST_NS: u64 = 5_000_000_000;
/// Most connections that have not said what they want yet; more wait in
/// the listen backlog until a place frees.
const MAX_PENDING: usize = 32;
/// Most of them from one user other than root: a user may not crowd out
/// the others (whoever may connect, allowed or not, holds a slot until
/// its first request or [`FIRST_REQUEST_NS`]).
const MAX_PENDING_PER_USER: usize = 4;

/// Something that happened: a line for the log, and for an attachment
/// that ended, its run.
#[derive(Debug)]
pub struct Event {
    pub line: String,
    pub run: Option<Box<RunResult>>,
}

/// A connection that has not said what it wants yet.
struct Pending {
    connection: OwnedFd,
    peer: Peer,
    since_ns: u64,
}

pub struct Control {
    pub config: ServeConfig,
    pub access: Access,
    pub listener: OwnedFd,
    pub executives: Vec<Executive>,
    pub journal: Arc<Mutex<Journal>>,
    pub events: Sender<Event>,
    pub stop: Arc<AtomicBool>,
    pub epoch_ns: u64,
    pub environment: Environment,
    /// With `--admission on`: the overheads requests are admitted with.
    pub admission: Option<ServeAdmission>,
    pending: Vec<Pending>,
    attached: Vec<Attachment>,
    /// `--focus`: the CPUs given to the executive and its processes.
    partition: Option<Partition>,
}

fn reply(connection: &OwnedFd, message: &Reply) {
    // A peer that is gone or does not read: nothing more to tell it.
    let _ = protocol::send(connection.as_fd(), message, None);
}

fn error_reply(connection: &OwnedFd, kind: &str, message: String) {
    reply(
        connection,
        &Reply::Error(ErrorReply {
            kind: kind.into(),
            message,
        }),
    );
}

/// What one received datagram was.
enum Received {
    Request(Request),
    /// Hang-up, or a receive error: the connection is over.
    Closed,
    /// Not a request: why.
    Garbage(String),
}

fn receive(connection: &OwnedFd) -> Received {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let got = match protocol::recv(connection.as_fd(), &mut buf, libc::MSG_DONTWAIT) {
        Ok(got) => got,
        Err(_) => return Received::Closed,
    };
    // A descriptor a client sent is closed here (got.fd dropped).
    if got.len == 0 {
        return Received::Closed;
    }
    if got.truncated {
        return Received::Garbage(format!("a message longer than {MAX_MESSAGE} bytes"));
    }
    match serde_json::from_slice(&buf[..got.len]) {
        Ok(request) => Received::Request(request),
        // serde quotes the peer's own keys and values: escaped, as they
        // reach the server's terminal and the peer's error message.
        Err(e) => Received::Garbage(format!(
            "not a request: {}",
            rtlab_core::result::printable(&e.to_string(), 200)
        )),
    }
}

impl Control {
    pub fn new(
        config: ServeConfig,
        listener: OwnedFd,
        executives: Vec<Executive>,
        journal: Arc<Mutex<Journal>>,
        events: Sender<Event>,
        stop: Arc<AtomicBool>,
    ) -> Control {
        Control {
            access: Access {
                users: config.allow_users.clone(),
                groups: config.allow_groups.clone(),
            },
            config,
            listener,
            executives,
            journal,
            events,
            stop,
            epoch_ns: rtlab_core::clock::now_ns(),
            environment: Environment::capture(),
            admission: None,
            pending: Vec::new(),
            attached: Vec::new(),
            partition: None,
        }
    }

    /// Serves inside `partition`: attaching processes join it.
    pub fn focused(mut self, partition: Option<Partition>) -> Control {
        self.partition = partition;
        self
    }

    fn say(&self, line: String, run: Option<Box<RunResult>>) {
        let _ = self.events.send(Event { line, run });
    }

    /// Serves until the stop flag, then ends every attachment; returns
    /// the partition, to be given back.
    pub fn run(mut self) -> Option<Partition> {
        while !self.stop.load(Ordering::Acquire) {
            self.poll_once();
        }
        let ended: Vec<Attachment> = self.attached.drain(..).collect();
        for attachment in ended {
            reply(&attachment.connection, &Reply::Stopping(Empty {}));
            self.end(attachment, End::Stopped);
        }
        for executive in &mut self.executives {
            executive.stop();
        }
        self.partition.take()
    }

    fn poll_once(&mut self) {
        // With every waiting place taken, new connections stay in the
        // listen backlog (their connect() waits) until a place frees,
        // rather than being refused: a burst of attaches (kurt-table's 70
        // processes at once) is served, not turned away.
        let room = self.pending.len() < MAX_PENDING;
        let mut fds = vec![libc::pollfd {
            fd: self.listener.as_raw_fd(),
            events: if room { libc::POLLIN } else { 0 },
            revents: 0,
        }];
        let watch = |fd: i32| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        fds.extend(self.pending.iter().map(|p| watch(p.connection.as_raw_fd())));
        for a in &self.attached {
            fds.push(watch(a.connection.as_raw_fd()));
            fds.push(watch(a.peer.pidfd.as_raw_fd()));
        }
        // SAFETY: fds is a valid array of its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, TICK_MS) };
        let ready = |i: usize| n > 0 && fds[i].revents != 0;
        let pending_ready: Vec<bool> = (0..self.pending.len()).map(|i| ready(1 + i)).collect();
        let base = 1 + self.pending.len();
        let attached_ready: Vec<(bool, bool)> = (0..self.attached.len())
            .map(|i| (ready(base + 2 * i), ready(base + 2 * i + 1)))
            .collect();
        self.serve_attached(&attached_ready);
        self.serve_pending(&pending_ready);
        if room && ready(0) {
            self.accept();
        }
        self.look_after_attached();
    }

    fn accept(&mut self) {
        while self.pending.len() < MAX_PENDING {
            // SAFETY: plain syscall; the peer address is not wanted.
            let raw = unsafe {
                libc::accept4(
                    self.listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            };
            if raw < 0 {
                return;
            }
            // SAFETY: a new descriptor nobody else owns.
            let connection = unsafe { OwnedFd::from_raw_fd(raw) };
            match Peer::of(connection.as_fd()) {
                Ok(peer)
                    if peer.uid != 0
                        && self
                            .pending
                            .iter()
                            .filter(|p| p.peer.uid == peer.uid)
                            .count()
                            >= MAX_PENDING_PER_USER =>
                {
                    error_reply(
                        &connection,
                        "refused",
                        format!("too many connections of uid {} waiting", peer.uid),
                    );
                }
                Ok(peer) => self.pending.push(Pending {
                    connection,
                    peer,
                    since_ns: rtlab_core::clock::now_ns(),
                }),
                Err(e) => error_reply(&connection, "refused", format!("who are you? {e}")),
            }
        }
    }

    fn serve_pending(&mut self, ready: &[bool]) {
        let now = rtlab_core::clock::now_ns();
        let pending = std::mem::take(&mut self.pending);
        for (p, ready) in pending
            .into_iter()
            .zip(ready.iter().copied().chain(std::iter::repeat(false)))
        {
            if !ready {
                if now < p.since_ns + FIRST_REQUEST_NS {
                    self.pending.push(p);
                } else {
                    error_reply(&p.connection, "protocol", "no request within 5 s".into());
                }
                continue;
            }
            // Read before any answer: a socket closed with a request
            // unread would reset the connection, and the reply be lost.
            let received = receive(&p.connection);
            if !self.access.allows(&p.peer) {
                let why = format!(
                    "uid {} may not register with this executive (root only, and --allow-user/--allow-group)",
                    p.peer.uid
                );
                self.say(format!("refused pid {}: {why}", p.peer.pid), None);
                error_reply(&p.connection, "refused", why);
                continue;
            }
            match received {
                Received::Closed => {}
                Received::Garbage(why) => {
                    self.say(format!("refused pid {}: {why}", p.peer.pid), None);
                    error_reply(&p.connection, "protocol", why);
                }
                Received::Request(Request::Status(_)) => reply(&p.connection, &self.status()),
                Received::Request(Request::Detach(_)) => {
                    error_reply(&p.connection, "protocol", "not attached".into())
                }
                Received::Request(Request::Attach(request)) => self.attach(p, request),
            }
        }
    }

    fn status(&self) -> Reply {
        Reply::Status(StatusReply {
            pid: std::process::id(),
            socket: self.config.socket.display().to_string(),
            cpus: self.config.cpus.clone(),
            tasks: self.attached.iter().map(Attachment::status).collect(),
        })
    }

    fn attach(&mut self, p: Pending, request: rtlab_client::protocol::AttachRequest) {
        let refuse = |me: &Self, p: &Pending, kind: &str, why: String| {
            me.say(format!("refused pid {}: {why}", p.peer.pid), None);
            error_reply(&p.connection, kind, why);
        };
        if self.attached.len() >= self.config.max_tasks {
            let why = format!(
                "{} processes are attached, the most (--max-tasks)",
                self.attached.len()
            );
            return refuse(self, &p, "refused", why);
        }
        if !p.peer.owns_thread(request.tid) {
            let why = format!(
                "tid {} is not a thread of process {}",
                request.tid, p.peer.pid
            );
            return refuse(self, &p, "invalid", why);
        }
        if self.attached.iter().any(|a| a.thread.tid == request.tid) {
            let why = format!("thread {} is attached already", request.tid);
            return refuse(self, &p, "refused", why);
        }
        let thread = match ForeignThread::of(p.peer.pid, request.tid) {
            Ok(thread) => thread,
            Err(e) => return refuse(self, &p, "invalid", format!("thread {}: {e}", request.tid)),
        };
        let comm = Stat::of(p.peer.pid as u32)
            .map(|stat| stat.comm().to_vec())
            .unwrap_or_default();
        let load = |cpu| {
            self.executives
                .iter()
                .find(|e| e.cpu == cpu)
                .map_or(usize::MAX, Executive::load)
        };
        let mut granted = match grant(&self.config, &request, &comm, load) {
            Ok(granted) => granted,
            Err(refusal) => {
                let (kind, why) = refusal.kind_and_message();
                return refuse(self, &p, kind, why);
            }
        };
        if self.attached.iter().any(|a| a.grant.name == granted.name)
            && self.config.taskset.is_some()
        {
            let why = format!("task {} is attached already", granted.name);
            return refuse(self, &p, "refused", why);
        }
        if let Some(admission) = &self.admission {
            let admitted: Vec<_> = self.attached.iter().map(|a| task_of(&a.grant)).collect();
            let asked = cpu_asked(&self.config, &request, &granted.name);
            let placed = admission.place(&admitted, &task_of(&granted), asked, &self.config.cpus);
            match placed {
                Ok(cpu) => granted.cpu = cpu,
                Err(refusal) => return refuse(self, &p, "refused", refusal.message),
            }
        }
        let executive = self
            .executives
            .iter()
            .position(|e| e.cpu == granted.cpu)
            .expect("granted CPUs are the executives'");
        // Into the partition before the promotion: a thread cannot be
        // pinned to a CPU outside its cpuset.
        let pid = p.peer.pid;
        if let Some(Err(why)) = self.partition.as_mut().map(|f| f.enter(pid)) {
            return refuse(self, &p, "refused", why);
        }
        let placement = Placement {
            journal: &self.journal,
            executive,
            table: Arc::clone(&self.executives[executive].table),
            epoch_ns: self.epoch_ns,
            hang_timeout_ns: self.config.hang_timeout_of(granted.period_ns),
        };
        let comm_text = super::config::name_from_comm(&comm);
        let (attachment, page) =
            match Attachment::start(p.connection, p.peer, thread, comm_text, granted, placement) {
                Ok(started) => started,
                Err((connection, why)) => {
                    if let Some(left) = self.partition.as_mut().and_then(|f| f.exit(pid)) {
                        self.say(left, None);
                    }
                    self.say(format!("refused a process: {why}"), None);
                    return error_reply(&connection, "refused", why);
                }
            };
        let g = &attachment.grant;
        let answer = Reply::Attached(Attached {
            version: protocol::VERSION,
            name: g.name.clone(),
            period_ns: g.period_ns,
            offset_ns: g.offset_ns,
            deadline_ns: g.deadline_ns,
            budget_ns: g.budget_ns,
            cpu: g.cpu as u32,
            priority: g.priority,
            first_activation_ns: attachment.first_ns,
        });
        let sent = protocol::send(
            attachment.connection.as_fd(),
            &answer,
            Some(page.as_raw_fd()),
        );
        drop(page);
        self.say(
            format!(
                "attached {} (pid {}, tid {}, uid {}): every {} on CPU {}, fifo {}",
                g.name,
                attachment.peer.pid,
                attachment.thread.tid,
                attachment.peer.uid,
                rtlab_core::units::human_duration(g.period_ns),
                g.cpu,
                g.priority
            ),
            None,
        );
        if sent.is_err() {
            self.end(attachment, End::Died);
            return;
        }
        self.attached.push(attachment);
    }

    fn serve_attached(&mut self, ready: &[(bool, bool)]) {
        let attached = std::mem::take(&mut self.attached);
        for (a, (socket, pidfd)) in attached.into_iter().zip(ready.iter().copied()) {
            let end = if socket {
                match receive(&a.connection) {
                    Received::Closed => Some(End::Died),
                    Received::Request(Request::Detach(_)) => Some(End::Detached),
                    Received::Request(Request::Status(_)) => {
                        reply(&a.connection, &self.status());
                        None
                    }
                    Received::Request(Request::Attach(_)) => {
                        error_reply(&a.connection, "refused", "attached already".into());
                        None
                    }
                    Received::Garbage(why) => {
                        error_reply(&a.connection, "protocol", why);
                        None
                    }
                }
            } else if pidfd {
                Some(End::Died)
            } else {
                None
            };
            match end {
                Some(end) => {
                    if end == End::Detached {
                        // Reply after the run is built: the thread is back first.
                        let connection = a.connection.try_clone().ok();
                        self.end(a, end);
                        if let Some(connection) = connection {
                            reply(&connection, &Reply::Detached(Empty {}));
                        }
                    } else {
                        self.end(a, end);
                    }
                }
                None => self.attached.push(a),
            }
        }
    }

    fn look_after_attached(&mut self) {
        let now = rtlab_core::clock::now_ns();
        let attached = std::mem::take(&mut self.attached);
        for mut a in attached {
            a.drain();
            match a.misbehaves(now) {
                Some(why) => {
                    reply(
                        &a.connection,
                        &Reply::Dropped(Reason {
                            reason: why.clone(),
                        }),
                    );
                    self.end(a, End::Dropped(why));
                }
                None => self.attached.push(a),
            }
        }
    }

    /// Ends `attachment` and hands its run out; its process leaves the
    /// partition with its last attachment.
    fn end(&mut self, attachment: Attachment, end: End) {
        let (name, pid) = (attachment.grant.name.clone(), attachment.peer.pid);
        let running = self.executives[attachment.executive].running();
        let mut run = attachment.finish(
            &end,
            running,
            &self.journal,
            &self.environment,
            &self.config,
        );
        if let Some(partition) = &mut self.partition {
            run.warnings.extend(partition.exit(pid));
            partition.mark(&mut run);
        }
        let lateness = &run.series[0].stats;
        let line = format!(
            "{} {name} (pid {pid}): {} activations, {} missed, {} deadline misses",
            match &end {
                End::Detached => "detached".to_string(),
                other => format!("ended ({})", other.describe()),
            },
            lateness.samples,
            lateness.missed,
            run.series[1].stats.missed
        );
        self.say(line, Some(Box::new(run)));
    }
}
