//! `rtlab report`: stored runs as one self-contained HTML page (inline SVG
//! charts and CSS, nothing fetched), as Markdown or as terminal tables,
//! and each chart as a PNG.
//!
//! [`Report::build`] computes everything once (tables, worst-case
//! estimates, charts); the renderers only lay it out, so every format shows
//! the same figures.
//!
//! This file only declares and re-exports: the renderers import the model
//! (`model.rs`), never this file (no import circle).

pub mod charts;
mod compose;
mod html;
mod model;
pub mod png;
pub mod run_tables;
pub mod samples;
pub mod spike_tables;
pub mod svg;
mod table;
mod traffic_tables;

pub use model::{
    CampaignView, Report, ReportOptions, RunSamples, RunView, SeriesView, REPORT_SCHEMA,
};
