//! A small plotting engine: one chart as a standalone SVG document with
//! axes (linear or log), ticks, and layers of bars, lines, dots, marks and
//! error bars. Styles are presentation attributes, not CSS, so the same
//! SVG renders identically inline in the HTML report and through resvg
//! into a PNG.

use std::collections::HashSet;
use std::fmt::Write;

/// Okabe–Ito (its yellow, faint on white, swapped for Tol's wine): tells
/// runs apart for colour-blind readers too.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#882255",
];
/// Missed deadlines and lost messages.
pub const ALARM: &str = "#D00000";
/// The fitted worst-case curve.
pub const FIT: &str = "#D55E00";

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 340.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
/// A legend too long for one row under the title goes beside the plot, in
/// a column this wide: a legend never covers data.
const LEGEND_COLUMN: f64 = 200.0;
/// Characters of a legend label in the column (longer ones are cut, with …).
const LEGEND_LABEL_CHARS: usize = 28;
/// Above the plot: the title, and the legend's row under it.
const TOP: f64 = 50.0;
/// Approximate advance of one character at the chart's font size.
const CHAR_WIDTH: f64 = 6.6;
const BOTTOM: f64 = 46.0;
const FONT: &str = "DejaVu Sans, Verdana, sans-serif";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log10,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub min: f64,
    pub max: f64,
    pub scale: Scale,
}

impl Axis {
    pub fn linear(label: &str, min: f64, max: f64) -> Axis {
        let max = if max > min { max } else { min + 1.0 };
        Axis {
            label: label.to_string(),
            min,
            max,
            scale: Scale::Linear,
        }
    }

    /// A log axis over whole decades that hold `min..=max` (both > 0); at
    /// least one decade, reaching down rather than up (probabilities stop
    /// at 1).
    pub fn log(label: &str, min: f64, max: f64) -> Axis {
        let high = max.max(min).max(f64::MIN_POSITIVE).log10().ceil();
        let low = min.max(f64::MIN_POSITIVE).log10().floor().min(high - 1.0);
        Axis {
            label: label.to_string(),
            min: 10f64.powf(low),
            max: 10f64.powf(high),
            scale: Scale::Log10,
        }
    }

    /// A log axis from exactly `min` (e.g. 0.5, so that a count of 1
    /// still shows) up to the decade above `max`.
    pub fn log_from(label: &str, min: f64, max: f64) -> Axis {
        let high = max.max(min).log10().ceil().max(min.log10().ceil());
        let high = if 10f64.powf(high) <= min {
            high + 1.0
        } else {
            high
        };
        Axis {
            label: label.to_string(),
            min,
            max: 10f64.powf(high),
            scale: Scale::Log10,
        }
    }

    /// Where `value` falls, 0 at `min` and 1 at `max` (outside for values
    /// off the axis).
    fn fraction(&self, value: f64) -> f64 {
        match self.scale {
            Scale::Linear => (value - self.min) / (self.max - self.min),
            Scale::Log10 => {
                let v = value.max(self.min / 1e3).log10();
                (v - self.min.log10()) / (self.max.log10() - self.min.log10())
            }
        }
    }

    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => linear_ticks(self.min, self.max),
            Scale::Log10 => {
                let low = (self.min.log10() - 1e-9).ceil() as i32;
                let high = (self.max.log10() + 1e-9).floor() as i32;
                let step = ((high - low) as f64 / 8.0).ceil().max(1.0) as i32;
                // From the top down, so that 1 (probabilities) and the
                // largest count always have a label.
                let mut ticks: Vec<f64> = (low..=high)
                    .rev()
                    .step_by(step as usize)
                    .map(|e| 10f64.powi(e))
                    .collect();
                ticks.reverse();
                ticks
            }
        }
    }
}

/// About six ticks at 1, 2 or 5 × 10ᵏ.
fn linear_ticks(min: f64, max: f64) -> Vec<f64> {
    let span = max - min;
    let raw = span / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| span / s <= 7.0)
        .unwrap_or(10.0 * magnitude);
    let first = (min / step).ceil() * step;
    (0..)
        .map(|i| first + i as f64 * step)
        .take_while(|v| *v <= max + step * 1e-9)
        .collect()
}

/// A tick label: short, with no float noise.
pub fn tick_label(value: f64, scale: Scale) -> String {
    match scale {
        Scale::Log10 => {
            let exponent = value.log10().round() as i32;
            match exponent {
                0 => "1".into(),
                1 => "10".into(),
                2 => "100".into(),
                3 => "1k".into(),
                4 => "10k".into(),
                5 => "100k".into(),
                6 => "1M".into(),
                e => format!("1e{e}"),
            }
        }
        Scale::Linear => {
            if value == 0.0 {
                return "0".into();
            }
            let text = format!("{value:.6}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            text.to_string()
        }
    }
}

/// One entry of a legend, drawn as what it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub label: String,
    pub colour: String,
    pub swatch: Swatch,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Swatch {
    /// Dots and bars.
    Square,
    /// × marks.
    Cross,
    Line,
    DashedLine,
}

impl Key {
    pub fn mark(label: impl Into<String>, colour: &str) -> Key {
        Key::new(label, colour, Swatch::Square)
    }

    pub fn cross(label: impl Into<String>, colour: &str) -> Key {
        Key::new(label, colour, Swatch::Cross)
    }

    pub fn line(label: impl Into<String>, colour: &str, dashed: bool) -> Key {
        let swatch = if dashed {
            Swatch::DashedLine
        } else {
            Swatch::Line
        };
        Key::new(label, colour, swatch)
    }

    fn new(label: impl Into<String>, colour: &str, swatch: Swatch) -> Key {
        Key {
            label: label.into(),
            colour: colour.to_string(),
            swatch,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Layer {
    /// Vertical bars from the bottom of the plot, `[x0, x1, height]`, drawn
    /// at least one pixel wide.
    Bars { bars: Vec<[f64; 3]>, colour: String },
    /// A connected line; `step` draws it as a staircase (horizontal first);
    /// a NaN point breaks it.
    Line {
        points: Vec<(f64, f64)>,
        colour: String,
        width: f64,
        dashed: bool,
        step: bool,
    },
    /// Dots; points that land on the same pixel are drawn once.
    Dots {
        points: Vec<(f64, f64)>,
        colour: String,
        radius: f64,
    },
    /// × marks (lost messages, missed deadlines); deduplicated like dots.
    Crosses {
        points: Vec<(f64, f64)>,
        colour: String,
    },
    /// Horizontal error bars `(y, x_low, x, x_high)`; an infinite `x_high`
    /// runs to the edge as an arrow.
    Intervals {
        bars: Vec<(f64, f64, f64, f64)>,
        colour: String,
    },
    /// A dashed horizontal reference line (its meaning goes in the legend,
    /// where it covers no data).
    HLine { y: f64, colour: String },
}

/// One chart.
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub layers: Vec<Layer>,
    /// In a row under the title, or beside the plot when that row would
    /// not hold it.
    pub legend: Vec<Key>,
    /// Shown instead of the plot area's content when there is nothing to draw.
    pub empty_note: Option<String>,
    /// Named places on the x axis (a category at the centre of its
    /// group), shown instead of its numeric ticks when there are any.
    pub x_categories: Vec<(f64, String)>,
}

/// Text for XML: `&`, `<`, `>` and quotes escaped, and the control
/// characters XML 1.0 does not allow shown as `?`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push('?'),
            // A bidirectional override or zero-width character from a
            // stored hostname or label would reorder or hide the text of
            // the page (`vm<U+202E>gnp.exe` shown as `vmexe.png`): shown
            // as the terminal shows it.
            c if rtlab_core::result::is_invisible(c) => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

struct Frame<'a> {
    plot: &'a Plot,
    w: f64,
    h: f64,
}

impl Frame<'_> {
    fn px(&self, x: f64) -> f64 {
        LEFT + self.plot.x.fraction(x) * self.w
    }
    fn py(&self, y: f64) -> f64 {
        TOP + (1.0 - self.plot.y.fraction(y)) * self.h
    }
    fn clamp_x(&self, px: f64) -> f64 {
        px.clamp(LEFT, LEFT + self.w)
    }
    fn clamp_y(&self, py: f64) -> f64 {
        py.clamp(TOP, TOP + self.h)
    }
    fn inside(&self, px: f64, py: f64) -> bool {
        (LEFT - 0.5..=LEFT + self.w + 0.5).contains(&px)
            && (TOP - 0.5..=TOP + self.h + 0.5).contains(&py)
    }
}

impl Plot {
    pub fn new(title: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.to_string(),
            x,
            y,
            layers: Vec::new(),
            legend: Vec::new(),
            empty_note: None,
            x_categories: Vec::new(),
        }
    }

    /// The chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let frame = Frame {
            plot: self,
            w: WIDTH
                - LEFT
                - if self.legend_in_column() {
                    LEGEND_COLUMN
                } else {
                    RIGHT
                },
            h: HEIGHT - TOP - BOTTOM,
        };
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT}" font-size="11" role="img"><title>{}</title>"#,
            escape(&self.title)
        );
        let _ = write!(
            s,
            r##"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
        );
        let _ = write!(
            s,
            r##"<text x="{LEFT}" y="20" font-size="13" font-weight="bold" fill="#222222">{}</text>"##,
            escape(&self.title)
        );
        self.axes(&frame, &mut s);
        match &self.empty_note {
            Some(note) => {
                let _ = write!(
                    s,
                    r##"<text x="{}" y="{}" text-anchor="middle" fill="#666666">{}</text>"##,
                    LEFT + frame.w / 2.0,
                    TOP + frame.h / 2.0,
                    escape(note)
                );
            }
            None => {
                for layer in &self.layers {
                    draw_layer(&frame, layer, &mut s);
                }
            }
        }
        self.draw_legend(&frame, &mut s);
        s.push_str("</svg>");
        s
    }

    fn axes(&self, f: &Frame, s: &mut String) {
        let (x0, y0, x1, y1) = (LEFT, TOP, LEFT + f.w, TOP + f.h);
        for tick in self.y.ticks() {
            let y = f.py(tick);
            if !(y0 - 0.5..=y1 + 0.5).contains(&y) {
                continue;
            }
            let _ = write!(
                s,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end" fill="#444444">{}</text>"##,
                x0 - 5.0,
                y + 4.0,
                tick_label(tick, self.y.scale)
            );
        }
        if !self.x_categories.is_empty() {
            // Each name gets the width between its neighbours; a longer
            // one is cut (with …) and shown whole on hover.
            let room = f.w / self.x_categories.len() as f64;
            let chars = ((room - 6.0) / CHAR_WIDTH).floor().max(2.0) as usize;
            for (at, name) in &self.x_categories {
                let x = f.px(*at);
                let mut shown: String = name.chars().take(chars).collect();
                if name.chars().count() > chars {
                    shown.pop();
                    shown.push('…');
                }
                let _ = write!(
                    s,
                    r##"<text x="{x:.1}" y="{}" text-anchor="middle" fill="#222222"><title>{}</title>{}</text>"##,
                    y1 + 15.0,
                    escape(name),
                    escape(&shown)
                );
            }
        }
        for tick in self.x.ticks() {
            if !self.x_categories.is_empty() {
                break;
            }
            let x = f.px(tick);
            if !(x0 - 0.5..=x1 + 0.5).contains(&x) {
                continue;
            }
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#e4e4e4"/><text x="{x:.1}" y="{}" text-anchor="middle" fill="#444444">{}</text>"##,
                y1 + 15.0,
                tick_label(tick, self.x.scale)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="none" stroke="#888888"/>"##,
            f.w, f.h
        );
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#222222">{}</text>"##,
            x0 + f.w / 2.0,
            HEIGHT - 10.0,
            escape(&self.x.label)
        );
        let _ = write!(
            s,
            r##"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" fill="#222222">{}</text>"##,
            y0 + f.h / 2.0,
            escape(&self.y.label)
        );
    }

    /// Width of one legend entry in the row under the title.
    fn key_width(key: &Key) -> f64 {
        28.0 + key.label.chars().count() as f64 * CHAR_WIDTH
    }

    /// Whether the legend needs the column beside the plot.
    fn legend_in_column(&self) -> bool {
        let row: f64 = self.legend.iter().map(Plot::key_width).sum();
        row > WIDTH - LEFT - RIGHT
    }

    fn draw_legend(&self, f: &Frame, s: &mut String) {
        if self.legend_in_column() {
            let fits = ((HEIGHT - TOP) / 15.0) as usize - 1;
            let shown = if self.legend.len() > fits {
                fits - 1
            } else {
                self.legend.len()
            };
            let x = LEFT + f.w + 10.0;
            let mut y = TOP + 10.0;
            for key in &self.legend[..shown] {
                let mut label: String = key.label.chars().take(LEGEND_LABEL_CHARS).collect();
                if key.label.chars().count() > LEGEND_LABEL_CHARS {
                    label.pop();
                    label.push('…');
                }
                swatch(s, key, x, y - 4.0);
                let _ = write!(
                    s,
                    r##"<text x="{}" y="{y}" fill="#222222"><title>{}</title>{}</text>"##,
                    x + 22.0,
                    escape(&key.label),
                    escape(&label)
                );
                y += 15.0;
            }
            if shown < self.legend.len() {
                let _ = write!(
                    s,
                    r##"<text x="{x}" y="{y}" fill="#222222">… and {} more</text>"##,
                    self.legend.len() - shown
                );
            }
        } else {
            let mut x = LEFT;
            let y = TOP - 9.0;
            for key in &self.legend {
                swatch(s, key, x, y - 4.0);
                let _ = write!(
                    s,
                    r##"<text x="{}" y="{y}" fill="#222222">{}</text>"##,
                    x + 22.0,
                    escape(&key.label)
                );
                x += Plot::key_width(key);
            }
        }
    }
}

/// A legend swatch 18 px wide centred on `y`.
fn swatch(s: &mut String, key: &Key, x: f64, y: f64) {
    let colour = &key.colour;
    let _ = match key.swatch {
        Swatch::Line => write!(
            s,
            r#"<path d="M{x} {y}h18" stroke="{colour}" stroke-width="2"/>"#
        ),
        Swatch::DashedLine => write!(
            s,
            r#"<path d="M{x} {y}h18" stroke="{colour}" stroke-width="2" stroke-dasharray="5 3"/>"#
        ),
        Swatch::Square => write!(
            s,
            r#"<rect x="{}" y="{}" width="10" height="10" fill="{colour}"/>"#,
            x + 4.0,
            y - 5.0
        ),
        Swatch::Cross => write!(
            s,
            r#"<path d="M{} {}l7 7m0 -7l-7 7" stroke="{colour}" stroke-width="1.6"/>"#,
            x + 5.5,
            y - 3.5
        ),
    };
}

fn draw_layer(f: &Frame, layer: &Layer, s: &mut String) {
    match layer {
        Layer::Bars { bars, colour } => {
            let _ = write!(s, r#"<g fill="{colour}">"#);
            let bottom = TOP + f.h;
            for [x0, x1, height] in bars {
                let left = f.clamp_x(f.px(*x0));
                let right = f.clamp_x(f.px(*x1));
                let top = f.clamp_y(f.py(*height));
                if right < LEFT || left > LEFT + f.w || top >= bottom {
                    continue;
                }
                let _ = write!(
                    s,
                    r#"<rect x="{left:.2}" y="{top:.2}" width="{:.2}" height="{:.2}"/>"#,
                    (right - left).max(1.0),
                    bottom - top
                );
            }
            s.push_str("</g>");
        }
        Layer::Line {
            points,
            colour,
            width,
            dashed,
            step,
        } => {
            let mut path = String::new();
            let mut last: Option<(f64, f64)> = None;
            for &(x, y) in points {
                // A point that is not finite breaks the line: the next one
                // starts a new stroke.
                if !x.is_finite() || !y.is_finite() {
                    last = None;
                    continue;
                }
                let (px, py) = (f.clamp_x(f.px(x)), f.clamp_y(f.py(y)));
                match last {
                    None => {
                        let _ = write!(path, "M{px:.1} {py:.1}");
                    }
                    Some((_, ly)) if *step => {
                        let _ = write!(path, "L{px:.1} {ly:.1}L{px:.1} {py:.1}");
                    }
                    Some(_) => {
                        let _ = write!(path, "L{px:.1} {py:.1}");
                    }
                }
                last = Some((px, py));
            }
            if !path.is_empty() {
                let dash = if *dashed {
                    r#" stroke-dasharray="5 3""#
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    r#"<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>"#
                );
            }
        }
        Layer::Dots {
            points,
            colour,
            radius,
        } => {
            let _ = write!(s, r#"<g fill="{colour}">"#);
            for (px, py) in unique_pixels(f, points) {
                let _ = write!(s, r#"<circle cx="{px}" cy="{py}" r="{radius}"/>"#);
            }
            s.push_str("</g>");
        }
        Layer::Crosses { points, colour } => {
            let _ = write!(s, r#"<g stroke="{colour}" stroke-width="1.3">"#);
            for (px, py) in unique_pixels(f, points) {
                let _ = write!(
                    s,
                    r#"<path d="M{} {}l5 5m0 -5l-5 5"/>"#,
                    px as f64 - 2.5,
                    py as f64 - 2.5
                );
            }
            s.push_str("</g>");
        }
        Layer::Intervals { bars, colour } => {
            let _ = write!(s, r#"<g stroke="{colour}" stroke-width="1.4">"#);
            for &(y, low, x, high) in bars {
                let py = f.py(y);
                if !(TOP..=TOP + f.h).contains(&py) {
                    continue;
                }
                let pl = f.clamp_x(f.px(low));
                let pm = f.clamp_x(f.px(x));
                let open = !high.is_finite() || f.px(high) > LEFT + f.w;
                let ph = if open {
                    LEFT + f.w
                } else {
                    f.clamp_x(f.px(high))
                };
                let _ = write!(
                    s,
                    r#"<path d="M{pl:.1} {py:.1}H{ph:.1}M{pl:.1} {:.1}v6"/>"#,
                    py - 3.0
                );
                // An estimate beyond the axis is only the arrow: a dot on
                // the edge would read as a value there.
                if f.px(x) <= LEFT + f.w {
                    let _ = write!(
                        s,
                        r#"<circle cx="{pm:.1}" cy="{py:.1}" r="2.5" fill="{colour}"/>"#
                    );
                }
                if open {
                    let _ = write!(
                        s,
                        r#"<path d="M{:.1} {:.1}l6 3l-6 3z" fill="{colour}"/>"#,
                        ph - 6.0,
                        py - 3.0
                    );
                } else {
                    let _ = write!(s, r#"<path d="M{ph:.1} {:.1}v6"/>"#, py - 3.0);
                }
            }
            s.push_str("</g>");
        }
        Layer::HLine { y, colour } => {
            let py = f.py(*y);
            if (TOP..=TOP + f.h).contains(&py) {
                let _ = write!(
                    s,
                    r#"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="{colour}" stroke-dasharray="6 3"/>"#,
                    LEFT + f.w
                );
            }
        }
    }
}

/// The points' pixels, each drawn once: a million samples become the few
/// thousand dots a reader can see, and the picture is the same.
fn unique_pixels(f: &Frame, points: &[(f64, f64)]) -> Vec<(i64, i64)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &(x, y) in points {
        let (px, py) = (f.px(x), f.py(y));
        if !px.is_finite() || !py.is_finite() || !f.inside(px, py) {
            continue;
        }
        let key = (px.round() as i64, py.round() as i64);
        if seen.insert(key) {
            out.push(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_and_cover_the_range() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let ticks = linear_ticks(3.0, 1234.0);
        assert_eq!(ticks.first(), Some(&200.0));
        assert!(ticks.len() <= 7 && ticks.len() >= 4, "{ticks:?}");
    }

    #[test]
    fn log_axes_span_whole_decades() {
        let axis = Axis::log("p", 3e-7, 1.0);
        assert_eq!((axis.min, axis.max), (1e-7, 1.0));
        assert_eq!(tick_label(1e-7, Scale::Log10), "1e-7");
        assert_eq!(tick_label(1000.0, Scale::Log10), "1k");
        assert_eq!(tick_label(2.5, Scale::Linear), "2.5");
        assert_eq!(tick_label(0.30000000000000004, Scale::Linear), "0.3");
        // A probability axis never goes above 1; ticks keep 1 labelled.
        let axis = Axis::log("p", 1.0, 1.0);
        assert_eq!((axis.min, axis.max), (0.1, 1.0));
        let ticks = Axis::log("p", 1e-11, 1.0).ticks();
        assert_eq!(ticks.last(), Some(&1.0));
        assert!(ticks.len() <= 9, "{ticks:?}");
    }

    #[test]
    fn categories_replace_the_x_ticks_and_long_names_are_cut() {
        let mut plot = Plot::new(
            "t",
            Axis::linear("load", 0.0, 2.0),
            Axis::log("µs", 1.0, 1e3),
        );
        let long = "dohell-no-stat-with-a-name-far-too-long-for-its-group-of-bars";
        plot.x_categories = vec![(0.5, "idle".into()), (1.5, long.into())];
        let svg = plot.to_svg();
        assert!(svg.contains("<title>idle</title>idle</text>"), "{svg}");
        // Cut with an ellipsis, whole on hover.
        assert!(svg.contains(&format!("<title>{long}</title>dohell-no-stat-with")));
        assert!(svg.contains("…</text>"));
        // No numeric x tick labels (0, 0.5, 1, ...) under the axis.
        assert!(!svg.contains(">0.5</text>") && !svg.contains(">1.5</text>"));
    }

    #[test]
    fn dots_on_the_same_pixel_are_drawn_once_and_text_is_escaped() {
        let mut plot = Plot::new(
            "a<b & c",
            Axis::linear("x", 0.0, 1.0),
            Axis::linear("y", 0.0, 1.0),
        );
        let points: Vec<(f64, f64)> = (0..10_000).map(|i| (0.5 + i as f64 * 1e-9, 0.5)).collect();
        plot.layers.push(Layer::Dots {
            points,
            colour: "#000".into(),
            radius: 1.5,
        });
        let svg = plot.to_svg();
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(svg.contains("a&lt;b &amp; c"));
        assert!(!svg.contains("a<b"));
        assert_eq!(escape("a\u{1b}b\nc"), "a?b c");
    }
}
