//! One exporter per output format, all behind the same trait, so a new
//! format is one new file.
//!
//! This file only declares and re-exports: the formats import the trait
//! from `exporter.rs`, never from here (no import circle).

mod csv;
mod exporter;
mod histfile;
mod json;
mod markdown;

pub use csv::CsvExporter;
pub use exporter::{write_file, write_with, Exporter};
pub use histfile::{HistfileExporter, MAX_RANGE_US as HISTFILE_MAX_RANGE_US};
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
