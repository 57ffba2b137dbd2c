//! Turning results into something people and other tools read: terminal
//! tables and exporters (one per format, behind [`export::Exporter`]),
//! comparisons of runs ([`compare`]) and importers of other tools' results
//! ([`import`]).

pub mod budget;
pub mod compare;
pub mod evt;
pub mod export;
pub mod import;
pub mod junit;
pub mod matrix;
pub mod probe_tables;
pub mod report;
pub mod table;
