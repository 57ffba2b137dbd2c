//! The attribution of each series' top spikes to what the witness saw on
//! the spike's CPU in the windows around it, and the one-line verdict.
//!
//! The counters say how much happened in a window, not which instant, so
//! a verdict weighs what could cost as much as the spike:
//!
//! 1. a real-time thread at or above the probe's priority that ran on the
//!    CPU for at least a quarter of the spike: it held the CPU;
//! 2. host steal time of that size: the hypervisor held it;
//! 3. another thread that ran that long, when the probe is not real-time
//!    or was preempted;
//! 4. an interrupt or softirq line that fired well above its usual count
//!    for windows that long (at least twice as often, and 10 more);
//! 5. a real-time thread at or above the probe's priority that ran at
//!    all, or the probe's own involuntary switches;
//! 6. else `unexplained`: the guest saw nothing (the hypervisor, an SMI,
//!    firmware).

use super::sampler::Seen;
use super::window::{Spot, ThreadDelta};
use rtlab_core::result::{
    printable, ExplainedSpike, Series, SourceCount, ThreadRan, WitnessReport,
};
use rtlab_core::sched::Policy;
use rtlab_core::units::human_duration;
use std::collections::BTreeMap;

/// At most this many lines of each kind per spike, most telling first.
const LISTED: usize = 8;
/// Names are cut to this many characters (comm holds 15 bytes; a task's
/// name from elsewhere could be longer).
const NAME_CHARS: usize = 32;

/// Where a spike of `series` happened, in CLOCK_MONOTONIC time: its CPU
/// and the stretch from its deadline (`origin_ns + at_ns`) to its wake-up.
pub fn spots(series: &[Series], origin_ns: u64) -> Vec<Spot> {
    series
        .iter()
        .filter_map(|s| Some((s.cpu?, s)))
        .flat_map(|(cpu, s)| {
            s.stats.top.iter().map(move |spike| Spot {
                cpu,
                from_ns: origin_ns + spike.at_ns,
                to_ns: origin_ns + spike.at_ns + spike.latency_ns,
            })
        })
        .collect()
}

/// The probe's priority on a series' thread: None when it is not a
/// fixed-priority real-time thread.
fn probe_priority(series: &Series) -> Option<u32> {
    let sched = series.thread.actual.unwrap_or(series.thread.requested);
    sched.policy.takes_priority().then_some(sched.priority)
}

/// The witness's report: every series' top spikes explained.
pub fn explain(seen: &Seen, series: &[Series], origin_ns: u64) -> WitnessReport {
    let mut spikes = Vec::new();
    for s in series {
        let Some(cpu) = s.cpu else { continue };
        for spike in &s.stats.top {
            let spot = Spot {
                cpu,
                from_ns: origin_ns + spike.at_ns,
                to_ns: origin_ns + spike.at_ns + spike.latency_ns,
            };
            let mut explained = gather(seen, &spot, probe_priority(s));
            explained.series = s.name.clone();
            explained.sample = spike.sample;
            explained.at_ns = spike.at_ns;
            explained.latency_ns = spike.latency_ns;
            explained.from_ns = explained.from_ns.saturating_sub(origin_ns);
            explained.to_ns = explained.to_ns.saturating_sub(origin_ns);
            explained.verdict = verdict(&explained, probe_priority(s));
            spikes.push(explained);
        }
    }
    WitnessReport {
        period_ns: seen.period_ns,
        windows: seen.window_count,
        cpu_ns: seen.cpu_ns,
        spikes,
        notes: seen.notes.clone(),
    }
}

/// What the windows covering `spot` hold for its CPU (times absolute;
/// the spike's own fields are left for the caller).
fn gather(seen: &Seen, spot: &Spot, priority: Option<u32>) -> ExplainedSpike {
    let mut explained = ExplainedSpike {
        cpu: spot.cpu,
        source: "proc".into(),
        ..ExplainedSpike::default()
    };
    let mut irqs: BTreeMap<u16, u64> = BTreeMap::new();
    let mut softirqs: BTreeMap<u16, u64> = BTreeMap::new();
    let mut threads: BTreeMap<u32, ThreadDelta> = BTreeMap::new();
    let mut windows = 0u64;
    for window in seen.windows.covering(spot) {
        let Some(cpu) = window.cpu(spot.cpu) else {
            continue;
        };
        if windows == 0 {
            explained.from_ns = window.from_ns;
        }
        explained.to_ns = window.to_ns;
        windows += 1;
        for &(line, n) in &cpu.irqs {
            *irqs.entry(line).or_default() += u64::from(n);
        }
        for &(line, n) in &cpu.softirqs {
            *softirqs.entry(line).or_default() += u64::from(n);
        }
        explained.steal_ns += cpu.steal_ns;
        explained.irq_ns += cpu.irq_ns;
        explained.softirq_ns += cpu.softirq_ns;
        explained.probe_preempted += cpu.probe_preempted;
        for t in &cpu.threads {
            let sum = threads.entry(t.tid).or_insert_with(|| ThreadDelta {
                ran_ns: 0,
                waited_ns: 0,
                ..t.clone()
            });
            sum.ran_ns += t.ran_ns;
            sum.waited_ns += t.waited_ns;
        }
    }
    if windows == 0 {
        return explained;
    }
    let totals = seen.totals.iter().find(|t| t.cpu == spot.cpu);
    let usual = |sums: Option<&Vec<u64>>, line: u16| match (sums, totals) {
        (Some(sums), Some(t)) if t.windows > 0 => {
            let sum = sums.get(usize::from(line)).copied().unwrap_or(0);
            (sum * windows + t.windows / 2) / t.windows
        }
        _ => 0,
    };
    explained.interrupts = counts(&irqs, &seen.irq_names, |l| {
        usual(totals.map(|t| &t.irqs), l)
    });
    explained.softirqs = counts(&softirqs, &seen.softirq_names, |l| {
        usual(totals.map(|t| &t.softirqs), l)
    });
    let mut ran: Vec<ThreadDelta> = threads.into_values().collect();
    ran.sort_by(|a, b| b.ran_ns.cmp(&a.ran_ns).then(b.waited_ns.cmp(&a.waited_ns)));
    explained.rt_at_or_above = ran
        .iter()
        .any(|t| at_or_above(t.policy, t.priority, priority));
    explained.threads = ran
        .iter()
        .take(LISTED)
        .map(|t| ThreadRan {
            name: printable(&t.name, NAME_CHARS),
            pid: t.pid,
            tid: t.tid,
            policy: t.policy.to_string(),
            priority: t.priority,
            ran_ns: t.ran_ns,
            waited_ns: t.waited_ns,
        })
        .collect();
    explained
}

/// A real-time thread that can take the CPU from a probe at `probe`'s
/// priority (None: the probe is not real-time).
fn at_or_above(policy: Policy, priority: u32, probe: Option<u32>) -> bool {
    match policy {
        Policy::Deadline => true,
        Policy::Fifo | Policy::Rr => probe.is_none_or(|p| priority >= p),
        _ => false,
    }
}

fn counts(
    sums: &BTreeMap<u16, u64>,
    names: &[String],
    usual: impl Fn(u16) -> u64,
) -> Vec<SourceCount> {
    let mut counts: Vec<SourceCount> = sums
        .iter()
        .map(|(&line, &count)| SourceCount {
            name: names
                .get(usize::from(line))
                .map_or_else(|| format!("line {line}"), |n| printable(n, 64)),
            count,
            usual: usual(line),
        })
        .collect();
    // The most unusual first, then the most frequent.
    counts.sort_by(|a, b| {
        let excess = |c: &SourceCount| c.count.saturating_sub(c.usual);
        excess(b).cmp(&excess(a)).then(b.count.cmp(&a.count))
    });
    counts.truncate(LISTED);
    counts
}

/// Fired at least twice as often as usual, and 10 times more: a line a
/// few counts above its usual (a softirq costs microseconds) explains no
/// spike.
fn is_unusual(c: &SourceCount) -> bool {
    c.count >= 2 * c.usual && c.count >= c.usual + 10
}

fn ms(ns: u64) -> String {
    human_duration(ns)
}

/// The likeliest cause of one spike, in one line (see the module's rules).
pub fn verdict(e: &ExplainedSpike, probe: Option<u32>) -> String {
    if e.to_ns == 0 && e.from_ns == 0 {
        return "unexplained: no window of the witness covers it".into();
    }
    let enough = (e.latency_ns / 4).max(1);
    let describe = |t: &ThreadRan| match t.priority {
        0 => format!("{} ({})", t.name, t.policy),
        p => format!("{} ({} {p})", t.name, t.policy),
    };
    let rt = e
        .threads
        .iter()
        .filter(|t| at_or_above(t.policy.parse().unwrap_or(Policy::Other), t.priority, probe));
    let longest_rt = rt.clone().max_by_key(|t| t.ran_ns);
    if let Some(t) = longest_rt.filter(|t| t.ran_ns >= enough) {
        return format!("RT thread {} ran {}", describe(t), ms(t.ran_ns));
    }
    if e.steal_ns >= enough {
        return format!("host steal {}", ms(e.steal_ns));
    }
    let could_preempt = probe.is_none() || e.probe_preempted > 0;
    if let Some(t) = e
        .threads
        .first()
        .filter(|t| could_preempt && t.ran_ns >= enough)
    {
        return format!("thread {} ran {}", describe(t), ms(t.ran_ns));
    }
    let unusual = e
        .softirqs
        .iter()
        .chain(&e.interrupts)
        .filter(|c| is_unusual(c))
        .max_by_key(|c| (c.count - c.usual, c.count));
    if let Some(c) = unusual {
        return format!("{} ×{} (usually {})", c.name, c.count, c.usual);
    }
    if let Some(t) = longest_rt.filter(|t| t.ran_ns > 0) {
        return format!("RT thread {} ran {}", describe(t), ms(t.ran_ns));
    }
    if e.probe_preempted > 0 {
        return format!("the probe was preempted {}×", e.probe_preempted);
    }
    "unexplained: the guest saw nothing (hypervisor?)".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness::sampler::Totals;
    use crate::witness::window::{CpuWindow, Window, Windows};
    use rtlab_core::result::{SeriesStats, Spike, ThreadSettings};
    use rtlab_core::sched::SchedParams;
    use std::sync::Arc;

    const ORIGIN: u64 = 1_000_000_000;
    const PERIOD: u64 = 50_000_000;

    fn thread(name: &str, policy: Policy, priority: u32, ran_ns: u64) -> ThreadDelta {
        ThreadDelta {
            name: Arc::from(name),
            pid: 7,
            // Distinct per name: the attribution sums a thread's windows by tid.
            tid: name.bytes().map(u32::from).sum(),
            policy,
            priority,
            ran_ns,
            waited_ns: 0,
        }
    }

    /// 20 windows of CPU 1 with LOC ×50 each; window 10 also holds `extra`.
    fn seen(extra: CpuWindow) -> Seen {
        let mut windows = Windows::new(100);
        let mut totals = Totals {
            cpu: 1,
            windows: 0,
            irqs: vec![0; 2],
            softirqs: vec![0; 1],
        };
        for k in 0..20u64 {
            let mut cpu = CpuWindow {
                cpu: 1,
                irqs: vec![(0, 50)],
                ..CpuWindow::default()
            };
            if k == 10 {
                cpu.irqs.extend(extra.irqs.iter().copied());
                cpu.softirqs = extra.softirqs.clone();
                cpu.threads = extra.threads.clone();
                cpu.steal_ns = extra.steal_ns;
                cpu.probe_preempted = extra.probe_preempted;
            }
            for &(line, n) in &cpu.irqs {
                totals.irqs[usize::from(line)] += u64::from(n);
            }
            totals.windows += 1;
            windows.push(Window {
                from_ns: ORIGIN + k * PERIOD,
                to_ns: ORIGIN + (k + 1) * PERIOD,
                cpus: vec![cpu],
            });
        }
        Seen {
            period_ns: PERIOD,
            windows,
            window_count: 20,
            irq_names: vec!["irq:LOC".into(), "irq:CAL".into()],
            softirq_names: vec!["softirq:TIMER".into()],
            totals: vec![totals],
            ..Seen::default()
        }
    }

    /// A FIFO 90 series on CPU 1 whose one spike of 3 ms falls in window 10.
    fn series() -> Vec<Series> {
        let sched = SchedParams {
            policy: Policy::Fifo,
            priority: 90,
            deadline: None,
        };
        vec![Series {
            name: "cpu1".into(),
            metric: "wakeup_latency".into(),
            cpu: Some(1),
            interval_ns: 1_000_000,
            thread: ThreadSettings {
                tid: 1,
                pinned_cpu: Some(1),
                requested: sched,
                actual: Some(sched),
                timer_slack_ns: None,
            },
            stats: SeriesStats {
                top: vec![Spike {
                    sample: 510,
                    at_ns: 10 * PERIOD + 10_000_000,
                    latency_ns: 3_000_000,
                }],
                ..SeriesStats::default()
            },
        }]
    }

    fn only_verdict(extra: CpuWindow) -> ExplainedSpike {
        let report = explain(&seen(extra), &series(), ORIGIN);
        assert_eq!(report.spikes.len(), 1);
        report.spikes.into_iter().next().unwrap()
    }

    #[test]
    fn an_rt_thread_above_the_probe_that_ran_is_the_verdict() {
        let spike = only_verdict(CpuWindow {
            threads: vec![
                thread("kworker/1:1", Policy::Other, 0, 20_000),
                thread("rtl-hog-42", Policy::Fifo, 95, 3_000_000),
                thread("migration/1", Policy::Fifo, 99, 4_000),
            ],
            ..CpuWindow::default()
        });
        assert_eq!(spike.verdict, "RT thread rtl-hog-42 (fifo 95) ran 3ms");
        assert!(spike.rt_at_or_above);
        assert_eq!(spike.source, "proc");
        assert_eq!((spike.from_ns, spike.to_ns), (10 * PERIOD, 11 * PERIOD));
        assert_eq!(spike.threads[0].name, "rtl-hog-42", "longest first");
        // The usual interrupts are listed with what is usual for them.
        assert_eq!(spike.interrupts[0].name, "irq:LOC");
        assert_eq!(
            (spike.interrupts[0].count, spike.interrupts[0].usual),
            (50, 50)
        );
    }

    #[test]
    fn an_rt_thread_below_the_probe_is_not_blamed() {
        let spike = only_verdict(CpuWindow {
            threads: vec![thread("low", Policy::Fifo, 50, 3_000_000)],
            ..CpuWindow::default()
        });
        assert!(!spike.rt_at_or_above);
        assert!(
            spike.verdict.starts_with("unexplained"),
            "{}",
            spike.verdict
        );
    }

    #[test]
    fn an_unusual_interrupt_line_is_the_verdict_and_a_usual_one_is_not() {
        let spike = only_verdict(CpuWindow {
            irqs: vec![(1, 400)],
            ..CpuWindow::default()
        });
        // CAL: 400 in this window, 20 on average over the run's 20.
        assert_eq!(spike.verdict, "irq:CAL ×400 (usually 20)");
        assert_eq!(
            spike.interrupts[0].name, "irq:CAL",
            "the most unusual first"
        );
        let quiet = only_verdict(CpuWindow::default());
        assert_eq!(
            quiet.verdict,
            "unexplained: the guest saw nothing (hypervisor?)"
        );
    }

    #[test]
    fn steal_and_preemption_are_named() {
        let spike = only_verdict(CpuWindow {
            steal_ns: 10_000_000,
            ..CpuWindow::default()
        });
        assert_eq!(spike.verdict, "host steal 10ms");
        let spike = only_verdict(CpuWindow {
            probe_preempted: 2,
            threads: vec![thread("rtlab-recorder", Policy::Other, 0, 2_000_000)],
            ..CpuWindow::default()
        });
        assert_eq!(spike.verdict, "thread rtlab-recorder (other) ran 2ms");
    }

    #[test]
    fn a_spike_outside_every_window_says_so() {
        let mut far = series();
        far[0].stats.top[0].at_ns = 100 * PERIOD;
        let report = explain(&seen(CpuWindow::default()), &far, ORIGIN);
        assert_eq!(
            report.spikes[0].verdict,
            "unexplained: no window of the witness covers it"
        );
    }

    #[test]
    fn a_hostile_thread_name_comes_out_escaped() {
        // 15 bytes as comm holds them: a newline, an ANSI escape, a
        // bidirectional override and bytes that are not UTF-8 (read lossily).
        let raw: &[u8] = b"a\n\x1b[2J\xe2\x80\xae\xff\xfe\xc3(z";
        let name = String::from_utf8_lossy(raw);
        let spike = only_verdict(CpuWindow {
            threads: vec![thread(&name, Policy::Fifo, 99, 3_000_000)],
            ..CpuWindow::default()
        });
        let shown = &spike.threads[0].name;
        for bad in ['\n', '\u{1b}', '\u{202e}'] {
            assert!(!shown.contains(bad), "{shown:?}");
            assert!(!spike.verdict.contains(bad), "{:?}", spike.verdict);
        }
        assert!(
            shown.contains("\\u{1b}[2J") && shown.contains("\\u{202e}"),
            "{shown:?}"
        );
        assert!(
            spike.verdict.starts_with("RT thread a\\u{a}\\u{1b}[2J"),
            "{}",
            spike.verdict
        );
    }
}
