//! The top spikes of each run with what the witness saw around them
//! (`RunResult.witness`): one table for `rtlab show` and the report, so
//! the terminal, Markdown, HTML and JSON show the same verdicts.

use super::model::RunView;
use super::table::Table;
use rtlab_core::result::{ExplainedSpike, RunResult, SourceCount, WitnessReport};
use rtlab_core::units::{human_duration, Micros};

/// The spikes listed per series when not told.
pub const DEFAULT_SPIKES: usize = 3;

const HEADER: [&str; 8] = [
    "series",
    "at s",
    "latency µs",
    "verdict",
    "source",
    "interrupts",
    "threads",
    "steal µs",
];

fn counts(counts: &[SourceCount], n: usize) -> String {
    let shown: Vec<String> = counts
        .iter()
        .take(n)
        .map(|c| format!("{} ×{} (usually {})", c.name, c.count, c.usual))
        .collect();
    match shown.is_empty() {
        true => "-".into(),
        false => shown.join(", "),
    }
}

fn row(spike: &ExplainedSpike) -> Vec<String> {
    let mut sources: Vec<SourceCount> = spike.interrupts.clone();
    sources.extend(spike.softirqs.iter().cloned());
    sources.sort_by(|a, b| {
        let excess = |c: &SourceCount| c.count.saturating_sub(c.usual);
        excess(b).cmp(&excess(a)).then(b.count.cmp(&a.count))
    });
    let threads: Vec<String> = spike
        .threads
        .iter()
        .take(2)
        .map(|t| match t.priority {
            0 => format!("{} ({}) {}", t.name, t.policy, human_duration(t.ran_ns)),
            p => format!("{} ({} {p}) {}", t.name, t.policy, human_duration(t.ran_ns)),
        })
        .collect();
    vec![
        spike.series.clone(),
        format!("{:.3}", spike.at_ns as f64 / 1e9),
        Micros(spike.latency_ns).to_string(),
        spike.verdict.clone(),
        spike.source.clone(),
        counts(&sources, 3),
        match threads.is_empty() {
            true => "-".into(),
            false => threads.join(", "),
        },
        Micros(spike.steal_ns).to_string(),
    ]
}

/// The first `per_series` spikes of each series of `witness`.
fn spikes_of(witness: &WitnessReport, per_series: usize) -> Vec<&ExplainedSpike> {
    let mut shown: Vec<&ExplainedSpike> = Vec::new();
    for spike in &witness.spikes {
        if shown.iter().filter(|s| s.series == spike.series).count() < per_series {
            shown.push(spike);
        }
    }
    shown
}

fn note(witness: &WitnessReport) -> String {
    let mut note = format!(
        "What the host did on each spike's CPU in the witness's windows around it ({} windows of \
         {}; the witness used {} of CPU). usually: the count in windows that long on average over \
         the run.",
        witness.windows,
        human_duration(witness.period_ns),
        human_duration(witness.cpu_ns)
    );
    for n in &witness.notes {
        note.push(' ');
        note.push_str(n);
        note.push('.');
    }
    note
}

/// A run's top spikes explained, `per_series` per series; None for a run
/// without a witness (off, or stored by an older rtlab) or with no spike.
pub fn run_spikes_table(result: &RunResult, per_series: usize) -> Option<Table> {
    let witness = result.witness.as_ref()?;
    let spikes = spikes_of(witness, per_series);
    if spikes.is_empty() {
        return None;
    }
    // Left-aligned but the last: the verdict and the lists are text.
    let mut table =
        Table::new("top spikes explained", &HEADER, HEADER.len() - 1).with_note(&note(witness));
    table.rows = spikes.into_iter().map(row).collect();
    Some(table)
}

/// The report's table: every run's top spikes, [`DEFAULT_SPIKES`] per
/// series, the run's label first.
pub fn spikes_table(runs: &[RunView]) -> Option<Table> {
    let mut header = vec!["run"];
    header.extend(HEADER);
    let mut table = Table::new("top spikes explained", &header, header.len() - 1);
    let mut notes = Vec::new();
    for view in runs {
        let Some(witness) = &view.result.witness else {
            continue;
        };
        for spike in spikes_of(witness, DEFAULT_SPIKES) {
            let mut cells = vec![view.label.clone()];
            cells.extend(row(spike));
            table.rows.push(cells);
        }
        notes.push(format!("{}: {}", view.label, note(witness)));
    }
    if table.rows.is_empty() {
        return None;
    }
    Some(table.with_note(&notes.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::result::ThreadRan;

    fn spike(series: &str, latency_ns: u64) -> ExplainedSpike {
        ExplainedSpike {
            series: series.into(),
            cpu: 1,
            latency_ns,
            at_ns: 1_500_000_000,
            verdict: "RT thread rtl-hog (fifo 95) ran 3ms".into(),
            source: "proc".into(),
            interrupts: vec![SourceCount {
                name: "irq:LOC".into(),
                count: 50,
                usual: 50,
            }],
            softirqs: vec![SourceCount {
                name: "softirq:TIMER".into(),
                count: 9,
                usual: 2,
            }],
            threads: vec![ThreadRan {
                name: "rtl-hog".into(),
                policy: "fifo".into(),
                priority: 95,
                ran_ns: 3_000_000,
                ..ThreadRan::default()
            }],
            ..ExplainedSpike::default()
        }
    }

    #[test]
    fn the_table_lists_the_first_spikes_of_each_series_with_the_unusual_counts_first() {
        let witness = WitnessReport {
            period_ns: 50_000_000,
            windows: 40,
            cpu_ns: 2_000_000,
            spikes: (0..5)
                .map(|n| spike("cpu1", 3_000_000 - n))
                .chain([spike("cpu0", 10)])
                .collect(),
            notes: vec![],
        };
        let result_table = {
            let mut r = test_result();
            r.witness = Some(witness);
            run_spikes_table(&r, 2).unwrap()
        };
        assert_eq!(result_table.rows.len(), 3, "2 of cpu1, 1 of cpu0");
        let first = &result_table.rows[0];
        assert_eq!(first[3], "RT thread rtl-hog (fifo 95) ran 3ms");
        assert!(
            first[5].starts_with("softirq:TIMER ×9 (usually 2)"),
            "{}",
            first[5]
        );
        assert!(first[6].starts_with("rtl-hog (fifo 95)"), "{}", first[6]);
        assert!(result_table.note.as_ref().unwrap().contains("40 windows"));
        assert!(
            run_spikes_table(&test_result(), 3).is_none(),
            "no witness, no table"
        );
    }

    fn test_result() -> RunResult {
        serde_json::from_value(serde_json::json!({
            "schema": "rtlab.run/1", "id": "x", "probe": "timer", "status": "complete",
            "started_at": "2026-01-01T00:00:00Z", "elapsed_ns": 1, "command": [],
            "config": null, "effective": {"mlockall": true, "dma_latency_us": null,
            "prefaulted_stack_bytes": 0}, "environment": {}, "series": []
        }))
        .unwrap()
    }
}
