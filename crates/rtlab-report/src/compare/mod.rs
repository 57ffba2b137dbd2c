//! Comparing runs: side-by-side percentiles, ratios against a baseline (the
//! first run), and whether the p99 differs beyond chance, by a bootstrap
//! confidence interval on the p99 difference.
//!
//! Against a baseline ([`against_baseline`]): a CI farm's gate, each pair
//! of series judged against a regression threshold, the bootstrap deciding
//! whether a p99 difference is real.
//!
//! The bootstrap itself (how a p99 is resampled from a histogram, the
//! interval, its limits) is [`rtlab_stats::bootstrap`].

mod baseline;
mod baseline_model;
mod baseline_render;
mod compute;
mod merged;
mod model;
mod render;
mod versus;

pub use baseline::against_baseline;
pub use baseline_model::{
    parse_metrics, parse_threshold, BaselineComparison, BaselineError, BaselineOptions, Check,
    Pair, Subject, SubjectHeader, BASELINE_SCHEMA, COMPARED_METRICS, DEFAULT_METRIC,
    DEFAULT_THRESHOLD_PERCENT, MAX_THRESHOLD_PERCENT,
};
pub use baseline_render::{baseline_markdown, baseline_table};
pub use compute::{compare, compare_matching};
pub use model::{
    CompareOptions, Comparison, Figures, Matching, Ratios, RunHeader, RunSeries, SeriesComparison,
    Versus, COMPARE_SCHEMA, MAX_RESAMPLES,
};
pub use render::{comparison_markdown, comparison_table};
