//! Comparing runs: side-by-side percentiles, ratios against a baseline (the
//! first run), and whether the p99 differs beyond chance, by a bootstrap
//! confidence interval on the p99 difference.
//!
//! The bootstrap itself (how a p99 is resampled from a histogram, the
//! interval, its limits) is [`rtlab_stats::bootstrap`].

mod compute;
mod merged;
mod model;
mod render;
mod versus;

pub use compute::{compare, compare_matching};
pub use model::{
    CompareOptions, Comparison, Figures, Matching, Ratios, RunHeader, RunSeries, SeriesComparison,
    Versus, COMPARE_SCHEMA, MAX_RESAMPLES,
};
pub use render::{comparison_markdown, comparison_table};
