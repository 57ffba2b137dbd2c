//! The guard learner of one executive thread (one CPU's task set, or the
//! dispatcher): its own wake-up lateness per idle length (the time from
//! going to sleep to the instant: the sleep and its guard), and its tasks'
//! wake-up delay after a release, each in a [`Histogram`]; the guard of the
//! next sleep is a high quantile of the lateness at that idle length plus
//! a margin and the release margin, within bounds and the spin budget.
//! Built once before the hot loop; nothing in it allocates afterwards.

use super::histogram::Histogram;
use super::settings::{
    Learning, MARGIN_NS, MAX_LEARNED_GUARD_NS, MAX_RELEASE_EARLY_NS, MIN_LEARNED_GUARD_NS,
    MIN_OBSERVATIONS, MIN_RELEASE_EARLY_NS, QUANTILE,
};
use super::sleep::{sleep_to, Slept};
use rtlab_core::clock;
use rtlab_core::result::{ExecutiveThread, GuardBucket};
use std::sync::atomic::AtomicBool;

/// The idle lengths that start each bucket after the first, log-spaced:
/// below 100 µs the CPU hardly idles; from 10 ms on it may sleep deeply
/// (and a VM's host may deschedule it). An idle length is the time from
/// going to sleep to the instant, known before the guard is chosen: the
/// guard is chosen and learned under the same key (keyed by the sleep
/// alone, a large guard moved its sleeps to a bucket it was not learned
/// in, whose guard was then used for them and never learned).
pub const IDLE_EDGES_NS: [u64; 5] = [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000];
const IDLE_BUCKETS: usize = IDLE_EDGES_NS.len() + 1;

/// The bucket of an idle length.
#[inline]
fn bucket_of(idle_ns: u64) -> usize {
    IDLE_EDGES_NS
        .iter()
        .take_while(|&&edge| idle_ns >= edge)
        .count()
}

/// One idle length: its lateness, the guard it last got, how often the
/// budget cut it.
struct Bucket {
    lateness: Histogram,
    guard_ns: u64,
    capped: u64,
}

/// What one executive thread learned; see the module.
pub struct Learner {
    learning: Learning,
    /// The fixed guard, or the warm start of a learned one.
    given_guard_ns: u64,
    /// The fixed release margin, or the warm start of a learned one.
    given_release_ns: u64,
    /// Whether this executive releases tasks (the dispatcher does not).
    releases: bool,
    idle: [Bucket; IDLE_BUCKETS],
    release: Bucket,
    release_early_ns: u64,
    spin_ns: u64,
    capped: u64,
}

impl Learner {
    /// A learner starting from `guard_ns` and `release_early_ns` (fixed,
    /// or the warm start of what `learning` learns); `releases`: whether
    /// it releases tasks whose wake-up delay it is told.
    pub fn new(
        learning: Learning,
        guard_ns: u64,
        release_early_ns: u64,
        releases: bool,
    ) -> Box<Learner> {
        let bucket = || Bucket {
            lateness: Histogram::new(QUANTILE),
            guard_ns,
            capped: 0,
        };
        Box::new(Learner {
            learning,
            given_guard_ns: guard_ns,
            given_release_ns: release_early_ns,
            releases,
            idle: std::array::from_fn(|_| bucket()),
            release: Bucket {
                guard_ns: release_early_ns,
                ..bucket()
            },
            release_early_ns,
            spin_ns: 0,
            capped: 0,
        })
    }

    /// The guard of a sleep that starts `to_instant_ns` before its instant
    /// (its idle length), `span_ns` after the executive's previous instant:
    /// fixed, or learned for that idle length, at most the spin budget's share
    /// of `span_ns` (never below the release margin plus [`MIN_LEARNED_GUARD_NS`]'s
    /// floor). Hot path: a few comparisons.
    #[inline]
    pub fn guard_for(&mut self, to_instant_ns: u64, span_ns: u64) -> u64 {
        if !self.learning.guard {
            return self.given_guard_ns;
        }
        let bucket = bucket_of(to_instant_ns);
        let wanted = self.wanted(bucket);
        let cap = (span_ns / 100)
            .saturating_mul(u64::from(self.learning.spin_budget_percent))
            .max(self.floor());
        let b = &mut self.idle[bucket];
        let guard = wanted.min(cap);
        // Counted only where it cut a sleep short (an instant closer than
        // the guard is spun to whatever the guard).
        if wanted > cap && to_instant_ns > cap {
            b.capped += 1;
            self.capped += 1;
        }
        b.guard_ns = guard;
        guard
    }

    /// The lowest learned guard: the release margin plus a spin.
    #[inline]
    fn floor(&self) -> u64 {
        MIN_LEARNED_GUARD_NS.max(self.release_early_ns + MARGIN_NS)
    }

    /// The guard bucket `b` asks for: the warm start until it has seen
    /// [`MIN_OBSERVATIONS`] wake-ups, then its lateness quantile plus a
    /// quarter and the margins, within bounds.
    #[inline]
    fn wanted(&self, b: usize) -> u64 {
        let lateness = &self.idle[b].lateness;
        if lateness.total < MIN_OBSERVATIONS {
            return self.given_guard_ns.max(self.floor());
        }
        let q = lateness.quantile_ns();
        (q + q / 4 + self.release_early_ns + MARGIN_NS).clamp(self.floor(), MAX_LEARNED_GUARD_NS)
    }

    /// Sleeps to the guard before `instant_ns` (`previous_ns`: this
    /// executive's previous instant, the budget's span) and learns from the
    /// wake-up: the clock read after it, or None once `stop` is seen. Hot
    /// path: the clock and the sleep.
    #[inline]
    pub fn wake_before(
        &mut self,
        instant_ns: u64,
        previous_ns: u64,
        stop: &AtomicBool,
    ) -> Option<u64> {
        let now = clock::now_ns();
        let guard = self.guard_for(
            instant_ns.saturating_sub(now),
            instant_ns.saturating_sub(previous_ns),
        );
        match sleep_to(instant_ns.saturating_sub(guard), now, stop) {
            Slept::Stopped => None,
            Slept::Due { now_ns } => Some(now_ns),
            Slept::Woke {
                late_ns, now_ns, ..
            } => {
                self.observe_wake(instant_ns.saturating_sub(now), late_ns);
                Some(now_ns)
            }
        }
    }

    /// A sleep that began `idle_ns` before its instant woke `late_ns` after
    /// its target.
    #[inline]
    pub fn observe_wake(&mut self, idle_ns: u64, late_ns: u64) {
        self.idle[bucket_of(idle_ns)].lateness.add(late_ns);
    }

    /// A task released by this executive got the CPU `delay_ns` after its
    /// release: the release margin follows (learned), at most the fixed
    /// guard (a task is released after its executive wakes).
    #[inline]
    pub fn observe_release(&mut self, delay_ns: u64) {
        let release = &mut self.release;
        release.lateness.add(delay_ns);
        if !self.learning.release_early || release.lateness.total < MIN_OBSERVATIONS {
            return;
        }
        let q = release.lateness.quantile_ns();
        let mut margin = (q + q / 4 + MARGIN_NS).clamp(MIN_RELEASE_EARLY_NS, MAX_RELEASE_EARLY_NS);
        if !self.learning.guard {
            margin = margin.min(self.given_guard_ns);
        }
        release.guard_ns = margin;
        self.release_early_ns = margin;
    }

    /// How early a task is released now.
    #[inline]
    pub fn release_early_ns(&self) -> u64 {
        self.release_early_ns
    }

    /// Time spent spinning to an instant.
    #[inline]
    pub fn add_spin(&mut self, ns: u64) {
        self.spin_ns += ns;
    }

    /// Sleeps whose guard the budget capped.
    pub fn capped(&self) -> u64 {
        self.capped
    }

    /// The learner as the result records it (off the hot path): `role` and
    /// `cpu` name the thread, `other_spin_ns` is its tasks' spin, and
    /// `elapsed_ns` its measured time.
    pub fn report(
        &self,
        role: &str,
        cpu: Option<usize>,
        other_spin_ns: u64,
        elapsed_ns: u64,
    ) -> ExecutiveThread {
        let mode = |learned: bool| if learned { "auto" } else { "fixed" };
        let guards = self
            .idle
            .iter()
            .enumerate()
            .filter(|(_, b)| b.lateness.total > 0)
            .map(|(i, b)| {
                let from = if i == 0 { 0 } else { IDLE_EDGES_NS[i - 1] };
                bucket_report(b, from, IDLE_EDGES_NS.get(i).copied())
            })
            .collect();
        let spin_ns = self.spin_ns + other_spin_ns;
        ExecutiveThread {
            role: role.into(),
            cpu,
            guard_mode: mode(self.learning.guard).into(),
            release_early_mode: if self.releases {
                mode(self.learning.release_early).into()
            } else {
                "none".into()
            },
            quantile: QUANTILE,
            spin_budget_percent: self.learning.spin_budget_percent,
            guards,
            release_early: self.releases.then(|| GuardBucket {
                guard_ns: self.release_early_ns,
                ..bucket_report(&self.release, 0, None)
            }),
            capped: self.capped,
            spin_ns,
            elapsed_ns,
            spin_percent: if elapsed_ns == 0 {
                0.0
            } else {
                spin_ns as f64 * 100.0 / elapsed_ns as f64
            },
        }
    }

    /// The given (fixed or warm-start) release margin.
    pub fn given_release_early_ns(&self) -> u64 {
        self.given_release_ns
    }
}

fn bucket_report(b: &Bucket, from: u64, below: Option<u64>) -> GuardBucket {
    GuardBucket {
        idle_from_ns: from,
        idle_below_ns: below,
        observations: b.lateness.total,
        quantile_ns: (b.lateness.total >= MIN_OBSERVATIONS).then(|| b.lateness.quantile_ns()),
        max_ns: b.lateness.max_ns,
        guard_ns: b.guard_ns,
        capped: b.capped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn auto() -> Box<Learner> {
        Learner::new(Learning::default(), 100 * US, 50 * US, true)
    }

    /// `n` wake-ups from sleeps of `idle_ns`: every `every`-th late by
    /// `late_ns`, the others by `usual_ns`.
    fn feed(l: &mut Learner, idle_ns: u64, n: u64, usual_ns: u64, (every, late_ns): (u64, u64)) {
        for i in 0..n {
            l.observe_wake(idle_ns, if i % every == 0 { late_ns } else { usual_ns });
        }
    }

    #[test]
    fn it_starts_warm_then_covers_the_quantile_of_its_idle_length() {
        let mut l = auto();
        // Too few wake-ups yet: the warm start.
        feed(&mut l, 9 * MS, MIN_OBSERVATIONS - 1, 20 * US, (1, 20 * US));
        assert_eq!(l.guard_for(9_500 * US, 10 * MS), 100 * US);
        // 1 % late by 120 µs is above the 99.5 % quantile's 0.5 %: the guard
        // covers it (its bin's edge, 128 µs, + a quarter + the release
        // margin + the margin).
        let mut l = auto();
        feed(&mut l, 9 * MS, 2000, 20 * US, (100, 120 * US));
        assert_eq!(
            l.guard_for(9_500 * US, 10 * MS),
            128 * US + 32 * US + 50 * US + MARGIN_NS
        );
        // 0.2 % late is below it: the usual lateness sets the guard.
        let mut l = auto();
        feed(&mut l, 9 * MS, 2000, 20 * US, (500, 120 * US));
        let usual = upper_edge(20 * US);
        assert_eq!(usual, 22 * US);
        assert_eq!(
            l.guard_for(9_500 * US, 10 * MS),
            usual + usual / 4 + 50 * US + MARGIN_NS
        );
        let report = l.report("executive", Some(1), 0, 20_000 * MS);
        let bucket = &report.guards[0];
        assert_eq!(
            (bucket.idle_from_ns, bucket.idle_below_ns),
            (3 * MS, Some(10 * MS))
        );
        assert_eq!((bucket.observations, bucket.max_ns), (2000, 120 * US));
        assert_eq!(bucket.quantile_ns, Some(usual));
        assert_eq!(report.capped, 0);
    }

    #[test]
    fn the_guard_stays_within_its_bounds() {
        let mut l = auto();
        feed(&mut l, 50 * MS, 1000, 5 * MS, (1, 5 * MS));
        assert_eq!(l.guard_for(100 * MS, 100 * MS), MAX_LEARNED_GUARD_NS);
        let mut l = auto();
        feed(&mut l, 50 * MS, 1000, 0, (1, 0));
        // On time: the first bin's edge (1 µs) and a quarter, the release
        // margin and the margin.
        assert_eq!(l.guard_for(100 * MS, 100 * MS), 1_250 + 50 * US + MARGIN_NS);
        let mut l = Learner::new(Learning::default(), 100 * US, 0, false);
        feed(&mut l, 50 * MS, 1000, 0, (1, 0));
        assert_eq!(l.guard_for(100 * MS, 100 * MS), MIN_LEARNED_GUARD_NS);
    }

    #[test]
    fn the_spin_budget_caps_the_guard_and_says_so() {
        let mut l = auto();
        feed(&mut l, 150 * US, 1000, 200 * US, (1, 200 * US));
        // 30 tasks every 10 ms: 333 µs apart, a quarter of it is 83 µs.
        // (250 µs ahead: a sleep after the release margin and the work.)
        let guard = l.guard_for(250 * US, 333 * US);
        assert_eq!(guard, 3_330 * 25);
        assert_eq!(l.capped(), 1);
        let report = l.report("executive", Some(1), 0, MS);
        assert_eq!(report.guards[0].capped, 1);
        assert_eq!(report.spin_budget_percent, 25);
        assert!(crate::guard::capped_warning(&report)
            .unwrap()
            .contains("spin budget (25 %) capped"));
        // A larger budget lets it have what it learned.
        let mut l = Learner::new(
            Learning {
                spin_budget_percent: 100,
                ..Learning::default()
            },
            100 * US,
            50 * US,
            true,
        );
        feed(&mut l, 150 * US, 1000, 200 * US, (1, 200 * US));
        assert!(l.guard_for(250 * US, 333 * US) > 250 * US);
        assert_eq!(l.capped(), 0);
    }

    #[test]
    fn each_idle_length_keeps_its_own_guard() {
        let mut l = auto();
        // Short sleeps wake on time, long ones late.
        feed(&mut l, 200 * US, 1000, 3 * US, (1, 3 * US));
        feed(&mut l, 9 * MS, 1000, 150 * US, (1, 150 * US));
        let short = l.guard_for(260 * US, 10 * MS);
        let long = l.guard_for(9_500 * US, 10 * MS);
        assert_eq!(short, 4 * US + 1_000 + 50 * US + MARGIN_NS);
        assert!(long > 200 * US, "{long}");
        // The long sleeps get better: their guard follows within windows.
        feed(&mut l, 9 * MS, 20_000, 10 * US, (1, 10 * US));
        assert_eq!(
            l.guard_for(9_500 * US, 10 * MS),
            11 * US + 11 * US / 4 + 50 * US + MARGIN_NS
        );
        assert_eq!(l.guard_for(260 * US, 10 * MS), short);
    }

    #[test]
    fn the_release_margin_follows_the_tasks_wake_up_delay() {
        let mut l = auto();
        for _ in 0..MIN_OBSERVATIONS - 1 {
            l.observe_release(10 * US);
        }
        assert_eq!(l.release_early_ns(), 50 * US);
        l.observe_release(10 * US);
        assert_eq!(l.release_early_ns(), 11 * US + 11 * US / 4 + MARGIN_NS);
        // A fixed guard bounds it: a task is released after its executive woke.
        let fixed_guard = Learning {
            guard: false,
            ..Learning::default()
        };
        let mut l = Learner::new(fixed_guard, 30 * US, 30 * US, true);
        for _ in 0..100 {
            l.observe_release(300 * US);
        }
        assert_eq!(l.release_early_ns(), 30 * US);
        assert_eq!(l.guard_for(9_500 * US, 10 * MS), 30 * US);
        let report = l.report("executive", None, 0, MS);
        assert_eq!(
            (
                report.guard_mode.as_str(),
                report.release_early_mode.as_str()
            ),
            ("fixed", "auto")
        );
        assert_eq!(report.release_early.unwrap().observations, 100);
    }

    #[test]
    fn a_fixed_guard_is_kept_and_its_wake_ups_still_reported() {
        let mut l = Learner::new(Learning::fixed(), 100 * US, 50 * US, true);
        feed(&mut l, 9 * MS, 1000, 300 * US, (1, 300 * US));
        for _ in 0..100 {
            l.observe_release(10 * US);
        }
        assert_eq!(l.guard_for(9_500 * US, 10 * MS), 100 * US);
        assert_eq!(l.release_early_ns(), 50 * US);
        l.add_spin(3 * MS);
        let report = l.report("executive", Some(0), 2 * MS, 100 * MS);
        assert_eq!(report.guards[0].quantile_ns, Some(upper_edge(300 * US)));
        assert_eq!(report.spin_ns, 5 * MS);
        assert!((report.spin_percent - 5.0).abs() < 1e-9);
    }

    fn upper_edge(ns: u64) -> u64 {
        super::super::histogram::upper_ns(super::super::histogram::bin_of(ns))
    }
}
