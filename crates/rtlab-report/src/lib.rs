//! Turning results into something people and other tools read: terminal
//! tables and exporters (one per format, behind [`export::Exporter`]).

pub mod export;
pub mod table;
