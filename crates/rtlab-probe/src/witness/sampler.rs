//! The witness thread: SCHED_OTHER, kept off the measured CPUs, sharing
//! nothing with the measuring threads; it reads the counters every period
//! into a window, keeps the recent windows and those a top spike pinned,
//! and hands them back when the run ends.

use super::counters::Counters;
use super::settings::WitnessSettings;
use super::threads::{ProbeThread, ThreadWatch};
use super::window::{CpuWindow, Spot, Window, Windows};
use rtlab_core::clock;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::sched::{self, Policy, SchedParams};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the witness watches: the measured CPUs and the probe's threads.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    pub cpus: Vec<usize>,
    pub probe_threads: Vec<ProbeThread>,
}

/// Everything the witness saw that still matters when the run ends.
#[derive(Debug, Default)]
pub struct Seen {
    pub period_ns: u64,
    pub windows: Windows,
    /// Windows read in the whole run.
    pub window_count: u64,
    /// Names of the interrupt and softirq lines, by line.
    pub irq_names: Vec<String>,
    pub softirq_names: Vec<String>,
    /// Per watched CPU: the sums of every window's interrupt and softirq
    /// counts, by line, and the windows summed (what is usual).
    pub totals: Vec<Totals>,
    /// CPU time of the witness thread, ns.
    pub cpu_ns: u64,
    pub notes: Vec<String>,
}

/// The sums over a run of one CPU's windows.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub cpu: usize,
    pub windows: u64,
    pub irqs: Vec<u64>,
    pub softirqs: Vec<u64>,
}

impl Totals {
    fn add(&mut self, window: &CpuWindow) {
        self.windows += 1;
        for &(line, n) in &window.irqs {
            if let Some(sum) = self.irqs.get_mut(usize::from(line)) {
                *sum += u64::from(n);
            }
        }
        for &(line, n) in &window.softirqs {
            if let Some(sum) = self.softirqs.get_mut(usize::from(line)) {
                *sum += u64::from(n);
            }
        }
    }
}

enum Command {
    /// The run's origin (CLOCK_MONOTONIC ns), for `alternate`.
    Origin(u64),
    /// The run's current top spikes.
    Pin(Vec<Spot>),
}

/// A witness running beside a probe.
pub struct Witness {
    commands: Sender<Command>,
    thread: JoinHandle<Seen>,
}

impl Witness {
    /// Starts the witness thread for `watch`. It has read its first
    /// counters (the baseline of its first window) before this returns.
    pub fn start(settings: &WitnessSettings, watch: Watch) -> std::io::Result<Witness> {
        let (commands, received) = mpsc::channel();
        let (ready, started) = mpsc::channel();
        let settings = settings.clone();
        let thread = std::thread::Builder::new()
            .name("rtlab-witness".into())
            .spawn(move || {
                let mut state = State::new(&settings, &watch);
                let _ = ready.send(());
                state.run(&settings, &received);
                state.seen
            })?;
        let _ = started.recv();
        Ok(Witness { commands, thread })
    }

    /// The run's origin is known: `alternate` counts seconds from it.
    pub fn origin(&self, origin_ns: u64) {
        let _ = self.commands.send(Command::Origin(origin_ns));
    }

    /// Keeps the windows of `spots` (the current top spikes) past the ring.
    pub fn pin(&self, spots: Vec<Spot>) {
        let _ = self.commands.send(Command::Pin(spots));
    }

    /// Reads the last window, stops, and hands back what was seen.
    pub fn finish(self) -> Seen {
        drop(self.commands);
        self.thread.join().unwrap_or_else(|_| Seen {
            notes: vec!["the witness thread panicked: nothing to explain the spikes with".into()],
            ..Seen::default()
        })
    }
}

struct State {
    cpus: Vec<usize>,
    counters: Counters,
    threads: ThreadWatch,
    seen: Seen,
    /// When the last reading was taken; None while paused.
    last_ns: Option<u64>,
    origin_ns: Option<u64>,
}

impl State {
    fn new(settings: &WitnessSettings, watch: &Watch) -> State {
        let mut notes = Vec::new();
        keep_off(&watch.cpus, &mut notes);
        let own_tid = sched::gettid() as u32;
        let mut counters = Counters::open(&watch.cpus, &mut notes);
        let threads = ThreadWatch::new(
            Path::new("/proc"),
            &watch.cpus,
            &watch.probe_threads,
            own_tid,
        );
        let (irq_names, softirq_names) = counters.names();
        let totals = watch
            .cpus
            .iter()
            .map(|&cpu| Totals {
                cpu,
                windows: 0,
                irqs: vec![0; irq_names.len()],
                softirqs: vec![0; softirq_names.len()],
            })
            .collect();
        let mut baseline = empty_windows(&watch.cpus);
        counters.read_into(&mut baseline);
        let now = clock::now_ns();
        State {
            cpus: watch.cpus.clone(),
            counters,
            threads,
            seen: Seen {
                period_ns: settings.period_ns,
                windows: Windows::new(settings.ring_windows()),
                irq_names,
                softirq_names,
                totals,
                notes,
                ..Seen::default()
            },
            last_ns: Some(now),
            origin_ns: None,
        }
    }

    fn run(&mut self, settings: &WitnessSettings, commands: &Receiver<Command>) {
        let period = settings.period_ns;
        let mut next_ns = clock::now_ns() + period;
        loop {
            let wait = Duration::from_nanos(next_ns.saturating_sub(clock::now_ns()));
            match commands.recv_timeout(wait) {
                Ok(Command::Origin(origin)) => self.origin_ns = Some(origin),
                Ok(Command::Pin(spots)) => self.seen.windows.pin(&spots),
                Err(RecvTimeoutError::Timeout) => {
                    let now = clock::now_ns();
                    if settings.alternate && self.in_odd_second(now) {
                        // Paused: the next reading starts afresh.
                        self.last_ns = None;
                    } else {
                        self.read(now);
                    }
                    next_ns += period;
                    if next_ns <= now {
                        next_ns = now + period;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.read(clock::now_ns());
                    break;
                }
            }
        }
        self.seen.cpu_ns = thread_cpu_ns();
        if self.threads.unwatched > 0 {
            self.seen.notes.push(format!(
                "up to {} threads on the measured CPUs were not watched: the witness keeps at most {} open",
                self.threads.unwatched,
                super::settings::MAX_WATCHED_THREADS
            ));
        }
    }

    fn in_odd_second(&self, now_ns: u64) -> bool {
        self.origin_ns
            .is_some_and(|o| (now_ns.saturating_sub(o) / 1_000_000_000) % 2 == 1)
    }

    /// One window from the last reading to now (after a pause, only the
    /// baseline of the next one).
    fn read(&mut self, now_ns: u64) {
        let mut cpus = empty_windows(&self.cpus);
        self.counters.read_into(&mut cpus);
        self.threads.read_into(&mut cpus, now_ns);
        let Some(from_ns) = self.last_ns.replace(now_ns) else {
            return;
        };
        for (totals, cpu) in self.seen.totals.iter_mut().zip(&cpus) {
            totals.add(cpu);
        }
        self.seen.window_count += 1;
        self.seen.windows.push(Window {
            from_ns,
            to_ns: now_ns,
            cpus,
        });
    }
}

fn empty_windows(cpus: &[usize]) -> Vec<CpuWindow> {
    cpus.iter()
        .map(|&cpu| CpuWindow {
            cpu,
            ..CpuWindow::default()
        })
        .collect()
}

/// SCHED_OTHER, on the CPUs the probe does not measure (all of them when
/// it measures every one).
fn keep_off(measured: &[usize], notes: &mut Vec<String>) {
    let other = SchedParams {
        policy: Policy::Other,
        priority: 0,
        deadline: None,
    };
    if let Err(e) = sched::set_current_thread(&other) {
        notes.push(format!(
            "the witness could not make itself SCHED_OTHER: {e}"
        ));
    }
    let free: Vec<usize> = CpuSet::online()
        .iter()
        .filter(|c| !measured.contains(c))
        .collect();
    if !free.is_empty() {
        if let Err(e) = sched::set_thread_affinity(sched::gettid(), &CpuSet::from_cpus(free)) {
            notes.push(format!(
                "the witness could not keep off the measured CPUs: {e}"
            ));
        }
    }
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
