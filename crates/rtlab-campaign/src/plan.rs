//! A campaign expanded into its runs, in the order they will run, with an
//! estimate of how long that takes.

use crate::error::{CampaignError, Position};
use crate::spec::*;
use rtlab_core::result::CampaignRef;
use rtlab_core::sched::SchedParams;
use rtlab_core::text::{pad, Align};
use rtlab_core::units::human_duration;
use serde::Serialize;
use std::fmt::Write;

/// Schema of `rtlab campaign plan --json`.
pub const PLAN_SCHEMA: &str = "rtlab.plan/1";

/// Time a run takes beyond its measuring time, counted in the ETA: the
/// environment snapshot, journaled system changes and their restore, load
/// processes started and reaped, probe threads set up and started on a
/// common grid 50 ms out, the result written to the store. An estimate:
/// 1 s per run.
pub const RUN_OVERHEAD_NS: u64 = 1_000_000_000;

/// One run of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedRun {
    /// 1-based position in the plan.
    pub index: usize,
    /// 1-based repeat number.
    pub repeat: u32,
    pub probe: ProbeSpec,
    pub load: LoadEntry,
    pub configuration: Configuration,
    pub duration_ns: u64,
}

impl PlannedRun {
    /// `timer / vm / promoted`, plus ` (repeat 2)` in campaigns that repeat.
    pub fn label(&self, repeats: u32) -> String {
        let mut text = format!(
            "{} / {} / {}",
            self.probe.name, self.load.name, self.configuration.name
        );
        if repeats > 1 {
            text += &format!(" (repeat {})", self.repeat);
        }
        text
    }

    /// The scheduling of the probe's threads in this run. A deadline
    /// configuration gets deadline = period = the probe's interval, as
    /// `rtlab measure timer --policy deadline` does.
    pub fn sched_params(&self) -> SchedParams {
        self.configuration.sched_params(self.probe.interval_ns())
    }

    /// The configuration for humans, saying which thread it schedules when
    /// that is not the measuring one: `server fifo 30` for a net probe with
    /// rtlab's own server (its client always runs fifo 90).
    pub fn scheduling_text(&self) -> String {
        let text = self.configuration.describe();
        match self.probe.settings.scheduled_thread() {
            Some(thread) => format!("{thread} {text}"),
            None => text,
        }
    }

    /// The run's place in its campaign, as recorded in its result.
    pub fn campaign_ref(&self, campaign: &str, execution: &str, total: usize) -> CampaignRef {
        CampaignRef {
            name: campaign.to_string(),
            execution: execution.to_string(),
            index: self.index,
            total,
            configuration: self.configuration.name.clone(),
            load: self.load.name.clone(),
            repeat: self.repeat,
        }
    }
}

/// The runs of a campaign in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub campaign: Campaign,
    pub runs: Vec<PlannedRun>,
    /// Things the author should look at, e.g. an exclude that removes
    /// nothing; each names the file and line.
    pub warnings: Vec<String>,
}

/// Expands the matrix: for each repeat, for each probe, for each load, for
/// each configuration, skipping excluded cells. Warns about excludes that
/// remove nothing; a plan without runs is an error.
pub fn plan(campaign: Campaign) -> Result<Plan, CampaignError> {
    let mut runs = Vec::new();
    let mut warnings = Vec::new();
    // Which exclude removed each excluded cell: the first that matches.
    let mut removed_by = vec![0usize; campaign.excludes.len()];
    let mut cells = 0usize;
    for repeat in 1..=campaign.repeat {
        for probe in &campaign.probes {
            for load in &campaign.loads {
                for configuration in &campaign.configurations {
                    cells += 1;
                    let excluded = campaign
                        .excludes
                        .iter()
                        .position(|e| e.matches(&probe.name, &load.name, &configuration.name));
                    if let Some(i) = excluded {
                        removed_by[i] += 1;
                        continue;
                    }
                    runs.push(PlannedRun {
                        index: runs.len() + 1,
                        repeat,
                        probe: probe.clone(),
                        load: load.clone(),
                        configuration: configuration.clone(),
                        duration_ns: campaign.duration_ns,
                    });
                }
            }
        }
    }
    for (i, (exclude, removed)) in campaign.excludes.iter().zip(&removed_by).enumerate() {
        if *removed == 0 {
            warnings.push(format!(
                "{}: exclude[{i}] ({}) removes no run that an earlier exclude does not already remove",
                at(&campaign.origin, exclude.position),
                exclude.describe()
            ));
        }
    }
    if runs.is_empty() {
        let first = campaign.excludes.iter().find_map(|e| e.position);
        let message = if cells == 0 {
            "the campaign has no probe, load or configuration to run".to_string()
        } else {
            format!("the excludes remove every run ({cells} of {cells}): nothing to do")
        };
        return Err(CampaignError {
            origin: campaign.origin.clone(),
            position: first,
            field: (!campaign.excludes.is_empty()).then(|| "exclude".to_string()),
            message,
        });
    }
    Ok(Plan {
        campaign,
        runs,
        warnings,
    })
}

/// `FILE:LINE` or just `FILE`.
fn at(origin: &str, position: Option<Position>) -> String {
    match position {
        Some(p) => format!("{origin}:{}", p.line),
        None => origin.to_string(),
    }
}

impl Plan {
    /// Estimated wall time of the whole plan: every run's duration plus
    /// [`RUN_OVERHEAD_NS`], and the cooldown between consecutive runs.
    pub fn eta_ns(&self) -> u64 {
        self.remaining_ns(0)
    }

    /// The share of one run in [`Plan::eta_ns`]: its duration, the
    /// overhead, and the cooldown after it unless it is the last run. The
    /// shares of all runs add up to the ETA.
    pub fn eta_of(&self, run: &PlannedRun) -> u64 {
        let cooldown = if run.index < self.runs.len() {
            self.campaign.cooldown_ns
        } else {
            0
        };
        run.duration_ns
            .saturating_add(RUN_OVERHEAD_NS)
            .saturating_add(cooldown)
    }

    /// Estimated wall time of what is left once `done` runs have finished
    /// (the cooldown before each remaining run included).
    pub fn remaining_ns(&self, done: usize) -> u64 {
        let left = self.runs.get(done..).unwrap_or(&[]);
        let cooldowns = if done == 0 {
            left.len().saturating_sub(1)
        } else {
            left.len()
        };
        left.iter()
            .fold(0u64, |sum, run| {
                sum.saturating_add(run.duration_ns.saturating_add(RUN_OVERHEAD_NS))
            })
            .saturating_add(self.campaign.cooldown_ns.saturating_mul(cooldowns as u64))
    }

    /// The plan for humans: the campaign, its probes, one line per run
    /// (index, probe, load and its specs, configuration and its scheduling,
    /// duration), then the run count and the ETA. Warnings are not included.
    pub fn table(&self) -> String {
        let c = &self.campaign;
        let mut out = String::new();
        let _ = writeln!(out, "campaign {} ({})", c.name, c.origin);
        if let Some(description) = &c.description {
            let _ = writeln!(out, "  {description}");
        }
        if let Some(budget) = &c.budget {
            let _ = writeln!(out, "budget: {}", budget.text);
        }
        for probe in &c.probes {
            if probe.name == probe.kind.as_str() {
                let _ = writeln!(out, "probe {}: {}", probe.name, probe.describe());
            } else {
                let _ = writeln!(
                    out,
                    "probe {} ({}): {}",
                    probe.name,
                    probe.kind,
                    probe.describe()
                );
            }
        }
        out.push('\n');

        let with_repeat = c.repeat > 1;
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["#"];
        if with_repeat {
            header.push("repeat");
        }
        header.extend([
            "probe",
            "load",
            "specs",
            "configuration",
            "scheduling",
            "duration",
        ]);
        rows.push(header.iter().map(|h| h.to_string()).collect());
        for run in &self.runs {
            let mut row = vec![run.index.to_string()];
            if with_repeat {
                row.push(run.repeat.to_string());
            }
            row.extend([
                run.probe.name.clone(),
                run.load.name.clone(),
                run.load.describe(),
                run.configuration.name.clone(),
                run.scheduling_text(),
                human_duration(run.duration_ns),
            ]);
            rows.push(row);
        }
        let columns = rows[0].len();
        let widths: Vec<usize> = (0..columns)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let numeric = if with_repeat { 2 } else { 1 };
        for row in &rows {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                // `{cell:>width$}` panics for a width of 65,536 or more.
                let align = if i < numeric {
                    Align::Right
                } else {
                    Align::Left
                };
                line.push_str(&pad(cell, *width, align));
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }

        out.push('\n');
        let n = self.runs.len();
        let _ = write!(
            out,
            "{n} run{}, ETA {} ({} measuring + {} setup per run",
            if n == 1 { "" } else { "s" },
            format_eta(self.eta_ns()),
            human_duration(c.duration_ns),
            human_duration(RUN_OVERHEAD_NS),
        );
        if c.cooldown_ns > 0 && n > 1 {
            let _ = write!(
                out,
                ", {} cooldown between runs",
                human_duration(c.cooldown_ns)
            );
        }
        out.push_str(")\n");
        out
    }
}

/// A wall time for humans: `59.5s`, `15m 9s`, `1h 2m 3s`.
pub fn format_eta(ns: u64) -> String {
    if ns < 60_000_000_000 {
        return human_duration(ns);
    }
    let seconds = ns.saturating_add(500_000_000) / 1_000_000_000;
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}h {m}m {s}s")
    } else {
        format!("{m}m {s}s")
    }
}

/// The plan as `rtlab campaign plan --json` prints it.
#[derive(Serialize)]
struct PlanJson<'a> {
    schema: &'static str,
    campaign: &'a Campaign,
    runs: &'a [PlannedRun],
    warnings: &'a [String],
    run_overhead_ns: u64,
    eta_ns: u64,
}

impl Serialize for Plan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PlanJson {
            schema: PLAN_SCHEMA,
            campaign: &self.campaign,
            runs: &self.runs,
            warnings: &self.warnings,
            run_overhead_ns: RUN_OVERHEAD_NS,
            eta_ns: self.eta_ns(),
        }
        .serialize(s)
    }
}
