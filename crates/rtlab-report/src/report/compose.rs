//! Composing a report from runs (tables, worst-case estimates, charts,
//! computed once) and laying it out as text, Markdown, HTML or JSON.

use super::charts::{self, Chart, TimeSource};
use super::html;
use super::model::{
    CampaignView, Report, ReportOptions, RunSamples, RunView, SeriesView, REPORT_SCHEMA,
};
use super::run_tables;
use super::spike_tables;
use super::traffic_tables;
use crate::evt::EvtReport;
use crate::text::md_cell;
use rtlab_core::result::{RunResult, SeriesStats};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// Each run's label: what tells its cell apart from the others, never an
/// id unless the run is in no campaign. A campaign run is
/// `load/configuration`, with the probe first (`timer/idle/promoted`) when
/// the report holds campaign runs of several probe kinds, the campaign
/// first (`quick: idle/promoted`) when of several campaigns, and `#N`, the
/// repeat, when a campaign repeats its cells. Runs that still share a
/// label (two executions of one campaign, one run given twice) are
/// numbered in report order: `idle/promoted (1)`, `idle/promoted (2)`.
fn run_labels(results: &[RunResult]) -> Vec<String> {
    let in_campaigns = || results.iter().filter(|r| r.campaign.is_some());
    let distinct = |key: &dyn Fn(&RunResult) -> &str| {
        in_campaigns()
            .map(key)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let several_probes = distinct(&|r| r.probe.as_str()) > 1;
    let several_campaigns = distinct(&|r| r.campaign.as_ref().map_or("", |c| c.name.as_str())) > 1;
    let repeated = in_campaigns().any(|r| r.campaign.as_ref().is_some_and(|c| c.repeat > 1));
    let mut labels: Vec<String> = results
        .iter()
        .map(|r| {
            let Some(c) = &r.campaign else {
                return r.id.clone();
            };
            let mut label = String::new();
            if several_campaigns {
                label += &format!("{}: ", c.name);
            }
            if several_probes {
                label += &format!("{}/", r.probe);
            }
            label += &format!("{}/{}", c.load, c.configuration);
            if repeated {
                label += &format!(" #{}", c.repeat);
            }
            label
        })
        .collect();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for label in &labels {
        *count.entry(label.clone()).or_default() += 1;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for label in &mut labels {
        if count[label.as_str()] > 1 {
            let n = seen.entry(label.clone()).or_default();
            *n += 1;
            label.push_str(&format!(" ({n})"));
        }
    }
    labels
}

impl Report {
    /// Analyses and draws `results`; `samples` maps a run id to that run's
    /// samples file. `progress(done, total)` is called after each series
    /// (the worst-case fits take a moment each).
    pub fn build(
        results: Vec<RunResult>,
        mut samples: BTreeMap<String, RunSamples>,
        options: &ReportOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Report {
        let total: usize = results.iter().map(|r| r.series.len()).sum();
        let mut done = 0;
        let labels = run_labels(&results);
        let mut runs = Vec::new();
        for (mut result, label) in results.into_iter().zip(labels) {
            bucket_tops(&mut result);
            let run_samples = samples.remove(&result.id);
            let mut series_views = Vec::new();
            for series in &result.series {
                let evt = crate::evt::for_series(&series.stats, &options.evt);
                let title = |what: &str| format!("{label} · {}: {what}", series.name);
                let source = match run_samples
                    .as_ref()
                    .and_then(|s| s.samples.series.get(&series.name).map(|p| (p, &s.path)))
                {
                    Some((points, path)) => TimeSource::Samples {
                        points,
                        file: path.clone(),
                    },
                    None => TimeSource::BlockMaxima,
                };
                let charts = vec![
                    charts::histogram(&title("histogram"), &series.metric, &series.stats),
                    charts::exceedance(&title("exceedance"), &series.metric, &series.stats, &evt),
                    charts::timeline(&title("against time"), &result, series, source),
                ];
                series_views.push(SeriesView {
                    name: series.name.clone(),
                    metric: series.metric.clone(),
                    stats: series.stats.clone(),
                    evt,
                    charts,
                });
                done += 1;
                progress(done, total);
            }
            runs.push(RunView {
                label,
                result,
                series: series_views,
                samples_file: run_samples.map(|s| s.path),
            });
        }

        let campaign_results: Vec<RunResult> = runs
            .iter()
            .filter(|v| v.result.campaign.is_some())
            .map(|v| v.result.clone())
            .collect();
        let verdicts = crate::matrix::verdicts(&campaign_results);
        let campaign = crate::matrix::per_probe(&campaign_results)
            .into_iter()
            .zip(verdicts)
            .map(|((probe, matrix), (_, verdict))| CampaignView {
                chart: charts::matrix_chart(&probe, &matrix),
                probe,
                verdict,
            })
            .collect();

        let mut tables = vec![
            run_tables::runs_table(&runs),
            run_tables::percentile_table(&runs),
        ];
        tables.extend(run_tables::matrix_tables(&runs));
        tables.push(run_tables::pwcet_table(&runs));
        tables.extend(run_tables::within_table(&runs));
        tables.extend(run_tables::max_avg_table(&runs));
        tables.extend(spike_tables::spikes_table(&runs));
        tables.extend(traffic_tables::traffic_counts_table(&runs));
        tables.extend(traffic_tables::traffic_accuracy_table(&runs));

        // Per metric: one curve per run (its series of that metric merged)
        // when runs are compared, one per series within a single run.
        let mut metrics: Vec<&str> = Vec::new();
        for series in runs.iter().flat_map(|r| &r.series) {
            if !metrics.contains(&series.metric.as_str()) {
                metrics.push(&series.metric);
            }
        }
        let mut comparison = Vec::new();
        for metric in metrics {
            let merged: Vec<(String, SeriesStats)> = if runs.len() > 1 {
                runs.iter()
                    .filter_map(|run| {
                        let series: Vec<&SeriesStats> = run
                            .series
                            .iter()
                            .filter(|s| s.metric == metric)
                            .map(|s| &s.stats)
                            .collect();
                        (!series.is_empty()).then(|| (run.label.clone(), merge(&series)))
                    })
                    .collect()
            } else {
                runs.iter()
                    .flat_map(|run| run.series.iter())
                    .filter(|s| s.metric == metric)
                    .map(|s| (s.name.clone(), s.stats.clone()))
                    .collect()
            };
            let curves: Vec<(String, &SeriesStats)> = merged
                .iter()
                .filter(|(_, s)| s.samples > 0)
                .map(|(label, s)| (label.clone(), s))
                .collect();
            if curves.len() > 1 {
                comparison.push((
                    metric.to_string(),
                    vec![
                        charts::overlay_exceedance(metric, &curves),
                        charts::overlay_histogram(metric, &curves),
                    ],
                ));
            }
        }

        let title = options
            .title
            .clone()
            .unwrap_or_else(|| default_title(&runs));
        Report {
            title,
            generated_at: rtlab_core::result::timestamp_now(),
            campaign,
            runs,
            tables,
            comparison,
        }
    }

    /// Adds the checks of a budget, right after the list of runs.
    pub fn add_budget(&mut self, evaluations: &[crate::budget::Evaluation]) {
        if !evaluations.is_empty() {
            let table = run_tables::budget_table(&self.runs, evaluations);
            self.tables.insert(1.min(self.tables.len()), table);
        }
    }

    /// Every chart with a file name for it: `RUN-SERIES-KIND`, comparison
    /// charts `compare-METRIC-KIND`; safe on any file system (other
    /// characters become `_`, long names are cut) and unique (`-2`, `-3`
    /// added where two names would meet).
    pub fn named_charts(&self) -> Vec<(String, &Chart)> {
        let mut out: Vec<(String, &Chart)> = Vec::new();
        for view in &self.campaign {
            out.push((file_stem(&["campaign", &view.probe, "matrix"]), &view.chart));
        }
        for (metric, charts) in &self.comparison {
            for chart in charts {
                out.push((file_stem(&["compare", metric, chart.kind]), chart));
            }
        }
        for run in &self.runs {
            for series in &run.series {
                for chart in &series.charts {
                    out.push((
                        file_stem(&[&run.result.id, &series.name, chart.kind]),
                        chart,
                    ));
                }
            }
        }
        let mut taken = HashSet::new();
        for (name, _) in &mut out {
            let mut unique = name.clone();
            let mut n = 1;
            while !taken.insert(unique.clone()) {
                n += 1;
                unique = format!("{name}-{n}");
            }
            *name = unique;
        }
        out
    }

    /// The tables for the terminal, then the runs' warnings.
    pub fn to_text(&self) -> String {
        let mut out = format!("{}\n\n", self.title);
        for view in &self.campaign {
            out.push_str(&format!(
                "{}\n{}\n",
                printable(&self.verdict_title(view)),
                printable(&view.verdict)
            ));
        }
        for table in &self.tables {
            out.push_str(&table.to_text());
            out.push('\n');
        }
        for run in &self.runs {
            for warning in &run.result.warnings {
                out.push_str(&format!("{}: warning: {warning}\n", run.label));
            }
        }
        out
    }

    /// The same tables as Markdown, the environment of each run included.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n\n", md_cell(&self.title));
        for view in &self.campaign {
            out.push_str(&format!(
                "## {}\n\n{}\n",
                md_cell(&self.verdict_title(view)),
                code_block(&view.verdict)
            ));
        }
        for table in &self.tables {
            out.push_str(&table.to_markdown(2));
            out.push('\n');
        }
        for run in &self.runs {
            out.push_str(&format!("## {}\n\n", md_cell(&run.label)));
            out.push_str(&run_tables::environment_table(&run.result).to_markdown(3));
            out.push('\n');
            for warning in &run.result.warnings {
                out.push_str(&format!("- warning: {}\n", md_cell(warning)));
            }
            if !run.result.warnings.is_empty() {
                out.push('\n');
            }
        }
        out
    }

    /// `verdict`, or `verdict: timer probe` when the campaign runs have
    /// several probe kinds.
    pub fn verdict_title(&self, view: &CampaignView) -> String {
        if self.campaign.len() > 1 {
            format!("verdict: {} probe", view.probe)
        } else {
            "verdict".to_string()
        }
    }

    /// One self-contained HTML page.
    pub fn to_html(&self) -> String {
        html::page(self)
    }

    /// The report as data (`rtlab.report/1`): the tables, and each series'
    /// worst-case estimate.
    pub fn to_json(&self) -> serde_json::Value {
        #[derive(Serialize)]
        struct SeriesJson<'a> {
            run: &'a str,
            run_id: &'a str,
            series: &'a str,
            estimate: &'a EvtReport,
        }
        let series: Vec<SeriesJson> = self
            .runs
            .iter()
            .flat_map(|run| {
                run.series.iter().map(move |s| SeriesJson {
                    run: &run.label,
                    run_id: &run.result.id,
                    series: &s.name,
                    estimate: &s.evt,
                })
            })
            .collect();
        serde_json::json!({
            "schema": REPORT_SCHEMA,
            "title": self.title,
            "generated_at": self.generated_at,
            "verdicts": self
                .campaign
                .iter()
                .map(|v| serde_json::json!({ "probe": v.probe, "verdict": v.verdict }))
                .collect::<Vec<_>>(),
            "tables": self.tables,
            "series": series,
        })
    }
}

/// Text for the terminal with control characters (but line breaks) shown
/// as `?`, as [`Table::to_text`] does: a load or configuration named in a
/// result file cannot drive the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect()
}

/// `text` as a fenced Markdown code block whatever it holds: the fence is
/// longer than any run of backticks in it, so no line of the text can
/// close it early.
fn code_block(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{}{fence}\n", printable(text))
}

/// The series of a run as one distribution: what the overlays compare.
/// Only the fields they read (counts, extremes, histograms) are filled.
fn merge(series: &[&SeriesStats]) -> SeriesStats {
    let mut ns: BTreeMap<u64, u64> = BTreeMap::new();
    let mut us: BTreeMap<u64, u64> = BTreeMap::new();
    for s in series {
        for bin in &s.histogram_ns {
            *ns.entry(bin[0]).or_default() += bin[1];
        }
        for bin in &s.histogram_us {
            *us.entry(bin[0]).or_default() += bin[1];
        }
    }
    let with_samples = series.iter().filter(|s| s.samples > 0);
    SeriesStats {
        samples: series.iter().map(|s| s.samples).sum(),
        missed: series.iter().map(|s| s.missed).sum(),
        min_ns: with_samples.clone().map(|s| s.min_ns).min().unwrap_or(0),
        max_ns: with_samples.map(|s| s.max_ns).max().unwrap_or(0),
        histogram_ns: ns.into_iter().map(|(v, c)| [v, c]).collect(),
        histogram_us: us.into_iter().map(|(v, c)| [v, c]).collect(),
        ..SeriesStats::default()
    }
}

fn default_title(runs: &[RunView]) -> String {
    let campaigns: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.result.campaign.as_ref().map(|c| c.name.as_str()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let all_in_campaigns = runs.iter().all(|r| r.result.campaign.is_some());
    match (campaigns.as_slice(), runs) {
        ([name], _) if all_in_campaigns => format!("rtlab report: campaign {name}"),
        (_, [run]) => format!("rtlab report: {} run {}", run.result.probe, run.result.id),
        _ => format!("rtlab report: {} runs", runs.len()),
    }
}

/// Joins parts with `-`, keeping letters, digits, `.`, `_` and `-` (a
/// leading `.` becomes `_`), each part cut to 60 characters.
fn file_stem(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .take(60)
                .enumerate()
                .map(|(i, c)| {
                    if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') || (c == '.' && i > 0) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// An imported cyclictest histogram keeps each bin at its lower edge; the
/// report reads every bucket at its highest value (as rtlab records them),
/// so move imported bins to their top: a 10 µs bin holds 10.000-10.999 µs.
fn bucket_tops(result: &mut RunResult) {
    if result.probe != "cyclictest" {
        return;
    }
    let resolution = result.config["resolution_ns"].as_u64().unwrap_or(1).max(1);
    for series in &mut result.series {
        for bin in &mut series.stats.histogram_ns {
            bin[0] = bin[0].saturating_add(resolution - 1);
        }
    }
}
