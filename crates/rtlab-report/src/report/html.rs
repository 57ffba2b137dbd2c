//! The HTML page: one file, inline SVG and CSS, no script, and a content
//! security policy that forbids fetching anything, so the report reads
//! the same offline, attached to a ticket or years later.

use super::charts::Chart;
use super::model::{Report, RunView, SeriesView};
use super::run_tables::{environment_table, series_pwcet_table, status_name};
use super::svg::escape;
use crate::evt::{CheckStatus, Verdict};
use std::fmt::Write;

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 0 auto; max-width: 1340px; padding: 0 24px 48px; color: #1d1d1d; background: #fafafa; font-size: 14px; }
h1 { font-size: 22px; margin: 24px 0 4px; }
h2 { font-size: 18px; margin: 36px 0 8px; border-bottom: 2px solid #0072B2; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 24px 0 8px; }
.meta { color: #555; margin: 0 0 12px; }
nav a { margin-right: 14px; color: #0072B2; }
table { border-collapse: collapse; margin: 8px 0 4px; background: #fff; font-size: 13px; }
caption { text-align: left; font-weight: bold; padding: 4px 0; font-size: 14px; }
th, td { border: 1px solid #d6d6d6; padding: 3px 6px; vertical-align: top; }
td { max-width: 40em; overflow-wrap: break-word; }
table { max-width: 100%; }
th { background: #eef3f8; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; padding: 3px 5px; }
td.span { color: #a00000; }
.verdict { margin: 8px 0 16px; }
.verdict pre { margin: 0 0 12px; display: inline-block; vertical-align: top; padding: 10px 12px; background: #fff; border: 1px solid #ddd; font-size: 13px; line-height: 1.5; max-width: 100%; box-sizing: border-box; overflow-x: auto; }
p.note { color: #555; font-size: 12px; margin: 2px 0 16px; max-width: 900px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; background: #fff; border: 1px solid #ddd; padding: 6px; width: 640px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 12px; color: #444; padding: 4px 2px 0; }
.warn { color: #8a4b00; }
.refused { color: #a00000; }
details { margin: 8px 0; }
summary { cursor: pointer; color: #0072B2; }
"#;

/// The whole page.
pub fn page(report: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="rtlab {version}">
<title>{title}</title><style>{STYLE}</style></head><body>
<h1>{title}</h1><p class="meta">generated {generated} by rtlab {version}: {runs} run(s), {series} series</p>"#,
        version = env!("CARGO_PKG_VERSION"),
        title = escape(&report.title),
        generated = escape(&report.generated_at),
        runs = report.runs.len(),
        series = report.runs.iter().map(|r| r.series.len()).sum::<usize>(),
    );
    s.push_str("<nav>");
    if !report.campaign.is_empty() {
        s.push_str(r##"<a href="#verdict">verdict</a>"##);
    }
    s.push_str(r##"<a href="#overview">overview</a>"##);
    if !report.comparison.is_empty() {
        s.push_str(r##"<a href="#compare">comparison</a>"##);
    }
    for (i, run) in report.runs.iter().enumerate() {
        let _ = write!(s, r##"<a href="#run-{i}">{}</a>"##, escape(&run.label));
    }
    s.push_str("</nav>");

    // A campaign opens with what it found: the verdict `rtlab quick`
    // prints and the loads × configurations in one picture; the tables of
    // figures follow.
    if !report.campaign.is_empty() {
        s.push_str(r#"<h2 id="verdict">Verdict</h2>"#);
        for view in &report.campaign {
            if report.campaign.len() > 1 {
                let _ = write!(s, "<h3>{} probe</h3>", escape(&view.probe));
            }
            let _ = write!(
                s,
                r#"<div class="verdict"><pre>{}</pre>"#,
                escape_pre(&view.verdict)
            );
            figure(&mut s, &view.chart);
            s.push_str("</div>");
        }
    }
    s.push_str(r#"<h2 id="overview">Overview</h2>"#);
    for table in &report.tables {
        s.push_str(&table.to_html());
    }
    if !report.comparison.is_empty() {
        s.push_str(r#"<h2 id="compare">Comparison</h2><div class="charts">"#);
        for chart in report.comparison.iter().flat_map(|(_, charts)| charts) {
            figure(&mut s, chart);
        }
        s.push_str("</div>");
    }
    for (i, run) in report.runs.iter().enumerate() {
        run_section(&mut s, i, run);
    }
    s.push_str("</body></html>\n");
    s
}

/// Text for a `<pre>`: escaped, its line breaks kept.
fn escape_pre(text: &str) -> String {
    text.lines().map(escape).collect::<Vec<_>>().join("\n")
}

fn figure(s: &mut String, chart: &Chart) {
    let _ = write!(
        s,
        "<figure>{}<figcaption>{}</figcaption></figure>",
        chart.plot.to_svg(),
        escape(&chart.caption)
    );
}

fn run_section(s: &mut String, index: usize, run: &RunView) {
    let r = &run.result;
    let _ = write!(
        s,
        r#"<h2 id="run-{index}">{}</h2><p class="meta">{} run {} · {} · started {} · {:.1} s</p>"#,
        escape(&run.label),
        escape(&r.probe),
        escape(&r.id),
        escape(&status_name(r)),
        escape(&r.started_at),
        r.elapsed_ns as f64 / 1e9
    );
    for warning in &r.warnings {
        let _ = write!(s, r#"<p class="warn">warning: {}</p>"#, escape(warning));
    }
    let _ = write!(
        s,
        "<details><summary>environment</summary>{}</details>",
        environment_table(r).to_html()
    );
    for series in &run.series {
        series_section(s, series);
    }
}

fn series_section(s: &mut String, series: &SeriesView) {
    let _ = write!(
        s,
        "<h3>{} <small>({})</small></h3>",
        escape(&series.name),
        escape(&series.metric)
    );
    s.push_str(r#"<div class="charts">"#);
    for chart in &series.charts {
        figure(s, chart);
    }
    s.push_str("</div>");
    match &series.evt.verdict {
        Verdict::Estimated => s.push_str(&series_pwcet_table(&series.evt).to_html()),
        Verdict::Refused { reasons } => {
            s.push_str(r#"<p class="refused">No worst-case estimate:</p><ul>"#);
            for reason in reasons {
                let _ = write!(s, "<li>{}</li>", escape(reason));
            }
            s.push_str("</ul>");
        }
    }
    if let Some(bound) = &series.evt.bound {
        let _ = write!(s, "<p>{}</p>", escape(&crate::evt::bound_sentence(bound)));
    }
    s.push_str("<details><summary>checks of the worst-case estimate</summary><table><thead><tr><th>check</th><th>result</th><th>detail</th></tr></thead><tbody>");
    for check in &series.evt.checks {
        let status = match check.status {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::Unknown => "unknown",
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{status}</td><td>{}</td></tr>",
            escape(&check.name),
            escape(&check.detail)
        );
    }
    s.push_str("</tbody></table></details>");
}
