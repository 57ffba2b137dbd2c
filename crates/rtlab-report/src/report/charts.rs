//! The report's charts: OSADL's latency histogram (1 µs bins, log counts),
//! the exceedance plot with the fitted worst case, the papers' latency
//! against time, and overlays that compare runs.

use super::svg::{Axis, Key, Layer, Plot, ALARM, FIT, PALETTE};
use crate::evt::EvtReport;
use rtlab_core::result::{RunResult, Series, SeriesStats};

/// A chart of the report.
#[derive(Debug, Clone)]
pub struct Chart {
    /// `histogram`, `exceedance`, `timeline`, `compare-exceedance`, ...
    pub kind: &'static str,
    /// What the chart shows and where its data came from, in a sentence.
    pub caption: String,
    pub plot: Plot,
}

/// What a metric's values are, for an axis: `wake-up latency`, `response time`.
pub fn quantity(metric: &str) -> String {
    match metric {
        "wakeup_latency" => "wake-up latency".into(),
        "" => "latency".into(),
        other => other.replace('_', " "),
    }
}

/// The fitted tail up to `x_end`, its last piece cut at the edge
/// (interpolated in log probability, as it is drawn).
fn clip_at(curve: Vec<(f64, f64)>, x_end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(curve.len());
    for (x, p) in curve {
        if x <= x_end {
            out.push((x, p));
            continue;
        }
        if let Some(&(x0, p0)) = out.last() {
            if p0 > 0.0 && p > 0.0 && x > x0 {
                let t = (x_end - x0) / (x - x0);
                out.push((x_end, (p0.ln() + t * (p.ln() - p0.ln())).exp()));
            }
        }
        break;
    }
    out
}

/// Why a chart of the distribution is empty.
fn no_data(stats: &SeriesStats) -> &'static str {
    if stats.samples == 0 {
        "no samples"
    } else {
        "no histogram in this result (imported without one)"
    }
}

/// How far past the observed maximum an exceedance axis may reach.
const EXTRAPOLATION_SPAN: f64 = 4.0;

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

/// Latency in 1 µs bins, counts on a log axis (the OSADL convention).
pub fn histogram(title: &str, metric: &str, stats: &SeriesStats) -> Chart {
    let max_bin = stats.histogram_us.iter().map(|b| b[0]).max().unwrap_or(0);
    let max_count = stats.histogram_us.iter().map(|b| b[1]).max().unwrap_or(1);
    let mut plot = Plot::new(
        title,
        Axis::linear(
            &format!("{} (µs), 1 µs bins", quantity(metric)),
            0.0,
            (max_bin + 1) as f64 * 1.02,
        ),
        Axis::log_from("samples", 0.5, max_count as f64),
    );
    if stats.histogram_us.is_empty() {
        plot.empty_note = Some(no_data(stats).into());
    }
    plot.layers.push(Layer::Bars {
        bars: stats
            .histogram_us
            .iter()
            .map(|b| [b[0] as f64, b[0] as f64 + 1.0, b[1] as f64])
            .collect(),
        colour: PALETTE[0].into(),
    });
    Chart {
        kind: "histogram",
        caption: format!(
            "{} samples in 1 µs bins (latency truncated to whole µs, as cyclictest); log count axis.",
            stats.samples
        ),
        plot,
    }
}

/// `(µs, P(latency > µs))` after each HDR bucket, starting at `(min, 1)`:
/// the measured exceedance per sample (each bucket at its highest value).
pub fn survival(stats: &SeriesStats) -> Vec<(f64, f64)> {
    let total: u64 = stats.histogram_ns.iter().map(|b| b[1]).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut points = vec![(us(stats.min_ns as f64), 1.0)];
    let mut seen = 0u64;
    for bin in &stats.histogram_ns {
        seen += bin[1];
        points.push((us(bin[0] as f64), (total - seen) as f64 / total as f64));
    }
    points
}

/// 1 − CDF per sample on a log axis, with the fitted tail and the pWCET
/// intervals when the worst case was estimated.
pub fn exceedance(title: &str, metric: &str, stats: &SeriesStats, evt: &EvtReport) -> Chart {
    let measured = survival(stats);
    let events = stats.samples + stats.missed;
    let mut smallest = 1.0 / (stats.samples.max(1) as f64);
    let observed = us(stats.max_ns as f64);
    // Extrapolated values far past the data would squash the measured
    // curve against the axis: the axis stops at a few times the observed
    // maximum, and what lies beyond is drawn as an arrow at the edge.
    let mut right = observed;
    for e in &evt.pwcet {
        smallest = smallest.min(e.exceedance_per_sample);
        right = right.max(us(e.value_ns).min(EXTRAPOLATION_SPAN * observed));
    }
    let mut plot = Plot::new(
        title,
        Axis::linear(&format!("{} (µs)", quantity(metric)), 0.0, right * 1.08),
        Axis::log(
            &format!("P({} > x) per sample", quantity(metric)),
            // Room under the smallest probability, so its interval is not
            // drawn on the frame.
            smallest * 0.5,
            1.0,
        ),
    );
    if measured.is_empty() {
        plot.empty_note = Some(no_data(stats).into());
    } else {
        plot.legend.push(Key::line("measured", PALETTE[0], false));
    }
    plot.layers.push(Layer::Line {
        points: measured,
        colour: PALETTE[0].into(),
        width: 1.6,
        dashed: false,
        step: true,
    });
    if stats.missed > 0 && events > 0 {
        // Missed deadlines and lost messages have no latency of their own:
        // they exceed every x. The per-sample curve leaves them out.
        plot.layers.push(Layer::HLine {
            y: stats.missed as f64 / events as f64,
            colour: ALARM.into(),
        });
        plot.legend.push(Key::line(
            format!("missed or lost: {} of {events}", stats.missed),
            ALARM,
            true,
        ));
    }
    let x_end = plot.x.max;
    let caption = if evt.is_estimated() {
        plot.layers.push(Layer::Line {
            points: clip_at(
                evt.curve.iter().map(|&(ns, p)| (us(ns), p)).collect(),
                x_end,
            ),
            colour: FIT.into(),
            width: 1.6,
            dashed: true,
            step: false,
        });
        plot.layers.push(Layer::Intervals {
            bars: evt
                .pwcet
                .iter()
                .map(|e| {
                    (
                        e.exceedance_per_sample,
                        us(e.ci_low_ns),
                        us(e.value_ns),
                        us(e.ci_high_ns),
                    )
                })
                .collect(),
            colour: FIT.into(),
        });
        plot.legend
            .push(Key::line("fitted tail, pWCET and 95 % interval", FIT, true));
        format!(
            "Measured exceedance of {} samples; the dashed line is the fitted tail ({}), each bar a pWCET with its 95 % interval (an arrow: unbounded above).",
            stats.samples,
            crate::evt::method_name(evt)
        )
    } else {
        plot.legend
            .push(Key::mark("no worst-case estimate", "#999999"));
        format!(
            "Measured exceedance of {} samples. No worst-case estimate: the reasons are below.",
            stats.samples
        )
    };
    Chart {
        kind: "exceedance",
        caption,
        plot,
    }
}

/// Where the dots of a latency-against-time chart come from.
pub enum TimeSource<'a> {
    /// Every sample from the run's samples file: `(t_ns, latency_ns)`,
    /// `None` a lost message.
    Samples {
        points: &'a [(u64, Option<u64>)],
        file: String,
    },
    /// The largest sample of each block (what the result keeps).
    BlockMaxima,
}

/// The net probe's timeline as `(t_ns, value)` for one of its series.
fn net_points(result: &RunResult, series: &str) -> Option<Vec<(u64, Option<u64>)>> {
    let net = result.net.as_ref()?;
    let sent = net.messages.sent;
    let rows = net.timeline.iter().filter(|row| row.0 < sent);
    let points = match series {
        "response" => rows.map(|r| (r.1, r.3)).collect(),
        "response_from_send" => rows
            .map(|r| (r.1, r.3.map(|v| v.saturating_sub(r.2))))
            .collect(),
        "send_lag" => rows.map(|r| (r.1, Some(r.2))).collect(),
        _ => return None,
    };
    Some(points)
}

/// Metrics measured once per period, where a value of a period or more
/// means the next deadline passed without its own sample.
fn is_periodic(metric: &str) -> bool {
    matches!(
        metric,
        "wakeup_latency" | "activation_lateness" | "interrupt_latency"
    )
}

/// Whether a series' samples come one per interval over the whole run, so
/// that a block's index says when it happened.
fn covers_run(result: &RunResult, series: &Series) -> bool {
    let events = series.stats.samples + series.stats.missed;
    if series.interval_ns == 0 || result.elapsed_ns == 0 || events == 0 {
        return false;
    }
    let spanned = events as f64 * series.interval_ns as f64 / result.elapsed_ns as f64;
    (0.8..=1.25).contains(&spanned)
}

/// Latency against time, one dot per sample, message or activation (the
/// papers' scatter plots); missed deadlines and lost messages marked.
pub fn timeline(title: &str, result: &RunResult, series: &Series, source: TimeSource) -> Chart {
    let stats = &series.stats;
    let net = result.net.is_some();
    let mut caption;
    let points: Vec<(u64, Option<u64>)> = match (source, net_points(result, &series.name)) {
        (TimeSource::Samples { points, file }, _) => {
            caption = format!("One dot per sample ({} from {file}).", points.len());
            points.to_vec()
        }
        (TimeSource::BlockMaxima, Some(points)) => {
            caption = format!("One dot per message ({}).", points.len());
            if result.net.as_ref().is_some_and(|n| !n.timeline_complete) {
                caption.push_str(" The stored timeline stops short of the last message; pass the run's --samples file to draw them all.");
            }
            points
        }
        (TimeSource::BlockMaxima, None) if !covers_run(result, series) => {
            caption = "The largest samples at their exact times. This series' samples do not come one per interval over the whole run (several mechanisms in turn, bursts, noise events), so its blocks have no place in time: run with --samples FILE and pass it to `rtlab report --samples` to draw every sample.".into();
            stats
                .top
                .iter()
                .map(|s| (s.at_ns, Some(s.latency_ns)))
                .collect()
        }
        (TimeSource::BlockMaxima, None) => {
            let mut points = Vec::new();
            // A block whose maximum is one of the largest samples is drawn
            // once, at the sample's exact time.
            let mut exact: Vec<u64> = stats.top.iter().map(|s| s.latency_ns).collect();
            if let Some(blocks) = &stats.block_maxima {
                let samples = stats.samples.max(1) as f64;
                for (i, max) in blocks.maxima_ns.iter().enumerate() {
                    if let Some(at) = exact.iter().position(|v| v == max) {
                        exact.swap_remove(at);
                        continue;
                    }
                    let middle = (i as f64 + 0.5) * blocks.block_samples as f64;
                    let at = middle / samples * result.elapsed_ns as f64;
                    points.push((at as u64, Some(*max)));
                }
                caption = format!(
                    "One dot per block of {} samples: its largest, at the block's place in the run; the largest samples at their exact times. The result keeps no per-sample record: run with --samples FILE and pass it to `rtlab report --samples` to draw every sample.",
                    blocks.block_samples
                );
            } else {
                caption = "The largest samples at their exact times, where the result has them: it has no block maxima (older rtlab, or imported).".into();
            }
            points.extend(stats.top.iter().map(|s| (s.at_ns, Some(s.latency_ns))));
            points
        }
    };
    let max = points
        .iter()
        .filter_map(|p| p.1)
        .max()
        .unwrap_or(stats.max_ns);
    let end = points
        .iter()
        .map(|p| p.0)
        .max()
        .unwrap_or(0)
        .max(result.elapsed_ns);
    let top = us(max.max(1) as f64) * 1.08;
    let mut plot = Plot::new(
        title,
        // A result without any time (an imported histogram) still gets a
        // readable axis.
        Axis::linear(
            "time since start (s)",
            0.0,
            if end == 0 { 1.0 } else { end as f64 / 1e9 },
        ),
        Axis::linear(&format!("{} (µs)", quantity(&series.metric)), 0.0, top),
    );
    // A wake-up a whole period late means the next deadline passed too;
    // only periodic metrics have one.
    let deadline = (!net && series.interval_ns > 0 && is_periodic(&series.metric))
        .then_some(series.interval_ns);
    let late = |v: u64| deadline.is_some_and(|d| v >= d);
    let dot = |(at, v): (u64, u64)| (at as f64 / 1e9, us(v as f64));
    let on_time: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|&(at, v)| v.filter(|v| !late(*v)).map(|v| dot((at, v))))
        .collect();
    let missed: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|&(at, v)| v.filter(|v| late(*v)).map(|v| dot((at, v))))
        .collect();
    let lost: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.1.is_none())
        .map(|p| (p.0 as f64 / 1e9, top * 0.97))
        .collect();
    if points.is_empty() {
        plot.empty_note = Some(if stats.samples > 0 {
            "no sample times in this result (a histogram has no time order)".into()
        } else {
            "no samples".into()
        });
    }
    plot.layers.push(Layer::Dots {
        points: on_time,
        colour: PALETTE[0].into(),
        radius: 1.6,
    });
    if let Some(d) = deadline.filter(|d| us(*d as f64) <= top) {
        plot.layers.push(Layer::HLine {
            y: us(d as f64),
            colour: ALARM.into(),
        });
        plot.legend
            .push(Key::line("one period: deadlines missed above", ALARM, true));
    }
    if !missed.is_empty() {
        let label = format!("a period or more late: {}", missed.len());
        alarm_crosses(&mut plot, label, missed);
    }
    if !lost.is_empty() {
        let label = format!("lost, drawn at the top ({})", lost.len());
        alarm_crosses(&mut plot, label, lost);
    }
    if stats.missed > 0 {
        caption.push_str(&format!(
            " The run counted {} missed deadline(s) or lost message(s).",
            stats.missed
        ));
    }
    Chart {
        kind: "timeline",
        caption,
        plot,
    }
}

/// Points drawn as alarm-coloured crosses, with their key.
fn alarm_crosses(plot: &mut Plot, label: String, points: Vec<(f64, f64)>) {
    plot.legend.push(Key::cross(label, ALARM));
    plot.layers.push(Layer::Crosses {
        points,
        colour: ALARM.into(),
    });
}

/// The measured exceedance of several runs (or series) of one metric on
/// one chart.
pub fn overlay_exceedance(metric: &str, curves: &[(String, &SeriesStats)]) -> Chart {
    let smallest = curves
        .iter()
        .map(|(_, s)| 1.0 / s.samples.max(1) as f64)
        .fold(1.0, f64::min);
    let right = curves
        .iter()
        .map(|(_, s)| us(s.max_ns as f64))
        .fold(1.0, f64::max);
    let what = quantity(metric);
    let mut plot = Plot::new(
        &format!("compared: {what}, exceedance per sample"),
        Axis::linear(&format!("{what} (µs)"), 0.0, right * 1.05),
        Axis::log(&format!("P({what} > x) per sample"), smallest, 1.0),
    );
    for (i, (label, stats)) in curves.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let dashed = i >= PALETTE.len();
        plot.layers.push(Layer::Line {
            points: survival(stats),
            colour: colour.into(),
            width: 1.5,
            dashed,
            step: true,
        });
        plot.legend.push(Key::line(label.clone(), colour, dashed));
    }
    Chart {
        kind: "exceedance",
        caption: format!(
            "Measured exceedance of {what}, one line per run (its series together) or, within one run, per series: the further right a line ends, the worse its tail."
        ),
        plot,
    }
}

/// A histogram's outline as a line that drops to the axis where bins are
/// empty and starts again at the next one, so a lone spike does not look
/// like a plateau and nothing is drawn along the axis.
fn histogram_outline(bins: &[[u64; 2]]) -> Vec<(f64, f64)> {
    const AXIS: f64 = 1e-9;
    let mut points = Vec::new();
    let mut next_bin = None;
    for bin in bins {
        if next_bin != Some(bin[0]) {
            if let Some(end) = next_bin {
                points.push((end as f64, AXIS));
                points.push((f64::NAN, f64::NAN));
            }
            points.push((bin[0] as f64, AXIS));
        }
        points.push((bin[0] as f64, bin[1] as f64));
        points.push((bin[0] as f64 + 1.0, bin[1] as f64));
        next_bin = Some(bin[0] + 1);
    }
    if let Some(end) = next_bin {
        points.push((end as f64, AXIS));
    }
    points
}

/// The 1 µs histograms of several runs (or series) of one metric as lines
/// on one chart.
pub fn overlay_histogram(metric: &str, curves: &[(String, &SeriesStats)]) -> Chart {
    let max_bin = curves
        .iter()
        .flat_map(|(_, s)| s.histogram_us.iter().map(|b| b[0]))
        .max()
        .unwrap_or(0);
    let max_count = curves
        .iter()
        .flat_map(|(_, s)| s.histogram_us.iter().map(|b| b[1]))
        .max()
        .unwrap_or(1);
    let what = quantity(metric);
    let mut plot = Plot::new(
        &format!("compared: {what}, histograms"),
        Axis::linear(
            &format!("{what} (µs), 1 µs bins"),
            0.0,
            (max_bin + 1) as f64 * 1.02,
        ),
        Axis::log_from("samples", 0.5, max_count as f64),
    );
    for (i, (label, stats)) in curves.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let dashed = i >= PALETTE.len();
        plot.layers.push(Layer::Line {
            points: histogram_outline(&stats.histogram_us),
            colour: colour.into(),
            width: 1.2,
            dashed,
            step: false,
        });
        plot.legend.push(Key::line(label.clone(), colour, dashed));
    }
    Chart {
        kind: "histogram",
        caption: format!(
            "Histograms of {what} (1 µs bins) as lines, one per run (its series together) or, within one run, per series; counts on a log axis."
        ),
        plot,
    }
}

/// A campaign at a glance: one group per load along x, in it one bar per
/// configuration up to the cell's worst p99.9 and a stem up to a dot at
/// its worst maximum, µs on a log axis (an idle load's 50 µs and a loaded
/// one's 5 ms in one picture). A cell with missed deadlines gets a red ×
/// over its dot; a cell not run or without samples is left empty.
pub fn matrix_chart(probe: &str, matrix: &crate::matrix::Matrix) -> Chart {
    let measured: Vec<&crate::matrix::Cell> =
        matrix.cells.iter().filter(|c| c.samples > 0).collect();
    let low = measured
        .iter()
        .flat_map(|c| [c.p99_9_ns, c.max_ns])
        .filter(|v| *v > 0)
        .min()
        .unwrap_or(1_000) as f64;
    let high = measured.iter().map(|c| c.max_ns).max().unwrap_or(1_000) as f64;
    let loads = matrix.loads.len().max(1);
    let mut plot = Plot::new(
        &format!("{probe}: worst p99.9 (bars) and max (dots) per load and configuration"),
        Axis::linear("load", 0.0, loads as f64),
        Axis::log("µs, log scale", us(low), us(high)),
    );
    plot.x_categories = matrix
        .loads
        .iter()
        .enumerate()
        .map(|(i, load)| (i as f64 + 0.5, load.clone()))
        .collect();
    if measured.is_empty() {
        plot.empty_note = Some("nothing measured".into());
    }
    // Each group is 80 % of its load's width, split between the
    // configurations; a bar is 70 % of its slot.
    let slot = 0.8 / matrix.configurations.len().max(1) as f64;
    let mut missed = Vec::new();
    for (j, configuration) in matrix.configurations.iter().enumerate() {
        let colour = PALETTE[j % PALETTE.len()];
        let mut bars = Vec::new();
        let mut stems = Vec::new();
        let mut dots = Vec::new();
        for (i, load) in matrix.loads.iter().enumerate() {
            let Some(cell) = matrix.cell(load, configuration).filter(|c| c.samples > 0) else {
                continue;
            };
            let left = i as f64 + 0.1 + j as f64 * slot;
            let centre = left + slot / 2.0;
            let (p99_9, max) = (us(cell.p99_9_ns as f64), us(cell.max_ns as f64));
            bars.push([left + slot * 0.15, left + slot * 0.85, p99_9]);
            stems.extend([(centre, p99_9), (centre, max), (f64::NAN, f64::NAN)]);
            dots.push((centre, max));
            if cell.missed > 0 {
                missed.push((centre, max));
            }
        }
        plot.layers.push(Layer::Bars {
            bars,
            colour: colour.into(),
        });
        plot.layers.push(Layer::Line {
            points: stems,
            colour: colour.into(),
            width: 1.5,
            dashed: false,
            step: false,
        });
        plot.layers.push(Layer::Dots {
            points: dots,
            colour: colour.into(),
            radius: 4.0,
        });
        plot.legend.push(Key::mark(configuration.clone(), colour));
    }
    if !missed.is_empty() {
        alarm_crosses(&mut plot, "missed deadlines".into(), missed);
    }
    Chart {
        kind: "matrix",
        caption: format!(
            "{probe} runs: for each load and configuration, the worst p99.9 (bar) and the worst maximum (dot) over the series and repeats of the cell, in µs on a log scale; the figures are in the loads × configurations table."
        ),
        plot,
    }
}
