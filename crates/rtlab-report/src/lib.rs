//! Turning results into something people and other tools read: terminal
//! tables and exporters (one per format, behind [`export::Exporter`]),
//! comparisons of runs ([`compare`]), importers of other tools' results
//! ([`import`]), budgets ([`budget`]) and the HTML report ([`report`]).
//! The statistics behind the figures are in `rtlab_stats`; [`text`] holds
//! the cell and column formatting every renderer shares.

pub mod budget;
pub mod compare;
pub mod evt;
pub mod export;
pub mod import;
pub mod junit;
pub mod matrix;
pub mod probe_summary;
pub mod report;
pub mod run_summary;
pub mod text;
pub mod traffic_summary;
