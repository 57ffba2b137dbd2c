//! The collector: a SCHED_OTHER thread that takes the sender's records,
//! drains every flow socket's error queue for their transmit stamps, and
//! turns each packet into its departure (the kernel's stamp, or the
//! user-space send time when none came within STAMP_WAIT) in sequence
//! order: the `departure` and `gap` series and their online accuracy.
//! The dispatcher never waits for it.

use super::accuracy::Accuracy;
use super::sender::Departure;
use super::txstamps::{self, ClockOffset, Queued};
use rtlab_core::clock;
use rtlab_probe::recorder::Sample;
use std::collections::VecDeque;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How long a packet waits for its kernel stamp before its user-space
/// send time stands in for it.
pub const STAMP_WAIT_NS: u64 = 200_000_000;
/// The longest poll: records are taken at least this often.
const POLL_MS: libc::c_int = 2;
/// How far a stamp may seem to precede its send's clock read: the error
/// of the clock offset (a fraction of a µs), with margin.
const STAMP_TOLERANCE_NS: u64 = 2_000;
/// Stamps kept per flow for records not taken yet.
const MAX_EARLY: usize = 4096;

/// What the collector reads: one ring and one socket per flow.
pub struct Inputs {
    pub rings: Vec<rtrb::Consumer<Departure>>,
    pub sockets: Vec<Arc<UdpSocket>>,
    pub kernel_stamps: bool,
    pub late_after_ns: u64,
}

/// The `departure` and `gap` series' rings.
pub struct Outputs {
    pub departure: rtrb::Producer<Sample>,
    pub gap: rtrb::Producer<Sample>,
    /// Samples a full ring lost (each series its own).
    pub departure_dropped: Arc<AtomicU64>,
    pub gap_dropped: Arc<AtomicU64>,
}

/// What the collector measured.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub departures: u64,
    pub without_kernel_stamp: u64,
    pub late: u64,
    pub departure: Accuracy,
    pub gap: Accuracy,
    /// First and last departure, and first and last planned instant
    /// (CLOCK_MONOTONIC), of the packets measured.
    pub first: Option<(u64, u64)>,
    pub last: Option<(u64, u64)>,
    /// Packets the qdisc dropped (SO_TXTIME, their time passed).
    pub txtime_dropped: u64,
    /// Stamps refused because they came before their packet's send.
    pub stamps_refused: u64,
    /// Errors reading an error queue (the first one's text).
    pub queue_error: Option<String>,
}

struct Pending {
    departure: Departure,
    /// The kernel's stamp on CLOCK_MONOTONIC, once it came.
    kernel_ns: Option<u64>,
}

struct State {
    /// In sequence order.
    pending: VecDeque<Pending>,
    /// Per flow: (counter, sequence, user-space send time) of the records
    /// waiting for a stamp.
    waiting: Vec<VecDeque<(u32, u64, u64)>>,
    /// Per flow: stamps read before their packet's record was taken (the
    /// kernel stamps during the send; the sender pushes the record after).
    early: Vec<VecDeque<(u32, u64)>>,
    offset: ClockOffset,
    collected: Collected,
}

/// Runs the collector to the end: every ring abandoned (the dispatcher
/// and its senders are gone) and every packet given its departure.
pub fn run(mut inputs: Inputs, mut out: Outputs) -> Collected {
    let mut state = State {
        pending: VecDeque::new(),
        waiting: vec![VecDeque::new(); inputs.rings.len()],
        early: vec![VecDeque::new(); inputs.rings.len()],
        offset: ClockOffset::measure(),
        collected: Collected::default(),
    };
    let mut fds: Vec<libc::pollfd> = inputs
        .sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: 0,
            revents: 0,
        })
        .collect();
    let mut abandoned_at = None;
    loop {
        // Every record pushed before this instant is taken below (the
        // rings are drained after it): a packet sent before it has no
        // earlier packet still to come.
        let round_start = clock::now_ns();
        let all_gone = inputs.rings.iter().all(rtrb::Consumer::is_abandoned);
        for ring in &mut inputs.rings {
            while let Ok(departure) = ring.pop() {
                state.take(departure, inputs.kernel_stamps);
            }
        }
        if inputs.kernel_stamps {
            state.offset.refresh(round_start);
            state.read_stamps(&inputs.sockets);
        }
        let finishing = match (all_gone, abandoned_at) {
            (true, None) => {
                abandoned_at = Some(round_start);
                false
            }
            (true, Some(at)) => round_start.saturating_sub(at) > STAMP_WAIT_NS,
            _ => false,
        };
        state.emit(round_start, finishing, &inputs, &mut out);
        if all_gone && state.pending.is_empty() {
            return state.collected;
        }
        if inputs.kernel_stamps && !state.pending.is_empty() {
            wait_for_stamps(&mut fds);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(POLL_MS as u64));
        }
    }
}

/// Waits for an error queue to have something, at most POLL_MS. A socket
/// with a pending error (a refused send) polls POLLERR until the next send
/// takes it: a minimum pause keeps that from spinning this thread.
fn wait_for_stamps(fds: &mut [libc::pollfd]) {
    // SAFETY: fds is a valid array of pollfds of this length.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_MS) };
    if ready > 0 {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

impl State {
    fn take(&mut self, departure: Departure, kernel_stamps: bool) {
        let at = self
            .pending
            .partition_point(|p| p.departure.sequence < departure.sequence);
        self.pending.insert(
            at,
            Pending {
                departure,
                kernel_ns: None,
            },
        );
        let flow = departure.flow as usize;
        if kernel_stamps && flow < self.waiting.len() {
            self.waiting[flow].push_back((
                departure.counter,
                departure.sequence,
                departure.user_ns,
            ));
            for (id, at_ns) in std::mem::take(&mut self.early[flow]) {
                self.match_stamp(flow, id, at_ns);
            }
        }
    }

    fn read_stamps(&mut self, sockets: &[Arc<UdpSocket>]) {
        for (flow, socket) in sockets.iter().enumerate() {
            loop {
                match txstamps::next(socket.as_raw_fd()) {
                    Ok(Some(Queued::Stamp(stamp))) => {
                        let at = self.offset.monotonic(stamp.realtime_ns);
                        self.match_stamp(flow, stamp.id, at);
                    }
                    Ok(Some(Queued::TxtimeDropped)) => self.collected.txtime_dropped += 1,
                    Ok(None) => break,
                    Err(e) => {
                        self.collected
                            .queue_error
                            .get_or_insert_with(|| format!("flow {flow}'s error queue: {e}"));
                        break;
                    }
                }
            }
        }
    }

    /// Gives the stamp `id` of `flow` to its packet; records before it
    /// without a stamp stay without one (it never comes: stamps arrive in
    /// send order); a stamp ahead of every record waits for its record.
    fn match_stamp(&mut self, flow: usize, id: u32, at_ns: u64) {
        let Some(waiting) = self.waiting.get_mut(flow) else {
            return;
        };
        while let Some(&(counter, sequence, user_ns)) = waiting.front() {
            // Wrapping order: counters are u32 and may wrap on a long run.
            let behind = id.wrapping_sub(counter) as i32;
            if behind < 0 {
                return;
            }
            waiting.pop_front();
            // The kernel stamps during the send, after the clock read
            // before it: a stamp before that read is another packet's (a
            // kernel that counted a refused send): better none than it.
            if behind == 0 && at_ns + STAMP_TOLERANCE_NS < user_ns {
                self.collected.stamps_refused += 1;
                return;
            }
            if behind == 0 {
                let at = self
                    .pending
                    .binary_search_by_key(&sequence, |p| p.departure.sequence);
                if let Ok(at) = at {
                    self.pending[at].kernel_ns = Some(at_ns);
                }
                return;
            }
        }
        let early = &mut self.early[flow];
        // Records a full ring lost never come: keep the stamps bounded.
        if early.len() >= MAX_EARLY {
            early.pop_front();
        }
        early.push_back((id, at_ns));
    }

    /// Gives the packets at the front their departure, in sequence order.
    fn emit(&mut self, round_start: u64, finishing: bool, inputs: &Inputs, out: &mut Outputs) {
        while let Some(front) = self.pending.front() {
            let d = front.departure;
            let stamped = front.kernel_ns.is_some() || !inputs.kernel_stamps;
            let expired = round_start.saturating_sub(d.user_ns) > STAMP_WAIT_NS;
            if d.user_ns >= round_start || !(stamped || expired || finishing) {
                return;
            }
            let kernel_ns = front.kernel_ns;
            self.pending.pop_front();
            if inputs.kernel_stamps && kernel_ns.is_none() {
                self.collected.without_kernel_stamp += 1;
            }
            self.measure(d, kernel_ns.unwrap_or(d.user_ns), inputs.late_after_ns, out);
        }
    }

    fn measure(&mut self, d: Departure, departed: u64, late_after_ns: u64, out: &mut Outputs) {
        let planned = d.start_ns + d.planned_ns;
        let error = departed as i64 - planned as i64;
        let c = &mut self.collected;
        c.departures += 1;
        c.late += u64::from(error > 0 && error as u64 > late_after_ns);
        c.departure.add(d.planned_ns, error);
        push(
            &mut out.departure,
            &out.departure_dropped,
            d.planned_ns,
            error,
        );
        if let Some((last_departed, last_planned)) = c.last {
            let planned_gap = planned.saturating_sub(last_planned);
            let gap_error = (departed as i64 - last_departed as i64) - planned_gap as i64;
            c.gap.add_gap(d.planned_ns, gap_error, planned_gap);
            push(&mut out.gap, &out.gap_dropped, d.planned_ns, gap_error);
        }
        c.first.get_or_insert((departed, planned));
        c.last = Some((departed, planned));
    }
}

/// A sample of |error| at `at_ns` (the series hold sizes; the report's
/// accuracy keeps the sign).
fn push(ring: &mut rtrb::Producer<Sample>, dropped: &AtomicU64, at_ns: u64, error: i64) {
    let sample = Sample {
        at_ns,
        latency_ns: error.unsigned_abs(),
        missed: 0,
    };
    if ring.push(sample).is_err() {
        dropped.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(flows: usize) -> State {
        State {
            pending: VecDeque::new(),
            waiting: vec![VecDeque::new(); flows],
            early: vec![VecDeque::new(); flows],
            offset: ClockOffset::measure(),
            collected: Collected::default(),
        }
    }

    fn record(flow: u32, counter: u32, sequence: u64) -> Departure {
        Departure {
            flow,
            counter,
            sequence,
            start_ns: 1_000_000,
            planned_ns: sequence * 100_000,
            user_ns: 1_000_000 + sequence * 100_000 + 500,
        }
    }

    fn outputs() -> (Outputs, rtrb::Consumer<Sample>, rtrb::Consumer<Sample>) {
        let (departure, d) = rtrb::RingBuffer::new(64);
        let (gap, g) = rtrb::RingBuffer::new(64);
        let out = Outputs {
            departure,
            gap,
            departure_dropped: Arc::default(),
            gap_dropped: Arc::default(),
        };
        (out, d, g)
    }

    fn inputs() -> Inputs {
        Inputs {
            rings: Vec::new(),
            sockets: Vec::new(),
            kernel_stamps: true,
            late_after_ns: 5_000,
        }
    }

    #[test]
    fn stamps_find_their_packets_over_flows_also_before_the_record() {
        let mut s = state(2);
        // Records taken out of order across the two flows' rings.
        s.take(record(1, 0, 1), true);
        s.take(record(0, 0, 0), true);
        // Packet 0: stamped 1 µs after its send; packet 1: 2 µs after.
        s.match_stamp(0, 0, 1_001_500);
        s.match_stamp(1, 0, 1_102_500);
        // Packet 2's stamp is read before its record is taken.
        s.match_stamp(0, 1, 1_203_500);
        s.take(record(0, 1, 2), true);
        let (mut out, mut d, mut g) = outputs();
        s.emit(u64::MAX, false, &inputs(), &mut out);
        assert!(s.pending.is_empty());
        let c = &s.collected;
        assert_eq!((c.departures, c.without_kernel_stamp), (3, 0));
        let errors: Vec<u64> = std::iter::from_fn(|| d.pop().ok())
            .map(|x| x.latency_ns)
            .collect();
        assert_eq!(errors, [1_500, 2_500, 3_500]);
        let gaps: Vec<u64> = std::iter::from_fn(|| g.pop().ok())
            .map(|x| x.latency_ns)
            .collect();
        assert_eq!(gaps, [1_000, 1_000]);
        assert_eq!(c.late, 0);
    }

    #[test]
    fn a_lost_stamp_or_one_before_its_send_leaves_the_user_space_time() {
        let mut s = state(1);
        for k in 0..3 {
            s.take(record(0, k, u64::from(k)), true);
        }
        // Packet 0's stamp never comes; packet 1's precedes its send (as if
        // the kernel counted one datagram more): refused.
        s.match_stamp(0, 1, 1_000_000 + 200);
        s.match_stamp(0, 2, 1_200_000 + 9_000);
        let (mut out, mut d, _g) = outputs();
        // Not finishing and nothing expired: packet 0 still waits.
        s.emit(1_000_000 + 100_000, false, &inputs(), &mut out);
        assert_eq!(s.collected.departures, 0);
        s.emit(u64::MAX, true, &inputs(), &mut out);
        let c = &s.collected;
        assert_eq!((c.departures, c.without_kernel_stamp), (3, 2));
        assert_eq!(c.stamps_refused, 1);
        // User-space times (500 ns), then the stamp 8.5 µs after the send:
        // late past 5 µs.
        let errors: Vec<u64> = std::iter::from_fn(|| d.pop().ok())
            .map(|x| x.latency_ns)
            .collect();
        assert_eq!(errors, [500, 500, 9_000]);
        assert_eq!(c.late, 1);
    }
}
