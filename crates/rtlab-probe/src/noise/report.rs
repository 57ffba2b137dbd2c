//! From the recorder's per-CPU totals to the result's [`NoiseCpu`] rows
//! and the warnings a reader of those rows must see.

use super::attribution::Sources;
use super::collector::CpuTotals;
use rtlab_core::result::{NoiseCpu, NoiseSource};

/// Name of CPU `cpu`'s series.
pub fn series_name(cpu: usize) -> String {
    format!("cpu{cpu}")
}

/// One CPU's row: totals, and one row per source that caused an event or
/// whose counter rose, the largest total first.
pub(super) fn noise_cpu(totals: &CpuTotals, sources: &Sources) -> NoiseCpu {
    let mut rows: Vec<NoiseSource> = totals
        .sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.events > 0 || s.counted > 0)
        .map(|(index, s)| NoiseSource {
            source: sources.name(index as u16).to_string(),
            events: s.events,
            total_ns: s.total_ns,
            min_ns: s.min_ns,
            mean_ns: if s.events == 0 {
                0.0
            } else {
                s.total_ns as f64 / s.events as f64
            },
            max_ns: s.max_ns,
            counted: s.counted,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then(b.counted.cmp(&a.counted))
            .then(a.source.cmp(&b.source))
    });
    NoiseCpu {
        cpu: totals.cpu,
        series: series_name(totals.cpu),
        measured_ns: totals.measured_ns,
        noise_ns: totals.noise_ns,
        noise_percent: if totals.measured_ns == 0 {
            0.0
        } else {
            100.0 * totals.noise_ns as f64 / totals.measured_ns as f64
        },
        max_single_ns: totals.max_single_ns,
        events: totals.events,
        windows: totals.windows,
        sources: rows,
        osnoise: None,
    }
}

/// Share of the planned runtime (less the counter reads) below which a
/// CPU's measurement is flagged.
const LOW_MEASURED_SHARE: f64 = 0.8;

/// Share of the spinning time taken by the counter reads above which the
/// window is flagged as too short.
const HIGH_READS_SHARE: f64 = 0.2;

/// What a reader of one CPU's figures must know. `planned_runtime_ns`:
/// the spinning time the duty cycle planned, None when the run was cut
/// short.
pub(super) fn warnings(totals: &CpuTotals, planned_runtime_ns: Option<u64>) -> Vec<String> {
    let cpu = totals.cpu;
    let mut warnings = Vec::new();
    // The reads between windows are part of the plan's runtime but never
    // measured: short windows lose much of it to them, not to others.
    let reads = totals.reads_at_least_ns();
    let spun = totals.measured_ns.saturating_add(reads);
    if spun > 0 && reads as f64 > HIGH_READS_SHARE * spun as f64 {
        warnings.push(format!(
            "cpu{cpu}: the counter reads between windows took at least {:.0} % of the time \
meant for measuring (at least {:.1} µs each, {} times), which is in no figure: a longer \
window measures more of it",
            100.0 * reads as f64 / spun as f64,
            totals.min_gap_ns as f64 / 1e3,
            totals.gaps
        ));
    }
    if let Some(planned) = planned_runtime_ns.filter(|&p| p > 0) {
        let expected = planned.saturating_sub(reads);
        if (totals.measured_ns as f64) < LOW_MEASURED_SHARE * expected as f64 {
            warnings.push(format!(
                "cpu{cpu}: measured only {:.3} s of the {:.3} s planned: beyond the counter \
reads between windows, the spinner did not get the CPU for the rest (a thread of higher \
priority, or the hypervisor, held it between windows or before the first one), so that time \
is in no figure",
                totals.measured_ns as f64 / 1e9,
                planned as f64 / 1e9
            ));
        }
    }
    if totals.irqs_changed > 0 {
        warnings.push(format!(
            "cpu{cpu}: the lines or CPU columns of /proc/interrupts changed (an irq was \
added or removed, or a CPU went on- or offline) during {} window(s): their irq counts were \
not used, so their events not taken by preemption or a softirq are unattributed",
            totals.irqs_changed
        ));
    }
    if totals.softirqs_changed > 0 {
        warnings.push(format!(
            "cpu{cpu}: the lines or CPU columns of /proc/softirqs changed during {} window(s): \
their softirq counts were not used",
            totals.softirqs_changed
        ));
    }
    if totals.unreadable > 0 {
        warnings.push(format!(
            "cpu{cpu}: a counter could not be read at the edge of {} window(s): what it would \
have explained is unattributed",
            totals.unreadable
        ));
    }
    if totals.dropped > 0 {
        warnings.push(format!(
            "cpu{cpu}: {} noise event(s) were dropped (the ring to the recorder was full): \
they are in no figure",
            totals.dropped
        ));
    }
    warnings
}
