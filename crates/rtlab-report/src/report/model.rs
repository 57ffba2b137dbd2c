//! What a report holds: its runs and series analysed and drawn, the
//! overview tables and the comparison charts. Built by `compose.rs`, laid
//! out by the renderers.

use super::charts::Chart;
use super::samples::SampleFile;
use super::table::Table;
use crate::evt::{EvtOptions, EvtReport};
use rtlab_core::result::{RunResult, SeriesStats};

pub const REPORT_SCHEMA: &str = "rtlab.report/1";

/// One series of a run, analysed and drawn.
#[derive(Debug, Clone)]
pub struct SeriesView {
    pub name: String,
    pub metric: String,
    pub stats: SeriesStats,
    pub evt: EvtReport,
    pub charts: Vec<Chart>,
}

/// One run of the report.
#[derive(Debug, Clone)]
pub struct RunView {
    /// Short and unique within the report: `vm/promoted` for a campaign
    /// run, the run id otherwise.
    pub label: String,
    pub result: RunResult,
    pub series: Vec<SeriesView>,
    /// Where per-sample data came from, when a samples file was given.
    pub samples_file: Option<String>,
}

/// A campaign's runs of one probe kind at a glance: what the report opens
/// with.
#[derive(Debug, Clone)]
pub struct CampaignView {
    /// The probe kind, e.g. `timer`.
    pub probe: String,
    /// `rtlab quick`'s verdict on these runs ([`crate::matrix::verdicts`]).
    pub verdict: String,
    /// Loads × configurations, p99.9 and max ([`charts::matrix_chart`]).
    pub chart: Chart,
}

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct Report {
    pub title: String,
    pub generated_at: String,
    /// One per probe kind of the campaign runs, none without any.
    pub campaign: Vec<CampaignView>,
    pub runs: Vec<RunView>,
    /// Overview tables, in the order shown.
    pub tables: Vec<Table>,
    /// Per metric measured by more than one run (or series of one run):
    /// the metric and its overlay charts.
    pub comparison: Vec<(String, Vec<Chart>)>,
}

#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    pub title: Option<String>,
    pub evt: EvtOptions,
}

/// A run's samples file, already read, and its path for captions.
pub struct RunSamples {
    pub path: String,
    pub samples: SampleFile,
}
