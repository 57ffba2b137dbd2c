//! Attribution of one window's noise events to the sources whose counters
//! rose during the window.
//!
//! The counters say how often each source ran inside the window, not which
//! gap it caused, so each occurrence is a token that can explain one event:
//!
//! 1. the thread's involuntary context switches (`preempted`) take the
//!    longest events: a preemption costs at least two context switches and
//!    the other thread's run, more than an interrupt;
//! 2. then softirq occurrences, longest events first: a softirq nearly
//!    always runs at an interrupt's exit, so a gap holding both is named
//!    after the softirq (the larger part of the work), and the interrupt's
//!    token is left for a lighter gap;
//! 3. then irq occurrences;
//! 4. what is left is `unattributed`: time the guest kernel does not see
//!    (the hypervisor, SMIs, firmware).
//!
//! Within steps 2 and 3, each event takes a token of the source with the
//! most tokens left (the first line of the file on a tie): the more often
//! a source ran in the window, the likelier it is behind any one gap.
//!
//! Runs in the recorder thread; it allocates nothing all the same.

use std::ops::Range;

/// Source index of the events no counter explains.
pub const UNATTRIBUTED: u16 = 0;
/// Source index of the thread's involuntary context switches.
pub const PREEMPTED: u16 = 1;

/// Every source of a run, indexed by the `u16` that crosses the ring:
/// `unattributed`, `preempted`, then one per `/proc/softirqs` line, then
/// one per `/proc/interrupts` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    names: Vec<String>,
    softirqs: Range<usize>,
    irqs: Range<usize>,
}

/// The largest number of sources a run can name (indices are `u16`).
pub const MAX_SOURCES: usize = u16::MAX as usize;

impl Sources {
    /// Names are taken as given (`softirq:TIMER`, `irq:LOC`); lines beyond
    /// [`MAX_SOURCES`] are dropped.
    pub fn new(softirq_names: Vec<String>, irq_names: Vec<String>) -> Sources {
        let mut names = vec!["unattributed".to_string(), "preempted".to_string()];
        let softirq_count = softirq_names.len().min(MAX_SOURCES - names.len());
        names.extend(softirq_names.into_iter().take(softirq_count));
        let softirqs = 2..names.len();
        let irq_count = irq_names.len().min(MAX_SOURCES - names.len());
        names.extend(irq_names.into_iter().take(irq_count));
        let irqs = softirqs.end..names.len();
        Sources {
            names,
            softirqs,
            irqs,
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, index: u16) -> &str {
        self.names
            .get(usize::from(index))
            .map_or("unattributed", String::as_str)
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Source indices of the softirq lines, in file order.
    pub fn softirqs(&self) -> Range<usize> {
        self.softirqs.clone()
    }

    /// Source indices of the interrupt lines, in file order.
    pub fn irqs(&self) -> Range<usize> {
        self.irqs.clone()
    }

    /// Source index of softirq line `line`, None past the table.
    pub fn softirq(&self, line: usize) -> Option<u16> {
        let index = self.softirqs.start + line;
        (index < self.softirqs.end).then_some(index as u16)
    }

    /// Source index of interrupt line `line`, None past the table.
    pub fn irq(&self, line: usize) -> Option<u16> {
        let index = self.irqs.start + line;
        (index < self.irqs.end).then_some(index as u16)
    }

    /// Index of a source by name.
    pub fn find(&self, name: &str) -> Option<u16> {
        self.names.iter().position(|n| n == name).map(|i| i as u16)
    }
}

/// One gap above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoiseEvent {
    /// Clock read before the gap, ns since the run's start.
    pub start_ns: u64,
    pub duration_ns: u64,
    pub source: u16,
}

/// Index of the source with the most tokens left in `range`, taking one.
fn take_token(tokens: &mut [u64], range: Range<usize>) -> Option<u16> {
    let mut best: Option<usize> = None;
    for i in range {
        if tokens[i] > 0 && best.is_none_or(|b| tokens[i] > tokens[b]) {
            best = Some(i);
        }
    }
    let index = best?;
    tokens[index] -= 1;
    Some(index as u16)
}

/// Sets the `source` of every event of one window. `tokens[i]` is how
/// often source `i` ran in the window (its counter's delta; the entry of
/// `unattributed` is ignored); tokens are consumed. Events end up in
/// time order again.
pub fn attribute(events: &mut [NoiseEvent], tokens: &mut [u64], sources: &Sources) {
    debug_assert!(tokens.len() >= sources.len());
    // Longest first; the earlier event first on a tie, for determinism.
    events.sort_unstable_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.start_ns.cmp(&b.start_ns))
    });
    let preempted = usize::from(PREEMPTED);
    for event in events.iter_mut() {
        event.source = if tokens.get(preempted).is_some_and(|&t| t > 0) {
            tokens[preempted] -= 1;
            PREEMPTED
        } else if let Some(source) = take_token(tokens, sources.softirqs()) {
            source
        } else if let Some(source) = take_token(tokens, sources.irqs()) {
            source
        } else {
            UNATTRIBUTED
        };
    }
    events.sort_unstable_by_key(|e| e.start_ns);
}
