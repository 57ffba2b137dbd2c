//! A run as Markdown, for a report, a ticket or a pull request: what ran
//! where, one table of the series in µs (ns precision), and the warnings.

use super::exporter::Exporter;
use crate::text::{md_cell, md_code};
use rtlab_core::result::{RunResult, RunStatus};
use rtlab_core::units::{human_duration, Micros};
use rtlab_stats::quantile::percentiles_known;
use std::io::{self, Write};

pub struct MarkdownExporter;

const COLUMNS: [&str; 10] = [
    "series", "samples", "missed", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max",
];

fn status(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running (not finished)",
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial (stopped early)",
        RunStatus::Break => "break (stopped by --break-at)",
        RunStatus::Failed => "failed",
    }
}

impl Exporter for MarkdownExporter {
    fn write(&self, r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let env = &r.environment;
        writeln!(out, "# rtlab run {}", md_code(&r.id))?;
        writeln!(out)?;
        writeln!(out, "| | |")?;
        writeln!(out, "|---|---|")?;
        let mut field = |name: &str, value: String| writeln!(out, "| {name} | {value} |");
        field("probe", md_cell(&r.probe))?;
        field("status", status(r.status).to_string())?;
        field("started", md_cell(&r.started_at))?;
        field(
            "elapsed",
            if r.elapsed_ns > 0 {
                human_duration(r.elapsed_ns)
            } else {
                "unknown".to_string()
            },
        )?;
        field(
            "host",
            md_cell(env.hostname.as_deref().unwrap_or("unknown")),
        )?;
        let kernel = match (&env.kernel_release, &env.kernel_version) {
            (Some(release), Some(version)) => format!("{release} ({version})"),
            (Some(release), None) => release.clone(),
            (None, Some(version)) => version.clone(),
            (None, None) => "unknown".to_string(),
        };
        field(
            "kernel",
            format!(
                "{}, preemption: {}",
                md_cell(&kernel),
                md_cell(&env.preempt_model)
            ),
        )?;
        field(
            "loads",
            if r.loads.is_empty() {
                "none (idle)".to_string()
            } else {
                r.loads
                    .iter()
                    .map(|l| md_code(&l.spec))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        )?;
        if let Some(c) = &r.campaign {
            field(
                "campaign",
                md_cell(&format!(
                    "{} (execution {}), run {}/{}: configuration {}, load {}, repeat {}",
                    c.name, c.execution, c.index, c.total, c.configuration, c.load, c.repeat
                )),
            )?;
        }
        if !r.command.is_empty() {
            field("command", md_code(&r.command.join(" ")))?;
        }
        if let Some(from) = r.config.get("imported_from").and_then(|v| v.as_str()) {
            field("imported from", md_code(from))?;
        }

        writeln!(out)?;
        writeln!(out, "## Series (latencies in µs)")?;
        writeln!(out)?;
        writeln!(out, "| {} |", COLUMNS.join(" | "))?;
        writeln!(out, "|---|{}", "--:|".repeat(COLUMNS.len() - 1))?;
        for series in &r.series {
            let s = &series.stats;
            let has = s.samples > 0;
            let known = percentiles_known(s);
            let us = |ns: u64, shown: bool| {
                if shown {
                    Micros(ns).to_string()
                } else {
                    "-".to_string()
                }
            };
            let p = &s.percentiles_ns;
            let cells = [
                md_cell(&series.name),
                s.samples.to_string(),
                s.missed.to_string(),
                us(s.min_ns, has),
                us(p.p50, known),
                us(p.p90, known),
                us(p.p99, known),
                us(p.p99_9, known),
                us(p.p99_99, known),
                us(s.max_ns, has),
            ];
            writeln!(out, "| {} |", cells.join(" | "))?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "missed = deadlines that passed without their own wake-up; `-` = unknown."
        )?;

        if let Some(b) = &r.break_event {
            writeln!(out)?;
            writeln!(
                out,
                "Stopped by `--break-at {}`: {} woke {} µs late at {} (sample {}).",
                human_duration(b.threshold_ns),
                md_cell(&b.series),
                Micros(b.latency_ns),
                human_duration(b.at_ns),
                b.sample
            )?;
        }
        if !r.warnings.is_empty() {
            writeln!(out)?;
            writeln!(out, "## Warnings")?;
            writeln!(out)?;
            for w in &r.warnings {
                writeln!(out, "- {}", w.replace(['\n', '\r'], " "))?;
            }
        }
        Ok(())
    }
}
