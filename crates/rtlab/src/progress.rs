//! Live status on a terminal: one line per series and an overall bar,
//! redrawn at most 10 times a second; nothing at all when stderr is not a
//! terminal or --quiet was given.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtlab_core::record::LiveStats;
use rtlab_core::units::{human_duration, Micros};
use std::io::IsTerminal;

pub struct LiveStatus {
    overall: ProgressBar,
    lines: Vec<ProgressBar>,
    multi: MultiProgress,
}

impl LiveStatus {
    /// `None` when there is no terminal to draw on.
    pub fn new(series: &[String], planned_ns: u64, quiet: bool) -> Option<LiveStatus> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
        let overall = multi.add(ProgressBar::new(planned_ns / 1_000_000));
        overall.set_style(bar_style());
        let lines = series
            .iter()
            .map(|name| {
                let line = multi.add(ProgressBar::new_spinner());
                line.set_style(ProgressStyle::with_template("{msg}").expect("static template"));
                line.set_message(format!("{name:>8}  waiting for the first deadline"));
                line
            })
            .collect();
        Some(LiveStatus {
            overall,
            lines,
            multi,
        })
    }

    pub fn update(&self, names: &[String], live: &[LiveStats], elapsed_ns: u64) {
        self.overall.set_position(elapsed_ns / 1_000_000);
        self.overall.set_message(format!(
            "{} measured; Ctrl-C stops and keeps the result",
            human_duration(elapsed_ns - elapsed_ns % 100_000_000)
        ));
        for ((line, name), s) in self.lines.iter().zip(names).zip(live) {
            line.set_message(format!(
                "{name:>8}  samples {:>9}  missed {:>5}  min {:>9}  act {:>9}  avg {:>9}  max {:>10} µs",
                s.samples,
                s.missed,
                Micros(s.min_ns),
                Micros(s.last_ns),
                Micros(s.mean_ns),
                Micros(s.max_ns)
            ));
        }
    }

    /// Prints `line` on stderr above the status, which a plain `eprintln!`
    /// would have the next redraw erase.
    pub fn println(&self, line: &str) {
        if self.multi.println(line).is_err() {
            eprintln!("{line}");
        }
    }

    pub fn finish(self) {
        for line in &self.lines {
            line.finish_and_clear();
        }
        self.overall.finish_and_clear();
    }
}

/// The one look of every progress bar: elapsed, bar, percent, ETA, message.
pub fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {percent:>3}%  ETA {eta}  {msg}")
        .expect("static template")
        .progress_chars("=> ")
}
