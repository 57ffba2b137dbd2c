//! What one window of the witness holds, and the windows it keeps: a ring
//! of the recent ones, and those pinned because a top spike of the run
//! falls in them. However long the run, memory stays bounded: the ring
//! has a fixed length and a series has a fixed number of top spikes.

use rtlab_core::sched::Policy;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// A thread that ran or waited on a watched CPU during a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDelta {
    /// Its name as read (raw bytes made text; escaped when reported).
    pub name: Arc<str>,
    pub pid: u32,
    pub tid: u32,
    pub policy: Policy,
    pub priority: u32,
    pub ran_ns: u64,
    pub waited_ns: u64,
}

/// What happened on one watched CPU during a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuWindow {
    pub cpu: usize,
    /// (line of /proc/interrupts, count) for every line that rose.
    pub irqs: Vec<(u16, u32)>,
    /// (line of /proc/softirqs, count) for every line that rose.
    pub softirqs: Vec<(u16, u32)>,
    pub steal_ns: u64,
    pub irq_ns: u64,
    pub softirq_ns: u64,
    /// Involuntary context switches of the probe's threads on the CPU.
    pub probe_preempted: u64,
    /// Threads other than the probe's last seen on the CPU that ran or
    /// waited during the window.
    pub threads: Vec<ThreadDelta>,
}

/// The counters' rise between two reads, per watched CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// CLOCK_MONOTONIC ns of the two reads.
    pub from_ns: u64,
    pub to_ns: u64,
    pub cpus: Vec<CpuWindow>,
}

impl Window {
    pub fn cpu(&self, cpu: usize) -> Option<&CpuWindow> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }

    /// Whether the window shares time with `spot` (its CPU watched).
    pub fn covers(&self, spot: &Spot) -> bool {
        self.from_ns <= spot.to_ns && spot.from_ns <= self.to_ns && self.cpu(spot.cpu).is_some()
    }
}

/// Where a large sample happened: its CPU and the stretch of
/// CLOCK_MONOTONIC time from its deadline to the wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spot {
    pub cpu: usize,
    pub from_ns: u64,
    pub to_ns: u64,
}

/// The recent windows and the pinned ones.
#[derive(Debug, Default)]
pub struct Windows {
    recent: VecDeque<Window>,
    capacity: usize,
    /// Pinned windows by their start.
    pinned: BTreeMap<u64, Window>,
}

impl Windows {
    /// A ring of `capacity` recent windows (at least 1).
    pub fn new(capacity: usize) -> Windows {
        Windows {
            recent: VecDeque::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
            pinned: BTreeMap::new(),
        }
    }

    /// A new window; the oldest recent one is dropped when the ring is
    /// full (it is still kept if pinned).
    pub fn push(&mut self, window: Window) {
        if self.recent.len() == self.capacity {
            self.recent.pop_front();
        }
        self.recent.push_back(window);
    }

    /// Pins the windows that cover any of `spots` (the run's current top
    /// spikes) and unpins those that cover none any more: a spike only
    /// leaves a top for a larger one, so a window unpinned is never needed
    /// again.
    pub fn pin(&mut self, spots: &[Spot]) {
        let wanted = |w: &Window| spots.iter().any(|s| w.covers(s));
        self.pinned.retain(|_, w| wanted(w));
        for window in self.recent.iter().filter(|w| wanted(w)) {
            self.pinned
                .entry(window.from_ns)
                .or_insert_with(|| window.clone());
        }
    }

    /// The windows covering `spot`, in time order, from the pinned and
    /// the recent ones.
    pub fn covering<'a>(&'a self, spot: &'a Spot) -> impl Iterator<Item = &'a Window> + 'a {
        let mut all: Vec<&Window> = (self.pinned.values())
            .chain(self.recent.iter())
            .filter(|w| w.covers(spot))
            .collect();
        all.sort_by_key(|w| w.from_ns);
        all.dedup_by_key(|w| w.from_ns);
        all.into_iter()
    }

    /// Windows held now, recent and pinned (for tests and the report).
    pub fn held(&self) -> (usize, usize) {
        (self.recent.len(), self.pinned.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(from_ns: u64, to_ns: u64, irq: u32) -> Window {
        Window {
            from_ns,
            to_ns,
            cpus: vec![CpuWindow {
                cpu: 1,
                irqs: vec![(0, irq)],
                ..CpuWindow::default()
            }],
        }
    }

    fn spot(from_ns: u64, to_ns: u64) -> Spot {
        Spot {
            cpu: 1,
            from_ns,
            to_ns,
        }
    }

    #[test]
    fn a_pinned_window_outlives_the_ring_and_is_let_go_with_its_spike() {
        let mut windows = Windows::new(3);
        for k in 0..10 {
            windows.push(window(k * 50, (k + 1) * 50, k as u32));
            if k == 2 {
                windows.pin(&[spot(120, 130)]);
            }
        }
        assert_eq!(windows.held(), (3, 1));
        let spike = spot(120, 130);
        let found: Vec<u32> = windows
            .covering(&spike)
            .map(|w| w.cpus[0].irqs[0].1)
            .collect();
        assert_eq!(
            found,
            vec![2],
            "the window of the spike, long gone from the ring"
        );
        // A larger spike took its place in the top: the old window goes.
        windows.pin(&[spot(460, 470)]);
        assert_eq!(windows.held(), (3, 1));
        assert_eq!(windows.covering(&spike).count(), 0);
        let newer = spot(460, 470);
        let found: Vec<u32> = windows
            .covering(&newer)
            .map(|w| w.cpus[0].irqs[0].1)
            .collect();
        assert_eq!(found, vec![9]);
    }

    #[test]
    fn a_spike_across_two_windows_gets_both_once_and_other_cpus_none() {
        let mut windows = Windows::new(8);
        for k in 0..4 {
            windows.push(window(k * 50, (k + 1) * 50, k as u32));
        }
        let across = spot(90, 110);
        windows.pin(&[across]);
        let found: Vec<u32> = windows
            .covering(&across)
            .map(|w| w.cpus[0].irqs[0].1)
            .collect();
        assert_eq!(found, vec![1, 2]);
        let elsewhere = Spot { cpu: 0, ..across };
        assert_eq!(windows.covering(&elsewhere).count(), 0);
        // Pinning many times never keeps more than the covering windows.
        for _ in 0..5 {
            windows.pin(&[across]);
        }
        assert_eq!(windows.held(), (4, 2));
    }
}
